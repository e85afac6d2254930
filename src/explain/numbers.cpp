// The numbers of an explanation (see numbers.hpp), through the tables' own
// number formatting (render/table.hpp).
#include "explain/numbers.hpp"
#include "attention/divisor.hpp"

#include "attention/attention.hpp"
#include "base/numbers.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace qkv::explaining {

std::string divisor_text(const Model& model, const Numbers& number) {
    const Divisor divisor = divisor_of(model);
    return divisor.root ? divisor.named + " = " + number(model.scale()) : divisor.named;
}

std::string frequency_text(const Model& model, arma::uword k, arma::uword d, const Numbers& number) {
    const Rope& rope = *model.rope;
    const arma::uword d_rot = rope.rotated(d);
    const double theta = rope_frequency(rope, k, d, model.n());
    const std::string subscript = "θ_" + std::to_string(k);
    const std::string power = "^(−" + std::to_string(2 * k) + "/" + std::to_string(d_rot) + ")";
    Rope plain = rope;
    plain.scaling.reset();
    const double unscaled = rope_frequency(plain, k, d, model.n());
    const std::string plain_text = number(rope.base) + power + " = " + number(unscaled);
    if (!rope.scaling) {
        return subscript + " = " + plain_text;
    }
    const RopeScaling& scaling = *rope.scaling;
    const std::string factor = readable(scaling.factor);
    switch (scaling.type) {
        case RopeScalingType::linear:
            return subscript + " = " + plain_text + ", divided by the factor " + factor + " (linear): " + number(theta);
        case RopeScalingType::dynamic: {
            const double positions = rope_max_positions(rope);
            const double seen = std::max(static_cast<double>(model.n()), positions);
            const double dim = static_cast<double>(d_rot);
            const double base = rope.base * std::pow(scaling.factor * seen / positions - (scaling.factor - 1.0),
                                                     dim / (dim - 2.0));
            return subscript + " = B'" + power + " = " + number(theta) + ", B' = " + readable(rope.base) + "·(" +
                   factor + "·" + readable(seen) + "/" + readable(positions) + " − " + readable(scaling.factor - 1.0) +
                   ")^(" + std::to_string(d_rot) + "/" + std::to_string(d_rot - 2) + ") = " + number(base) +
                   " (dynamic: the base raised for " + readable(seen) + " positions over max_position_embeddings " +
                   readable(positions) + ")";
        }
        case RopeScalingType::yarn: {
            const YarnRamp ramp = yarn_ramp(rope, d);
            const double r = ramp.at(k);
            return subscript + " = " + plain_text + "; YaRN's ramp from pair " + number(ramp.low) + " to pair " +
                   number(ramp.high) + " is " + number(r) + " here, so θ_" + std::to_string(k) + " = " +
                   number(unscaled) + "·(1 − " + number(r) + ") + " + number(unscaled) + "/" + factor + "·" +
                   number(r) + " = " + number(theta) +
                   (r == 0.0 ? " (a fast pair: kept)" : r == 1.0 ? " (a slow pair: divided by the factor)" : "");
        }
        case RopeScalingType::llama3: {
            const double original = *scaling.original_max_position_embeddings;
            const double wavelength = 2.0 * std::numbers::pi / unscaled;
            const double long_band = original / scaling.low_freq_factor;
            const double short_band = original / scaling.high_freq_factor;
            std::string text = subscript + " = " + plain_text + ", wavelength 2π/θ = " + number(wavelength);
            if (wavelength > long_band) {
                return text + " > " + readable(long_band) + " (original_max_position_embeddings/low_freq_factor): "
                              "divided by the factor " + factor + ", " + number(theta);
            }
            if (wavelength < short_band) {
                return text + " < " + readable(short_band) + " (original_max_position_embeddings/high_freq_factor): "
                              "kept, " + number(theta);
            }
            const double smooth = (original / wavelength - scaling.low_freq_factor) /
                                  (scaling.high_freq_factor - scaling.low_freq_factor);
            return text + ", between " + readable(short_band) + " and " + readable(long_band) + ": blended with s = (" +
                   readable(original) + "/" + number(wavelength) + " − " + readable(scaling.low_freq_factor) + ")/(" +
                   readable(scaling.high_freq_factor) + " − " + readable(scaling.low_freq_factor) + ") = " +
                   number(smooth) + ", θ·s + θ/" + factor + "·(1 − s) = " + number(theta);
        }
    }
    return subscript + " = " + number(theta);
}

std::string attention_factor_text(const Model& model, const Numbers& number) {
    const double factor = rope_attention_factor(*model.rope);
    if (factor == 1.0) {
        return "";
    }
    return "YaRN's attention factor " + number(factor) + " multiplies cos and sin (the cos and sin below include it)";
}

std::string decimals_text(int decimals) {
    return std::to_string(decimals) + (decimals == 1 ? " decimal" : " decimals");
}

std::string Numbers::operator()(double value) const {
    return format_number(value, m_precision, is_whole_number(value), false);
}

std::string Numbers::factor(double value) const {
    const std::string text = (*this)(value);
    return text[0] == '-' ? "(" + text + ")" : text;
}

std::string Numbers::vector(const std::vector<double>& values) const {
    std::string text = "[";
    for (std::size_t k = 0; k < values.size(); ++k) {
        text += (k == 0 ? "" : ", ") + (*this)(values[k]);
    }
    return text + "]";
}

std::string Numbers::vector(const arma::rowvec& values) const {
    return vector(std::vector<double>(values.begin(), values.end()));
}

std::string Numbers::dot_terms(const arma::rowvec& a, const arma::rowvec& b) const {
    std::string text;
    for (arma::uword k = 0; k < a.n_elem; ++k) {
        const std::string first = (*this)(a(k));
        const bool negative = first[0] == '-';
        if (k == 0) {
            text += first;
        } else {
            text += negative ? " − " + first.substr(1) : " + " + first;
        }
        text += "·" + factor(b(k));
    }
    return text;
}

}  // namespace qkv::explaining
