// Reads a lesson file (YAML): its models are loaded and validated, and its
// script is read and checked against them (steps, heads, models, the syntax of
// every placeholder and cell). Whether each cell is in its model's trace is
// checked by prepare_lesson (lesson/lesson.hpp), which computes the traces.
// Every problem is reported with its FILE:LINE:COL, like the problems of an
// example file.
//
//   title: The three-input walk-through
//   summary: one line for `qkv lesson`
//   model: illustrated          # a built-in example, or a model written inline
//   models:                     # more models, by name (optional)
//     rounded: {...}
//   script:                     # pages, played in order
//     - say: Narration with placeholders such as {scores[1,2]} or {other:weights[1]|2}.
//       model: rounded          # the model this page refers to (default: the first)
//       show: [scores, weights] # steps to print
//       head: 2                 # only this head (optional)
//       explain: scores[1,2]    # cells whose arithmetic is written out
//       block_size: 2           # explain's weights or head_output cells also show the online
//                               # softmax, keys 2 at a time (optional)
//       then: Narration after the tables.
//       ask: What is the score of query 1 against key 3?
//       answer: scores[1,3]
//       tolerance: 0.01         # absolute (default 0.005)
#pragma once

#include "io/loader.hpp"
#include "lesson/lesson.hpp"

#include <string>

namespace qkv {

// Parse and validate; `name` is the lesson's short name (the file name
// without .yaml). Throws InputError when the file or a model cannot be used;
// the script's problems are kept in the result for prepare_lesson to report.
LessonFile read_lesson(const Source& source, const std::string& name, const LoadOptions& options = {});

// Where a lesson comes from: a built-in lesson (number ≥ 1, in the order of
// lessons/INDEX) or a file (number 0).
struct LessonSource {
    Source source;
    std::string name;
    int number = 0;
};

// Resolve a `qkv lesson` argument: an existing path (or - for standard input)
// wins over a number or a built-in lesson's name. Throws InputError, with the
// list of lessons as hint, when none matches.
LessonSource find_lesson(const std::string& path_number_or_name);

// "1 walkthrough, 2 scaling, …" for hints.
std::string builtin_lesson_list();

}  // namespace qkv
