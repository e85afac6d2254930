// `qkv explain` for the backward pass.
#include "explain/explain.hpp"

#include "base/diagnostics.hpp"
#include "explain/numbers.hpp"

namespace qkv::explaining {

void explain_gradient(const Model&, const Trace&, Explanation& explanation, const RenderOptions&) {
    throw InputError(Diagnostic{"", 0, 0, "explain does not write out " + step_text(explanation.cell.step) + " cells",
                                "qkv run shows the gradients' values"});
}

}  // namespace qkv::explaining
