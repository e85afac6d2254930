// Grading: every answered cell against the true value and against the value
// worked out from the learner's own earlier answers (error carried forward).
#include "check/check.hpp"

#include "check/diagnose.hpp"
#include "check/recompute.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <set>

namespace qkv {

namespace {

// Equal up to the last bits of a double (an answer that is the exact value).
bool same_value(double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b)) {
        return a == b;
    }
    return std::fabs(a - b) <= 1e-12 * std::max(1.0, std::fabs(b));
}

void add_unique(std::vector<std::string>& to, const std::vector<std::string>& from) {
    for (const auto& item : from) {
        if (std::find(to.begin(), to.end(), item) == to.end()) {
            to.push_back(item);
        }
    }
}

}  // namespace

const char* verdict_name(Verdict verdict) {
    switch (verdict) {
        case Verdict::right:
            return "right";
        case Verdict::wrong:
            return "wrong";
        case Verdict::consistent:
            return "consistent";
    }
    return "wrong";
}

bool matches(double given, int decimals, double target, const CheckOptions& options) {
    if (std::isnan(given) || std::isnan(target)) {
        return false;
    }
    if (std::isinf(given) || std::isinf(target)) {
        return given == target;
    }
    const double allowed = options.tolerance ? *options.tolerance : 0.5 * std::pow(10.0, -decimals);
    // slack for binary floating point: 0.45 is stored as 0.45000000000000001, and a tie must still count
    const double slack = allowed * 1e-9 + 4 * DBL_EPSILON * std::max(std::fabs(given), std::fabs(target));
    return std::fabs(given - target) <= allowed + slack;
}

std::size_t StepCheck::count(Verdict verdict) const {
    return static_cast<std::size_t>(
        std::count_if(cells.begin(), cells.end(), [verdict](const CellCheck& cell) { return cell.verdict == verdict; }));
}

namespace {

// The earliest step holding a mistake, in the order of the step table (then by head), or nullptr.
const StepCheck* earliest_mistake(const std::vector<StepCheck>& steps) {
    const StepCheck* first = nullptr;
    for (const auto& step : steps) {
        if (!step.has_mistake()) {
            continue;
        }
        const StepKey order{step.answer->id, step.answer->head};
        if (first == nullptr || order < StepKey{first->answer->id, first->answer->head}) {
            first = &step;
        }
    }
    return first;
}

}  // namespace

bool CheckReport::correct() const {
    return std::none_of(steps.begin(), steps.end(), [](const StepCheck& step) { return step.has_mistake(); });
}

const StepCheck* CheckReport::first_mistake() const { return earliest_mistake(steps); }

std::string step_label(const Trace& trace, StepId id, int head) {
    if (head != 0 && trace.dims.heads > 1) {
        return step_text(id) + " (head " + std::to_string(head) + ")";
    }
    return step_text(id);
}

std::size_t StepAnswer::answered() const {
    return static_cast<std::size_t>(
        std::count_if(cells.begin(), cells.end(), [](const AnswerCell& cell) { return cell.given; }));
}

