// The exercise test of `qkv init --student` (see exercise.hpp): each classic
// mistake simulated with check's catalogue, on the true values, and compared
// cell by cell with the true step and with the step's other mistakes.
#include "check/exercise.hpp"

#include "check/catalogue.hpp"
#include "check/diagnose.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace qkv::checking {

namespace {

// Two values are clearly apart at two decimals when they differ by more than
// one and a half hundredths: either one, rounded to two decimals, is then more
// than half a hundredth from the other, so `qkv check` marks it wrong for the
// other whichever way a tie rounds. A mistake that `check` matches more loosely
// (rounding_slack: heads averaged or added up from rounded head outputs) needs
// that many hundredths more. −∞ is apart from every finite value.
constexpr double k_apart = 0.015;

bool apart(double a, double b, double margin) {
    if (std::isnan(a) || std::isnan(b)) {
        return true;  // a cell with no value matches no answer
    }
    if (!std::isfinite(a) || !std::isfinite(b)) {
        return a != b;
    }
    return std::fabs(a - b) > margin;
}

// The cells in which two values of a step are clearly apart; every cell when
// their shapes differ (an answer of one shape is wrong for the other).
arma::uword cells_apart(const arma::mat& A, const arma::mat& B, double margin) {
    if (A.n_rows != B.n_rows || A.n_cols != B.n_cols) {
        return std::max(A.n_elem, B.n_elem);
    }
    arma::uword count = 0;
    for (arma::uword k = 0; k < A.n_elem; ++k) {
        count += apart(A(k), B(k), margin) ? 1 : 0;
    }
    return count;
}

// No unmasked weight of a row with more than one key to attend rounds to 0 or 1 at two decimals.
std::optional<ExerciseFlaw> saturated_weight(const Model& model, const Trace& trace) {
    const arma::mat allowed = model.allowed();
    for (const Step& step : trace.steps) {
        if (step.id != StepId::weights) {
            continue;
        }
        for (arma::uword i = 0; i < step.values.n_rows; ++i) {
            if (arma::accu(allowed.row(i)) < 2.0) {
                continue;  // a single key: its weight is 1 by definition
            }
            for (arma::uword j = 0; j < step.values.n_cols; ++j) {
                const double hundredths = std::round(step.values(i, j) * 100.0);
                if (allowed(i, j) != 0.0 && (hundredths <= 0.0 || hundredths >= 100.0)) {
                    return ExerciseFlaw{FlawKind::saturated,
                                        "weights[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]" +
                                            (trace.dims.heads > 1 ? "@" + std::to_string(step.head) : "") +
                                            " rounds to " + (hundredths <= 0.0 ? "0" : "1") + " at two decimals"};
                }
            }
        }
    }
    return std::nullopt;
}

// One mistake's value of the step it is made in.
struct Simulated {
    const Mistake* mistake = nullptr;
    const arma::mat* value = nullptr;
};

// The mistakes of one step that `check` looks for in an answer to it (those of
// several steps at once are only named from later steps).
std::vector<Simulated> simulated_in(const std::vector<Mistake>& mistakes, const StepKey& key) {
    std::vector<Simulated> result;
    for (const auto& mistake : mistakes) {
        if (mistake.several_steps) {
            continue;
        }
        for (const auto& [made_in, value] : mistake.values) {
            if (made_in == key) {
                result.push_back({&mistake, &value});
            }
        }
    }
    return result;
}

std::optional<ExerciseFlaw> mistakes_flaw(const Model& model, const Trace& trace) {
    // the learner's values: every step as it truly is
    const Values truth = true_values(trace);
    for (const Step& step : trace.steps) {
        const StepKey key{step.id, step.head};
        // no rounding: an exercise tells the classic mistakes of method apart
        const std::vector<Mistake> mistakes = mistakes_in(model, trace, key, truth, Working{.rounded_below = 0});
        const std::vector<Simulated> simulated = simulated_in(mistakes, key);
        const std::string where = step_label(trace, step.id, step.head);
        for (const Simulated& classic : simulated) {
            const std::string& id = classic.mistake->key;
            if (!is_classic_mistake(id)) {
                continue;
            }
            if (classic.value->has_nan()) {
                return ExerciseFlaw{FlawKind::no_value, id + " has no value in some cell of " + where + " (0/0)"};
            }
            const double margin = k_apart + 0.01 * classic.mistake->rounding_slack;
            if (cells_apart(*classic.value, step.values, margin) < k_min_evidence) {
                return ExerciseFlaw{FlawKind::too_few, id + " changes fewer than two cells of " + where};
            }
            for (const Simulated& other : simulated) {
                if (other.mistake->key == id) {
                    continue;  // the same diagnosis either way
                }
                const double both =
                    k_apart + 0.01 * std::max(classic.mistake->rounding_slack, other.mistake->rounding_slack);
                if (cells_apart(*classic.value, *other.value, both) < k_min_evidence) {
                    return ExerciseFlaw{FlawKind::same_as, id + " and " + other.mistake->key +
                                                               " give values of " + where +
                                                               " that differ in fewer than two cells"};
                }
            }
        }
    }
    return std::nullopt;
}

}  // namespace

bool is_classic_mistake(std::string_view diagnosis_id) {
    const auto named = named_mistakes();
    return std::any_of(named.begin(), named.end(), [diagnosis_id](const MistakeRow* row) {
        return row->classic && row->id == diagnosis_id;
    });
}

std::optional<ExerciseFlaw> exercise_flaw(const Model& model, const Trace& trace) {
    const arma::uword d_k = model.d_k();
    if (model.scale_kind == ScaleKind::sqrt_dk && d_k > 1 && d_k * d_k == model.d_model()) {
        return ExerciseFlaw{FlawKind::square_root, "d_k = " + std::to_string(d_k) + " is √d_model = √" +
                                                       std::to_string(model.d_model())};
    }
    if (auto flaw = saturated_weight(model, trace)) {
        return flaw;
    }
    return mistakes_flaw(model, trace);
}

std::uint64_t fnv1a_64(std::string_view bytes) {
    std::uint64_t hash = 14695981039346656037ULL;
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    return hash;
}

std::uint64_t student_seed(std::string_view id, int draw) {
    return fnv1a_64(std::string(id) + "#" + std::to_string(draw));
}

}  // namespace qkv::checking
