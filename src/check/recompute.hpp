// One step of attention recomputed from given values of the steps before it:
// the arithmetic of compute() (attention/attention.cpp), step by step, so that
// `check` can work a step out from the learner's own earlier answers, or from
// a mistaken version of one of them.
#pragma once

#include "attention/trace.hpp"
#include "model/model.hpp"

#include <compare>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv::checking {

struct StepKey {
    std::string id;
    int head = 0;  // 0 for steps that are not per head
    auto operator<=>(const StepKey&) const = default;
};

// Values by step; shared so that a variant of a whole set costs only pointers.
using Values = std::map<StepKey, std::shared_ptr<const arma::mat>>;

// The steps `key` is computed from (none for inputs, positional and context).
std::vector<StepKey> dependencies(const Model& model, const StepKey& key);

// The value of `key` computed from `values`, which must hold every dependency,
// with the model's hand rounding (round:) applied as compute() does. nullopt
// when the given values do not fit together (their shapes disagree).
std::optional<arma::mat> recompute(const Model& model, const StepKey& key, const Values& values);

// Softmax down each column (a classic mistake); a column of −∞ only gives NaN.
arma::mat softmax_columns(const arma::mat& S);

}  // namespace qkv::checking
