// The backward pass's mistakes: each is the step worked from the learner's
// own earlier values, the wrong way; sums over query heads (grouped-query
// attention) are kept.
#include "check/mistakes_parts.hpp"
#include "attention/divisor.hpp"
#include "base/numbers.hpp"

#include "attention/attention.hpp"
#include "check/catalogue.hpp"

#include <cstdio>

namespace qkv::checking {

std::string number_text(double value) { return trimmed(value, 4); }

Mistake one(std::string key, std::string mistake, std::string correct, const StepKey& step, arma::mat value,
            double rounding_slack) {
    Mistake result{mistake_id(key), std::move(mistake), std::move(correct), {}, false, rounding_slack};
    result.values.emplace_back(step, std::move(value));
    return result;
}

namespace {

// the query heads (1-based) that read key/value head g
std::pair<int, int> query_heads_of(const Model& model, int g) {
    const int first = model.first_query_head(g);
    return {first, first + static_cast<int>(model.n_heads() / model.n_kv_heads()) - 1};
}

arma::mat unrotated(const Model& model, arma::mat M) { return model.rope ? rotate_back(M, *model.rope) : M; }

}  // namespace

void softmax_backward_mistakes(const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const arma::mat& A = L(StepId::weights, key.head);
    const arma::mat& dA = L(StepId::grad_weights, key.head);
    const std::string correct = "dS' = A ∘ (dA − rowsum(dA ∘ A)): each score also moves the other weights of its row";
    out.push_back(one("softmax_backward_no_row_term",
                      "The softmax's backward was taken as A ∘ dA, without the row term rowsum(dA ∘ A).", correct,
                      key, A % dA));
    out.push_back(one("softmax_backward_diagonal_only",
                      "Only the diagonal of the softmax's Jacobian was used, A ∘ (1 − A) ∘ dA: raising a score also "
                      "lowers the other weights of its row.",
                      correct, key, A % (1.0 - A) % dA));
    out.push_back(one("softmax_backward_skipped", "The gradient was passed through the softmax unchanged (dS' = dA).",
                      correct, key, dA));
}

void grad_scale_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    if (model.scale() == 1.0) {
        return;
    }
    const arma::mat& dS_scaled = L(StepId::grad_scaled_scores, key.head);
    const std::string correct = "dS = " + divided(model, "dS'") + ": the forward pass divided by the scale, so the backward divides too";
    out.push_back(one("grad_scale_forgotten", "The scale was forgotten on the way back: dS = dS'.", correct, key,
                      dS_scaled));
    out.push_back(one("grad_scale_multiplied", "The gradient was multiplied by the scale instead of divided by it.",
                      correct, key, dS_scaled * model.scale()));
}

void grad_queries_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const int h = key.head;
    const arma::mat& dS = L(StepId::grad_scores, h);
    const arma::mat& K = L(model.rope ? StepId::rotated_keys : StepId::keys, model.kv_head_of(h));
    const std::string correct = model.rope ? "dQ = RoPE⁻¹(dS·K_rot): each row of dS weighs the keys, then the "
                                             "rotation is turned back"
                                           : "dQ = dS·K: each row of dS weighs the keys";
    if (dS.n_rows == dS.n_cols) {
        out.push_back(one("grad_queries_transposed", "dQ was computed as dSᵀ·K: a query's gradient reads its row of dS.",
                          correct, key, unrotated(model, dS.t() * K)));
    }
    if (model.rope) {
        out.push_back(one("grad_rope_not_reversed",
                          "The gradient was not turned back through RoPE: this is the gradient of the rotated queries.",
                          correct, key, dS * K));
    }
}

