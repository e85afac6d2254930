// The backward pass's rows of the step table (STEPS in man/qkv.1.in): each step is the
// gradient of a loss L with respect to one forward value, computed from the
// gradient of what that value fed, back from dO = ∂L/∂O to the weights and
// the inputs. The arithmetic is autograd's, written out: rows are tokens, a
// weight is stored in the x·W layout, and a gradient is shaped as its value.
#include "attention/attention.hpp"
#include "attention/divisor.hpp"
#include "attention/steps_parts.hpp"

#include <algorithm>

namespace qkv::step_parts::backward {

namespace {

bool block(const Model& model) { return model.weight_form == WeightForm::pytorch_block; }
int heads(const Model& model) { return static_cast<int>(model.n_heads()); }
int kv_heads(const Model& model) { return static_cast<int>(model.n_kv_heads()); }
// the query heads (1-based) that read key/value head g
int last_query_head(const Model& model, int g) { return model.first_query_head(g) + heads(model) / kv_heads(model) - 1; }

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

const std::string& dz_name(const Model& model) {
    static const std::string concat = "dConcat", output = "dO";
    return concat_exists(model) ? concat : output;
}

std::string heads_list(const Model& model, int g) {
    const int first = model.first_query_head(g);
    const int last = last_query_head(model, g);
    return first == last ? std::to_string(first)
                         : std::to_string(first) + (last == first + 1 ? " and " : " … ") + std::to_string(last);
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

// ── the words ───────────────────────────────────────────────────────────────
void describe_weight_gradient(const Model& model, Step& step, WeightGradient text) {
    if (pytorch_layout(model)) {
        set_text(step, "d" + text.name + " = " + text.dy + "ᵀ·" + text.source,
                 "d" + text.name_latex + " = " + text.dy_latex + "^\\top " + text.source_latex, "", {}, {});
        std::swap(text.in, text.out);
    } else {
        set_text(step, "d" + text.name + " = " + text.source + "ᵀ·" + text.dy,
                 "d" + text.name_latex + " = " + text.source_latex + "^\\top " + text.dy_latex, "", {}, {});
    }
    step.row_labels = std::move(text.in);
    step.col_labels = std::move(text.out);
}

std::string weight_text(const Model& model, const std::string& name, bool transposed) {
    // in the x·W layout a gradient reads Wᵀ; a file in the pytorch layout wrote Wᵀ already
    return "W_" + name + (transposed != pytorch_layout(model) ? "ᵀ" : "");
}
std::string weight_latex(const Model& model, const std::string& name, bool transposed) {
    return "W_{" + name + "}" + (transposed != pytorch_layout(model) ? "^\\top" : "");
}

std::string layout_note(const Model& model, const std::string& name) {
    return pytorch_layout(model) ? "in the file's layout: out × in, as " + name + " was written"
                                 : "in the file's layout: in × out, as " + name + " was written";
}

void describe_output(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "dO = ∂L/∂O", "dO = \\frac{\\partial L}{\\partial O}",
             "The backward pass starts here: how much the loss L changes with each output value. Every gradient "
             "below is worked back from these numbers by the chain rule.",
             model.tokens, dimension_labels(model.d_out()));
    step.notes.push_back(model.grad_output_ones ? "grad_output: ones, so L is the sum of every output value"
                                                : "as the example gives it (grad_output:)");
}

void describe_concat(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "dConcat = dO·" + weight_text(model, "O", true),
             "d\\mathrm{Concat} = dO\\, " + weight_latex(model, "O", true),
             "Each output value was a row of the concatenation times a column of W_O, so the gradient goes back "
             "through the transpose of W_O.",
             model.tokens, dimension_labels(model.n_heads() * model.d_v()));
}

void describe_head_output(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const std::string h = std::to_string(step.head);
    if (!concat_exists(model) && model.W_O) {
        set_text(step, "dZ = dO·" + weight_text(model, "O", true), "dZ = dO\\, " + weight_latex(model, "O", true),
                 "The output was Z times W_O, so the gradient goes back through the transpose of W_O.", model.tokens,
                 dimension_labels(model.d_v()));
        return;
    }
    if (model.n_heads() == 1) {
        set_text(step, "dZ = dO", "dZ = dO", "With one head and no W_O the output is Z itself: the same gradient.",
                 model.tokens, dimension_labels(model.d_v()));
        return;
    }
    const std::string first = std::to_string((step.head - 1) * static_cast<int>(model.d_v()) + 1);
    const std::string last = std::to_string(step.head * static_cast<int>(model.d_v()));
    const std::string& source = dz_name(model);
    set_text(step, "dZ_" + h + " = " + source + "[:, " + first + " … " + last + "]",
             "dZ_{" + h + "} = " + (source == "dO" ? std::string("dO") : std::string("d\\mathrm{Concat}")) + "_{:,\\," +
                 first + "..." + last + "}",
             "Concatenation only placed the heads side by side, so each head takes back its own columns of the "
             "gradient.",
             model.tokens, dimension_labels(model.d_v()));
}

void describe_weights(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "dA = dZ·Vᵀ", "dA = dZ\\, V^\\top",
             "Z = A·V: weight A[i,j] multiplied value row j into output row i, so its gradient is row i of dZ dotted "
             "with value row j.",
             model.tokens, context.key_tokens());
}

