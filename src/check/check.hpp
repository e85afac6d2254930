// `qkv check`: grade a learner's hand calculations against the trace.
//
// Each answered cell is
//   right       — it equals the true value rounded to the decimals it is written
//                 with (or lies within --tolerance of it);
//   consistent  — it is not right, but it follows from the learner's own earlier
//                 answers (error carried forward, as exam markers do);
//   wrong       — neither.
// A step with a wrong cell, or of the wrong shape, is looked up among the
// classic mistakes (diagnose.cpp) so that the report can name it.
#pragma once

#include "attention/trace.hpp"
#include "check/answers.hpp"
#include "model/model.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

enum class Verdict { right, wrong, consistent };

const char* verdict_name(Verdict verdict);  // "right", "wrong", "consistent"

struct CheckOptions {
    std::optional<double> tolerance;  // absolute; unset = rounding-aware
};

// True when a number written with `decimals` digits after the point counts as
// `target`: |given − target| ≤ half a unit in its last place (both roundings of
// an exact tie count), or ≤ the tolerance. −∞ only matches −∞; NaN never.
bool matches(double given, int decimals, double target, const CheckOptions& options);

struct CellCheck {
    arma::uword row = 0;   // 0-based
    arma::uword col = 0;   // 0-based
    const AnswerCell* answer = nullptr;
    double expected = 0.0;  // the true value (from the trace)
    Verdict verdict = Verdict::right;
};

// A classic mistake recognised in a step.
struct Diagnosis {
    std::string key;       // stable name for tests, e.g. "scores_no_transpose"
    std::string mistake;   // one sentence: what was done
    std::string correct;   // the correct operation
    std::string carried;   // set when the mistake was made in an earlier, unanswered step:
                           // the id of that step (the answer follows from it)
};

struct StepCheck {
    const StepAnswer* answer = nullptr;
    const Step* step = nullptr;            // the true values, in the trace
    bool shape_ok = true;                  // false: cells is empty, both shapes are reported
    std::vector<CellCheck> cells;          // the answered cells, row by row
    std::vector<std::string> follows_from; // earlier answers the consistent cells follow from, as step_label names them
    std::optional<Diagnosis> diagnosis;

    std::size_t count(Verdict verdict) const;
    bool has_mistake() const { return !shape_ok || count(Verdict::wrong) > 0; }
};

struct CheckReport {
    std::string answers_source;
    CheckOptions options;
    std::vector<StepCheck> steps;  // the answered steps, in the order of the trace

    bool correct() const;
    // The earliest step holding a mistake, in the order of the step table (then by head), or nullptr.
    const StepCheck* first_mistake() const;
};

// Grades every answer. The report points into `model`, `trace` and `answers`,
// which must outlive it.
CheckReport check_answers(const Model& model, const Trace& trace, const Answers& answers, const CheckOptions& options);

// The classic mistake that one answered step shows, looked for whether or not
// the step holds a wrong cell (check_answers looks only in wrong steps). For
// tests: a correct answer must show none.
std::optional<Diagnosis> diagnose_answer(const Model& model, const Trace& trace, const Answers& answers,
                                         StepId id, int head, const CheckOptions& options);

// "weights" for one head, "weights (head 2)" with several.
std::string step_label(const Trace& trace, StepId id, int head);

}  // namespace qkv
