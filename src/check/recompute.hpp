// A step worked out from given values of the steps it reads, with the step
// table's arithmetic (attention/steps.hpp), so that `check` can recompute a
// step from the learner's own earlier answers, or from a mistaken version of
// one of them.
#pragma once

#include "attention/steps.hpp"
#include "attention/trace.hpp"
#include "model/model.hpp"

#include <optional>

namespace qkv::checking {

using Values = StepValues;

// The value of `key` computed from `values`, which must hold every step it
// reads, with the model's hand rounding (round:) applied as compute() does.
// nullopt when the given values do not fit together (their shapes disagree).
std::optional<arma::mat> recompute(const Model& model, const StepKey& key, const Values& values);

// Every step of the trace as it truly is: the values of a learner who made no mistake.
Values true_values(const Trace& trace);

}  // namespace qkv::checking
