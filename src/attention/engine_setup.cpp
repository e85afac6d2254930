// What the large-input path is handed and what it costs (see engine.hpp):
// every head's weights packed into one product's operands, the mask as the
// engine reads it, and the memory a computation is estimated to need.
// Rows are tokens: Q = X·W_Q.
#include "attention/engine.hpp"

#include "attention/engine_parts.hpp"

#include "attention/attention.hpp"
#include "attention/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qkv {

using engine_parts::block_rows;

namespace {

// mla: the queries' weights over what they read, and the keys' and values'
// over [C K_R]: W_KV's key columns of head g are [W_UK 0; 0 I], its value
// columns [W_UV; 0], so that C·W_UK and the shared rope key come out of one
// product as each head's key [C·W_UK K_R], and C·W_UV as its value.
void pack_latent_weights(const Model& model, PackedWeights& packed) {
    const Mla& mla = *model.mla;
    const arma::uword heads = packed.heads;
    const arma::uword d_k = packed.d_k;
    const arma::uword d_v = packed.d_v;
    const arma::uword r = mla.kv_rank;
    packed.W_QKV.set_size(model.heads.front().W_Q.n_rows, heads * d_k);
    packed.W_KV.zeros(r + mla.rope_dim, packed.k_width() + packed.v_width());
    const arma::uword v_first = packed.k_width();
    for (arma::uword h = 0; h < heads; ++h) {
        const HeadWeights& head = model.heads[h];
        packed.W_QKV.cols(h * d_k, (h + 1) * d_k - 1) = head.W_Q;
        packed.W_KV.submat(0, h * d_k, r - 1, h * d_k + mla.nope_dim - 1) = head.W_K;
        packed.W_KV.submat(r, h * d_k + mla.nope_dim, r + mla.rope_dim - 1, (h + 1) * d_k - 1) =
            arma::eye(mla.rope_dim, mla.rope_dim);
        packed.W_KV.submat(0, v_first + h * d_v, r - 1, v_first + (h + 1) * d_v - 1) = head.W_V;
    }
}

// Every head's projections and biases side by side in W_QKV and b_Q, b_K, b_V.
void pack_projections(const Model& model, PackedWeights& packed) {
    const arma::uword heads = packed.heads;
    const arma::uword kv_heads = packed.kv_heads;
    const arma::uword d_k = packed.d_k;
    const arma::uword d_v = packed.d_v;
    packed.W_QKV.set_size(model.d_model(), heads * d_k + kv_heads * (d_k + d_v));
    bool any_b_Q = false;
    bool any_b_K = false;
    bool any_b_V = false;
    for (const auto& head : model.heads) {
        any_b_Q = any_b_Q || head.b_Q.has_value();
        any_b_K = any_b_K || head.b_K.has_value();
        any_b_V = any_b_V || head.b_V.has_value();
    }
    if (any_b_Q) {
        packed.b_Q.zeros(heads * d_k);
    }
    if (any_b_K) {
        packed.b_K.zeros(kv_heads * d_k);
    }
    if (any_b_V) {
        packed.b_V.zeros(kv_heads * d_v);
    }
    for (arma::uword h = 0; h < heads; ++h) {
        const HeadWeights& head = model.heads[h];
        packed.W_QKV.cols(h * d_k, (h + 1) * d_k - 1) = head.W_Q;
        if (head.b_Q) {
            packed.b_Q.cols(h * d_k, (h + 1) * d_k - 1) = *head.b_Q;
        }
    }
    // each key/value head once, however many query heads share it
    const arma::uword k_first = heads * d_k;
    const arma::uword v_first = k_first + kv_heads * d_k;
    for (arma::uword g = 0; g < kv_heads; ++g) {
        const HeadWeights& head = model.kv_weights(static_cast<int>(g) + 1);
        packed.W_QKV.cols(k_first + g * d_k, k_first + (g + 1) * d_k - 1) = head.W_K;
        packed.W_QKV.cols(v_first + g * d_v, v_first + (g + 1) * d_v - 1) = head.W_V;
        if (head.b_K) {
            packed.b_K.cols(g * d_k, (g + 1) * d_k - 1) = *head.b_K;
        }
        if (head.b_V) {
            packed.b_V.cols(g * d_v, (g + 1) * d_v - 1) = *head.b_V;
        }
    }
}

}  // namespace

