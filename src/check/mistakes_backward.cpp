// The catalogue's rows for the backward pass (catalogue.hpp): each is the step
// worked from the learner's own earlier values, the wrong way; sums over
// query heads (grouped-query attention) are kept.
#include "check/mistakes_parts.hpp"

#include "attention/attention.hpp"
#include "attention/divisor.hpp"

namespace qkv::checking {

namespace {

using A = const Attempt&;
using M = const Made&;

// the query heads (1-based) that read key/value head g
std::pair<int, int> query_heads_of(const Model& model, int g) {
    const int first = model.first_query_head(g);
    return {first, first + static_cast<int>(model.n_heads() / model.n_kv_heads()) - 1};
}

arma::mat unrotated(const Model& model, arma::mat M) {
    return model.rope ? rotate_back(M, *model.rope, 0, model.n()) : M;
}

bool has_rope(A a) { return a.model.rope.has_value(); }
bool shared_kv_head(A a) {
    const auto [first, last] = query_heads_of(a.model, a.key.head);
    return first != last;
}

// "Only query head 1's part was taken; …": a shared key/value head's gradient from one of its query heads.
std::string one_head_only(A a) {
    const auto [first, last] = query_heads_of(a.model, a.key.head);
    return "Only query head " + std::to_string(first) + "'s part was taken; key/value head " +
           std::to_string(a.key.head) + " is shared by query heads " + std::to_string(first) + " … " +
           std::to_string(last) + ", and its gradient sums theirs.";
}

const char* const k_softmax_backward_correct =
    "dS' = A ∘ (dA − rowsum(dA ∘ A)): each score also moves the other weights of its row";

// The step is the softmax's gradient: grad_scaled_scores, or grad_capped_scores with a soft cap.
bool through_softmax(A a) { return step_inputs(a.model, a.key).front().id == StepId::weights; }
// The step is the gradient of the scaled scores taken back through the soft cap.
bool through_cap(A a) { return a.model.softcap.has_value() && !through_softmax(a); }

std::string grad_scale_correct(A a) {
    return "dS = " + divided(a.model, "dS'") + ": the forward pass divided by the scale, so the backward divides too";
}

std::string grad_queries_correct(A a) {
    return a.model.rope ? "dQ = RoPE⁻¹(dS·K_rot): each row of dS weighs the keys, then the rotation is turned back"
                        : "dQ = dS·K: each row of dS weighs the keys";
}

// The keys the queries' gradient reads: rotated with RoPE (normed with qk_norm), of the key/value head.
const arma::mat& keys_read(A a) { return a.L(scored_keys(a.model), a.model.kv_head_of(a.key.head)); }

// The step is worked from the scores' gradient: grad_queries and grad_keys, or
// with qk_norm grad_normed_queries and grad_normed_keys (grad_queries then comes back through the norm).
bool from_scores(A a) { return step_inputs(a.model, a.key).front().id == StepId::grad_scores; }
bool from_scores_with_rope(A a) { return from_scores(a) && has_rope(a); }
bool from_scores_shared(A a) { return from_scores(a) && shared_kv_head(a); }
bool through_norm(A a) { return a.model.qk_norm && !from_scores(a); }

// With qk_norm, a query's or key's gradient back through the norm, worked
// from the learner's normed gradient and rows: the rows side by side (one
// head's, or over: all every head's), and where this head's columns start.
struct NormBack {
    arma::mat dY;
    arma::mat X;
    arma::uword first = 0;
};
NormBack norm_back(A a) {
    NormBack parts;
    const std::vector<StepKey> reads = step_inputs(a.model, a.key);
    const std::size_t half = reads.size() / 2;
    for (std::size_t k = 0; k < reads.size(); ++k) {
        arma::mat& to = k < half ? parts.dY : parts.X;
        to = arma::join_rows(to, a.L(reads[k].id, reads[k].head));
    }
    parts.first = a.model.qk_norm->over_all ? static_cast<arma::uword>(a.key.head - 1) * a.model.d_k() : 0;
    return parts;
}

std::string grad_keys_correct(A a) {
    return std::string(shared_kv_head(a) ? "dK = Σ_h dS_hᵀ·Q_h" : "dK = dSᵀ·Q") +
           (a.model.rope ? ", turned back through RoPE" : "") + ": key j's gradient reads column j of dS";
}

// The keys' gradient of key/value head g summed over its query heads, before
// turning back through RoPE: Σ dS_hᵀ·Q_h, or with `transposed` false Σ dS_h·Q_h.
arma::mat key_gradient(A a, bool transposed) {
    const auto [first, last] = query_heads_of(a.model, a.key.head);
    const StepId q_id = scored_queries(a.model);
    arma::mat sum(a.L(StepId::grad_scores, first).n_cols, a.L(q_id, first).n_cols, arma::fill::zeros);
    for (int h = first; h <= last; ++h) {
        const arma::mat& dS = a.L(StepId::grad_scores, h);
        sum += (transposed ? arma::mat(dS.t()) : dS) * a.L(q_id, h);
    }
    return sum;
}

std::string grad_values_correct(A a) {
    return std::string(shared_kv_head(a) ? "dV = Σ_h A_hᵀ·dZ_h" : "dV = Aᵀ·dZ") +
           ": value j's gradient reads column j of A";
}

constexpr MistakeRow k_rows[] = {
    {.id = "grad_output_projection_forgotten", .steps = {StepId::grad_head_output},
     .man = R"roff(DZ not taken back through W_O.)roff",
     .applies = [](A a) { return a.model.W_O.has_value(); },
     .make = [](A a, M made) {
         const arma::mat& dO = a.L(StepId::grad_output);
         const arma::uword d_v = a.model.d_v();
         if (dO.n_cols != a.model.n_heads() * d_v) {
             return;
         }
         const auto first = static_cast<arma::uword>(a.key.head - 1) * d_v;
         made("The gradient was not taken back through W_O: these are dO's columns, not dO·W_Oᵀ's.",
              "dZ = dO·W_Oᵀ (head h's columns of it with several heads)", dO.cols(first, first + d_v - 1));
     }},

    // ── the softmax and the scale ──
    {.id = "softmax_backward_no_row_term", .steps = {StepId::grad_capped_scores, StepId::grad_scaled_scores},
     .man = R"roff(DS' = A\[u2218]dA, without the row term.)roff",
     .applies = &through_softmax,
     .make = [](A a, M made) {
         made("The softmax's backward was taken as A ∘ dA, without the row term rowsum(dA ∘ A).",
              k_softmax_backward_correct, a.L(StepId::weights, a.key.head) % a.L(StepId::grad_weights, a.key.head));
     }},
    {.id = "softmax_backward_diagonal_only", .steps = {StepId::grad_capped_scores, StepId::grad_scaled_scores},
     .man = R"roff(Only the diagonal of the softmax's Jacobian.)roff",
     .applies = &through_softmax,
     .make = [](A a, M made) {
         const arma::mat& weights = a.L(StepId::weights, a.key.head);
         made("Only the diagonal of the softmax's Jacobian was used, A ∘ (1 − A) ∘ dA: raising a score also lowers "
              "the other weights of its row.",
              k_softmax_backward_correct, weights % (1.0 - weights) % a.L(StepId::grad_weights, a.key.head));
     }},
    {.id = "softmax_backward_skipped", .steps = {StepId::grad_capped_scores, StepId::grad_scaled_scores},
     .man = R"roff(The gradient passed through the softmax unchanged.)roff",
     .applies = &through_softmax,
     .make = [](A a, M made) {
         made("The gradient was passed through the softmax unchanged (dS' = dA).", k_softmax_backward_correct,
              a.L(StepId::grad_weights, a.key.head));
     }},
    {.id = "softcap_slope_forgotten", .steps = {StepId::grad_scaled_scores},
     .man = R"roff(The soft cap's slope 1 \- tanh^2(s/c) left out on the way back.)roff",
     .applies = &through_cap,
     .make = [](A a, M made) {
         made("The cap's slope was left out: the gradient of the capped scores was passed back as it was, but the "
              "cap bends each score by c·tanh(s/c), whose slope is 1 − tanh²(s/c).",
              "dS' = dS_c ∘ (1 − tanh²(S'/c))", a.L(StepId::grad_capped_scores, a.key.head));
     }},
    {.id = "grad_scale_forgotten", .steps = {StepId::grad_scores},
     .man = R"roff(DS = dS', the scale forgotten.)roff",
     .applies = [](A a) { return a.model.scale() != 1.0; },
     .make = [](A a, M made) {
         made("The scale was forgotten on the way back: dS = dS'.", grad_scale_correct(a),
              a.L(StepId::grad_scaled_scores, a.key.head));
     }},
    {.id = "grad_scale_multiplied", .steps = {StepId::grad_scores},
     .man = R"roff(The gradient multiplied by the scale.)roff",
     .applies = [](A a) { return a.model.scale() != 1.0; },
     .make = [](A a, M made) {
         made("The gradient was multiplied by the scale instead of divided by it.", grad_scale_correct(a),
              a.L(StepId::grad_scaled_scores, a.key.head) * a.model.scale());
     }},

    // ── the queries, keys and values ──
    {.id = "grad_queries_transposed", .steps = {StepId::grad_normed_queries, StepId::grad_queries},
     .man = R"roff(DQ = dS^T\(pcK.)roff",
     .applies = &from_scores,
     .make = [](A a, M made) {
         const arma::mat& dS = a.L(StepId::grad_scores, a.key.head);
         if (dS.n_rows == dS.n_cols) {
             made("dQ was computed as dSᵀ·K: a query's gradient reads its row of dS.", grad_queries_correct(a),
                  unrotated(a.model, dS.t() * keys_read(a)));
         }
     }},
    {.id = "grad_rope_not_reversed", .steps = {StepId::grad_normed_queries, StepId::grad_queries},
     .man = R"roff(RoPE not turned back.)roff",
     .applies = &from_scores_with_rope,
     .make = [](A a, M made) {
         made("The gradient was not turned back through RoPE: this is the gradient of the rotated queries.",
              grad_queries_correct(a), a.L(StepId::grad_scores, a.key.head) * keys_read(a));
     }},
    {.id = "grad_keys_no_transpose", .steps = {StepId::grad_normed_keys, StepId::grad_keys},
     .man = R"roff(DK = dS\(pcQ.)roff",
     .applies = &from_scores,
     .make = [](A a, M made) {
         const arma::mat& dS1 = a.L(StepId::grad_scores, query_heads_of(a.model, a.key.head).first);
         if (dS1.n_rows == dS1.n_cols) {
             made("dK was computed as dS·Q, without the transpose of dS.", grad_keys_correct(a),
                  unrotated(a.model, key_gradient(a, false)));
         }
     }},
    {.id = "grad_kv_one_head", .steps = {StepId::grad_normed_keys, StepId::grad_keys},
     .man = R"roff(A shared key/value head's gradient from one query head.)roff",
     .applies = &from_scores_shared,
     .make = [](A a, M made) {
         const int first = query_heads_of(a.model, a.key.head).first;
         const StepId q_id = scored_queries(a.model);
         made(one_head_only(a), grad_keys_correct(a),
              unrotated(a.model, a.L(StepId::grad_scores, first).t() * a.L(q_id, first)));
     }},
    {.id = "grad_rope_not_reversed", .steps = {StepId::grad_normed_keys, StepId::grad_keys},
     .applies = &from_scores_with_rope,
     .make = [](A a, M made) {
         made("The gradient was not turned back through RoPE: this is the gradient of the rotated keys.",
              grad_keys_correct(a), key_gradient(a, true));
     }},
    // ── back through QK-norm ──
    {.id = "qk_norm_backward_skipped", .steps = {StepId::grad_queries, StepId::grad_keys},
     .man = R"roff(With \fBqk_norm\fR, the gradient passed back through the norm unchanged.)roff",
     .applies = &through_norm,
     .make = [](A a, M made) {
         const StepKey normed = step_inputs(a.model, a.key).front();
         made("The norm was left out on the way back: this is the gradient of the normed rows, but the norm divided "
              "each row by its root mean square and multiplied it by the gain.",
              "dx = r·(g∘dy) − x·r³·mean(x∘g∘dy), each row, r = 1/√(mean(x²) + eps)",
              a.L(normed.id, a.key.head));
     }},
    {.id = "qk_norm_backward_mean_term_forgotten", .steps = {StepId::grad_queries, StepId::grad_keys},
     .man = R"roff(With \fBqk_norm\fR, the norm's gradient taken as r\(pc(g\[u2218]dy), as if r did not depend on the row.)roff",
     .applies = &through_norm,
     .make = [](A a, M made) {
         const NormBack parts = norm_back(a);
         const QkNorm& norm = *a.model.qk_norm;
         const arma::uword d_k = a.model.d_k();
         const arma::uword group = norm.over_all ? parts.X.n_cols : d_k;
         const arma::rowvec gain = norm.gain(a.key.id == StepId::grad_queries);
         if (parts.X.n_cols % group != 0 || parts.dY.n_cols != parts.X.n_cols || gain.n_elem != group) {
             return;
         }
         // r·g∘dy alone: each run's r from its rows, times the gain
         arma::mat partial = parts.dY;
         for (arma::uword c0 = 0; c0 < parts.X.n_cols; c0 += group) {
             const arma::vec r = rms_inverse(parts.X.cols(c0, c0 + group - 1), a.model.qk_norm_eps());
             for (arma::uword c = c0; c < c0 + group; ++c) {
                 partial.col(c) %= r * gain(c - c0);
             }
         }
         made("Only r·(g∘dy) was taken: r = 1/√(mean(x²) + eps) depends on the row too, so each element also feels "
              "what it did to the row's size, the term −x·r³·mean(x∘g∘dy).",
              "dx = r·(g∘dy) − x·r³·mean(x∘g∘dy), each row",
              partial.cols(parts.first, parts.first + d_k - 1));
     }},

    {.id = "grad_values_no_transpose", .steps = {StepId::grad_values},
     .man = R"roff(DV = A\(pcdZ.)roff",
     .make = [](A a, M made) {
         const auto [first, last] = query_heads_of(a.model, a.key.head);
         const arma::mat& A1 = a.L(StepId::weights, first);
         if (A1.n_rows != A1.n_cols) {
             return;
         }
         arma::mat no_transpose(A1.n_cols, a.L(StepId::grad_head_output, first).n_cols, arma::fill::zeros);
         for (int h = first; h <= last; ++h) {
             no_transpose += a.L(StepId::weights, h) * a.L(StepId::grad_head_output, h);
         }
         made("dV was computed as A·dZ, without the transpose of A.", grad_values_correct(a), std::move(no_transpose));
     }},
    {.id = "grad_kv_one_head", .steps = {StepId::grad_values},
     .applies = &shared_kv_head,
     .make = [](A a, M made) {
         const int first = query_heads_of(a.model, a.key.head).first;
         made(one_head_only(a), grad_values_correct(a),
              a.L(StepId::weights, first).t() * a.L(StepId::grad_head_output, first));
     }},

    // ── the weights and the inputs ──
    {.id = "grad_weight_layout",
     .steps = {StepId::grad_w_query, StepId::grad_w_key, StepId::grad_w_value, StepId::grad_w_output,
               StepId::grad_in_proj_weight, StepId::grad_out_proj_weight},
     .man = R"roff(A weight's gradient transposed.)roff",
     .make = [](A a, M made) {
         // the gradient in the other layout, worked from the learner's own gradients
         // (of the other shape, unless the weight is square)
         made(a.model.layout == Layout::pytorch
                  ? "The gradient is transposed: this file writes weights out × in (layout: pytorch), so dW is dYᵀ·X."
                  : "The gradient is transposed: weights are in × out here, so dW is Xᵀ·dY.",
              "the gradient has the weight's shape and layout, as the file writes it",
              compute_step(a.model, a.key, a.L.all()).t());
     }},
    {.id = "grad_inputs_queries_only", .steps = {StepId::grad_inputs},
     .man = R"roff(DX from the queries only.)roff",
     .applies = [](A a) { return !a.model.cross(); },
     .make = [](A a, M made) {
         if (a.model.mla && a.model.mla->q_rank) {
             made("Only the query latent's path was taken back; X also made the latent and the rope key through "
                  "kv_a_proj_with_mqa.",
                  "dX = dC_Q·W_DQᵀ + [dC_KV dK_R]·W_kvaᵀ: every path from X adds its part",
                  a.L(StepId::grad_q_latent) * a.model.mla->W_qa->t());
             return;
         }
         arma::mat queries_only(a.L(StepId::grad_queries, 1).n_rows, a.model.d_model(), arma::fill::zeros);
         for (int h = 1; h <= static_cast<int>(a.model.n_heads()); ++h) {
             queries_only += a.L(StepId::grad_queries, h) * a.model.heads[static_cast<std::size_t>(h - 1)].W_Q.t();
         }
         made(a.model.mla ? "Only the queries' path was taken back; X also made the latent and the rope key through "
                            "kv_a_proj_with_mqa."
                          : "Only the queries' path was taken back; X also fed the keys and the values.",
              a.model.mla ? "dX = Σ dQ·W_Qᵀ + [dC_KV dK_R]·W_kvaᵀ: every path from X adds its part"
                          : "dX = Σ dQ·W_Qᵀ + Σ (dK·W_Kᵀ + dV·W_Vᵀ): every path from X adds its part",
              std::move(queries_only));
     }},

    // ── mla's latents ──
    {.id = "mla_rope_key_one_head", .steps = {StepId::grad_rope_keys},
     .man = R"roff(With \fBmla\fR, the shared rope key's gradient taken from one head's dK, where every head read it and the gradient sums their shares.)roff",
     .applies = [](A a) { return a.model.mla && a.model.n_heads() > 1; },
     .make = [](A a, M made) {
         const arma::uword d_n = a.model.mla->nope_dim;
         for (int h = 1; h <= static_cast<int>(a.model.n_heads()); ++h) {
             const arma::mat& dK = a.L(StepId::grad_keys, h);
             if (dK.n_cols <= d_n) {
                 return;
             }
             made("Only head " + std::to_string(h) + "'s share was taken: the rope key is one for every head, so "
                  "each of the " + std::to_string(a.model.n_heads()) + " heads passes part of its gradient back.",
                  "dK_R = Σ_h dK_h[:, d_n + 1 …]: the last d_r columns of every head's dK, added up",
                  dK.cols(d_n, dK.n_cols - 1));
         }
     }},
    {.id = "mla_latent_norm_backward_skipped", .steps = {StepId::grad_q_latent, StepId::grad_kv_latent},
     .man = R"roff(With \fBmla\fR, a latent's gradient passed back through its RMSNorm unchanged.)roff",
     .applies = [](A a) { return a.model.mla.has_value(); },
     .make = [](A a, M made) {
         const StepKey normed = step_inputs(a.model, a.key).front();
         made("The norm was left out on the way back: this is the gradient of the normed latent, but the norm divided "
              "each row by its root mean square and multiplied it by γ.",
              "dc = r·(γ∘dy) − c·r³·mean(c∘γ∘dy), each row, r = 1/√(mean(c²) + eps)", a.L(normed.id));
     }},
};

}  // namespace

std::span<const MistakeRow> backward_mistakes() { return k_rows; }

}  // namespace qkv::checking
