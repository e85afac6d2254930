#include "check/recompute.hpp"

#include <stdexcept>

namespace qkv::checking {

std::optional<arma::mat> recompute(const Model& model, const StepKey& key, const Values& values) {
    try {
        return compute_step(model, key, values);
    } catch (const std::logic_error&) {
        // Armadillo reports products of the wrong sizes as logic errors
        return std::nullopt;
    }
}

Values true_values(const Trace& trace) {
    Values values;
    for (const Step& step : trace.steps) {
        values[{step.id, step.head}] = std::make_shared<const arma::mat>(step.values);
    }
    return values;
}

}  // namespace qkv::checking