PackedWeights pack_weights(const Model& model) {
    PackedWeights packed;
    packed.heads = model.n_heads();
    packed.kv_heads = model.n_kv_heads();
    packed.d_k = model.d_k();
    packed.d_v = model.d_v();
    if (model.mla) {
        pack_latent_weights(model, packed);
    } else {
        pack_projections(model, packed);
    }
    if (model.W_O) {
        packed.W_O = *model.W_O;
    }
    if (model.b_O) {
        packed.b_O = *model.b_O;
    }
    return packed;
}

MemoryShape memory_shape(const Model& model) {
    MemoryShape shape;
    shape.n = model.n();
    shape.m = model.m();
    shape.d_model = model.d_model();
    shape.heads = model.n_heads();
    shape.kv_heads = model.n_kv_heads();
    shape.d_k = model.d_k();
    shape.d_v = model.d_v();
    shape.d_out = model.d_out();
    shape.rope = model.rope.has_value();
    shape.window = model.mask_kind == MaskKind::window ? model.window : 0;
    shape.backward = model.backward();
    return shape;
}

std::uint64_t estimate_memory(const Model& model, std::uint64_t square_steps, std::uint64_t kept_heads) {
    return estimate_memory(memory_shape(model), square_steps, kept_heads);
}

std::uint64_t estimate_memory(const MemoryShape& shape, std::uint64_t square_steps, std::uint64_t kept_heads) {
    const std::uint64_t n = shape.n;
    const std::uint64_t m = shape.m;
    const std::uint64_t d_model = shape.d_model;
    const std::uint64_t heads = shape.heads;
    const std::uint64_t kv_heads = shape.kv_heads;
    const std::uint64_t d_k = shape.d_k;
    const std::uint64_t d_v = shape.d_v;
    const std::uint64_t d_out = shape.d_out;
    const std::uint64_t rope = shape.rope ? 1 : 0;
    kept_heads = std::min(kept_heads, heads);
    const std::uint64_t kept_kv_heads = std::min(kept_heads, kv_heads);
    // Everything the trace keeps, in doubles: inputs (with positions and context),
    // weights, the projections of every head with the packed copies of K and V
    // (and RoPE's cosines and sines), per kept query head its Q (and rotated Q),
    // head output and kept n × m matrices, per kept key/value head its K (and
    // rotated K) and V.
    const std::uint64_t inputs = 3 * n * d_model + m * d_model;
    const std::uint64_t weights = d_model * (heads * d_k + kv_heads * (d_k + d_v)) + heads * d_v * d_out;
    const std::uint64_t projections = n * heads * d_k + 2 * m * kv_heads * (d_k + d_v) + rope * std::max(n, m) * d_k;
    const std::uint64_t per_kept_head = n * d_k * (1 + rope) + n * d_v + square_steps * n * m;
    const std::uint64_t per_kept_kv_head = m * d_k * (1 + rope) + m * d_v;
    // each worker's block of query rows against every key they may see (with
    // a sliding window, the W keys before the block and the block's own), and
    // the block's output and packed queries
    const std::uint64_t rows = block_rows(n, m);
    const std::uint64_t keys =
        shape.window > 0 ? std::min<std::uint64_t>(m, rows + shape.window + kernels::k_key_panel) : m;
    const auto workers = static_cast<std::uint64_t>(shape.threads > 0 ? shape.threads : default_threads());
    const std::uint64_t scratch = workers * rows * (keys + d_k + d_v + 3);
    const std::uint64_t outputs = n * heads * d_v + n * d_out;
    // the backward pass (engine_backward.cpp): dO and dConcat, [dQ dK dV] with
    // each query head's own dK and dV, the weights' gradients, dX and dC, and per
    // thread two more scratch blocks
    const std::uint64_t backward =
        shape.backward ? n * d_out + n * heads * d_v + n * heads * d_k + 2 * m * heads * (d_k + d_v) + weights +
                             (n + m) * d_model + 2 * scratch
                       : 0;
    return 8 * (inputs + weights + projections + kept_heads * per_kept_head + kept_kv_heads * per_kept_kv_head +
                scratch + outputs + backward);
}

}  // namespace qkv
