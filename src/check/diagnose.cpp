// The search for the mistake that explains a wrong answer: the mistakes of
// the step itself, a transpose, then the mistakes of earlier unanswered steps
// carried forward (the catalogue of mistakes is catalogue.hpp).
#include "check/diagnose.hpp"

#include "check/catalogue.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::checking {

const std::vector<Mistake>& Diagnoser::mistakes_at(std::size_t version, const StepKey& key) {
    auto found = m_mistakes.find({version, key});
    if (found == m_mistakes.end()) {
        found = m_mistakes
                    .emplace(std::make_pair(version, key),
                             mistakes_in(m_model, m_trace, key, *m_versions[version], m_working))
                    .first;
    }
    return found->second;
}

bool Diagnoser::explains(const arma::mat& candidate, const StepCheck& check, double rounding_slack,
                         const arma::mat* spread) const {
    const StepAnswer& answer = *check.answer;
    if (candidate.n_rows != answer.n_rows || candidate.n_cols != answer.n_cols) {
        return false;
    }
    // the room the learner's rounding upstream leaves each cell, as for error carried forward
    const bool has_carried = spread != nullptr && spread->n_rows == answer.n_rows && spread->n_cols == answer.n_cols;
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
            if (!matches(cell.value, cell.decimals, candidate(i, j), options,
                         (has_carried ? (*spread)(i, j) : 0.0) + shown_slack(m_options, cell.decimals))) {
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
    // every wrong cell must be explained by the mistake, not by a slip near the
    // true value: the mistake's value, written at the answer's decimals, is not
    // a right answer (0.3446 written 0.34 is the mistake's where the truth 0.3463
    // is 0.35; 0.3461 would be 0.35 too, and a slip)
    for (const auto& cell : check.cells) {
        if (cell.verdict != Verdict::wrong) {
            continue;
        }
        const double value = candidate(cell.row, cell.col);
        const double unit = std::pow(10.0, -cell.answer->decimals);
        const double written = std::isfinite(value) && !m_options.tolerance ? std::round(value / unit) * unit : value;
        if (matches(written, cell.answer->decimals, cell.expected, m_options)) {
            return false;
        }
    }
    // Enough evidence: one wrong number matches some mistake or other by
    // chance (queries[1,1] = 0 fits swapped weights; scaled_scores[1,1] = 2 is
    // the unscaled score), so at least min_evidence wrong cells, every one of
    // them explained, the right cells all matched as well (above). An answer of
    // the wrong shape is wrong in every cell it gives.
    const std::size_t evidence = check.shape_ok ? check.count(Verdict::wrong) : answer.answered();
    return evidence >= m_options.min_evidence;
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

Working Diagnoser::working_of(const CheckOptions& options) {
    Working working;  // at most 4 decimals, and fewer than a lesson's screen shows
    working.block_size = options.block_size;
    if (options.shown_decimals >= 0) {
        working.rounded_below = std::min(options.shown_decimals, working.rounded_below);
    }
    return working;
}

std::optional<Diagnosis> Diagnoser::diagnose(const StepCheck& check, bool method) {
    // a mistake of method before a slip of rounding, in whichever step
    for (const bool rounding : {false, true}) {
        if (!method && !rounding) {
            continue;
        }
        for (std::size_t version = 0; version < m_versions.size(); ++version) {
            if (auto found = diagnose(check, version, rounding)) {
                return found;
            }
        }
    }
    return std::nullopt;
}

std::optional<Diagnosis> Diagnoser::diagnose(const StepCheck& check, std::size_t version, bool rounding) {
    const Values& learner = *m_versions[version];
    const StepKey target{check.answer->id, check.answer->head};
    // a mistake made in this very step
    const std::vector<Mistake>& own = mistakes_at(version, target);
    for (std::size_t i = 0; i < own.size(); ++i) {
        const Mistake& mistake = own[i];
        if (mistake.several_steps || mistake.rounding != rounding) {
            continue;
        }
        for (const auto& [key, value] : mistake.values) {
            if (key == target && shows(version, target, i, value, check)) {
                return Diagnosis{mistake.key, mistake.mistake, mistake.correct, ""};
            }
        }
    }
    // rows and columns swapped, whatever the step (one number alone is another cell's, check.cpp)
    if (!rounding && target.id != StepId::scores && check.answer->answered() > 1) {
        const arma::mat spread = check.carried_rounding.t();
        if (auto value = recompute(m_model, target, learner); value && explains(value->t(), check, 0.0, &spread)) {
            // the rows of most steps are tokens; a weight's gradient has the weight's rows
            const bool token_rows = check.token_rows;
            const std::string shape = step_text(target.id) + " is " + std::to_string(value->n_rows) + " × " +
                                      std::to_string(value->n_cols);
            return Diagnosis{mistake_id("transposed"),
                             "Rows and columns are swapped: this is the transpose of the right answer.",
                             token_rows ? "rows are tokens: " + shape : "it has the weight's own shape: " + shape,
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
            if (!all_unanswered || mistake.rounding != rounding) {
                continue;
            }
            const auto value = carried(learner, mistake, target);
            const std::size_t index = static_cast<std::size_t>(&mistake - mistakes_at(version, *it).data());
            if (value && shows(version, *it, index, *value, check)) {
                return Diagnosis{mistake.key, mistake.mistake, mistake.correct,
                                 step_label(m_trace, it->id, it->head)};
            }
        }
    }
    return std::nullopt;
}

bool Diagnoser::shows(std::size_t version, const StepKey& made_in, std::size_t index, const arma::mat& value,
                      const StepCheck& check) {
    const Mistake& mistake = mistakes_at(version, made_in)[index];
    const bool own_step = made_in == StepKey{check.answer->id, check.answer->head};
    if (explains(value, check, own_step ? mistake.rounding_slack : 0.0)) {
        return true;
    }
    if (!near(value, check)) {
        return false;
    }
    // the learner's rounding in what the step the mistake was made in reads,
    // carried through as the mistake goes
    const StepKey target{check.answer->id, check.answer->head};
    const arma::mat spread = perturbed_spread(version, step_inputs(m_model, made_in), [&](const Values& moved) {
        const std::vector<Mistake> again = mistakes_in(m_model, m_trace, made_in, moved);
        if (index >= again.size() || again[index].key != mistake.key) {
            return std::optional<arma::mat>();
        }
        if (own_step) {
            for (const auto& [key, candidate] : again[index].values) {
                if (key == target) {
                    return std::optional<arma::mat>(candidate);
                }
            }
            return std::optional<arma::mat>();
        }
        return carried(moved, again[index], target);
    });
    return spread.n_rows == value.n_rows && spread.n_cols == value.n_cols &&
           explains(value, check, own_step ? mistake.rounding_slack : 0.0, &spread);
}

bool Diagnoser::near(const arma::mat& candidate, const StepCheck& check) const {
    const StepAnswer& answer = *check.answer;
    if (m_rounding == nullptr || candidate.n_rows != answer.n_rows || candidate.n_cols != answer.n_cols) {
        return false;
    }
    for (arma::uword i = 0; i < answer.n_rows; ++i) {
        for (arma::uword j = 0; j < answer.n_cols; ++j) {
            const AnswerCell& cell = answer.at(i, j);
            if (cell.given && !(std::fabs(cell.value - candidate(i, j)) <= 10 * std::pow(10.0, -cell.decimals))) {
                return false;
            }
        }
    }
    return true;
}

arma::mat Diagnoser::perturbed_spread(std::size_t version, const std::vector<StepKey>& inputs,
                                      const std::function<std::optional<arma::mat>(const Values&)>& value_of) const {
    constexpr std::size_t k_max_rounded_cells = 256;
    Values values = *m_versions[version];
    const auto base = value_of(values);
    if (!base || m_rounding == nullptr) {
        return {};
    }
    std::size_t rounded = 0;
    for (const auto& input : inputs) {
        if (m_rounding->count(input) != 0) {
            rounded += arma::accu(*m_rounding->at(input) > 0.0);
        }
    }
    arma::mat total(base->n_rows, base->n_cols, arma::fill::zeros);
    if (rounded > k_max_rounded_cells) {
        return total;
    }
    for (const auto& input : inputs) {
        if (m_rounding->count(input) == 0 || values.count(input) == 0) {
            continue;
        }
        const arma::mat& H = *m_rounding->at(input);
        const std::shared_ptr<const arma::mat> original = values.at(input);
        arma::mat moved = *original;
        if (moved.n_rows != H.n_rows || moved.n_cols != H.n_cols) {
            continue;
        }
        for (arma::uword k = 0; k < H.n_elem; ++k) {
            if (!(H(k) > 0.0) || !std::isfinite(moved(k))) {
                continue;
            }
            arma::mat change(base->n_rows, base->n_cols, arma::fill::zeros);
            for (const double sign : {-1.0, 1.0}) {
                moved(k) = (*original)(k) + sign * H(k);
                values[input] = std::make_shared<const arma::mat>(moved);
                const auto after = value_of(values);
                if (!after || after->n_rows != base->n_rows || after->n_cols != base->n_cols) {
                    continue;
                }
                arma::mat difference = arma::abs(*after - *base);
                difference.elem(arma::find_nonfinite(difference)).zeros();
                change = arma::max(change, difference);
            }
            moved(k) = (*original)(k);
            total += change;
        }
        values[input] = original;
    }
    return total;
}

}  // namespace qkv::checking
