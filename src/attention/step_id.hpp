// The steps of attention by name. What each step is — its title, when it
// exists, what it reads and how it is computed — is the step table
// (attention/steps.hpp); this header only names the steps, so that the trace
// and everything that reads it can refer to them.
#pragma once

#include <array>
#include <bitset>
#include <compare>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

// In the order the steps are computed: one enumerator for each row of
// steps.def, which is the order of the step table and of the man page's STEPS.
// The layers above attention/ handle steps through tables that fall back by
// category (step_handlers.hpp); the switches over StepId inside attention/
// have no default, so the compiler lists them when a step is added (but for
// the engine's whole gradients, whose default is every step it hands back
// head by head or does not compute).
enum class StepId {
#define QKV_STEP(step, kind, ...) step,
#include "attention/steps.def"
};
inline constexpr std::size_t k_step_count = 0
#define QKV_STEP(step, kind, ...) +1
#include "attention/steps.def"
    ;

// What a step is (the kind of its row in steps.def): given by the example
// (inputs, positions, context, the weights and biases), computed by the
// forward pass, or a gradient of the backward pass.
enum class StepKind { given, forward, gradient };
inline constexpr StepKind k_step_kinds[] = {
#define QKV_STEP(step, kind, ...) StepKind::kind,
#include "attention/steps.def"
};
constexpr StepKind step_kind(StepId id) { return k_step_kinds[static_cast<std::size_t>(id)]; }

// The steps of the scores that change each number by itself (StepRow::elementwise
// says how), after scaled_scores and before the bias and the mask, each with
// the gradient of its output. The engine applies them to its blocks in this
// order, and the readers that handle steps one by one (step_handlers.hpp)
// handle them as a category of their own.
struct ElementwiseStep {
    StepId id;
    StepId gradient;
};
inline constexpr std::array<ElementwiseStep, 1> k_elementwise_steps{{
    {StepId::capped_scores, StepId::grad_capped_scores},  // softcap: c·tanh(s/c)
}};

constexpr bool is_elementwise(StepId id) {
    for (const ElementwiseStep& step : k_elementwise_steps) {
        if (step.id == id) {
            return true;
        }
    }
    return false;
}
// The gradient of an elementwise step's output: the softmax's gradient when
// no elementwise step follows it, as grad_scaled_scores is without one.
constexpr bool is_elementwise_gradient(StepId id) {
    for (const ElementwiseStep& step : k_elementwise_steps) {
        if (step.gradient == id) {
            return true;
        }
    }
    return false;
}

// A set of steps, by their place in the table: an example's (steps_of in steps.hpp).
using StepSet = std::bitset<k_step_count>;

// Every step id, in order.
std::vector<StepId> all_steps();

// One step of one head: head is 1-based for per-head steps, 0 for the others.
struct StepKey {
    StepId id = StepId::inputs;
    int head = 0;
    auto operator<=>(const StepKey&) const = default;
};

// The id as users write it ("scaled_scores").
std::string_view step_name(StepId id);
std::string step_text(StepId id);  // the same as a std::string, for building messages
// Writes the id as users write it.
std::ostream& operator<<(std::ostream& out, StepId id);
// The step a user's id names, or nullopt.
std::optional<StepId> find_step(std::string_view name);
// Every id as written, in order, for "did you mean" hints.
std::vector<std::string> step_names();
// "inputs, positional, …, output", for hints.
std::string step_name_list();
// Computed once per head (query head or key/value head) in every example.
bool is_per_head(StepId id);
// The same in this example: the weights' gradients are per head when the
// file writes one weight set per head (a `heads:` list).
struct Dims;
bool is_per_head(StepId id, const Dims& dims);
// A step of the backward pass: a gradient (grad_output: or --backward).
constexpr bool is_gradient(StepId id) { return step_kind(id) == StepKind::gradient; }
// One of the example's weights or biases (w_query … b_output): given, not
// computed, and shown as a table without a step number.
bool is_parameter(StepId id);
// Computed once per key/value head (keys, values, rotated_keys); with
// grouped-query attention there are fewer of these than query heads.
bool is_per_kv_head(StepId id);

}  // namespace qkv