namespace {

// The verdicts, and the learner's work step by step in two versions: `learner`
// holds their numbers as written (rounded ones included), `precise` the same
// work done without rounding — their mistakes kept, their rounding undone —
// for learners who wrote rounded values but calculated on with the full ones.
struct Grading {
    CheckReport report;
    checking::Values learner;
    checking::Values precise;
    std::set<StepKey> answered;
};

// What grading one step's cells found besides their verdicts.
struct CellsGraded {
    bool deviates = false;  // some given number is not the true value
    bool partial = false;   // some cell is left blank
};

// Grades each given cell of an answer of the right shape against the true
// value and against the values worked out from the learner's earlier answers
// (as written, and without their rounding), and writes the learner's numbers
// into `as_written` and `unrounded`, which the later steps read.
CellsGraded grade_cells(StepCheck& check, const arma::mat& from_learner, const arma::mat& from_precise,
                        const CheckOptions& options, arma::mat& as_written, arma::mat& unrounded) {
    const StepAnswer& answer = *check.answer;
    const arma::mat& expected = check.step->values;
    CellsGraded graded;
    for (arma::uword i = 0; i < answer.n_rows; ++i) {
        for (arma::uword j = 0; j < answer.n_cols; ++j) {
            const AnswerCell& cell = answer.at(i, j);
            if (!cell.given) {
                graded.partial = true;
                continue;
            }
            const double value = cell.value;
            const bool follows_precise = matches(value, cell.decimals, from_precise(i, j), options);
            Verdict verdict = Verdict::wrong;
            if (matches(value, cell.decimals, expected(i, j), options)) {
                verdict = Verdict::right;
            } else if (follows_precise || matches(value, cell.decimals, from_learner(i, j), options)) {
                verdict = Verdict::consistent;
            }
            check.cells.push_back({i, j, &cell, expected(i, j), verdict});
            as_written(i, j) = value;
            if (verdict == Verdict::wrong) {
                unrounded(i, j) = value;
            } else if (follows_precise) {
                unrounded(i, j) = from_precise(i, j);
            } else {
                unrounded(i, j) = verdict == Verdict::right ? expected(i, j) : value;
            }
            graded.deviates = graded.deviates || !same_value(value, expected(i, j));
        }
    }
    return graded;
}

// Grades `answers`, which are in the order of the trace.
Grading grade(const Model& model, const Trace& trace, const Answers& answers, const CheckOptions& options) {
    Grading grading;
    CheckReport& report = grading.report;
    report.answers_source = answers.source;
    report.options = options;

    std::map<StepKey, const StepAnswer*> answer_of;
    for (const auto& answer : answers.steps) {
        answer_of[{answer.id, answer.head}] = &answer;
    }

    checking::Values& learner = grading.learner;
    checking::Values& precise = grading.precise;
    std::set<StepKey>& answered = grading.answered;
    // The learner's own answers that differ from the true values and that each
    // step's value depends on, nearest first: "follows from your weights".
    std::map<StepKey, std::vector<std::string>> sources;

    for (const auto& step : trace.steps) {
        const StepKey key{step.id, step.head};
        const arma::mat& expected = step.values;
        const arma::mat from_learner = checking::recompute(model, key, learner).value_or(expected);
        const arma::mat from_precise = checking::recompute(model, key, precise).value_or(expected);
        std::vector<std::string> upstream;
        for (const auto& input : step_inputs(model, key)) {
            add_unique(upstream, sources[input]);
        }
        std::vector<std::string> own = upstream;
        arma::mat as_written = from_learner;
        arma::mat unrounded = from_precise;

        if (const auto found = answer_of.find(key); found != answer_of.end()) {
            const StepAnswer& answer = *found->second;
            StepCheck check;
            check.answer = &answer;
            check.step = &step;
            check.shape_ok = answer.n_rows == expected.n_rows && answer.n_cols == expected.n_cols;
            answered.insert(key);
            if (check.shape_ok) {
                const CellsGraded graded = grade_cells(check, from_learner, from_precise, options, as_written, unrounded);
                if (check.count(Verdict::consistent) > 0) {
                    check.follows_from = upstream;
                }
                if (graded.deviates) {
                    own = {step_label(trace, step.id, step.head)};
                    if (graded.partial) {
                        add_unique(own, upstream);
                    }
                }
            }
            report.steps.push_back(std::move(check));
        }
        sources[key] = std::move(own);
        learner[key] = std::make_shared<const arma::mat>(std::move(as_written));
        precise[key] = std::make_shared<const arma::mat>(std::move(unrounded));
    }

    return grading;
}

}  // namespace

CheckReport check_answers(const Model& model, const Trace& trace, const Answers& answers, const CheckOptions& options) {
    Grading grading = grade(model, trace, answers, options);
    // name the classic mistake behind each wrong step
    checking::Diagnoser diagnoser(model, trace, {&grading.learner, &grading.precise}, grading.answered, options);
    for (auto& check : grading.report.steps) {
        if (check.has_mistake()) {
            check.diagnosis = diagnoser.diagnose(check);
        }
    }
    return std::move(grading.report);
}

std::optional<Diagnosis> diagnose_answer(const Model& model, const Trace& trace, const Answers& answers,
                                         StepId id, int head, const CheckOptions& options) {
    Grading grading = grade(model, trace, answers, options);
    checking::Diagnoser diagnoser(model, trace, {&grading.learner, &grading.precise}, grading.answered, options);
    for (const auto& check : grading.report.steps) {
        if (check.answer->id == id && check.answer->head == head) {
            return diagnoser.diagnose(check);
        }
    }
    return std::nullopt;
}

}  // namespace qkv
