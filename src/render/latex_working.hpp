// A step's working as equations (latex_working() in latex.hpp), before
// latex_display() chooses among its layouts: the tests read each layout.
#pragma once

#include "attention/trace.hpp"
#include "render/render.hpp"

#include <armadillo>

#include <string>
#include <vector>

namespace qkv {

struct Model;  // model/model.hpp

// The working matrices are written out up to this size; a larger step has no
// working (its table still shows the numbers), so that a display stays readable.
inline constexpr arma::uword k_working_limit = 6;

// The working of `step` in the layouts latex_working() offers, widest first,
// each the content of a \[ … \] display:
//   one line:     Q = X W_Q = [X][W_Q] = [Q]
//   aligned:      Q &= X W_Q \\ &= [X][W_Q] \\ &= [Q]
//   one operand a line (when a line has several): … &= [X] \\ &\quad \cdot [W_Q] \\ …
// None for a step without a working worth writing (the inputs, RoPE, the
// gradients, a scale of none, an output without W_O) or with a matrix larger
// than k_working_limit in either dimension.
std::vector<std::string> latex_working_layouts(const Model& model, const Trace& trace, const Step& step,
                                               const RenderOptions& options);

}  // namespace qkv
