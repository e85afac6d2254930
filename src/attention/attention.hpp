// The attention steps as plain functions over matrices, and compute(), which
// runs them all on a model and records every intermediate in a Trace.
//
// Rows are tokens throughout: X is n × d_model, Q = X·W_Q is n × d_k.
// The functions are exposed one by one so that `check` can recompute a step
// from a learner's own earlier answers.
#pragma once

#include "attention/step_id.hpp"
#include "attention/trace.hpp"
#include "model/model.hpp"

#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace qkv {

// A·B with each entry summed as a person sums it, Σ_k a_ik·b_kj from k = 1 up,
// so that the same example gives the same bits on every machine, with any
// BLAS or none, and in the playground's WebAssembly. Products of more than
// k_ordered_work multiply-adds go to BLAS, which sums in an order of its own.
inline constexpr double k_ordered_work = 16777216.0;  // 2^24, some 20 ms summed in order
arma::mat product(const arma::mat& A, const arma::mat& B);

// step: projection (n × out) = X (n × in) · W (in × out) + b (1 × out, each row)
arma::mat project(const arma::mat& X, const arma::mat& W, const std::optional<arma::rowvec>& b);

// step: scores (n × m) = Q (n × d_k) · Kᵀ (d_k × m)
arma::mat scores(const arma::mat& Q, const arma::mat& K);

// step: rotated queries and keys (RoPE). Row r is at position first + r (from 0); for
// k = 0 … d/2 − 1 the pair (a, b) of elements k and k + d/2 (style half) or
// 2k and 2k + 1 (style interleaved) turns by the angle r·θ_k,
// θ_k = base^(−2k/d): a′ = a·cos − b·sin, b′ = b·cos + a·sin. d must be even.
arma::mat rotate(const arma::mat& X, const Rope& rope, arma::uword first = 0);
// The rotation taken back: each pair turned by −p·θ_k. A rotation's inverse is
// its transpose, so this is also how a gradient goes back through RoPE.
arma::mat rotate_back(const arma::mat& X, const Rope& rope, arma::uword first = 0);
// The angle θ_k of pair k (0-based) for width d.
double rope_frequency(const Rope& rope, arma::uword k, arma::uword d);
// The 0-based elements of pair k: (k, k + d/2) or (2k, 2k + 1).
std::pair<arma::uword, arma::uword> rope_pair(RopeStyle style, arma::uword k, arma::uword d);

// ALiBi's slopes for H heads (Press et al.): for H a power of two,
// m_h = 2^(−8h/H); otherwise the slopes of P, the largest power of two below
// H, followed by those of 2P at h = 1, 3, 5, … until there are H.
arma::rowvec alibi_slopes(arma::uword heads);

// step: position bias (n × m) = −slope·|i − j|, queries and keys by position
arma::mat position_bias(arma::uword n, arma::uword m, double slope);

// step: masked scores: cells where allowed is 0 become −∞
arma::mat apply_mask(const arma::mat& S, const arma::mat& allowed);

// step: softmax along each row, stably (the row maximum is subtracted first).
// A row of −∞ only cannot occur: the loader refuses masks that block a whole row.
arma::mat softmax_rows(const arma::mat& S);
// The same with an attention sink: a logit s that joins each row's softmax
// and is then dropped, so that each row sums to less than 1:
// A[i,j] = exp(S_ij − M_i) / (Σ_j exp(S_ij − M_i) + exp(s − M_i)), M_i = max(max_j S_ij, s).
arma::mat softmax_rows(const arma::mat& S, double sink);

// step: head output (n × d_v) = A (n × m) · V (m × d_v)
arma::mat weighted_sum(const arma::mat& A, const arma::mat& V);

// The backward pass (STEPS in man/qkv.1.in): each the gradient of the loss L with respect
// to a forward value, from the gradient of what that value fed.

// step: the softmax's backward, row by row: dS′ = A ∘ (dA − rowsum(dA ∘ A)).
// Each weight of a row depends on every score of the row, hence the row term.
// A blocked cell has A = 0 and so gradient 0; with a sink the formula is the
// same, since the sink's dropped column receives no gradient.
arma::mat softmax_backward(const arma::mat& A, const arma::mat& dA);

// Round every entry to `decimals` places (hand-calculation mode), as on paper:
// the shortest decimal form of each number, half away from zero, so that
// 1.005 becomes 1.01 although the double nearest 1.005 is a little below it.
arma::mat round_to(const arma::mat& M, int decimals);

// Sinusoidal positional encodings (n × d_model), positions counted from 0:
// P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(p / 10000^(2i/d_model)).
arma::mat sinusoidal_positions(arma::uword n, arma::uword d_model);

// How the numbers are computed. `textbook` runs the step functions above one
// after the other, exactly as written. `fast` runs attention/engine.hpp: the
// same mathematics blocked, vectorised and threaded, equal within rounding
// error (tests/unit/test_compute.cpp asks for 1e-12), not bit for bit. `automatic` picks fast for large inputs
// (n·m ≥ k_fast_path_cells) and textbook otherwise, so small examples print
// exactly the numbers of the step functions. Hand rounding (`round:`) always
// uses textbook.
enum class Kernels { automatic, textbook, fast };
inline constexpr arma::uword k_fast_path_cells = 64 * 64;

struct ComputeOptions {
    // Step ids to keep whole in the trace; empty keeps every step. A step that
    // is not kept is still computed (later steps need it) and still listed in
    // the trace, so that step numbers stay the same, but only with its id,
    // head, title and formulas: its values, labels, explanation and notes are
    // empty. This is what lets `qkv run --steps output` on a large input avoid
    // holding every head's n × m matrices.
    std::vector<StepId> steps;
    int head = 0;                     // keep the per-head steps of this head only (1-based); 0 = every head
    Kernels kernels = Kernels::automatic;
    int threads = 0;                  // threads for the fast path; 0 = as many as BLAS uses
};

// Run every step on the model and keep each intermediate (or those chosen).
Trace compute(const Model& model, const ComputeOptions& options = {});

}  // namespace qkv