namespace {

// The forward step a score gradient is the gradient of: scaled_scores, or an elementwise step.
StepId gradient_source(StepId gradient) {
    for (const ElementwiseStep& step : k_elementwise_steps) {
        if (step.gradient == gradient) {
            return step.id;
        }
    }
    return StepId::scaled_scores;
}

}  // namespace

void describe_score_gradient(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const StepId of = gradient_source(step.id);
    if (const std::optional<ElementwiseStep> next = elementwise_after(model, of)) {
        const Elementwise& through = *step_row(next->id).elementwise;
        step.title = std::string(through.gradient_title);
        set_text(step,
                 "d" + score_symbol(of, false) + " = d" + std::string(through.symbol) + " ∘ " +
                     elementwise_formula(through.slope_formula, score_symbol(of, false)),
                 "d" + score_symbol(of, true) + " = d" + std::string(through.symbol_latex) + " \\circ " +
                     elementwise_formula(through.slope_latex, score_symbol(of, true)),
                 std::string(through.gradient_why), model.tokens, context.key_tokens());
        return;
    }
    const std::string symbol = score_symbol(of, false);
    set_text(step, "d" + symbol + " = A ∘ (dA − rowsum(dA ∘ A))",
             "d" + score_symbol(of, true) + " = A \\circ \\left(dA - \\operatorname{rowsum}(dA \\circ A)\\right)",
             "The softmax's backward. Raising one score raises its own weight and lowers every other weight of the "
             "row, so each cell's dA is measured against the row's average dA, weighted by A, before it is scaled "
             "by its own weight.",
             model.tokens, context.key_tokens());
    if (model.masked()) {
        step.notes.push_back("blocked cells have weight 0, so their gradient is 0");
    }
    if (model.alibi) {
        step.notes.push_back("also the gradient of biased_scores: the position bias is a constant and passes it on");
    }
    if (model.sinks) {
        step.notes.push_back("the sink's dropped column had no gradient, so the formula is the one without a sink; "
                             "the row sums run over the keys");
    }
}

void describe_scores(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Divisor divisor = divisor_of(model);
    const std::string why =
        !divisor.scaled ? "The scores were not scaled, so the gradient passes unchanged."
        : divisor.root  ? "S' = S / √d_k, so the gradient is divided by √d_k too: the scale shows again on the way "
                          "back, and from here it is inside dQ and dK."
                        : "S' = S divided by the example's scale, so the gradient is divided by it too.";
    set_text(step, "dS = " + divided(model, "dS'"), "dS = " + divided_latex(model, "dS'"), why, {}, {});
    step.row_labels = model.tokens;
    step.col_labels = context.key_tokens();
}

