// The validated model: everything qkv needs to compute attention, already
// checked for shape and sense by the loader (io/). No YAML beyond this point.
//
// Layout, stated once: rows are tokens. X is n × d_model, and every weight is
// stored in the x·W layout (in × out), so a projection is Q = X·W_Q. A file
// written in PyTorch's layout (out × in) is transposed by the loader; the
// original layout is kept only so that formulas can be shown as the user wrote
// them.
#pragma once

#include <armadillo>

#include <algorithm>
#include <cmath>
#include <utility>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

// The most heads a model may have (heads:, pytorch.num_heads, --head).
inline constexpr long k_max_heads = 4096;

enum class Layout { x_w, pytorch };
enum class ScaleKind { sqrt_dk, none, divisor };
enum class MaskKind { none, causal, window, matrix };
// How the file wrote the projections' weights: one `weights:` block split by
// columns into the heads, a `heads:` list of one weight set per head, or a
// `pytorch:` block (nn.MultiheadAttention's in_proj_weight and out_proj). The
// backward pass gives the weights' gradients in the same form.
enum class WeightForm { split, head_list, pytorch_block };

// Rotary position embedding (RoPE): how the pairs of a query's or key's
// elements are formed. half: element k with element k + d_k/2 (Hugging Face's
// rotate_half); interleaved: element 2k with element 2k + 1 (the RoFormer paper).
enum class RopeStyle { half, interleaved };
// RoPE scaling (rope.scaling, a config.json's rope_scaling): how the
// frequencies change for contexts longer than the model was trained on, as
// transformers' modeling_rope_utils computes them (attention.hpp's rope_frequency).
enum class RopeScalingType { linear, dynamic, yarn, llama3 };
struct RopeScaling {
    RopeScalingType type = RopeScalingType::linear;
    double factor = 1.0;
    std::optional<double> original_max_position_embeddings;
    double low_freq_factor = 1.0;   // llama3
    double high_freq_factor = 4.0;  // llama3
    double beta_fast = 32.0;        // yarn
    double beta_slow = 1.0;         // yarn
    std::optional<double> mscale;   // yarn: the attention factor from factor, mscale and mscale_all_dim
    std::optional<double> mscale_all_dim;
    std::optional<double> attention_factor;  // yarn: given outright
    bool truncate = true;           // yarn: the ramp's ends rounded out to whole pairs
};
struct Rope {
    double base = 10000.0;
    RopeStyle style = RopeStyle::half;
    // partial_rotary_factor: the fraction of each head that turns (GPT-NeoX's rotary_pct, Phi, StableLM, GLM)
    double partial_rotary_factor = 1.0;
    std::optional<double> max_position_embeddings;  // config.json's, which yarn and dynamic read
    std::optional<RopeScaling> scaling;
    // mla: the first `skip` elements of each query and key head (q_nope, k_nope)
    // pass unchanged, and the rope part after them turns whole
    arma::uword skip = 0;
    // The elements that turn of a head of width d: the first d_rot = f·d (an
    // even whole number: the loader checks), or with mla the last d − skip
    // (rope_pair places the pairs); the rest pass unchanged.
    arma::uword rotated(arma::uword d) const {
        return skip > 0 ? d - skip
                        : static_cast<arma::uword>(std::llround(partial_rotary_factor * static_cast<double>(d)));
    }
};

// QK-norm (Qwen3, Gemma 3, OLMo 2): RMSNorm of each query and key row after
// the projections and biases, before RoPE: x′ = x / √(mean(x²) + eps) · (offset + γ).
struct QkNorm {
    bool over_all = false;  // over: all (OLMo 2): over a token's whole projection, every head together
    // γ of the queries and of the keys: d_k numbers shared by the heads, or
    // H·d_k and G·d_k over all; the loader fills in the default (1, or 0 with offset 1)
    arma::rowvec query;
    arma::rowvec key;
    bool query_given = false;
    bool key_given = false;
    std::optional<double> eps;  // eps:, else norm_eps:, else 1e-6
    double offset = 0.0;        // offset: 1 is Gemma's (1 + γ)
    // the factor each element is multiplied by after the division: offset + γ
    arma::rowvec gain(bool queries) const { return offset + (queries ? query : key); }
};