void grad_keys_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const auto [first, last] = query_heads_of(model, key.head);
    const StepId q_id = model.rope ? StepId::rotated_queries : StepId::queries;
    const arma::mat& Q1 = L(q_id, first);
    arma::mat right(L(StepId::grad_scores, first).n_cols, Q1.n_cols, arma::fill::zeros);
    arma::mat no_transpose = right;
    for (int h = first; h <= last; ++h) {
        const arma::mat& dS = L(StepId::grad_scores, h);
        right += dS.t() * L(q_id, h);
        if (dS.n_rows == dS.n_cols) {
            no_transpose += dS * L(q_id, h);
        }
    }
    const std::string correct = std::string(first == last ? "dK = dSᵀ·Q" : "dK = Σ_h dS_hᵀ·Q_h") +
                                (model.rope ? ", turned back through RoPE" : "") +
                                ": key j's gradient reads column j of dS";
    const arma::mat& dS1 = L(StepId::grad_scores, first);
    if (dS1.n_rows == dS1.n_cols) {
        out.push_back(one("grad_keys_no_transpose", "dK was computed as dS·Q, without the transpose of dS.", correct,
                          key, unrotated(model, no_transpose)));
    }
    if (first != last) {
        out.push_back(one("grad_kv_one_head",
                          "Only query head " + std::to_string(first) + "'s part was taken; key/value head " +
                              std::to_string(key.head) + " is shared by query heads " + std::to_string(first) + " … " +
                              std::to_string(last) + ", and its gradient sums theirs.",
                          correct, key, unrotated(model, dS1.t() * Q1)));
    }
    if (model.rope) {
        out.push_back(one("grad_rope_not_reversed",
                          "The gradient was not turned back through RoPE: this is the gradient of the rotated keys.",
                          correct, key, right));
    }
}

void grad_values_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const auto [first, last] = query_heads_of(model, key.head);
    const arma::mat& A1 = L(StepId::weights, first);
    const arma::mat& dZ1 = L(StepId::grad_head_output, first);
    const std::string correct = std::string(first == last ? "dV = Aᵀ·dZ" : "dV = Σ_h A_hᵀ·dZ_h") +
                                ": value j's gradient reads column j of A";
    if (A1.n_rows == A1.n_cols) {
        arma::mat no_transpose(A1.n_cols, dZ1.n_cols, arma::fill::zeros);
        for (int h = first; h <= last; ++h) {
            no_transpose += L(StepId::weights, h) * L(StepId::grad_head_output, h);
        }
        out.push_back(one("grad_values_no_transpose", "dV was computed as A·dZ, without the transpose of A.", correct,
                          key, no_transpose));
    }
    if (first != last) {
        out.push_back(one("grad_kv_one_head",
                          "Only query head " + std::to_string(first) + "'s part was taken; key/value head " +
                              std::to_string(key.head) + " is shared by query heads " + std::to_string(first) + " … " +
                              std::to_string(last) + ", and its gradient sums theirs.",
                          correct, key, A1.t() * dZ1));
    }
}

void grad_head_output_mistakes(const Model& model, const LearnerValues& L, const StepKey& key,
                               std::vector<Mistake>& out) {
    if (!model.W_O) {
        return;
    }
    const arma::mat& dO = L(StepId::grad_output);
    const arma::uword d_v = model.d_v();
    if (dO.n_cols != model.n_heads() * d_v) {
        return;
    }
    const auto first = static_cast<arma::uword>(key.head - 1) * d_v;
    out.push_back(one("grad_output_projection_forgotten",
                      "The gradient was not taken back through W_O: these are dO's columns, not dO·W_Oᵀ's.",
                      "dZ = dO·W_Oᵀ (head h's columns of it with several heads)", key,
                      dO.cols(first, first + d_v - 1)));
}

void grad_weight_mistakes(const Model& model, const Values& learner, const StepKey& key, std::vector<Mistake>& out) {
    // the gradient in the other layout, worked from the learner's own gradients
    // (of the other shape, unless the weight is square)
    const arma::mat right = compute_step(model, key, learner);
    out.push_back(one("grad_weight_layout",
                      model.layout == Layout::pytorch
                          ? "The gradient is transposed: this file writes weights out × in (layout: pytorch), so dW "
                            "is dYᵀ·X."
                          : "The gradient is transposed: weights are in × out here, so dW is Xᵀ·dY.",
                      "the gradient has the weight's shape and layout, as the file writes it", key, right.t()));
}

void grad_inputs_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    if (model.cross()) {
        return;
    }
    arma::mat queries_only(L(StepId::grad_queries, 1).n_rows, model.d_model(), arma::fill::zeros);
    for (int h = 1; h <= static_cast<int>(model.n_heads()); ++h) {
        queries_only += L(StepId::grad_queries, h) * model.heads[static_cast<std::size_t>(h - 1)].W_Q.t();
    }
    out.push_back(one("grad_inputs_queries_only",
                      "Only the queries' path was taken back; X also fed the keys and the values.",
                      "dX = Σ dQ·W_Qᵀ + Σ (dK·W_Kᵀ + dV·W_Vᵀ): every path from X adds its part", key, queries_only));
}

}  // namespace qkv::checking