namespace {

// dQ (or dK) back through qk_norm's RMSNorm, from the gradient of the normed rows
void describe_through_norm(const StepContext& context, Step& step, bool queries) {
    const Model& model = context.model();
    const std::string letter = queries ? "Q" : "K";
    const std::string row = queries ? "q" : "k";
    set_text(step,
             "d" + letter + " = r·(g∘d" + letter + "_norm) − " + row + "·r³·mean(" + row + "∘g∘d" + letter +
                 "_norm), each row, r = 1/√(mean(" + row + "²) + eps), g = " +
                 (model.qk_norm->offset != 0.0 ? "1 + γ" : "γ"),
             "d" + letter + " = r\\,(g \\odot d" + letter + "_{\\mathrm{norm}}) - " + row +
                 "\\, r^3 \\operatorname{mean}(" + row + " \\odot g \\odot d" + letter + "_{\\mathrm{norm}})",
             std::string("The norm divided each row by its own root mean square, so every element of the row moved "
                         "every other one's result: the gradient of ") +
                 (queries ? "a query" : "a key") +
                 " element is its own share scaled by r, less what it did to the row's size, which all the elements "
                 "of the normed row feel.",
             queries ? model.tokens : context.key_tokens(), dimension_labels(model.d_k()));
    if (model.qk_norm->over_all) {
        step.notes.push_back("over: all: r and the mean run over the token's every head together");
    }
}

// the symbols the scores' gradient meets: K_rot, K_norm or K
std::string scored_symbol(const Model& model, const std::string& letter, bool latex) {
    if (model.rope) {
        return letter + (latex ? "_{\\mathrm{rot}}" : "_rot");
    }
    if (model.qk_norm) {
        return letter + (latex ? "_{\\mathrm{norm}}" : "_norm");
    }
    return letter;
}

}  // namespace

void describe_queries(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (step.id == StepId::grad_queries && model.qk_norm) {
        describe_through_norm(context, step, true);
        return;
    }
    const bool normed = step.id == StepId::grad_normed_queries;
    const std::string result = normed ? "dQ_norm" : "dQ";
    const std::string result_latex = normed ? "dQ_{\\mathrm{norm}}" : "dQ";
    const std::string k = scored_symbol(model, "K", false);
    const std::string k_latex = scored_symbol(model, "K", true);
    const std::string explanation =
        "S = Q·Kᵀ: query i met every key in row i of S, so its gradient adds up the keys, each weighted by its cell "
        "of dS.";
    if (model.rope) {
        set_text(step, result + " = RoPE⁻¹(dS·" + k + ")",
                 result_latex + " = \\operatorname{RoPE}^{-1}(dS\\, " + k_latex + ")",
                 explanation + " RoPE turned each pair of Q by an angle; turning the gradient back by the same angle "
                               "gives the gradient of Q before the rotation.",
                 model.tokens, dimension_labels(model.d_k()));
        return;
    }
    set_text(step, result + " = dS·" + k, result_latex + " = dS\\, " + k_latex, explanation, model.tokens,
             dimension_labels(model.d_k()));
}

void describe_keys(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (step.id == StepId::grad_keys && model.qk_norm) {
        describe_through_norm(context, step, false);
        return;
    }
    const bool shared = model.n_kv_heads() != model.n_heads();
    const std::string result = step.id == StepId::grad_normed_keys ? "dK_norm" : "dK";
    const std::string result_latex = step.id == StepId::grad_normed_keys ? "dK_{\\mathrm{norm}}" : "dK";
    const std::string q = scored_symbol(model, "Q", false);
    const std::string q_latex = scored_symbol(model, "Q", true);
    std::string formula = shared ? "Σ_h dS_hᵀ·" + q + "_h" : "dSᵀ·" + q;
    // a symbol with a subscript of its own is grouped before the head's: {Q_{\mathrm{rot}}}_h
    const std::string q_head = q_latex.find('_') == std::string::npos ? q_latex + "_h" : "{" + q_latex + "}_h";
    std::string latex = shared ? "\\sum_h dS_h^\\top " + q_head : "dS^\\top " + q_latex;
    if (model.rope) {
        formula = "RoPE⁻¹(" + formula + ")";
        latex = "\\operatorname{RoPE}^{-1}\\left(" + latex + "\\right)";
    }
    std::string explanation =
        "Key j met every query in column j of S, so its gradient adds up the queries, each weighted by its cell of "
        "dS: the column, hence the transpose.";
    if (model.rope) {
        explanation += " Turned back through RoPE, as the queries' gradient is.";
    }
    set_text(step, result + " = " + formula, result_latex + " = " + latex, explanation, context.key_tokens(),
             dimension_labels(model.d_k()));
    if (shared) {
        step.notes.push_back("summed over query heads " + heads_list(model, step.head) +
                             ", which share key/value head " + std::to_string(step.head));
    }
}

