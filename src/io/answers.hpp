// A learner's answers for `qkv check`: the values written under `answers:` (in
// the example file, or in a separate answer file), cell by cell. Each number
// keeps its text as written, because the number of decimals decides what counts
// as right (0.5 means "rounded to one decimal").
#pragma once

#include "attention/trace.hpp"
#include "io/loader.hpp"

#include <armadillo>

#include <cstddef>
#include <string>
#include <vector>

namespace qkv {

struct AnswerCell {
    bool given = false;   // false for ~ (not answered)
    double value = 0.0;   // may be −∞ (masked_scores); never NaN
    int decimals = 0;     // digits after the point as written: "0.50" → 2, "6.03e-06" → 8
    std::string text;     // as written, e.g. "0.50"
};

// One step's answer, as written: n_rows × n_cols cells, row-major. n_cols is
// the length of the answered rows (0 when every row is ~).
struct StepAnswer {
    std::string id;
    int head = 0;           // 1-based for per-head steps, 0 for the others
    arma::uword n_rows = 0;
    arma::uword n_cols = 0;
    std::vector<AnswerCell> cells;
    std::string where;      // "FILE:LINE:COL" of the answer, for messages

    const AnswerCell& at(arma::uword row, arma::uword col) const { return cells[row * n_cols + col]; }
    std::size_t answered() const;
};

struct Answers {
    std::string source;             // where they were read from, as shown to the user
    std::vector<StepAnswer> steps;  // in the order of the trace
};

// Where the answers are: under `answers:` of the example file itself, or in a
// separate file whose top level is either `answers: {...}` (other keys are then
// ignored, so a copy of the whole example works) or the map of answers itself.
enum class AnswersIn { example_file, answer_file };

// Reads and validates the answers against the computed example: step ids that
// exist in it, heads that exist, numbers (or ~) in a list of rows. Throws
// InputError listing every problem, with its FILE:LINE:COL. A matrix of the
// wrong size is not an error here: it is a wrong answer, graded by check.
Answers read_answers(const Source& source, const Trace& trace, AnswersIn where);

// Reads the file of --answers: a path, or - for standard input (no built-in names).
Source read_answer_source(const std::string& path);

// Digits after the decimal point of a number as written, counting the exponent:
// "2" → 0, "0.50" → 2, "1.5e-3" → 4, "2.5e1" → 0 (never below 0).
int count_decimals(const std::string& text);

}  // namespace qkv
