// Reads a learner's answers (check/answers.hpp) from YAML, checked against the
// computed example.
#pragma once

#include "attention/trace.hpp"
#include "check/answers.hpp"
#include "io/loader.hpp"

#include <string>

namespace qkv {

// Where the answers are: under `answers:` of the example file itself, or in a
// separate file whose top level is either `answers: {...}` (other keys are then
// ignored, so a copy of the whole example works) or the map of answers itself.
enum class AnswersIn { example_file, answer_file };

// Reads and validates the answers against the computed example: step ids that
// exist in it, heads that exist, numbers (or ~) in a list of rows. Throws
// InputError listing every problem, with its FILE:LINE:COL. A matrix of the
// wrong size is not an error here: it is a wrong answer, graded by check; nor
// is a file where every answer is ~ (a template not filled in yet): its steps
// are empty.
Answers read_answers(const Source& source, const Trace& trace, AnswersIn where);

// Reads the file of --answers: a path, or - for standard input (no built-in names).
Source read_answer_source(const std::string& path);

// Digits after the decimal point of a number as written, counting the exponent:
// "2" → 0, "0.50" → 2, "1.5e-3" → 4, "2.5e1" → 0 (never below 0).
int count_decimals(const std::string& text);

}  // namespace qkv
