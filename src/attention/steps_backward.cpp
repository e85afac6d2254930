// The backward pass's rows of the step table (STEPS in man/qkv.1.in): each step is the
// gradient of a loss L with respect to one forward value, computed from the
// gradient of what that value fed, back from dO = ∂L/∂O to the weights and
// the inputs. The arithmetic is autograd's, written out: rows are tokens, a
// weight is stored in the x·W layout, and a gradient is shaped as its value.
// This file says when each row exists, what it reads and how it is computed;
// steps_backward_words.cpp its formulas and words.
#include "attention/attention.hpp"
#include "attention/divisor.hpp"
#include "attention/steps_parts.hpp"

#include <algorithm>

namespace qkv::step_parts::backward {

namespace {

bool block(const Model& model) { return model.weight_form == WeightForm::pytorch_block; }

void append(std::vector<StepKey>& to, const std::vector<StepKey>& more) { to.insert(to.end(), more.begin(), more.end()); }

// the forward steps the output projection read: the concatenation, or the one head's output
StepKey concat_source(const Model& model) {
    return model.n_heads() > 1 ? StepKey{StepId::concat, 0} : StepKey{StepId::head_output, 1};
}

// [M_1 … M_k] side by side
arma::mat side_by_side(StepInputs in, std::size_t first = 0) {
    arma::mat result;
    for (std::size_t k = first; k < in.size(); ++k) {
        result = arma::join_rows(result, *in[k]);
    }
    return result;
}

}  // namespace

// ── when a step exists ──────────────────────────────────────────────────────
bool exists(const Model& model) { return model.backward(); }
bool concat_exists(const Model& model) { return model.backward() && model.W_O && model.n_heads() > 1; }
bool weights_exist(const Model& model) { return model.backward() && !block(model); }
bool output_weight_exists(const Model& model) { return weights_exist(model) && model.W_O.has_value(); }
bool query_bias_exists(const Model& model) {
    return weights_exist(model) && std::any_of(model.heads.begin(), model.heads.end(),
                                               [](const HeadWeights& head) { return head.b_Q.has_value(); });
}
bool key_bias_exists(const Model& model) {
    return weights_exist(model) && std::any_of(model.heads.begin(), model.heads.end(),
                                               [](const HeadWeights& head) { return head.b_K.has_value(); });
}
bool value_bias_exists(const Model& model) {
    return weights_exist(model) && std::any_of(model.heads.begin(), model.heads.end(),
                                               [](const HeadWeights& head) { return head.b_V.has_value(); });
}
bool output_bias_exists(const Model& model) { return weights_exist(model) && model.b_O.has_value(); }
bool in_proj_exists(const Model& model) { return model.backward() && block(model); }
bool in_proj_bias_exists(const Model& model) { return in_proj_exists(model) && model.heads.front().b_Q.has_value(); }
bool out_proj_bias_exists(const Model& model) { return in_proj_exists(model) && model.b_O.has_value(); }
bool context_exists(const Model& model) { return model.backward() && model.cross(); }

bool head_has_query_bias(const Model& model, int h) { return head_weights(model, h).b_Q.has_value(); }
bool head_has_key_bias(const Model& model, int h) { return head_weights(model, h).b_K.has_value(); }
bool head_has_value_bias(const Model& model, int h) { return head_weights(model, h).b_V.has_value(); }

// ── what a step reads ───────────────────────────────────────────────────────
std::vector<StepKey> reads_grad_output(const Model&, int) { return {{StepId::grad_output, 0}}; }

std::vector<StepKey> reads_head_output_source(const Model& model, int) {
    return {concat_exists(model) ? StepKey{StepId::grad_concat, 0} : StepKey{StepId::grad_output, 0}};
}

std::vector<StepKey> reads_weights_inputs(const Model& model, int h) {
    return {{StepId::grad_head_output, h}, {StepId::values, model.kv_head_of(h)}};
}

std::vector<StepKey> reads_softmax_inputs(const Model&, int h) {
    return {{StepId::weights, h}, {StepId::grad_weights, h}};
}

std::vector<StepKey> reads_grad_scaled_scores(const Model&, int h) { return {{StepId::grad_scaled_scores, h}}; }

std::vector<StepKey> reads_score_gradient(const Model& model, int h, StepId of) {
    if (const std::optional<ElementwiseStep> next = elementwise_after(model, of)) {
        return {{next->gradient, h}, {of, h}};
    }
    return reads_softmax_inputs(model, h);
}

// dQ = dS·K: the keys the scores read, rotated with RoPE
std::vector<StepKey> reads_queries_inputs(const Model& model, int h) {
    return {{StepId::grad_scores, h}, {scored_keys(model), model.kv_head_of(h)}};
}

// dK_g = Σ_h dS_hᵀ·Q_h over the query heads h that read key/value head g: pairs (dS_h, Q_h)
std::vector<StepKey> reads_keys_inputs(const Model& model, int g) {
    std::vector<StepKey> keys;
    for (int h = model.first_query_head(g); h <= last_query_head(model, g); ++h) {
        keys.push_back({StepId::grad_scores, h});
        keys.push_back({scored_queries(model), h});
    }
    return keys;
}

// back through qk_norm: the gradient of the normed rows, then the rows the norm read
// (head h's own, or over: all every head's: the gradients first, then the rows)
std::vector<StepKey> reads_through_norm(const Model& model, int head, bool queries) {
    const StepId gradient = queries ? StepId::grad_normed_queries : StepId::grad_normed_keys;
    const StepId rows = queries ? StepId::queries : StepId::keys;
    if (!model.qk_norm->over_all) {
        return {{gradient, head}, {rows, head}};
    }
    std::vector<StepKey> keys = every_head(gradient, queries ? heads(model) : kv_heads(model));
    append(keys, every_head(rows, queries ? heads(model) : kv_heads(model)));
    return keys;
}
std::vector<StepKey> reads_grad_queries(const Model& model, int h) {
    return model.qk_norm ? reads_through_norm(model, h, true) : reads_queries_inputs(model, h);
}
std::vector<StepKey> reads_grad_keys(const Model& model, int g) {
    return model.qk_norm ? reads_through_norm(model, g, false) : reads_keys_inputs(model, g);
}
// dγ: every head's normed rows' gradients, then every head's rows before the norm
std::vector<StepKey> reads_q_norm(const Model& model, int) {
    std::vector<StepKey> keys = every_head(StepId::grad_normed_queries, heads(model));
    append(keys, every_head(StepId::queries, heads(model)));
    return keys;
}
std::vector<StepKey> reads_k_norm(const Model& model, int) {
    std::vector<StepKey> keys = every_head(StepId::grad_normed_keys, kv_heads(model));
    append(keys, every_head(StepId::keys, kv_heads(model)));
    return keys;
}

// dV_g = Σ_h A_hᵀ·dZ_h: pairs (A_h, dZ_h)
std::vector<StepKey> reads_values_inputs(const Model& model, int g) {
    std::vector<StepKey> keys;
    for (int h = model.first_query_head(g); h <= last_query_head(model, g); ++h) {
        keys.push_back({StepId::weights, h});
        keys.push_back({StepId::grad_head_output, h});
    }
    return keys;
}

// a projection's weight: its source, then its gradient for every head (split weights) or head h (a list)
std::vector<StepKey> reads_projection(StepKey source, StepId gradient, int count, int head) {
    std::vector<StepKey> keys = {source};
    append(keys, head == 0 ? every_head(gradient, count) : std::vector<StepKey>{{gradient, head}});
    return keys;
}
// with mla: the normed query latent (with q_rank) and the normed latent
std::vector<StepKey> reads_w_query(const Model& model, int h) {
    return reads_projection(mla::queries_source(model), StepId::grad_queries, heads(model), h);
}
std::vector<StepKey> reads_w_key(const Model& model, int h) {
    return reads_projection(mla::latent_source(model), StepId::grad_keys, kv_heads(model), h);
}
std::vector<StepKey> reads_w_value(const Model& model, int h) {
    return reads_projection(mla::latent_source(model), StepId::grad_values, kv_heads(model), h);
}
std::vector<StepKey> reads_w_output(const Model& model, int) {
    return {concat_source(model), {StepId::grad_output, 0}};
}

std::vector<StepKey> reads_b_query(const Model& model, int h) {
    return h == 0 ? every_head(StepId::grad_queries, heads(model)) : std::vector<StepKey>{{StepId::grad_queries, h}};
}
std::vector<StepKey> reads_b_key(const Model& model, int h) {
    return h == 0 ? every_head(StepId::grad_keys, kv_heads(model)) : std::vector<StepKey>{{StepId::grad_keys, h}};
}
std::vector<StepKey> reads_b_value(const Model& model, int h) {
    return h == 0 ? every_head(StepId::grad_values, kv_heads(model)) : std::vector<StepKey>{{StepId::grad_values, h}};
}

// [dQᵀ·X; dKᵀ·X; dVᵀ·X]: the two sources, then every head's dQ, dK and dV
std::vector<StepKey> reads_in_proj(const Model& model, int) {
    std::vector<StepKey> keys = {query_source(model), key_source(model)};
    append(keys, reads_in_proj_bias(model, 0));
    return keys;
}
std::vector<StepKey> reads_in_proj_bias(const Model& model, int) {
    std::vector<StepKey> keys = every_head(StepId::grad_queries, heads(model));
    append(keys, every_head(StepId::grad_keys, kv_heads(model)));
    append(keys, every_head(StepId::grad_values, kv_heads(model)));
    return keys;
}

// dX: every head's dQ, and in self-attention every key/value head's dK and dV (with mla: mla's)
std::vector<StepKey> reads_inputs(const Model& model, int) {
    if (model.mla) {
        return mla::reads_grad_inputs(model, 0);
    }
    std::vector<StepKey> keys = every_head(StepId::grad_queries, heads(model));
    if (!model.cross()) {
        append(keys, reads_context(model, 0));
    }
    return keys;
}
std::vector<StepKey> reads_context(const Model& model, int) {
    std::vector<StepKey> keys = every_head(StepId::grad_keys, kv_heads(model));
    append(keys, every_head(StepId::grad_values, kv_heads(model)));
    return keys;
}

// ── the arithmetic ──────────────────────────────────────────────────────────
arma::mat given(const Model& model, int, StepInputs) { return *model.grad_output; }

// (n × H·d_v) = dO (n × d_out) · W_Oᵀ (d_out × H·d_v)
arma::mat concat(const Model& model, int, StepInputs in) { return product(*in[0], model.W_O->t()); }

// (n × d_v): head h's columns of dConcat, or of dO without W_O; one head with W_O: dO·W_Oᵀ
arma::mat head_output(const Model& model, int h, StepInputs in) {
    if (!concat_exists(model) && model.W_O) {
        return product(*in[0], model.W_O->t());
    }
    const arma::uword d_v = model.d_v();
    const auto first = static_cast<arma::uword>(h - 1) * d_v;
    return in[0]->cols(first, first + d_v - 1);
}

// (n × m) = dZ (n × d_v) · Vᵀ (d_v × m)
arma::mat weights(const Model&, int, StepInputs in) { return product(*in[0], in[1]->t()); }

arma::mat score_gradient(const Model& model, int h, StepId of, StepInputs in) {
    if (const std::optional<ElementwiseStep> next = elementwise_after(model, of)) {
        return elementwise_gradient(model, next->id, h, *in[0], *in[1]);
    }
    return softmax_backward(*in[0], *in[1]);
}

arma::mat scores(const Model& model, int, StepInputs in) { return *in[0] / model.scale(); }

// (n × d_k) = dS (n × m) · K (m × d_k), turned back through RoPE
arma::mat queries(const Model& model, int, StepInputs in) {
    arma::mat result = product(*in[0], *in[1]);
    return model.rope ? rotate_back(result, *model.rope, 0, model.n()) : result;
}

// (m × d_k) = Σ_h dS_hᵀ (m × n) · Q_h (n × d_k), turned back through RoPE
arma::mat keys(const Model& model, int, StepInputs in) {
    arma::mat result(in[0]->n_cols, in[1]->n_cols, arma::fill::zeros);
    for (std::size_t k = 0; k + 1 < in.size(); k += 2) {
        result += product(in[k]->t(), *in[k + 1]);
    }
    return model.rope ? rotate_back(result, *model.rope, 0, model.n()) : result;
}

namespace {

// The gradient of the rows before qk_norm's RMSNorm, from reads_through_norm's
// inputs; adds Σ dy ∘ x·r to dgain when it is given.
arma::mat through_norm(const Model& model, int head, StepInputs in, bool queries, double* dgain) {
    const QkNorm& norm = *model.qk_norm;
    const std::size_t half = in.size() / 2;
    arma::mat gradient = side_by_side(in.first(half));
    const arma::mat rows = side_by_side(in, half);
    const arma::rowvec gain = norm.gain(queries);
    const arma::uword d_k = model.d_k();
    rms_norm_back_columns(gradient.memptr(), rows.memptr(), rows.n_rows, rows.n_cols,
                          norm.over_all ? rows.n_cols : d_k, gain.memptr(), model.qk_norm_eps(), dgain);
    if (!norm.over_all) {
        return gradient;
    }
    const auto first = static_cast<arma::uword>(head - 1) * d_k;
    return gradient.cols(first, first + d_k - 1);
}

arma::mat norm_gain(const Model& model, StepInputs in, bool queries) {
    arma::rowvec dgain(model.qk_norm->over_all ? side_by_side(in.first(in.size() / 2)).n_cols : model.d_k(),
                       arma::fill::zeros);
    through_norm(model, 1, in, queries, dgain.memptr());
    return dgain;
}

}  // namespace

arma::mat grad_queries(const Model& model, int h, StepInputs in) {
    return model.qk_norm ? through_norm(model, h, in, true, nullptr) : queries(model, h, in);
}
arma::mat grad_keys(const Model& model, int g, StepInputs in) {
    return model.qk_norm ? through_norm(model, g, in, false, nullptr) : keys(model, g, in);
}
arma::mat q_norm(const Model& model, int, StepInputs in) { return norm_gain(model, in, true); }
arma::mat k_norm(const Model& model, int, StepInputs in) { return norm_gain(model, in, false); }

// (m × d_v) = Σ_h A_hᵀ (m × n) · dZ_h (n × d_v)
arma::mat values(const Model&, int, StepInputs in) {
    arma::mat result(in[0]->n_cols, in[1]->n_cols, arma::fill::zeros);
    for (std::size_t k = 0; k + 1 < in.size(); k += 2) {
        result += product(in[k]->t(), *in[k + 1]);
    }
    return result;
}

// (d_model × width) = sourceᵀ · [dY_1 … dY_k], in the file's layout
arma::mat w_projection(const Model& model, int, StepInputs in) {
    return in_layout(model, product(in[0]->t(), side_by_side(in, 1)));
}
arma::mat w_key(const Model& model, int h, StepInputs in) {
    return model.mla ? mla::grad_w_key(model, h, in) : w_projection(model, h, in);
}

// (H·d_v × d_out) = concatᵀ · dO, in the file's layout
arma::mat w_output(const Model& model, int, StepInputs in) { return in_layout(model, product(in[0]->t(), *in[1])); }

// (1 × width): the column sums of [dY_1 … dY_k]; the bias was added to every row
arma::mat b_projection(const Model&, int, StepInputs in) { return arma::sum(side_by_side(in), 0); }

arma::mat b_output(const Model&, int, StepInputs in) { return arma::sum(*in[0], 0); }

// (3E × E) = [dQᵀ·X; dKᵀ·C; dVᵀ·C], as in_proj_weight stacks W_Q, W_K, W_V (out × in)
arma::mat in_proj_weight(const Model& model, int, StepInputs in) {
    const auto H = static_cast<std::size_t>(model.n_heads());
    const StepInputs grads = in.subspan(2);
    const arma::mat dQ = side_by_side(grads.subspan(0, H));
    const arma::mat dK = side_by_side(grads.subspan(H, H));
    const arma::mat dV = side_by_side(grads.subspan(2 * H, H));
    return arma::join_cols(product(dQ.t(), *in[0]), product(dK.t(), *in[1]), product(dV.t(), *in[1]));
}

// (1 × 3E): the column sums of dQ, dK and dV, each on its own (in cross-attention dQ has n
// rows and dK, dV have m)
arma::mat in_proj_bias(const Model&, int, StepInputs in) {
    arma::mat result;
    for (const arma::mat* gradient : in) {
        result = arma::join_rows(result, arma::sum(*gradient, 0));
    }
    return result;
}

// (E × E) = dOᵀ · concat, as out_proj.weight (out × in)
arma::mat out_proj_weight(const Model&, int, StepInputs in) { return product(in[1]->t(), *in[0]); }

// (n × d_model) = Σ_h dQ_h·W_Q,hᵀ (+ Σ_g dK_g·W_K,gᵀ + dV_g·W_V,gᵀ in self-attention)
arma::mat inputs(const Model& model, int, StepInputs in) {
    if (model.mla) {
        return mla::grad_inputs(model, 0, in);
    }
    const auto H = static_cast<std::size_t>(model.n_heads());
    arma::mat result(in[0]->n_rows, model.d_model(), arma::fill::zeros);
    for (std::size_t h = 0; h < H; ++h) {
        result += product(*in[h], model.heads[h].W_Q.t());
    }
    if (!model.cross()) {
        result += context(model, 0, in.subspan(H));
    }
    return result;
}

// (m × d_model) = Σ_g dK_g·W_K,gᵀ + dV_g·W_V,gᵀ
arma::mat context(const Model& model, int, StepInputs in) {
    const auto G = static_cast<std::size_t>(model.n_kv_heads());
    arma::mat result(in[0]->n_rows, model.d_model(), arma::fill::zeros);
    for (std::size_t g = 0; g < G; ++g) {
        const HeadWeights& weights = model.kv_weights(static_cast<int>(g) + 1);
        result += product(*in[g], weights.W_K.t()) + product(*in[G + g], weights.W_V.t());
    }
    return result;
}

}  // namespace qkv::step_parts::backward
