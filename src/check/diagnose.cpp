// The search for the mistake that explains a wrong answer: the mistakes of
// the step itself, a transpose, then the mistakes of earlier unanswered steps
// carried forward (the catalogue of mistakes is mistakes.cpp).
#include "check/diagnose.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::checking {

const std::vector<Mistake>& Diagnoser::mistakes_at(std::size_t version, const StepKey& key) {
    auto found = m_mistakes.find({version, key});
    if (found == m_mistakes.end()) {
        found = m_mistakes.emplace(std::make_pair(version, key), mistakes_in(m_model, m_trace, key, *m_versions[version]))
                    .first;
    }
    return found->second;
}

bool Diagnoser::explains(const arma::mat& candidate, const StepCheck& check, double rounding_slack) const {
    const StepAnswer& answer = *check.answer;
    if (candidate.n_rows != answer.n_rows || candidate.n_cols != answer.n_cols) {
        return false;
    }
    for (arma::uword i = 0; i < answer.n_rows; ++i) {
        for (arma::uword j = 0; j < answer.n_cols; ++j) {
            const AnswerCell& cell = answer.at(i, j);
            if (!cell.given) {
                continue;
            }
            CheckOptions options = m_options;
            if (rounding_slack > 0.0) {
                const double unit = std::pow(10.0, -cell.decimals);
                options.tolerance = (m_options.tolerance ? *m_options.tolerance : 0.5 * unit) + rounding_slack * unit;
            }
            if (!matches(cell.value, cell.decimals, candidate(i, j), options)) {
                return false;
            }
        }
    }
    // a mistake that gives the true value in every answered cell cannot be told
    // from a right answer (e.g. the transpose of symmetric scores)
    const arma::mat& truth = check.step->values;
    bool differs = candidate.n_rows != truth.n_rows || candidate.n_cols != truth.n_cols;
    for (arma::uword i = 0; i < answer.n_rows && !differs; ++i) {
        for (arma::uword j = 0; j < answer.n_cols && !differs; ++j) {
            const AnswerCell& cell = answer.at(i, j);
            differs = cell.given && !matches(candidate(i, j), cell.decimals, truth(i, j), m_options);
        }
    }
    if (!differs) {
        return false;
    }
    // every wrong cell must be explained by the mistake, not by a slip near the true value
    for (const auto& cell : check.cells) {
        if (cell.verdict == Verdict::wrong &&
            matches(candidate(cell.row, cell.col), cell.answer->decimals, cell.expected, m_options)) {
            return false;
        }
    }
    // Enough evidence: one wrong number matches some mistake or other by
    // chance (queries[1,1] = 0 fits swapped weights; scaled_scores[1,1] = 2 is
    // the unscaled score), so at least k_min_evidence wrong cells, every one of
    // them explained, the right cells all matched as well (above). An answer of
    // the wrong shape is wrong in every cell it gives.
    const std::size_t evidence = check.shape_ok ? check.count(Verdict::wrong) : answer.answered();
    return evidence >= k_min_evidence;
}

std::optional<arma::mat> Diagnoser::carried(const Values& learner, const Mistake& mistake, const StepKey& target) const {
    Values values = learner;
    std::set<StepKey> changed;
    for (const auto& [key, value] : mistake.values) {
        values[key] = std::make_shared<const arma::mat>(value);
        changed.insert(key);
    }
    // work forward, in the order of the trace, through the steps that read a changed one
    for (const auto& step : m_trace.steps) {
        const StepKey key{step.id, step.head};
        if (changed.count(key) != 0 || (m_answered.count(key) != 0 && !(key == target))) {
            continue;
        }
        const auto inputs = step_inputs(m_model, key);
        const bool affected = std::any_of(inputs.begin(), inputs.end(),
                                          [&changed](const StepKey& input) { return changed.count(input) != 0; });
        if (!affected) {
            if (key == target) {
                return std::nullopt;  // the mistake does not reach this step
            }
            continue;
        }
        auto value = recompute(m_model, key, values);
        if (!value) {
            return std::nullopt;
        }
        if (key == target) {
            return value;
        }
        values[key] = std::make_shared<const arma::mat>(std::move(*value));
        changed.insert(key);
    }
    return std::nullopt;
}

std::optional<Diagnosis> Diagnoser::diagnose(const StepCheck& check) {
    for (std::size_t version = 0; version < m_versions.size(); ++version) {
        if (auto found = diagnose(check, version)) {
            return found;
        }
    }
    return std::nullopt;
}

std::optional<Diagnosis> Diagnoser::diagnose(const StepCheck& check, std::size_t version) {
    const Values& learner = *m_versions[version];
    const StepKey target{check.answer->id, check.answer->head};
    // a mistake made in this very step
    for (const auto& mistake : mistakes_at(version, target)) {
        if (mistake.several_steps) {
            continue;
        }
        for (const auto& [key, value] : mistake.values) {
            if (key == target && explains(value, check, mistake.rounding_slack)) {
                return Diagnosis{mistake.key, mistake.mistake, mistake.correct, ""};
            }
        }
    }
    // rows and columns swapped, whatever the step
    if (target.id != StepId::scores) {
        if (auto value = recompute(m_model, target, learner); value && explains(value->t(), check, 0.0)) {
            return Diagnosis{"transposed", "Rows and columns are swapped: this is the transpose of the right answer.",
                             "rows are tokens: " + step_text(target.id) + " is " + std::to_string(value->n_rows) + " × " +
                                 std::to_string(value->n_cols),
                             ""};
        }
    }
    // a mistake made in an earlier step that is not answered, carried into this one
    std::vector<StepKey> earlier;
    for (const auto& step : m_trace.steps) {
        const StepKey key{step.id, step.head};
        if (key == target) {
            break;
        }
        earlier.push_back(key);
    }
    for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
        if (m_answered.count(*it) != 0) {
            continue;
        }
        for (const auto& mistake : mistakes_at(version, *it)) {
            const bool all_unanswered = std::all_of(mistake.values.begin(), mistake.values.end(), [this](const auto& entry) {
                return m_answered.count(entry.first) == 0;
            });
            if (!all_unanswered) {
                continue;
            }
            if (auto value = carried(learner, mistake, target); value && explains(*value, check, 0.0)) {
                return Diagnosis{mistake.key, mistake.mistake, mistake.correct,
                                 step_label(m_trace, it->id, it->head)};
            }
        }
    }
    return std::nullopt;
}

}  // namespace qkv::checking
