// A lesson: one or more models with their computed traces, and a script of
// pages that narrate them, show their steps, work out cells and ask questions.
// Read from YAML by io/lesson_loader (models and script, without computing
// anything), computed and checked against its traces by prepare_lesson
// (below), played by lesson/player.
//
// Narration never states a computed number as text: it names it with a
// placeholder, {scores[1,2]}, filled from the trace when the lesson is played,
// so that what a lesson says always agrees with what qkv computes.
#pragma once

#include "attention/trace.hpp"
#include "attention/cell.hpp"
#include "base/diagnostics.hpp"
#include "model/model.hpp"

#include <optional>
#include <string>
#include <vector>

namespace qkv {

// What a placeholder names: a cell or a row of a step ({scores[1,2]},
// {weights[1]}, {keys[2,1]@2}) or a size of the model ({d_k}, {scale}).
struct ValueRef {
    int model = 0;           // index into Lesson::models
    bool is_cell = false;
    CellRef cell;            // when is_cell
    std::string dimension;   // otherwise: n, m, d_model, d_k, d_v, d_out, heads, kv_heads, scale or
                             // bytes_per_token (of a key/value cache: (d_k + d_v)·kv_heads·8)
};

// The sizes a placeholder may name, in the order the error hint lists them.
const std::vector<std::string>& lesson_dimension_names();

// How a filled-in number is written: `decimals` digits after the point
// (whole numbers without any) or, with scientific, as 2.06e-09.
struct NumberStyle {
    std::optional<int> decimals;   // nullopt: the precision of the lesson (-p)
    bool scientific = false;
};

// Narration is literal text and placeholders, in order.
struct Segment {
    std::string text;                 // literal text (empty for a placeholder)
    std::optional<ValueRef> value;    // a placeholder
    NumberStyle style;
    std::string source;               // the placeholder as written, "{scores[1,2]}"
};
using Narration = std::vector<Segment>;

// One option of a choice question: what the learner types, and the cell
// whose value ranks it (the right option holds the largest value, or the
// smallest with `pick: smallest`).
struct Option {
    std::string label;     // "grows", or a key's token ("cat")
    ValueRef value;
};

// A question. Its answer is always worked out from a trace, never written in
// the lesson file:
//   number  — one cell (`answer:`), given to a stated number of decimals and
//             graded as `qkv check` grades a cell;
//   shape   — the rows × columns of a step (`shape:`);
//   choice  — one of the options (`choose:`): a row of a step, whose options
//             are its columns (the keys), or options named in the file, each
//             with its cell.
struct Question {
    enum class Kind { number, shape, choice };
    Kind kind = Kind::number;
    Narration prompt;
    bool predict = false;     // `predict:` asked before the page's tables; `ask:` after them
    bool reading = false;     // the answer is on the screen: reading it off is the exercise
    ValueRef answer;          // number: the cell; shape: the step (answer.cell.step and head)
    std::optional<int> decimals;      // number: the fewest decimals (unset: 0 for a whole value, else 2)
    std::optional<double> tolerance;  // number: an absolute tolerance instead
    ValueRef row;                     // choice by a row (`choose: weights[2]`): is_cell when given
    std::vector<Option> options;      // choice: the options, in order (filled from the row by prepare_lesson)
    bool smallest = false;            // choice: the smallest value is right
    Diagnostic where;                 // the question's position, for problems found once the traces are computed
};

struct Page {
    int model = 0;                    // the model this page's steps, cells and placeholders refer to
    Narration say;                    // before the tables
    std::vector<StepId> show;         // in trace order when played
    int head = 0;                     // 0 = every head
    std::vector<ValueRef> explain;    // cells whose arithmetic is written out
    int block_size = 0;               // > 0: the explain cells (weights or head_output) also show the
                                      // online softmax, keys in blocks of this many (`qkv explain --block-size`)
    Narration then;                   // after the tables and workings
    std::optional<Question> ask;
};

struct LessonModel {
    std::string name;     // "main" for `model:`, otherwise the key under `models:`
    Model model;
    Trace trace;          // computed by prepare_lesson
};

// A cell the script names, with where it is written, to be checked against
// its model's trace once that is computed.
struct CellMention {
    int model = 0;
    CellRef cell;
    Diagnostic where;       // the position, and in `what` the start of a message: "script[2].explain: "
    std::string answer;     // for a question's answer, its path ("script[3].answer"): a learner
                            // types it, so it must be finite
};

struct Lesson {
    std::string name;      // the file name without .yaml
    std::string title;
    std::string summary;   // one line, for `qkv lesson`
    std::string try_it;    // `try:` how to try it on one's own numbers, shown at the end
    std::vector<LessonModel> models;
    std::vector<Page> pages;
};

// A lesson as read from its file: its models are not computed yet, and the
// problems found in the script so far are kept, to be reported together with
// those prepare_lesson finds.
struct LessonFile {
    Lesson lesson;
    std::vector<CellMention> mentions;   // in the order they are written
    Diagnostics problems;
};

// Computes each model's trace, numbers the steps alike across the models, and
// checks every cell the script names against its trace. Throws InputError
// with every problem, the file's own and these, in the order of the file.
Lesson prepare_lesson(LessonFile file);

// The number a cell reference names (one cell: col != 0), or throws
// std::out_of_range when the trace does not hold it.
double cell_value(const Trace& trace, const CellRef& cell);
// A whole row (col == 0) or one cell, as the trace holds it.
std::vector<double> cell_values(const Trace& trace, const CellRef& cell);
// A size of the model by its name in lesson_dimension_names().
double dimension_value(const Trace& trace, const std::string& name);

// The text of a placeholder: one number, or a row as "[2, 4, 4]". Whole
// numbers print without decimals; −∞ as "−∞" ("-inf" with ascii).
std::string format_value(const std::vector<double>& values, const NumberStyle& style, int precision, bool ascii);

// The values a placeholder stands for.
std::vector<double> resolve(const Lesson& lesson, const ValueRef& ref);

// The decimals a number question asks for, and the right option of a choice
// question (an index into options), worked out from the trace.
int question_decimals(const Lesson& lesson, const Question& question);
std::size_t right_option(const Lesson& lesson, const Question& question);
// The page that asks `question` (one of the lesson's own), or nullptr.
const Page* page_of(const Lesson& lesson, const Question& question);
// The model a value of the script is read from.
const LessonModel& model_of(const Lesson& lesson, const ValueRef& ref);
// The step a shape question names.
const Step& shape_step(const Lesson& lesson, const Question& question);

}  // namespace qkv
