// What the files of the step table share (nothing outside src/attention/
// includes this): steps.cpp holds the table and the forward steps' functions,
// steps_backward.cpp the backward pass's (STEPS in man/qkv.1.in), each row's when, reads,
// arithmetic and words.
#pragma once

#include "attention/steps.hpp"
#include "base/numbers.hpp"

#include <string>
#include <vector>

namespace qkv::step_parts {

// What the projections read: X, or X + P with positions; the keys and values
// read the context C in cross-attention.
StepKey query_source(const Model& model);
StepKey key_source(const Model& model);

const HeadWeights& head_weights(const Model& model, int h);

// "d1", "d2", …
std::vector<std::string> dimension_labels(arma::uword count);

// Whether the file writes weights out × in (layout: pytorch); a weight (or its gradient) kept in
// the x·W layout (in × out) as the file writes it.
bool pytorch_layout(const Model& model);
arma::mat in_layout(const Model& model, const arma::mat& weight);
void set_text(Step& step, std::string formula, std::string latex, std::string explanation,
              std::vector<std::string> rows, std::vector<std::string> cols);

// The scores as scaled and then changed by each elementwise step before `id`
// that the example has: what the step `id` of the scores reads.
StepId scores_before(const Model& model, StepId id);
// An elementwise step's words: its row's f of the scores it reads.
void describe_elementwise(const StepContext& context, Step& step);

// A step of the scores as formulas write it: S' for the scaled scores, an
// elementwise step's own symbol (Elementwise::symbol).
std::string score_symbol(StepId id, bool latex);

// the keys {id, 1} … {id, count}
std::vector<StepKey> every_head(StepId id, int count);

// qk_norm's RMSNorm of the queries (or keys) of head `head` from what it reads:
// its own head's rows, or over: all every head's (reads_…_to_norm in steps.cpp).
arma::mat normed_rows(const Model& model, int head, StepInputs in, bool queries);

// "[1.1, 0.9, 1, 1.2]": an RMSNorm's γ as the notes show it, the first eight numbers of a long one
std::string gamma_text(const arma::rowvec& gamma);

// "q1", "q2", …: the numbers a weight makes
std::vector<std::string> prefixed_labels(const std::string& prefix, arma::uword count);

// ── the example's weights and biases (steps_given.cpp) ──────────────────────
namespace given {

bool output_weight_exists(const Model& model);
bool query_bias_exists(const Model& model);
bool key_bias_exists(const Model& model);
bool value_bias_exists(const Model& model);
bool output_bias_exists(const Model& model);
// the query heads (h), or key/value heads (g), whose weight set gives the bias
bool head_has_query_bias(const Model& model, int h);
bool kv_head_has_key_bias(const Model& model, int g);
bool kv_head_has_value_bias(const Model& model, int g);

// each in the file's layout: x·W (in × out), or PyTorch's (out × in)
arma::mat w_query(const Model& model, int head, StepInputs in);
arma::mat w_key(const Model& model, int head, StepInputs in);
arma::mat w_value(const Model& model, int head, StepInputs in);
arma::mat w_output(const Model& model, int head, StepInputs in);
arma::mat b_query(const Model& model, int head, StepInputs in);
arma::mat b_key(const Model& model, int head, StepInputs in);
arma::mat b_value(const Model& model, int head, StepInputs in);
arma::mat b_output(const Model& model, int head, StepInputs in);

void describe_w_query(const StepContext& context, Step& step);
void describe_w_key(const StepContext& context, Step& step);
void describe_w_value(const StepContext& context, Step& step);
void describe_w_output(const StepContext& context, Step& step);
void describe_b_query(const StepContext& context, Step& step);
void describe_b_key(const StepContext& context, Step& step);
void describe_b_value(const StepContext& context, Step& step);
void describe_b_output(const StepContext& context, Step& step);

}  // namespace given

// ── multi-head latent attention (steps_mla.cpp) ─────────────────────────────
namespace mla {

bool exists(const Model& model);
bool q_rank_exists(const Model& model);

std::vector<StepKey> reads_q_latent(const Model& model, int head);
std::vector<StepKey> reads_kv_latent(const Model& model, int head);
// what the queries read: the normed query latent with q_rank, else X (or X + P)
StepKey queries_source(const Model& model);

arma::mat w_q_a(const Model& model, int head, StepInputs in);
arma::mat w_kv_a(const Model& model, int head, StepInputs in);
arma::mat q_latent(const Model& model, int head, StepInputs in);
arma::mat normed_q_latent(const Model& model, int head, StepInputs in);
arma::mat kv_latent(const Model& model, int head, StepInputs in);
arma::mat normed_kv_latent(const Model& model, int head, StepInputs in);
arma::mat rope_keys(const Model& model, int head, StepInputs in);
// [C·W_UK  K_R] of key head g, from the normed latent and the rope keys
arma::mat keys(const Model& model, int g, StepInputs in);

void describe_w_q_a(const StepContext& context, Step& step);
void describe_w_kv_a(const StepContext& context, Step& step);
void describe_q_latent(const StepContext& context, Step& step);
void describe_normed_q_latent(const StepContext& context, Step& step);
void describe_kv_latent(const StepContext& context, Step& step);
void describe_normed_kv_latent(const StepContext& context, Step& step);
void describe_rope_keys(const StepContext& context, Step& step);
void describe_queries(const StepContext& context, Step& step);
void describe_keys(const StepContext& context, Step& step);
void describe_values(const StepContext& context, Step& step);
// w_query, w_key or w_value: a head's block of q_proj (q_b_proj) or kv_b_proj
void describe_head_weight(const StepContext& context, Step& step, StepId id);

// the backward pass (steps_mla_backward.cpp)
bool backward_exists(const Model& model);
bool q_rank_backward_exists(const Model& model);
// what the keys' and values' up-projections read: the normed latent (X or C without mla)
StepKey latent_source(const Model& model);

std::vector<StepKey> reads_grad_normed_q_latent(const Model& model, int head);
std::vector<StepKey> reads_grad_q_latent(const Model& model, int head);
std::vector<StepKey> reads_grad_rope_keys(const Model& model, int head);
std::vector<StepKey> reads_grad_normed_kv_latent(const Model& model, int head);
std::vector<StepKey> reads_grad_kv_latent(const Model& model, int head);
std::vector<StepKey> reads_grad_w_q_a(const Model& model, int head);
std::vector<StepKey> reads_grad_w_kv_a(const Model& model, int head);
std::vector<StepKey> reads_grad_inputs(const Model& model, int head);

arma::mat grad_normed_q_latent(const Model& model, int head, StepInputs in);
arma::mat grad_q_latent(const Model& model, int head, StepInputs in);
arma::mat grad_rope_keys(const Model& model, int head, StepInputs in);
arma::mat grad_normed_kv_latent(const Model& model, int head, StepInputs in);
arma::mat grad_kv_latent(const Model& model, int head, StepInputs in);
// dγ of q_a_layernorm or kv_a_layernorm, from (the normed latent's gradient, the latent)
arma::mat grad_norm_gain(const Model& model, int head, StepInputs in);
// W_UK's part of kv_b_proj: Cᵀ·[each head's dK without its rope part]
arma::mat grad_w_key(const Model& model, int head, StepInputs in);
arma::mat grad_inputs(const Model& model, int head, StepInputs in);

void describe_grad_normed_q_latent(const StepContext& context, Step& step);
// grad_q_latent, grad_kv_latent: back through the latent's RMSNorm
void describe_grad_latent(const StepContext& context, Step& step);
void describe_grad_rope_keys(const StepContext& context, Step& step);
void describe_grad_normed_kv_latent(const StepContext& context, Step& step);
void describe_grad_norm_gain(const StepContext& context, Step& step);
void describe_grad_w_q_a(const StepContext& context, Step& step);
void describe_grad_w_kv_a(const StepContext& context, Step& step);
// grad_w_query, grad_w_key, grad_w_value of an mla example
void describe_grad_head_weights(const StepContext& context, Step& step);
void describe_grad_inputs(const StepContext& context, Step& step);

}  // namespace mla

// ── the backward pass (steps_backward.cpp), in the order of the table ────────
namespace backward {

// H and G as the rows count heads, and the last query head (1-based) that reads key/value head g
inline int heads(const Model& model) { return static_cast<int>(model.n_heads()); }
inline int kv_heads(const Model& model) { return static_cast<int>(model.n_kv_heads()); }
inline int last_query_head(const Model& model, int g) {
    return model.first_query_head(g) + heads(model) / kv_heads(model) - 1;
}

bool exists(const Model& model);                // any gradient: grad_output: or --backward
bool concat_exists(const Model& model);         // grad_concat: W_O and more than one head
bool weights_exist(const Model& model);         // grad_w_query, _key, _value: not a pytorch: block
bool output_weight_exists(const Model& model);  // grad_w_output
bool query_bias_exists(const Model& model);
bool key_bias_exists(const Model& model);
bool value_bias_exists(const Model& model);
bool output_bias_exists(const Model& model);
bool in_proj_exists(const Model& model);        // grad_in_proj_weight, grad_out_proj_weight: a pytorch: block
bool in_proj_bias_exists(const Model& model);
bool out_proj_bias_exists(const Model& model);
bool context_exists(const Model& model);

// a head of a `heads:` list that gives this bias (the steps of split weights are not per head)
bool head_has_query_bias(const Model& model, int h);
bool head_has_key_bias(const Model& model, int h);
bool head_has_value_bias(const Model& model, int h);

std::vector<StepKey> reads_grad_output(const Model& model, int head);
std::vector<StepKey> reads_head_output_source(const Model& model, int head);
std::vector<StepKey> reads_weights_inputs(const Model& model, int head);
std::vector<StepKey> reads_softmax_inputs(const Model& model, int head);
std::vector<StepKey> reads_grad_scaled_scores(const Model& model, int head);
// The gradient of step `of` of the scores (scaled_scores, or an elementwise
// step): the softmax's backward, or, when an elementwise step reads `of` in
// this example, that step's gradient times its f′ at `of`.
std::vector<StepKey> reads_score_gradient(const Model& model, int head, StepId of);
arma::mat score_gradient(const Model& model, int head, StepId of, StepInputs in);
template <StepId of>
std::vector<StepKey> reads_gradient_of(const Model& model, int head) {
    return reads_score_gradient(model, head, of);
}
template <StepId of>
arma::mat gradient_of(const Model& model, int head, StepInputs in) {
    return score_gradient(model, head, of, in);
}
std::vector<StepKey> reads_queries_inputs(const Model& model, int head);
std::vector<StepKey> reads_keys_inputs(const Model& model, int head);
// with qk_norm, dQ and dK come back through the norm; dγ of each norm
std::vector<StepKey> reads_grad_queries(const Model& model, int head);
std::vector<StepKey> reads_grad_keys(const Model& model, int head);
std::vector<StepKey> reads_q_norm(const Model& model, int head);
std::vector<StepKey> reads_k_norm(const Model& model, int head);
std::vector<StepKey> reads_values_inputs(const Model& model, int head);
std::vector<StepKey> reads_w_query(const Model& model, int head);
std::vector<StepKey> reads_w_key(const Model& model, int head);
std::vector<StepKey> reads_w_value(const Model& model, int head);
std::vector<StepKey> reads_w_output(const Model& model, int head);
std::vector<StepKey> reads_b_query(const Model& model, int head);
std::vector<StepKey> reads_b_key(const Model& model, int head);
std::vector<StepKey> reads_b_value(const Model& model, int head);
std::vector<StepKey> reads_in_proj(const Model& model, int head);
std::vector<StepKey> reads_in_proj_bias(const Model& model, int head);
std::vector<StepKey> reads_inputs(const Model& model, int head);
std::vector<StepKey> reads_context(const Model& model, int head);

arma::mat given(const Model& model, int head, StepInputs in);
arma::mat concat(const Model& model, int head, StepInputs in);
arma::mat head_output(const Model& model, int head, StepInputs in);
arma::mat weights(const Model& model, int head, StepInputs in);
arma::mat scores(const Model& model, int head, StepInputs in);
arma::mat queries(const Model& model, int head, StepInputs in);
arma::mat keys(const Model& model, int head, StepInputs in);
arma::mat grad_queries(const Model& model, int head, StepInputs in);
arma::mat grad_keys(const Model& model, int head, StepInputs in);
arma::mat q_norm(const Model& model, int head, StepInputs in);
arma::mat k_norm(const Model& model, int head, StepInputs in);
arma::mat values(const Model& model, int head, StepInputs in);
arma::mat w_projection(const Model& model, int head, StepInputs in);
arma::mat w_key(const Model& model, int head, StepInputs in);  // w_projection, or mla's W_UK
arma::mat w_output(const Model& model, int head, StepInputs in);
arma::mat b_projection(const Model& model, int head, StepInputs in);
arma::mat b_output(const Model& model, int head, StepInputs in);
arma::mat in_proj_weight(const Model& model, int head, StepInputs in);
arma::mat in_proj_bias(const Model& model, int head, StepInputs in);
arma::mat out_proj_weight(const Model& model, int head, StepInputs in);
arma::mat inputs(const Model& model, int head, StepInputs in);
arma::mat context(const Model& model, int head, StepInputs in);

// A weight's gradient: dW = sourceᵀ·dY in the x·W layout, dYᵀ·source in the pytorch layout,
// with its labels (given in × out) in the file's layout.
struct WeightGradient {
    std::string name, name_latex;      // "W_Q", "W_{Q}"
    std::string source, source_latex;  // "X"
    std::string dy, dy_latex;          // "[dQ_1 … dQ_3]"
    std::vector<std::string> in, out;
};
void describe_weight_gradient(const Model& model, Step& step, WeightGradient text);
// "in the file's layout: in × out, as W_Q was written"
std::string layout_note(const Model& model, const std::string& name);
// "W_Q" as the file wrote it, as a formula reads it: "W_Qᵀ" (transposed) in the x·W layout, "W_Q" in the
// pytorch layout, which wrote Wᵀ already; and the same in LaTeX
std::string weight_text(const Model& model, const std::string& name, bool transposed);
std::string weight_latex(const Model& model, const std::string& name, bool transposed);

void describe_output(const StepContext& context, Step& step);
void describe_concat(const StepContext& context, Step& step);
void describe_head_output(const StepContext& context, Step& step);
void describe_weights(const StepContext& context, Step& step);
void describe_score_gradient(const StepContext& context, Step& step);
void describe_scores(const StepContext& context, Step& step);
void describe_queries(const StepContext& context, Step& step);
void describe_keys(const StepContext& context, Step& step);
void describe_values(const StepContext& context, Step& step);
void describe_norm_gain(const StepContext& context, Step& step);
void describe_w_query(const StepContext& context, Step& step);
void describe_w_key(const StepContext& context, Step& step);
void describe_w_value(const StepContext& context, Step& step);
void describe_w_output(const StepContext& context, Step& step);
void describe_b_query(const StepContext& context, Step& step);
void describe_b_key(const StepContext& context, Step& step);
void describe_b_value(const StepContext& context, Step& step);
void describe_b_output(const StepContext& context, Step& step);
void describe_in_proj_weight(const StepContext& context, Step& step);
void describe_in_proj_bias(const StepContext& context, Step& step);
void describe_out_proj_weight(const StepContext& context, Step& step);
void describe_out_proj_bias(const StepContext& context, Step& step);
void describe_inputs(const StepContext& context, Step& step);
void describe_context(const StepContext& context, Step& step);

}  // namespace backward

}  // namespace qkv::step_parts
