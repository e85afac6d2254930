// What the two halves of check's catalogue of mistakes share: mistakes.cpp
// makes the forward pass's mistakes and chooses a step's maker,
// mistakes_backward.cpp makes the backward pass's. Rows are tokens: Q = X·W_Q.
#pragma once

#include "check/diagnose.hpp"

#include <string>
#include <vector>

namespace qkv::checking {

// Looks a step's value up; the learner's values hold every step before the one diagnosed.
class LearnerValues {
public:
    LearnerValues(const Model& model, const Values& values) : m_model(model), m_values(values) {}

    const arma::mat& operator()(StepId id, int head = 0) const { return *m_values.at({id, head}); }
    bool has(StepId id, int head = 0) const { return m_values.count({id, head}) != 0; }

    // What the projections read: (X + P) or X; keys and values read C in cross-attention.
    const arma::mat& query_source() const { return *m_values.at(step_inputs(m_model, {StepId::queries, 1}).front()); }
    const arma::mat& key_source() const { return *m_values.at(step_inputs(m_model, {StepId::keys, 1}).front()); }

private:
    const Model& m_model;
    const Values& m_values;
};

// One mistake made in one step: its id (a row of catalogue.cpp), what was
// done, the correct form, and the value the step takes.
Mistake one(std::string key, std::string mistake, std::string correct, const StepKey& step, arma::mat value,
            double rounding_slack = 0.0);

// 2.5, or 0.1667: at most four decimals, without trailing zeros.
std::string number_text(double value);

// The backward pass's mistakes, step by step (mistakes_backward.cpp).
void grad_head_output_mistakes(const Model& model, const LearnerValues& L, const StepKey& key,
                               std::vector<Mistake>& out);
void softmax_backward_mistakes(const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out);
void grad_scale_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out);
void grad_queries_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out);
void grad_keys_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out);
void grad_values_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out);
void grad_weight_mistakes(const Model& model, const Values& learner, const StepKey& key, std::vector<Mistake>& out);
void grad_inputs_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out);

}  // namespace qkv::checking
