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

#include <functional>
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
// k = 0 … d_rot/2 − 1 the pair (a, b) of elements k and k + d_rot/2 (style half) or
// 2k and 2k + 1 (style interleaved) turns by the angle r·θ_k,
// θ_k = base^(−2k/d_rot): a′ = a·cos − b·sin, b′ = b·cos + a·sin, and the
// elements from d_rot on pass unchanged (with mla, the first rope.skip). d_rot = rope.rotated(d), even.
// With rope.scaling the frequencies are scaled (rope_frequency) and, for YaRN,
// the turned pair is multiplied by the attention factor. `length` is the
// number of positions dynamic scaling sees (0: first + the rows of X).
arma::mat rotate(const arma::mat& X, const Rope& rope, arma::uword first = 0, arma::uword length = 0);
// The rotation's transpose: each pair turned by −p·θ_k, times the attention
// factor. This is how a gradient goes back through RoPE (and, with an
// attention factor of 1, the rotation's inverse).
arma::mat rotate_back(const arma::mat& X, const Rope& rope, arma::uword first = 0, arma::uword length = 0);
// The pairs that turn in a head of width d: d_rot/2, d_rot = rope.rotated(d)
// (d/2 unless partial_rotary_factor or mla turns only part of each head).
arma::uword rope_pairs(const Rope& rope, arma::uword d);
// The frequency θ_k of pair k (0-based) in a head of width d: base^(−2k/d_rot),
// or with rope.scaling as transformers' modeling_rope_utils gives inv_freq for
// its rope_type: linear divides by the factor; dynamic raises the base for a
// `length` of positions past max_position_embeddings; yarn mixes θ_k and
// θ_k/factor along a ramp between beta_fast's and beta_slow's pairs; llama3
// divides the low frequencies by the factor, keeps the high ones, and blends
// between. The one definition of the frequencies.
double rope_frequency(const Rope& rope, arma::uword k, arma::uword d, arma::uword length);
// What the rotated pair is multiplied by: YaRN's attention factor
// (0.1·ln(factor) + 1, or from mscale and mscale_all_dim, or given), 1 otherwise.
double rope_attention_factor(const Rope& rope);
// The max_position_embeddings a scaling reads: rope.max_position_embeddings,
// else factor × original (dynamic: the original), else 0 when neither is given.
double rope_max_positions(const Rope& rope);
// YaRN's ramp over pair k: 0 where θ_k is kept (fast pairs), 1 where it is
// divided by the factor (slow pairs), between on the way; with the ramp's ends.
struct YarnRamp {
    double low = 0.0;
    double high = 0.0;
    double at(arma::uword k) const;
};
YarnRamp yarn_ramp(const Rope& rope, arma::uword d);
// The 0-based elements of pair k in a head of width d: (k, k + d_rot/2) or (2k, 2k + 1),
// each after rope.skip (mla's rope part follows the d_n elements that do not turn).
std::pair<arma::uword, arma::uword> rope_pair(const Rope& rope, arma::uword k, arma::uword d);

// RMSNorm (qk_norm): each row x of an n × width matrix, stored column after
// column, becomes x / √(mean(x²) + eps) ∘ gain, the mean taken over each run
// of `group` columns (one head's d_k, or the whole row); gain holds `group`
// numbers (offset + γ), the same for every run. The one definition of the
// norm: the step functions, decoding and the large-input engine call it.
void rms_norm_columns(double* M, arma::uword n, arma::uword width, arma::uword group, const double* gain, double eps);
// Its backward pass: dY, the gradient of the normed rows, becomes that of X,
// the rows before the norm: with r = 1/√(mean(x²) + eps) and u = gain ∘ dy,
// dx = r·u − x·r³·mean(x ∘ u); and dgain (`group` numbers, or nullptr) gains
// Σ over rows and runs of dy ∘ x·r.
void rms_norm_back_columns(double* dY, const double* X, arma::uword n, arma::uword width, arma::uword group,
                           const double* gain, double eps, double* dgain);
// The same on whole rows of a matrix (gain: one number per column).
arma::mat rms_norm(const arma::mat& X, const arma::rowvec& gain, double eps);
arma::mat rms_norm_back(const arma::mat& X, const arma::rowvec& gain, double eps, const arma::mat& dY);
arma::rowvec rms_norm_gain_gradient(const arma::mat& X, double eps, const arma::mat& dY);
// 1/√(mean(x²) + eps) of each row: the factor the norm multiplies it by before the gain.
arma::vec rms_inverse(const arma::mat& X, double eps);

// ALiBi's slopes for H heads (Press et al.): for H a power of two,
// m_h = 2^(−8h/H); otherwise the slopes of P, the largest power of two below
// H, followed by those of 2P at h = 1, 3, 5, … until there are H.
arma::rowvec alibi_slopes(arma::uword heads);

// ALiBi's bias of the query at position i and the key at position j:
// −slope·|i − j|, and 0 (not −0) at the query's own position. Every ALiBi
// bias qkv computes (the step, decoding, the engine's blocks and its backward
// pass) is this function.
inline double alibi_bias(arma::uword i, arma::uword j, double slope) {
    const double distance = static_cast<double>(i > j ? i - j : j - i);
    return distance == 0.0 ? 0.0 : -slope * distance;
}

// step: position bias (n × m) = −slope·|i − j|: row r is the query at position
// first_query + r, column c the key at position first_key + c (from 0)
arma::mat position_bias(arma::uword n, arma::uword m, double slope, arma::uword first_query = 0,
                        arma::uword first_key = 0);

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

// The online softmax (FlashAttention) of one row: where the recurrence stands,
// the running maximum m, the sum ℓ and the unnormalised output o.
struct OnlineState {
    double max = -arma::datum::inf;
    double sum = 0.0;
    arma::rowvec output;
};
// One update of the recurrence: keys first … last (0-based) of the row, or the
// sink (first = last = the row's length), with the state before and after.
struct OnlineUpdate {
    arma::uword first = 0;
    arma::uword last = 0;
    bool sink = false;
    bool blocked = false;     // every key of the block is −∞: nothing changes
    double block_max = 0.0;   // the block's largest score (the sink's logit)
    double factor = 1.0;      // what ℓ and o were multiplied by: exp(m_old − m), 0 from m = −∞
    OnlineState before;
    OnlineState after;
};
// Row x of scores against values V (x.n_elem × d_v; no columns for the weights
// alone), the keys read `block` at a time: from m = −∞, ℓ = 0, o = 0, each
// block raises m to its largest score, multiplies ℓ and o by exp(m_old − m)
// and adds Σ exp(x_j − m) and Σ exp(x_j − m)·v_j of its own keys; the sink,
// when given, joins last as one more logit with no value. The row's output is
// then o / ℓ and its weights exp(x_j − m) / ℓ. `rescale` false is a
// learner's mistake: ℓ and o kept as they were when m rises. `each`, when
// set, sees every update. This is the one recurrence: explain --block-size
// shows it and check grades against it.
OnlineState online_softmax(const arma::rowvec& x, const arma::mat& V, arma::uword block,
                           std::optional<double> sink = std::nullopt, bool rescale = true,
                           const std::function<void(const OnlineUpdate&)>& each = {});

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
// Whether compute() hands the example to the large-input engine with these
// options: not with `round:`, and only when the engine computes every step left.
bool use_fast_path(const Model& model, const ComputeOptions& options);

}  // namespace qkv
