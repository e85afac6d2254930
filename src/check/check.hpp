// `qkv check`: grade a learner's hand calculations against the trace.
//
// Each answered cell is
//   right       — it equals the true value rounded to the decimals it is written
//                 with (or lies within --tolerance of it); written with fewer
//                 decimals than the exercise asks for (decimals:), only when it
//                 is the true value exactly;
//   consistent  — it is not right, but it follows from the learner's own earlier
//                 answers, allowing for the rounding they did in them (error
//                 carried forward, as exam markers do);
//   wrong       — neither.
// A step with a wrong cell, or of the wrong shape, is looked up among the
// classic mistakes (diagnose.cpp) so that the report can name it.
#pragma once

#include "attention/trace.hpp"
#include "check/answers.hpp"
#include "model/model.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

enum class Verdict { right, wrong, consistent };

const char* verdict_name(Verdict verdict);  // "right", "wrong", "consistent"

namespace checking {
// The fewest wrong cells a mistake is named on in a report.
inline constexpr std::size_t k_min_evidence = 2;
}  // namespace checking

struct CheckOptions {
    std::optional<double> tolerance;  // absolute; unset = rounding-aware
    int decimals = 1;                 // the fewest decimals an answer may carry (decimals:, --decimals)
    std::map<std::string, double> rubric;  // points by step id (rubric:, --rubric); empty = 1 per answered step
    // The fewest wrong cells a mistake is named on. One wrong number fits some
    // mistake or other by chance, so a report wants two; a lesson's question,
    // which asks for one cell it has chosen, names a mistake on one.
    std::size_t min_evidence = checking::k_min_evidence;
    // A lesson's: the decimals of the numbers on the learner's screen (-1:
    // none shown). An answer rounded to fewer decimals from a shown number is
    // rounded twice (0.864955 shows as 0.8650, written 0.87), so it may be half
    // a unit of the shown precision further off: shown_slack.
    int shown_decimals = -1;
    // The keys read in blocks of this many, as the online softmax reads them
    // (check --block-size, a lesson page's block_size): the online softmax's own
    // mistakes are named too. 0: the keys read whole.
    int block_size = 0;
};

// The extra room an answer written with `decimals` digits has when it may have
// been rounded from a number shown with options.shown_decimals (0 otherwise).
double shown_slack(const CheckOptions& options, int decimals);

// True when a number written with `decimals` digits after the point counts as
// `target`: |given − target| ≤ half a unit in its last place (both roundings of
// an exact tie count), or ≤ the tolerance. A number written with fewer
// decimals than options.decimals counts only when it is `target` exactly (a
// score of 4 may be written 4; a weight of 0.0634 may not be written 0).
// `slack` widens the match by that much on top (the rounding a learner did
// in the answers `target` was worked out from). −∞ only matches −∞; NaN never.
bool matches(double given, int decimals, double target, const CheckOptions& options, double slack = 0.0);

// The decimals a cell is graded at: its own, or the fewest the exercise asks
// for when it has fewer and is not the true value exactly.
int graded_decimals(int decimals, double given, double target, const CheckOptions& options);

// A named mistake recognised in a step, or in one cell.
struct Diagnosis {
    std::string key;       // stable name for tests, e.g. "scores_no_transpose"
    std::string mistake;   // one sentence: what was done
    std::string correct;   // the correct operation
    std::string carried;   // set when the mistake was made in an earlier, unanswered step:
                           // the id of that step (the answer follows from it)
};

struct CellCheck {
    arma::uword row = 0;   // 0-based
    arma::uword col = 0;   // 0-based
    const AnswerCell* answer = nullptr;
    double expected = 0.0;  // the true value (from the trace)
    Verdict verdict = Verdict::right;
    int decimals = 0;       // graded at (graded_decimals): expected_rounded is the true value at these
    // A wrong cell's own diagnosis: the mistake that gives this number alone
    // (from the true inputs and the learner's earlier answers), another cell's
    // value, or too few decimals (grade_cell); none for the others.
    std::optional<Diagnosis> diagnosis;
};

struct StepCheck {
    const StepAnswer* answer = nullptr;
    const Step* step = nullptr;            // the true values, in the trace
    bool shape_ok = true;                  // false: cells is empty, both shapes are reported
    bool token_rows = true;                // its rows are tokens (a weight's gradient has the weight's rows)
    std::vector<CellCheck> cells;          // the answered cells, row by row
    std::vector<std::string> follows_from; // earlier answers the consistent cells follow from, as step_label names them
    bool follows_rounding_only = false;    // those answers were right, only rounded: no error is carried
    arma::mat carried_rounding;            // per cell: how far the learner's rounding upstream may move it (true shape)
    std::optional<Diagnosis> diagnosis;
    double score = 0.0;                    // points earned: max_score × (right + consistent) / the step's cells
    double max_score = 0.0;                // the rubric's points for this step (1 without a rubric)

    std::size_t count(Verdict verdict) const;
    std::size_t blank() const;             // cells of the step not answered (all of them for a wrong shape)
    bool has_mistake() const { return !shape_ok || count(Verdict::wrong) > 0; }
};

// A step the rubric gives points to that the learner did not answer.
struct UnansweredStep {
    StepId id = StepId::inputs;
    int head = 0;
    double max_score = 0.0;
};

struct CheckReport {
    std::string answers_source;
    CheckOptions options;
    std::vector<StepCheck> steps;  // the answered steps, in the order of the trace
    std::vector<UnansweredStep> unanswered;  // the rubric's steps left out, in the order of the trace
    std::vector<std::string> not_graded;  // answers left out by --steps and --head, as step_label names them
    std::size_t blank_cells = 0;  // the cells of the steps named with no number given (Answers::blank)

    bool correct() const;  // some answer given, and none with a mistake
    // The earliest step holding a mistake, in the order of the step table (then by head), or nullptr.
    const StepCheck* first_mistake() const;
    double score() const;
    double max_score() const;
};

// Grades every answer. The report points into `model`, `trace` and `answers`,
// which must outlive it.
CheckReport check_answers(const Model& model, const Trace& trace, const Answers& answers, const CheckOptions& options);

// A step answered with `rows` × `cols` that counts the key/value heads where
// the query heads belong (n × G·d_v for the heads side by side, n × H·d_v):
// kv_heads_counted. A lesson's shape question and check's answers of the
// wrong shape alike.
std::optional<Diagnosis> shape_mistake(const Model& model, const Step& step, arma::uword rows, arma::uword cols);

// The classic mistake that one answered step shows, looked for whether or not
// the step holds a wrong cell (check_answers looks only in wrong steps). For
// tests: a correct answer must show none.
std::optional<Diagnosis> diagnose_answer(const Model& model, const Trace& trace, const Answers& answers,
                                         StepId id, int head, const CheckOptions& options);

// "weights" for one head, "weights (head 2)" with several.
std::string step_label(const Trace& trace, StepId id, int head);

}  // namespace qkv
