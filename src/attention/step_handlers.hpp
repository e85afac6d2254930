// A table indexed by step id, for a layer above attention/ that handles each
// step its own way (explain's cells and operands, the LaTeX working), as LLVM's
// InstVisitor does: the layer names the steps it handles one by one, and every
// other step takes its category's fallback. The table is built at compile
// time, and does not compile when a step is named twice, or when a step has
// neither an entry nor a fallback (a category whose fallback is left out
// must have an entry for each of its steps). A new step is then handled where
// its category is, or the build says where it is not.
#pragma once

#include "attention/step_id.hpp"

#include <array>
#include <cstddef>
#include <optional>

namespace qkv {

// What a step is to a reader: given by the example (inputs, positional,
// context, the weights and biases), computed by the forward pass (an
// elementwise step of the scores among them, k_elementwise_steps), or a
// gradient of the backward pass (the gradient of an elementwise step's output
// among them).
enum class StepCategory { given, forward, elementwise, gradient, elementwise_gradient };

constexpr StepCategory step_category(StepId id) {
    if (is_elementwise(id)) {
        return StepCategory::elementwise;
    }
    if (is_elementwise_gradient(id)) {
        return StepCategory::elementwise_gradient;
    }
    switch (step_kind(id)) {
        case StepKind::given:
            return StepCategory::given;
        case StepKind::forward:
            return StepCategory::forward;
        case StepKind::gradient:
            return StepCategory::gradient;
    }
    return StepCategory::forward;
}

constexpr std::size_t step_index(StepId id) { return static_cast<std::size_t>(id); }

template <typename Handler>
struct StepHandler {
    StepId id;
    Handler handler;
};

// The handler of each category's steps that have no entry; none when every
// step of the category must have one. (Optional rather than a null handler:
// GCC cannot compare a member function pointer with null at compile time
// under UndefinedBehaviorSanitizer.)
// An elementwise step without an entry takes `elementwise`, or `forward`
// when that is not given; the gradient of one's output likewise.
template <typename Handler>
struct StepFallbacks {
    std::optional<Handler> given{};
    std::optional<Handler> forward{};
    std::optional<Handler> gradient{};
    std::optional<Handler> elementwise{};
    std::optional<Handler> elementwise_gradient{};
};

template <typename Handler, std::size_t N>
consteval std::array<Handler, k_step_count> step_handlers(const StepHandler<Handler> (&entries)[N],
                                                          StepFallbacks<Handler> fallbacks) {
    std::array<Handler, k_step_count> table{};
    std::array<bool, k_step_count> named{};
    for (const StepHandler<Handler>& entry : entries) {
        if (named[step_index(entry.id)]) {
            throw "a step is named twice";  // not a constant expression: the table does not compile
        }
        named[step_index(entry.id)] = true;
        table[step_index(entry.id)] = entry.handler;
    }
    for (std::size_t i = 0; i < k_step_count; ++i) {
        if (named[i]) {
            continue;
        }
        std::optional<Handler> fallback;
        switch (step_category(static_cast<StepId>(i))) {
            case StepCategory::given:
                fallback = fallbacks.given;
                break;
            case StepCategory::forward:
                fallback = fallbacks.forward;
                break;
            case StepCategory::elementwise:
                fallback = fallbacks.elementwise ? fallbacks.elementwise : fallbacks.forward;
                break;
            case StepCategory::gradient:
                fallback = fallbacks.gradient;
                break;
            case StepCategory::elementwise_gradient:
                fallback = fallbacks.elementwise_gradient ? fallbacks.elementwise_gradient : fallbacks.gradient;
                break;
        }
        if (!fallback) {
            throw "a step has no handler, and its category no fallback";  // does not compile
        }
        table[i] = *fallback;
    }
    return table;
}

}  // namespace qkv