void describe_norm_gain(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool queries = step.id == StepId::grad_q_norm;
    const std::string letter = queries ? "Q" : "K";
    const std::string row = queries ? "q" : "k";
    set_text(step, "dγ = Σ over rows of d" + letter + "_norm ∘ " + row + "·r, r = 1/√(mean(" + row + "²) + eps)",
             "d\\gamma = \\sum_i dQ_{\\mathrm{norm},i} \\odot " + row + "_i\\, r_i",
             std::string("γ multiplied each normed element, so its gradient adds up, over every token") +
                 (model.qk_norm->over_all ? "" : " and every head") +
                 ", the gradient of that element times the row divided by its root mean square.",
             {"γ"}, dimension_labels(queries ? (model.qk_norm->over_all ? model.n_heads() : 1) * model.d_k()
                                             : (model.qk_norm->over_all ? model.n_kv_heads() : 1) * model.d_k()));
    if (!queries) {
        step.latex = "d\\gamma = \\sum_j dK_{\\mathrm{norm},j} \\odot k_j\\, r_j";
    }
    if (!model.qk_norm->over_all && (queries ? model.n_heads() : model.n_kv_heads()) > 1) {
        step.notes.push_back(std::string("summed over the ") + (queries ? "query" : "key/value") +
                             " heads too, which share γ");
    }
}

void describe_values(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool shared = model.n_kv_heads() != model.n_heads();
    set_text(step, shared ? "dV = Σ_h A_hᵀ·dZ_h" : "dV = Aᵀ·dZ",
             shared ? "dV = \\sum_h A_h^\\top dZ_h" : "dV = A^\\top dZ",
             "Value row j went into every output row i with weight A[i,j], so its gradient adds up the rows of dZ, "
             "each weighted by column j of A: hence Aᵀ.",
             context.key_tokens(), dimension_labels(model.d_v()));
    if (shared) {
        step.notes.push_back("summed over query heads " + heads_list(model, step.head) +
                             ", which share key/value head " + std::to_string(step.head));
    }
}

namespace {

// dW = sourceᵀ·dY (x·W layout) or dYᵀ·source (pytorch layout), for one head or all heads side by side
void describe_weight(const StepContext& context, Step& step, const std::string& letter, const std::string& source,
                     int count, arma::uword width) {
    const Model& model = context.model();
    const bool all = step.head == 0 && count > 1;
    const std::string d = "d" + letter;
    describe_weight_gradient(
        model, step,
        {.name = "W_" + letter,
         .name_latex = "W_{" + letter + "}",
         .source = source,
         .source_latex = source,
         .dy = all ? "[" + d + "_1 … " + d + "_" + std::to_string(count) + "]" : d,
         .dy_latex = all ? "\\begin{bmatrix} d" + letter + "_1 & \\cdots & d" + letter + "_{" + std::to_string(count) +
                               "} \\end{bmatrix}"
                         : d,
         .in = dimension_labels(model.d_model()),
         .out = prefixed_labels(letter == "Q" ? "q" : letter == "K" ? "k" : "v", width)});
    step.explanation = "Each " + std::string(letter == "Q" ? "query" : letter == "K" ? "key" : "value") +
                       " was its token's row times W_" + letter +
                       ", so a weight's gradient adds up, over the tokens, the input value it multiplied times the "
                       "gradient of the value it made.";
    if (all) {
        step.notes.push_back("the heads' gradients side by side, as W_" + letter + "'s columns were split");
    }
    step.notes.push_back(layout_note(model, "W_" + letter));
}

void describe_bias(Step& step, const std::string& letter, int count, arma::uword width) {
    const bool all = step.head == 0 && count > 1;
    const std::string d = "d" + letter;
    set_text(step, "db_" + letter + " = Σ_i " + (all ? "[" + d + "_1 … " + d + "_" + std::to_string(count) + "]" : d) +
                       "[i, :]",
             "db_{" + letter + "} = \\sum_i d" + letter + "_{i,:}",
             "The bias was added to every token's row, so its gradient is the sum of the rows of d" + letter + ".",
             {"b_" + letter}, prefixed_labels(letter == "Q" ? "q" : letter == "K" ? "k" : "v", width));
}

}  // namespace

