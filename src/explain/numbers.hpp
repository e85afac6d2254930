// How an explanation writes its numbers: as the tables show them (whole
// numbers without decimals, the others at --precision, −∞ as a symbol), and
// the vectors and dot products built from them. Used by the explanations of
// explain/ (explain.cpp, online.cpp, backward.cpp).
#pragma once

#include "attention/trace.hpp"
#include "model/model.hpp"
#include "render/render.hpp"

#include <armadillo>

#include <string>
#include <vector>

namespace qkv {
struct Explanation;
}

namespace qkv::explaining {

// "1 decimal", "3 decimals".
std::string decimals_text(int decimals);

class Numbers;
// The divisor of the scores in words: "√d_k = √4 = 2", "the example's scale,
// 2.5", or "1 (scale: none)".
std::string divisor_text(const Model& model, const Numbers& number);

// RoPE's frequency θ_k of pair k in a head of width d, worked: "θ_1 =
// 10000^(−2/4) = 0.01", with rope.scaling's working after it (the factor, the
// raised base, YaRN's ramp, llama3's band), ending in θ_k's value; and, with
// an attention factor other than 1, a line that says it multiplies cos and sin
// (empty otherwise).
std::string frequency_text(const Model& model, arma::uword k, arma::uword d, const Numbers& number);
std::string attention_factor_text(const Model& model, const Numbers& number);

class Numbers {
public:
    explicit Numbers(const RenderOptions& options) : m_precision(options.precision) {}

    std::string operator()(double value) const;

    // A factor after "·": negative numbers in parentheses.
    std::string factor(double value) const;

    // "[1, 0.5, −∞]"
    std::string vector(const std::vector<double>& values) const;
    std::string vector(const arma::rowvec& values) const;

    // "a₁·b₁ + a₂·b₂ + …" with a term's negative first factor written as "− |a|·b".
    std::string dot_terms(const arma::rowvec& a, const arma::rowvec& b) const;

private:
    int m_precision;
};

// Appends the online softmax (FlashAttention) of the explanation's row to its
// lines and blocks (online.cpp).
void add_online_softmax(const Model& model, const Trace& trace, qkv::Explanation& explanation, const RenderOptions& options,
                        arma::uword block_size);

// Writes the arithmetic of a backward-pass cell (a gradient step) into the
// explanation's lines (backward.cpp).
void explain_gradient(const Model& model, const Trace& trace, qkv::Explanation& explanation,
                      const RenderOptions& options);

}  // namespace qkv::explaining