// Multi-head latent attention (mla:, DeepSeek-V2/V3, Kimi K2), as transformers'
// DeepseekV3Attention computes it. Each head's query is [q_nope, q_rope] from
// X·W_Q, or from the normed latent X·W_qa with q_rank; the keys and values come
// from one latent per token, c = RMSNorm(X·W_kva's first r columns), as
// [c·W_UK, k_rope] and c·W_UV, where k_rope, the last d_r columns of X·W_kva,
// is one key part every head shares; RoPE turns the rope parts only. A head's
// blocks of the up-projections are its HeadWeights: W_Q of q_proj or q_b_proj
// (its d_n + d_r columns), W_K of kv_b_proj (W_UK, r × d_n) and W_V (W_UV, r × d_v).
struct Mla {
    arma::uword kv_rank = 0;    // r: the latent the cache keeps
    arma::uword rope_dim = 0;   // d_r: the rope part of a query and key head
    arma::uword nope_dim = 0;   // d_n: the part without positions
    arma::uword v_dim = 0;      // d_v
    std::optional<arma::uword> q_rank;  // r_q: the queries from a latent of their own
    std::optional<arma::mat> W_qa;      // q_a_proj, d_model × r_q (with q_rank)
    arma::rowvec q_norm;                // q_a_layernorm's γ, r_q numbers (1 when not given)
    bool q_norm_given = false;
    arma::mat W_kva;                    // kv_a_proj_with_mqa, d_model × (r + d_r)
    arma::rowvec kv_norm;               // kv_a_layernorm's γ, r numbers (1 when not given)
    bool kv_norm_given = false;
};

// One head's projections in the x·W layout.
struct HeadWeights {
    arma::mat W_Q;  // d_model × d_k
    arma::mat W_K;  // d_model × d_k
    arma::mat W_V;  // d_model × d_v
    std::optional<arma::rowvec> b_Q;  // 1 × d_k
    std::optional<arma::rowvec> b_K;  // 1 × d_k
    std::optional<arma::rowvec> b_V;  // 1 × d_v
};

// Which cells a mask and padding block, read without building an n × m
// matrix: the one definition of the masks, which Model::allows, the mask step,
// the large-input engine (block by block, forward and backward) and explain read.
struct MaskView {
    bool causal = false;                    // key j is blocked for query i when j > i
    arma::uword window = 0;                 // with causal: also when i − j ≥ window (0: no window)
    const arma::mat* matrix = nullptr;      // n × m, 0 = blocked
    const arma::rowvec* padding = nullptr;  // 1 × m, 0 = a padding key, blocked for every query

    bool any() const { return causal || matrix != nullptr || padding != nullptr; }
    // The keys [first, last) of m that a causal mask and its window let query
    // i see: i − W + 1 … i with a window, 0 … i without; every key when not causal.
    std::pair<arma::uword, arma::uword> seen_by(arma::uword i, arma::uword m) const {
        if (!causal) {
            return {0, m};
        }
        const arma::uword last = std::min(i + 1, m);
        return {std::min(window > 0 && i + 1 > window ? i + 1 - window : 0, last), last};
    }
    // What blocks query i from key j (0-based), each as the man page words it.
    bool causal_blocks(arma::uword i, arma::uword j) const { return j >= seen_by(i, j + 1).second; }
    bool window_blocks(arma::uword i, arma::uword j) const { return j < seen_by(i, i + 1).first; }
    bool matrix_blocks(arma::uword i, arma::uword j) const { return matrix != nullptr && (*matrix)(i, j) == 0.0; }
    bool padding_blocks(arma::uword j) const { return padding != nullptr && (*padding)(j) == 0.0; }
    bool blocked(arma::uword i, arma::uword j) const {
        return causal_blocks(i, j) || window_blocks(i, j) || matrix_blocks(i, j) || padding_blocks(j);
    }
    // The keys [first, last) outside which queries r0 … r1 − 1 see nothing (of
    // m keys): from what the first of them sees to what the last sees.
    std::pair<arma::uword, arma::uword> key_range(arma::uword r0, arma::uword r1, arma::uword m) const {
        const arma::uword last = seen_by(r1 - 1, m).second;
        return {std::min(seen_by(r0, m).first, last), last};
    }
};

struct Model {
    std::string title;
    std::string description;
    std::vector<std::string> tokens;          // n row labels
    std::vector<std::string> context_tokens;  // m labels, cross-attention only

    arma::mat X;                   // inputs, n × d_model (before positions)
    std::optional<arma::mat> P;    // positional encodings, n × d_model
    bool P_sinusoidal = false;     // P is `positional: sinusoidal` (not a matrix of the file's)
    std::optional<arma::mat> C;    // context for cross-attention, m × d_model