void describe_w_query(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_grad_head_weights(context, step);
        return;
    }
    const int count = heads(model);
    describe_weight(context, step, "Q", context.names().queries, count,
                    (step.head == 0 ? model.n_heads() : 1) * model.d_k());
}

void describe_w_key(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_grad_head_weights(context, step);
        return;
    }
    describe_weight(context, step, "K", context.names().keys, kv_heads(model),
                    (step.head == 0 ? model.n_kv_heads() : 1) * model.d_k());
}

void describe_w_value(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_grad_head_weights(context, step);
        return;
    }
    describe_weight(context, step, "V", context.names().keys, kv_heads(model),
                    (step.head == 0 ? model.n_kv_heads() : 1) * model.d_v());
}

void describe_w_output(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool several = model.n_heads() > 1;
    const std::string source = several ? "concat" : "Z";
    const std::string source_latex = several ? "\\mathrm{Concat}" : "Z";
    if (pytorch_layout(model)) {
        set_text(step, "dW_O = dOᵀ·" + source, "dW_O = dO^\\top " + source_latex, "", {}, {});
    } else {
        set_text(step, "dW_O = " + source + "ᵀ·dO", "dW_O = " + source_latex + "^\\top dO", "", {}, {});
    }
    step.explanation = "Each output value was a row of " + source +
                       " times a column of W_O, so a weight's gradient adds up, over the tokens, the value it "
                       "multiplied times the output's gradient.";
    std::vector<std::string> in = dimension_labels(model.n_heads() * model.d_v());
    std::vector<std::string> out = prefixed_labels("o", model.d_out());
    if (pytorch_layout(model)) {
        std::swap(in, out);
    }
    step.row_labels = std::move(in);
    step.col_labels = std::move(out);
}

void describe_b_query(const StepContext& context, Step& step) {
    const Model& model = context.model();
    describe_bias(step, "Q", heads(model), (step.head == 0 ? model.n_heads() : 1) * model.d_k());
}

void describe_b_key(const StepContext& context, Step& step) {
    const Model& model = context.model();
    describe_bias(step, "K", kv_heads(model), (step.head == 0 ? model.n_kv_heads() : 1) * model.d_k());
    if (!model.rope && !model.sinks) {
        // Σ_j dS'[i,j] = Σ_j A_ij·(dA_ij − r_i) = r_i − r_i = 0, so Σ_j dK[j,:] = Σ_i (Σ_j dS[i,j])·Q[i,:] = 0
        step.notes.push_back("0 up to rounding: b_K adds q·b_K to every score of a row alike, which the softmax "
                             "does not see");
    }
}

void describe_b_value(const StepContext& context, Step& step) {
    const Model& model = context.model();
    describe_bias(step, "V", kv_heads(model), (step.head == 0 ? model.n_kv_heads() : 1) * model.d_v());
}

void describe_b_output(const StepContext& context, Step& step) {
    set_text(step, "db_O = Σ_i dO[i, :]", "db_{O} = \\sum_i dO_{i,:}",
             "The bias was added to every token's output row, so its gradient is the sum of the rows of dO.", {"b_O"},
             prefixed_labels("o", context.model().d_out()));
}

void describe_in_proj_weight(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const std::string& x = context.names().queries;
    const std::string& c = context.names().keys;
    set_text(step, "[dQᵀ·" + x + "; dKᵀ·" + c + "; dVᵀ·" + c + "]",
             "\\begin{bmatrix} dQ^\\top " + x + " \\\\ dK^\\top " + c + " \\\\ dV^\\top " + c + " \\end{bmatrix}",
             "in_proj_weight stacks W_Q, W_K and W_V, each out × in, and each projection was its source times that "
             "block transposed; so each block's gradient is its projection's gradient, transposed, times the source.",
             {}, dimension_labels(model.d_model()));
    const arma::uword E = model.n_heads() * model.d_k();
    for (const char* prefix : {"q", "k", "v"}) {
        for (const std::string& label : prefixed_labels(prefix, E)) {
            step.row_labels.push_back(label);
        }
    }
    step.notes.push_back("dQ, dK and dV hold every head's gradient side by side, as the heads split the rows");
}

