// The divisor of the scores in words, written once for each kind of scale
// (√d_k, the example's own number, none): the steps' formulas, explain,
// worksheets, decode's notes and check's diagnoses all name it through these.
#pragma once

#include "model/model.hpp"

#include <string>
#include <string_view>

namespace qkv {

struct Divisor {
    bool scaled = true;     // false for scale: none, which divides by 1
    bool root = false;      // the divisor is √d_k
    std::string symbol;     // "√d_k", or the example's number "2.5"; "1" for none
    std::string worked;     // "√3", "2.5", "1": the symbol with the example's numbers
    std::string exact;      // "√3 ≈ 1.7321", "√4 = 2", "2.5", "1": worked, and its value
    std::string named;      // "√d_k = √3", "the example's scale 2.5", "1 (scale: none)"
    std::string latex;      // "\sqrt{d_k}", "2.5", "1"
    std::string latex_worked;  // "\sqrt{3}", "2.5", "1"
};

Divisor divisor_of(const Model& model);

// `what` divided by the divisor: "S / √d_k = S / √3" (worked), "S / √d_k",
// "S / 2.5", or "S" itself for scale: none.
std::string divided(const Model& model, std::string_view what, bool worked = true);
// The same in LaTeX: "\frac{S}{\sqrt{d_k}} = \frac{S}{\sqrt{3}}", "S / 2.5", "S".
std::string divided_latex(const Model& model, std::string_view what);

// "√4 = 2" for a whole root, "√3 ≈ 1.7321" (four decimals) otherwise.
std::string root_text(arma::uword d);

}  // namespace qkv
