// The divisor of the scores in words (divisor.hpp): the one place that spells
// each kind of scale.
#include "attention/divisor.hpp"

#include "base/numbers.hpp"

#include <cmath>

namespace qkv {

Divisor divisor_of(const Model& model) {
    Divisor d;
    const std::string d_k = std::to_string(model.d_k());
    switch (model.scale_kind) {
        case ScaleKind::sqrt_dk:
            d.root = true;
            d.symbol = "√d_k";
            d.worked = "√" + d_k;
            d.exact = root_text(model.d_k());
            d.named = "√d_k = √" + d_k;
            d.latex = "\\sqrt{d_k}";
            d.latex_worked = "\\sqrt{" + d_k + "}";
            if (const double mscale = model.mscale(); mscale != 1.0) {
                // mla with YaRN's mscale_all_dim: transformers' scaling = d_k^−0.5 · mscale²
                const std::string m = fixed(mscale, 4);
                d.symbol = "(√d_k / mscale²)";
                d.worked = "(√" + d_k + " / " + m + "²)";
                d.exact = d.worked + " ≈ " + fixed(model.scale(), 4);
                d.named = "√d_k / mscale² = √" + d_k + " / " + m + "²";
                d.latex = "\\sqrt{d_k} / m^2";
                d.latex_worked = "\\sqrt{" + d_k + "} / " + m + "^2";
            }
            break;
        case ScaleKind::divisor:
            d.symbol = d.worked = d.exact = d.latex = d.latex_worked = readable(model.scale_divisor);
            d.named = "the example's scale " + d.symbol;
            break;
        case ScaleKind::none:
            d.scaled = false;
            d.symbol = d.worked = d.exact = d.latex = d.latex_worked = "1";
            d.named = "1 (scale: none)";
            break;
    }
    return d;
}

std::string divided(const Model& model, std::string_view what, bool worked) {
    const Divisor d = divisor_of(model);
    const std::string w(what);
    if (!d.scaled) {
        return w;
    }
    std::string text = w + " / " + d.symbol;
    if (worked && d.worked != d.symbol) {
        text += " = " + w + " / " + d.worked;
    }
    return text;
}

std::string divided_latex(const Model& model, std::string_view what) {
    const Divisor d = divisor_of(model);
    const std::string w(what);
    if (!d.scaled) {
        return w;
    }
    if (!d.root) {
        return w + " / " + d.latex;
    }
    return "\\frac{" + w + "}{" + d.latex + "} = \\frac{" + w + "}{" + d.latex_worked + "}";
}

std::string root_text(arma::uword d) {
    const auto root = static_cast<arma::uword>(std::llround(std::sqrt(static_cast<double>(d))));
    if (root * root == d) {
        return "√" + std::to_string(d) + " = " + std::to_string(root);
    }
    return "√" + std::to_string(d) + " ≈ " + fixed(std::sqrt(static_cast<double>(d)), 4);
}

}  // namespace qkv