void describe_in_proj_bias(const StepContext& context, Step& step) {
    const arma::uword E = context.model().n_heads() * context.model().d_k();
    set_text(step, "[Σ_i dQ[i, :], Σ_i dK[i, :], Σ_i dV[i, :]]",
             "\\begin{bmatrix} \\sum_i dQ_{i,:} & \\sum_i dK_{i,:} & \\sum_i dV_{i,:} \\end{bmatrix}",
             "in_proj_bias holds b_Q, b_K and b_V one after the other; each was added to every row, so each part's "
             "gradient is the sum of its projection's gradient rows.",
             {"in_proj_bias"}, {});
    for (const char* prefix : {"q", "k", "v"}) {
        for (const std::string& label : prefixed_labels(prefix, E)) {
            step.col_labels.push_back(label);
        }
    }
}

void describe_out_proj_weight(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const std::string source = model.n_heads() > 1 ? "concat" : "Z";
    set_text(step, "dOᵀ·" + source, "dO^\\top " + (model.n_heads() > 1 ? std::string("\\mathrm{Concat}") : "Z"),
             "out_proj.weight is out × in and the output was " + source +
                 " times its transpose, so its gradient is dO transposed times " + source + ".",
             prefixed_labels("o", model.d_out()), dimension_labels(model.n_heads() * model.d_v()));
}

void describe_out_proj_bias(const StepContext& context, Step& step) {
    set_text(step, "Σ_i dO[i, :]", "\\sum_i dO_{i,:}",
             "out_proj.bias was added to every output row, so its gradient is the sum of the rows of dO.",
             {"out_proj_bias"}, prefixed_labels("o", context.model().d_out()));
}

void describe_inputs(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_grad_inputs(context, step);
        return;
    }
    const bool several = model.n_heads() > 1;
    const bool shared = model.n_kv_heads() != model.n_heads();
    const std::string wq = weight_text(model, "Q", true);
    const std::string wk = weight_text(model, "K", true);
    const std::string wv = weight_text(model, "V", true);
    const std::string h = several ? "_h" : "";
    const std::string g = shared ? "_g" : h;
    std::string formula = "dX = " + std::string(several ? "Σ_h " : "") + "dQ" + h + "·" + wq + h;
    std::string latex = "dX = " + std::string(several ? "\\sum_h " : "") + "dQ" + h + "\\, " +
                        weight_latex(model, "Q", true);
    std::string explanation;
    if (model.cross()) {
        explanation = "In cross-attention X feeds only the queries, so its gradient comes back through W_Q alone; "
                      "the keys' and values' part goes to the context.";
    } else {
        const std::string sum = shared ? "Σ_g " : several ? "Σ_h " : "";
        formula += " + " + sum + (sum.empty() ? "" : "(") + "dK" + g + "·" + wk + g + " + dV" + g + "·" + wv + g +
                   (sum.empty() ? "" : ")");
        const std::string kv_sum = shared ? "\\sum_g " : several ? "\\sum_h " : "";
        const std::string kv_terms =
            "dK\\, " + weight_latex(model, "K", true) + " + dV\\, " + weight_latex(model, "V", true);
        latex += " + " + (kv_sum.empty() ? kv_terms : kv_sum + "\\left(" + kv_terms + "\\right)");
        explanation = "X feeds the queries, the keys and the values, so its gradient adds the three paths, each "
                      "back through its weight's transpose.";
    }
    set_text(step, formula, latex, explanation, model.tokens, dimension_labels(model.d_model()));
    if (model.P) {
        step.notes.push_back("P is fixed, so this is also the gradient of X + P");
    }
}

void describe_context(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool sum = model.n_kv_heads() > 1;
    set_text(step,
             "dC = " + std::string(sum ? "Σ_g (" : "") + "dK·" + weight_text(model, "K", true) + " + dV·" +
                 weight_text(model, "V", true) + (sum ? ")" : ""),
             "dC = " + std::string(sum ? "\\sum_g " : "") + "\\left(dK\\, " + weight_latex(model, "K", true) +
                 " + dV\\, " + weight_latex(model, "V", true) + "\\right)",
             "The context feeds the keys and the values, so its gradient adds those two paths back through their "
             "weights' transposes.",
             model.context_tokens, dimension_labels(model.d_model()));
}

}  // namespace qkv::step_parts::backward