    // One per query head, at least one. With grouped-query attention
    // (kv_heads), the W_K, W_V, b_K and b_V of a query head are those of the
    // key/value head it shares (kv_weights).
    std::vector<HeadWeights> heads;
    arma::uword kv_head_count = 0;     // key/value heads (kv_heads:); 0 = one per query head
    std::optional<arma::mat> W_O;      // (heads·d_v) × d_out
    std::optional<arma::rowvec> b_O;   // 1 × d_out
    Layout layout = Layout::x_w;       // as written in the file (display only)
    WeightForm weight_form = WeightForm::split;

    ScaleKind scale_kind = ScaleKind::sqrt_dk;
    double scale_divisor = 1.0;        // used when scale_kind == divisor

    MaskKind mask_kind = MaskKind::none;
    arma::mat mask;                    // n × m, 1 = may attend (MaskKind::matrix)
    arma::uword window = 0;            // MaskKind::window: query i sees keys i − W + 1 … i
    std::optional<arma::rowvec> padding;  // 1 × m, 1 = real token, 0 = padding

    std::optional<Rope> rope;             // rope:
    std::optional<arma::rowvec> alibi;    // alibi: one slope per query head
    bool alibi_press = false;             // the slopes are Press et al.'s (alibi: true)
    std::optional<arma::rowvec> sinks;    // sinks: one logit per query head
    std::optional<double> softcap;        // softcap: c, the scaled scores become c·tanh(s/c)
    std::optional<QkNorm> qk_norm;        // qk_norm:
    std::optional<double> norm_eps;       // norm_eps: the eps of every RMSNorm (default 1e-6)
    std::optional<Mla> mla;               // mla: multi-head latent attention

    // The backward pass: dO = ∂L/∂O (n × d_out), from grad_output: or --backward.
    std::optional<arma::mat> grad_output;
    bool grad_output_ones = false;        // grad_output: ones (L = the sum of every output value)

    // Hand-calculation mode: decimals to round each step to ("*" = every step).
    std::map<std::string, int> round;

    // Grading (qkv check): the fewest decimals an answer may carry (decimals:;
    // unset = 1), and the points of each step by step id (rubric:; empty = 1
    // for every answered step).
    std::optional<int> decimals;
    std::map<std::string, double> rubric;

    bool cross() const { return C.has_value(); }
    arma::uword n() const { return X.n_rows; }
    arma::uword m() const { return C ? C->n_rows : X.n_rows; }
    arma::uword d_model() const { return X.n_cols; }
    arma::uword n_heads() const { return heads.size(); }
    arma::uword d_k() const { return heads.front().W_Q.n_cols; }
    arma::uword d_v() const { return heads.front().W_V.n_cols; }
    arma::uword d_out() const { return W_O ? W_O->n_cols : n_heads() * d_v(); }
    bool masked() const { return mask_kind != MaskKind::none || padding.has_value(); }
    bool backward() const { return grad_output.has_value(); }
    arma::uword n_kv_heads() const { return kv_head_count == 0 ? n_heads() : kv_head_count; }
    // The key/value head (1-based) that query head h (1-based) reads: ⌈h·G/H⌉.
    int kv_head_of(int h) const;
    // The first query head (1-based) that reads key/value head g (1-based).
    int first_query_head(int g) const;
    // The weights of key/value head g (1-based): its W_K, W_V, b_K and b_V.
    const HeadWeights& kv_weights(int g) const;
    // True when query i (0-based) may attend to key j (0-based) under the
    // mask and the padding.
    bool allows(arma::uword i, arma::uword j) const;

    // The eps of the RMSNorm of qk_norm: its own eps:, else norm_eps:, else 1e-6.
    double qk_norm_eps() const { return qk_norm && qk_norm->eps ? *qk_norm->eps : norm_eps.value_or(1e-6); }

    // The eps of every other RMSNorm (mla's latent norms): norm_eps:, else 1e-6.
    double rms_eps() const { return norm_eps.value_or(1e-6); }
    // mla: what the default scale divides √d_k by, squared: YaRN's mscale =
    // 0.1·mscale_all_dim·ln(factor) + 1 when rope.scaling has mscale_all_dim, else 1.
    double mscale() const;

    // The divisor applied to the scores: √d_k (over mscale² with mla), 1, or the user's number.
    double scale() const;
    // 1 where query i may attend to key j, 0 where blocked (n × m); all ones
    // when there is no mask or padding.
    arma::mat allowed() const;
};

// The model's mask and padding as a MaskView.
MaskView mask_view(const Model& model);

}  // namespace qkv
