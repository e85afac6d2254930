// The step table (steps.hpp): one row per step, and the functions each row
// names. Rows are tokens throughout: X is n × d_model and Q = X·W_Q.
#include "attention/steps.hpp"
#include "attention/divisor.hpp"

#include "attention/attention.hpp"
#include "attention/steps_parts.hpp"
#include "attention/kernels.hpp"
#include "attention/engine.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace qkv {

namespace step_parts {

// The projections read X, or X + P with positions; keys and values read the
// context C in cross-attention.
StepKey query_source(const Model& model) { return {model.P ? StepId::encoded : StepId::inputs, 0}; }
StepKey key_source(const Model& model) { return model.C ? StepKey{StepId::context, 0} : query_source(model); }

const HeadWeights& head_weights(const Model& model, int h) { return model.heads.at(static_cast<std::size_t>(h - 1)); }

std::vector<std::string> dimension_labels(arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword j = 1; j <= count; ++j) {
        labels.push_back("d" + std::to_string(j));
    }
    return labels;
}

std::vector<std::string> prefixed_labels(const std::string& prefix, arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword j = 1; j <= count; ++j) {
        labels.push_back(prefix + std::to_string(j));
    }
    return labels;
}

void set_text(Step& step, std::string formula, std::string latex, std::string explanation,
              std::vector<std::string> rows, std::vector<std::string> cols) {
    step.formula = std::move(formula);
    step.latex = std::move(latex);
    step.explanation = std::move(explanation);
    step.row_labels = std::move(rows);
    step.col_labels = std::move(cols);
}

std::vector<StepKey> every_head(StepId id, int count) {
    std::vector<StepKey> keys;
    for (int h = 1; h <= count; ++h) {
        keys.push_back({id, h});
    }
    return keys;
}

arma::mat normed_rows(const Model& model, int head, StepInputs in, bool queries) {
    const QkNorm& norm = *model.qk_norm;
    arma::mat rows;
    for (const arma::mat* part : in) {
        rows = arma::join_rows(rows, *part);
    }
    const arma::rowvec gain = norm.gain(queries);
    const arma::uword d_k = model.d_k();
    rms_norm_columns(rows.memptr(), rows.n_rows, rows.n_cols, norm.over_all ? rows.n_cols : d_k, gain.memptr(),
                     model.qk_norm_eps());
    if (!norm.over_all) {
        return rows;
    }
    const auto first = static_cast<arma::uword>(head - 1) * d_k;
    return rows.cols(first, first + d_k - 1);
}

StepId scores_before(const Model& model, StepId id) {
    StepId last = StepId::scaled_scores;
    for (const ElementwiseStep& step : k_elementwise_steps) {
        if (step.id < id && step_exists(model, step.id)) {
            last = step.id;
        }
    }
    return last;
}

void describe_elementwise(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Elementwise& f = *step_row(step.id).elementwise;
    const StepId input = scores_before(model, step.id);
    set_text(step, std::string(f.symbol) + " = " + elementwise_formula(f.formula, score_symbol(input, false)),
             std::string(f.symbol_latex) + " = " + elementwise_formula(f.formula_latex, score_symbol(input, true)),
             std::string(f.why), model.tokens, context.key_tokens());
    step.notes.push_back(f.about(model, step.head, [](double x) { return readable(x); }));
}

bool pytorch_layout(const Model& model) { return model.layout == Layout::pytorch; }

arma::mat in_layout(const Model& model, const arma::mat& weight) {
    return pytorch_layout(model) ? arma::mat(weight.t()) : weight;
}

std::string gamma_text(const arma::rowvec& gamma) {
    std::string text;
    const arma::uword shown = std::min<arma::uword>(gamma.n_elem, 8);
    for (arma::uword k = 0; k < shown; ++k) {
        text += (k == 0 ? "" : ", ") + readable(gamma(k));
    }
    return "[" + text + (shown < gamma.n_elem ? ", …]" : "]");
}

std::string score_symbol(StepId id, bool latex) {
    if (!is_elementwise(id)) {
        return "S'";
    }
    const Elementwise& step = *step_row(id).elementwise;
    return std::string(latex ? step.symbol_latex : step.symbol);
}

}  // namespace step_parts

namespace {

using namespace step_parts;

// ── when a step exists ──────────────────────────────────────────────────────
bool always(const Model&) { return true; }
bool with_positions(const Model& model) { return model.P.has_value(); }
bool with_context(const Model& model) { return model.cross(); }
bool with_mask(const Model& model) { return model.masked(); }
bool with_several_heads(const Model& model) { return model.n_heads() > 1; }
bool with_rope(const Model& model) { return model.rope.has_value(); }
bool with_alibi(const Model& model) { return model.alibi.has_value(); }
bool with_softcap(const Model& model) { return model.softcap.has_value(); }
bool with_softcap_backward(const Model& model) { return model.softcap && backward::exists(model); }
bool with_qk_norm(const Model& model) { return model.qk_norm.has_value(); }
bool with_qk_norm_backward(const Model& model) { return model.qk_norm && backward::exists(model); }

// ── what a step reads ───────────────────────────────────────────────────────

std::vector<StepKey> reads_nothing(const Model&, int) { return {}; }
std::vector<StepKey> reads_inputs_and_positions(const Model&, int) {
    return {{StepId::inputs, 0}, {StepId::positional, 0}};
}
std::vector<StepKey> reads_query_source(const Model& model, int) { return {query_source(model)}; }
std::vector<StepKey> reads_key_source(const Model& model, int) { return {key_source(model)}; }
// with mla, the queries read the normed query latent (with q_rank), the keys
// the normed latent and the shared rope key, the values the normed latent
std::vector<StepKey> reads_queries_source(const Model& model, int) { return {mla::queries_source(model)}; }
std::vector<StepKey> reads_keys_source(const Model& model, int) {
    if (model.mla) {
        return {{StepId::normed_kv_latent, 0}, {StepId::rope_keys, 0}};
    }
    return {key_source(model)};
}
std::vector<StepKey> reads_values_source(const Model& model, int) {
    return {mla::latent_source(model)};
}
// RoPE turns the queries (or keys) of its own head, normed with qk_norm
std::vector<StepKey> reads_unrotated_queries(const Model& model, int h) { return {{unrotated_queries(model), h}}; }
std::vector<StepKey> reads_unrotated_keys(const Model& model, int g) { return {{unrotated_keys(model), g}}; }
// qk_norm normalises a head's own row, or over: all every head's row of the token together
std::vector<StepKey> reads_queries_to_norm(const Model& model, int h) {
    return model.qk_norm->over_all ? every_head(StepId::queries, static_cast<int>(model.n_heads()))
                                   : std::vector<StepKey>{{StepId::queries, h}};
}
std::vector<StepKey> reads_keys_to_norm(const Model& model, int g) {
    return model.qk_norm->over_all ? every_head(StepId::keys, static_cast<int>(model.n_kv_heads()))
                                   : std::vector<StepKey>{{StepId::keys, g}};
}
// query head h meets the keys of its key/value head, rotated when RoPE is on
std::vector<StepKey> reads_queries_and_keys(const Model& model, int h) {
    return {{scored_queries(model), h}, {scored_keys(model), model.kv_head_of(h)}};
}
std::vector<StepKey> reads_scores(const Model&, int h) { return {{StepId::scores, h}}; }
template <StepId id>
std::vector<StepKey> reads_scores_before(const Model& model, int h) {
    return {{scores_before(model, id), h}};
}
std::vector<StepKey> reads_scaled_scores_and_bias(const Model& model, int h) {
    return {{scores_before(model, StepId::biased_scores), h}, {StepId::position_bias, h}};
}
// the scores before masking: scaled (and changed by the elementwise steps), plus ALiBi's bias when it is on
StepId unmasked_scores(const Model& model) {
    return model.alibi ? StepId::biased_scores : scores_before(model, StepId::biased_scores);
}
std::vector<StepKey> reads_unmasked_scores(const Model& model, int h) { return {{unmasked_scores(model), h}}; }
// the softmax reads the masked scores when there are any
std::vector<StepKey> reads_softmax_input(const Model& model, int h) {
    return {{model.masked() ? StepId::masked_scores : unmasked_scores(model), h}};
}
std::vector<StepKey> reads_weights_and_values(const Model& model, int h) {
    return {{StepId::weights, h}, {StepId::values, model.kv_head_of(h)}};
}
std::vector<StepKey> reads_every_head_output(const Model& model, int) {
    std::vector<StepKey> heads;
    for (int h = 1; h <= static_cast<int>(model.n_heads()); ++h) {
        heads.push_back({StepId::head_output, h});
    }
    return heads;
}
std::vector<StepKey> reads_concat(const Model& model, int) {
    return {model.n_heads() > 1 ? StepKey{StepId::concat, 0} : StepKey{StepId::head_output, 1}};
}

// ── the arithmetic ──────────────────────────────────────────────────────────

arma::mat given_inputs(const Model& model, int, StepInputs) { return model.X; }
arma::mat given_positions(const Model& model, int, StepInputs) { return *model.P; }
arma::mat given_context(const Model& model, int, StepInputs) { return *model.C; }
// at --decode's new token: its own row of X and of P
arma::mat inputs_at(const Model& model, int, const TokenPositions& at, StepInputs) { return model.X.row(at.token); }
arma::mat positions_at(const Model& model, int, const TokenPositions& at, StepInputs) {
    return model.P->row(at.token);
}

// X + P, (n × d_model)
arma::mat add_positions(const Model&, int, StepInputs in) { return *in[0] + *in[1]; }

// projections: (n × d_k) = X (n × d_model) · W_Q (d_model × d_k) + b_Q; likewise K and V
arma::mat project_queries(const Model& model, int h, StepInputs in) {
    return project(*in[0], head_weights(model, h).W_Q, head_weights(model, h).b_Q);
}
arma::mat project_keys(const Model& model, int g, StepInputs in) {
    if (model.mla) {
        return mla::keys(model, g, in);
    }
    return project(*in[0], model.kv_weights(g).W_K, model.kv_weights(g).b_K);
}
arma::mat project_values(const Model& model, int g, StepInputs in) {
    return project(*in[0], model.kv_weights(g).W_V, model.kv_weights(g).b_V);
}

// QK-norm: each row over its head's d_k (or over: all, the token's whole projection)
// divided by its root mean square and multiplied by offset + γ (attention.hpp)
arma::mat norm_queries(const Model& model, int h, StepInputs in) { return normed_rows(model, h, in, true); }
arma::mat norm_keys(const Model& model, int g, StepInputs in) { return normed_rows(model, g, in, false); }

// RoPE: each row's pairs turned by the angle position·θ_k (attention.hpp)
// (the length dynamic scaling sees is the example's n, for the context's rows too)
arma::mat rotate_rows(const Model& model, int, StepInputs in) { return rotate(*in[0], *model.rope, 0, model.n()); }
// the new token's query or key, turned at the token's position
arma::mat rotate_at(const Model& model, int, const TokenPositions& at, StepInputs in) {
    return rotate(*in[0], *model.rope, at.token);
}

// (n × m) = Q (n × d_k) · Kᵀ (d_k × m)
arma::mat score(const Model&, int, StepInputs in) { return scores(*in[0], *in[1]); }

arma::mat scale(const Model& model, int, StepInputs in) { return *in[0] / model.scale(); }

// soft-capping (Gemma 2): s → y = c·tanh(s/c), vectorised (kernels.hpp), whose slope
// 1 − tanh²(s/c) is 1 − (y/c)², worked from y without a second tanh
void cap(const Model& model, int, double* x, std::size_t count) { kernels::tanh_scaled(x, count, *model.softcap); }
void cap_back(const Model& model, int, const double*, const double* y, double* grad, std::size_t count) {
    const double c = *model.softcap;
    for (std::size_t i = 0; i < count; ++i) {
        const double t = y[i] / c;
        grad[i] *= 1.0 - t * t;
    }
}
// c is the example's own number, written as it reads (readable); the scores as the reader writes numbers
std::string cap_working(const Model& model, int, double x, const NumberText& number) {
    const double c = *model.softcap;
    return readable(c) + "·tanh(" + number(x) + "/" + readable(c) + ") = " + readable(c) + "·tanh(" + number(x / c) + ")";
}
std::string cap_slope_working(const Model& model, int, double x, const NumberText& number) {
    return "(1 − tanh²(" + number(x / *model.softcap) + "))";
}
std::string cap_about(const Model& model, int, const NumberText&) {
    return "soft cap c = " + readable(*model.softcap) + " (softcap:): a score near 0 passes almost unchanged, and none "
           "reaches ±" + readable(*model.softcap);
}
constexpr Elementwise k_softcap{
    .apply = cap,
    .back = cap_back,
    .symbol = "S_c",
    .symbol_latex = "S_{c}",
    .formula = "c·tanh({}/c)",
    .formula_latex = "c \\tanh\\left({}/c\\right)",
    .slope_formula = "(1 − tanh²({}/c))",
    .slope_latex = "\\left(1 - \\tanh^2({}/c)\\right)",
    .why = "Soft-capping, as Gemma 2 does: c·tanh(s/c) is close to s while s is small and bends toward ±c as it "
           "grows, so no score can grow without bound and hand one key the whole row's weight.",
    .gradient_title = "Gradient through the cap",
    .gradient_why = "tanh flattens toward ±c, so its slope 1 − tanh² shrinks the gradient of a score the cap bent: "
                    "a score near the cap learns slowly, one near 0 as if there were no cap.",
    .working = cap_working,
    .slope_working = cap_slope_working,
    .about = cap_about,
};

// ALiBi: (n × m) = −m_h·|i − j|
arma::mat bias(const Model& model, int h, StepInputs) {
    return position_bias(model.n(), model.m(), (*model.alibi)(static_cast<arma::uword>(h - 1)));
}
// (1 × c): the new token's bias for each cached key
arma::mat bias_at(const Model& model, int h, const TokenPositions& at, StepInputs) {
    return position_bias(1, at.keys(), (*model.alibi)(static_cast<arma::uword>(h - 1)), at.token, at.first_key);
}
arma::mat add_bias(const Model&, int, StepInputs in) { return *in[0] + *in[1]; }

arma::mat mask(const Model& model, int, StepInputs in) { return apply_mask(*in[0], model.allowed()); }
// (1 × c): the new token's scores with the cached keys it may not see at −∞
// (none under a causal mask or a window, whose cache holds only what they let through)
arma::mat mask_at(const Model& model, int, const TokenPositions& at, StepInputs in) {
    const MaskView view = mask_view(model);
    arma::mat result = *in[0];
    for (arma::uword c = 0; c < at.keys(); ++c) {
        if (view.blocked(at.token, at.first_key + c)) {
            result(0, c) = -arma::datum::inf;
        }
    }
    return result;
}

arma::mat softmax(const Model& model, int h, StepInputs in) {
    return model.sinks ? softmax_rows(*in[0], (*model.sinks)(static_cast<arma::uword>(h - 1))) : softmax_rows(*in[0]);
}

// (n × d_v) = A (n × m) · V (m × d_v)
arma::mat weigh_values(const Model&, int, StepInputs in) { return weighted_sum(*in[0], *in[1]); }

// (n × H·d_v): head h fills columns (h−1)·d_v … h·d_v − 1
arma::mat concatenate(const Model&, int, StepInputs in) {
    arma::mat result;
    for (const arma::mat* head : in) {
        result = arma::join_rows(result, *head);
    }
    return result;
}

// (n × d_out) = concat (n × H·d_v) · W_O (H·d_v × d_out) + b_O, or concat itself without W_O
arma::mat project_output(const Model& model, int, StepInputs in) {
    return model.W_O ? project(*in[0], *model.W_O, model.b_O) : *in[0];
}

// ── the words ───────────────────────────────────────────────────────────────

// "Q = X·W_Q + b_Q" in the layout the user wrote, as text and as LaTeX.
void set_projection_formulas(Step& step, const std::string& result, const std::string& source,
                             const std::string& source_latex, const std::string& weight, bool has_bias,
                             Layout layout) {
    const bool pytorch = layout == Layout::pytorch;
    step.formula = result + " = " + source + "·W_" + weight + (pytorch ? "ᵀ" : "");
    step.latex = result + " = " + source_latex + " W_{" + weight + "}" + (pytorch ? "^\\top" : "");
    if (has_bias) {
        step.formula += " + b_" + weight;
        step.latex += " + b_{" + weight + "}";
    }
}

void describe_inputs(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "X", "X", "Each row is one token's vector. Attention mixes these rows; every later step starts here.",
             model.tokens, dimension_labels(model.d_model()));
    step.notes.push_back(std::to_string(model.n()) + (model.n() == 1 ? " token" : " tokens") +
                         ", d_model = " + std::to_string(model.d_model()));
}

void describe_positional(const StepContext& context, Step& step) {
    set_text(step, "P", "P",
             "Attention by itself cannot tell positions apart, so each position p (from 0) gets a vector of its own to "
             "add to its token.",
             context.model().tokens, dimension_labels(context.model().d_model()));
}

void describe_encoded(const StepContext& context, Step& step) {
    set_text(step, "X + P", "X + P",
             "Each token's vector plus its position's vector; the projections read these rows.",
             context.model().tokens, dimension_labels(context.model().d_model()));
}

void describe_context(const StepContext& context, Step& step) {
    set_text(step, "C", "C",
             "Cross-attention: the keys and values are read from these rows, the queries from the inputs.",
             context.model().context_tokens, dimension_labels(context.model().d_model()));
}

void describe_queries(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_queries(context, step);
        return;
    }
    const HeadWeights& head = head_weights(model, step.head);
    set_text(step, "", "",
             model.layout == Layout::pytorch
                 ? "Each token's query, what it looks for: its row times W_Qᵀ. Every token uses the same weights."
                 : "Each token's query, what it looks for: its row times W_Q. Every token uses the same weights.",
             model.tokens, dimension_labels(model.d_k()));
    const std::string& source = context.names().queries;
    set_projection_formulas(step, "Q", source, source, "Q", head.b_Q.has_value(), model.layout);
}

// "shared by query heads 1 and 2" with grouped-query attention, for the key/value steps
void note_shared_heads(const Model& model, Step& step) {
    if (model.n_kv_heads() == model.n_heads()) {
        return;
    }
    const int first = model.first_query_head(step.head);
    const int last = first + static_cast<int>(model.n_heads() / model.n_kv_heads()) - 1;
    step.notes.push_back("key/value head " + std::to_string(step.head) + " of " + std::to_string(model.n_kv_heads()) +
                         ", shared by query heads " +
                         (first == last ? std::to_string(first)
                                        : std::to_string(first) + (last == first + 1 ? " and " : " … ") +
                                              std::to_string(last)));
}

void describe_keys(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_keys(context, step);
        return;
    }
    const HeadWeights& head = model.kv_weights(step.head);
    set_text(step, "", "",
             "Each token's key, what it offers to be matched on. A query and a key match when their dot product is "
             "large.",
             context.key_tokens(), dimension_labels(model.d_k()));
    const std::string& source = context.names().keys;
    set_projection_formulas(step, "K", source, source, "K", head.b_K.has_value(), model.layout);
    note_shared_heads(model, step);
    if (model.n_kv_heads() != model.n_heads()) {
        // what sharing saves: a key/value cache holds G·(d_k + d_v) numbers per token instead of H·(d_k + d_v)
        const arma::uword width = model.d_k() + model.d_v();
        step.notes.push_back("a key/value cache holds " + std::to_string(model.n_kv_heads() * width) +
                             " numbers per token (" + std::to_string(model.n_kv_heads()) +
                             " heads × (d_k + d_v)) instead of " + std::to_string(model.n_heads() * width) + ": " +
                             std::to_string(model.n_heads() / model.n_kv_heads()) + " times smaller");
    }
}

void describe_values(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_values(context, step);
        return;
    }
    const HeadWeights& head = model.kv_weights(step.head);
    set_text(step, "", "", "Each token's value, what it passes on to the queries that attend to it.",
             context.key_tokens(), dimension_labels(model.d_v()));
    const std::string& source = context.names().keys;
    set_projection_formulas(step, "V", source, source, "V", head.b_V.has_value(), model.layout);
    note_shared_heads(model, step);
}

void describe_normed(const StepContext& context, Step& step, bool queries) {
    const Model& model = context.model();
    const QkNorm& norm = *model.qk_norm;
    const std::string letter = queries ? "Q" : "K";
    const std::string row = queries ? "q" : "k";
    const std::string gain = norm.offset != 0.0 ? "(" + readable(norm.offset) + " + γ)" : "γ";
    const std::string gain_latex = norm.offset != 0.0 ? "(" + readable(norm.offset) + " + \\gamma)" : "\\gamma";
    set_text(step,
             letter + "_norm = RMSNorm(" + letter + "): each row " + row + " / √(mean(" + row + "²) + eps) ∘ " + gain,
             letter + "_{\\mathrm{norm}} = \\frac{" + row + "}{\\sqrt{\\operatorname{mean}(" + row +
                 "^2) + \\epsilon}} \\odot " + gain_latex,
             std::string(queries ? "Each query" : "Each key") +
                 (norm.over_all ? " is divided by the root mean square of its token's whole projection, every head's "
                                  "part together, and multiplied by the gain element by element."
                                : " is divided by the root mean square of its head's elements, and multiplied by the "
                                  "gain element by element.") +
                 " Queries and keys come out the same size whatever their projections gave, so a score cannot grow "
                 "without bound just because they did.",
             queries ? model.tokens : context.key_tokens(), dimension_labels(model.d_k()));
    const arma::uword heads = queries ? model.n_heads() : model.n_kv_heads();
    step.notes.push_back(norm.over_all ? "over: all: the mean of squares is over the token's " + std::to_string(heads) +
                                             " × " + std::to_string(model.d_k()) + " = " +
                                             std::to_string(heads * model.d_k()) + " values of every head (OLMo 2)"
                                       : "over: head: the mean of squares is over the head's d_k = " +
                                             std::to_string(model.d_k()) + " values (Qwen3, Gemma 3)");
    const bool given = queries ? norm.query_given : norm.key_given;
    const arma::rowvec& gamma = queries ? norm.query : norm.key;
    step.notes.push_back("eps = " + readable(model.qk_norm_eps()) +
                         (norm.eps ? " (qk_norm.eps)" : model.norm_eps ? " (norm_eps:)" : " (the default)") +
                         "; γ = " + (given ? gamma_text(norm.over_all ? gamma.cols((static_cast<arma::uword>(step.head) - 1) * model.d_k(), static_cast<arma::uword>(step.head) * model.d_k() - 1) : gamma) +
                                                 (norm.over_all ? " (this head's part)" : "")
                                           : readable(norm.offset != 0.0 ? 0.0 : 1.0) + " (not given)") +
                         (norm.offset != 0.0 ? ", gain 1 + γ (offset: 1, Gemma's convention)" : ""));
    if (!queries) {
        note_shared_heads(model, step);
    }
}
void describe_normed_queries(const StepContext& context, Step& step) { describe_normed(context, step, true); }
void describe_normed_keys(const StepContext& context, Step& step) { describe_normed(context, step, false); }

// What rope.scaling does to θ_k, in one note.
std::string scaling_note(const Model& model) {
    const Rope& rope = *model.rope;
    const RopeScaling& scaling = *rope.scaling;
    const std::string factor = readable(scaling.factor);
    switch (scaling.type) {
        case RopeScalingType::linear:
            return "rope.scaling linear, factor " + factor + ": every θ_k divided by " + factor;
        case RopeScalingType::dynamic: {
            const double positions = rope_max_positions(rope);
            return "rope.scaling dynamic, factor " + factor + ": " +
                   (static_cast<double>(model.n()) > positions
                        ? "the base raised for n = " + std::to_string(model.n()) +
                              " positions over max_position_embeddings " + readable(positions)
                        : "n = " + std::to_string(model.n()) + " positions are within max_position_embeddings " +
                              readable(positions) + ", so the base stays " + readable(rope.base));
        }
        case RopeScalingType::yarn: {
            // worked numbers to 4 decimals, whole ones as they are
            const auto worked = [](double x) { return x == std::floor(x) ? readable(x) : fixed(x, 4); };
            const YarnRamp ramp = yarn_ramp(rope, model.d_k());
            return "rope.scaling yarn, factor " + factor + ": θ_k kept up to pair " + worked(ramp.low) +
                   ", divided by " + factor + " from pair " + worked(ramp.high) +
                   ", mixed along a ramp between; attention factor " + worked(rope_attention_factor(rope)) +
                   " on cos and sin";
        }
        case RopeScalingType::llama3: {
            const double original = *scaling.original_max_position_embeddings;
            return "rope.scaling llama3, factor " + factor + ": θ_k divided by " + factor +
                   " where its wavelength 2π/θ_k is over " + readable(original / scaling.low_freq_factor) +
                   ", kept where it is under " + readable(original / scaling.high_freq_factor) +
                   ", blended between";
        }
    }
    return "";
}

// "θ_k = 10000^(−2k/d_k), angle p·θ_k, position p from 0" and "style half: element k pairs with k + 2 (…)"
std::vector<std::string> rope_notes(const Model& model) {
    const Rope& rope = *model.rope;
    const arma::uword d_rot = rope.rotated(model.d_k());
    const std::string half = std::to_string(rope_pairs(rope, model.d_k()));
    std::vector<std::string> notes = {
        "θ_k = " + readable(rope.base) + (rope.skip > 0 ? "^(−2k/d_r)" : d_rot == model.d_k() ? "^(−2k/d_k)" : "^(−2k/d_rot)") +
            ", angle p·θ_k, position p from 0",
        rope.style == RopeStyle::half ? "style half: element k pairs with element k + " + half +
                                            " (Hugging Face's rotate_half)"
                                      : "style interleaved: element 2k pairs with element 2k + 1 (the RoFormer "
                                        "paper, Meta's Llama code)"};
    if (rope.scaling) {
        notes.push_back(scaling_note(model));
    }
    if (rope.skip > 0) {
        notes.push_back("mla: only the last d_r = " + std::to_string(d_rot) + " elements (the rope part) turn, with d_r "
                        "as the width of the frequencies; the first d_n = " + std::to_string(rope.skip) +
                        " pass unchanged");
    } else if (d_rot < model.d_k()) {
        notes.push_back("partial rotation: only the first d_rot = " + std::to_string(d_rot) + " of the d_k = " +
                        std::to_string(model.d_k()) + " elements turn (partial_rotary_factor " +
                        readable(rope.partial_rotary_factor) + "); the rest pass unchanged");
    }
    return notes;
}

void describe_rotated(const StepContext& context, Step& step, bool queries) {
    const Model& model = context.model();
    const std::string letter = queries ? "Q" : "K";
    const bool normed = model.qk_norm.has_value();
    set_text(step, letter + "_rot = RoPE(" + letter + (normed ? "_norm" : "") + ")",
             letter + "_{\\mathrm{rot}} = \\operatorname{RoPE}(" + letter + (normed ? "_{\\mathrm{norm}}" : "") + ")",
             std::string(queries ? "Each query" : "Each key") +
                 " has its elements taken in pairs, and each pair turned by an angle that grows with the token's "
                 "position. A query and a key turned this way score by how far apart they are, not by where they "
                 "are.",
             queries ? model.tokens : context.key_tokens(), dimension_labels(model.d_k()));
    if (model.mla) {
        const std::string part = queries ? "q" : "k";
        step.formula = letter + "_rot = [" + letter + "_nope  RoPE(" + letter + "_rope)]";
        step.latex = letter + "_{\\mathrm{rot}} = \\begin{bmatrix} " + letter + "_{\\mathrm{nope}} & \\operatorname{RoPE}(" +
                     letter + "_{\\mathrm{rope}}) \\end{bmatrix}";
        step.explanation = std::string(queries ? "Each query" : "Each key") + "'s rope part, its last d_r numbers (" +
                           part + "_rope), has its elements taken in pairs and each pair turned by an angle that "
                           "grows with the token's position; its first d_n numbers (" + part +
                           "_nope) are left as they are." +
                           (queries ? "" : " The rope part is the same in every head, so it is turned once.");
    }
    for (std::string& note : rope_notes(model)) {
        step.notes.push_back(std::move(note));
    }
    if (!queries) {
        note_shared_heads(model, step);
    }
}
void describe_rotated_queries(const StepContext& context, Step& step) { describe_rotated(context, step, true); }
void describe_rotated_keys(const StepContext& context, Step& step) { describe_rotated(context, step, false); }

void describe_scores(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.rope) {
        set_text(step, "S = Q_rot·K_rotᵀ", "S = Q_{\\mathrm{rot}} K_{\\mathrm{rot}}^\\top",
                 "Entry (i, j) is rotated query i dotted with rotated key j. The transpose turns each key into a "
                 "column, so one product gives every pair.",
                 model.tokens, context.key_tokens());
    } else if (model.qk_norm) {
        set_text(step, "S = Q_norm·K_normᵀ", "S = Q_{\\mathrm{norm}} K_{\\mathrm{norm}}^\\top",
                 "Entry (i, j) is normed query i dotted with normed key j. The transpose turns each key into a "
                 "column, so one product gives every pair.",
                 model.tokens, context.key_tokens());
    } else {
        set_text(step, "S = Q·Kᵀ", "S = Q K^\\top",
                 "Entry (i, j) is query i dotted with key j: how well token i's query matches token j's key. The "
                 "transpose turns each key into a column, so one product gives every pair.",
                 model.tokens, context.key_tokens());
    }
    if (model.n_kv_heads() != model.n_heads()) {
        step.notes.push_back("query head " + std::to_string(step.head) + " reads the keys of key/value head " +
                             std::to_string(model.kv_head_of(step.head)));
    }
}

void describe_scaled_scores(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Divisor divisor = divisor_of(model);
    const std::string why =
        !divisor.scaled ? "This example does not scale (scale: none), so the scores pass through unchanged."
        : divisor.root  ? "Dividing by √d_k keeps the spread of the scores from growing with the width d_k, so the "
                          "softmax does not saturate on one key."
                        : "The scores are divided by the scale this example sets.";
    set_text(step, "S' = " + divided(model, "S"), "S' = " + divided_latex(model, "S"), why, {}, {});
    step.row_labels = model.tokens;
    step.col_labels = context.key_tokens();
    step.notes.push_back(!divisor.scaled ? std::string("not scaled: the divisor is 1")
                                         : "divisor = " + fixed(model.scale(), 4) +
                                               (divisor.root ? " (" + divisor.worked + ")" : ""));
}

void describe_position_bias(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const double slope = (*model.alibi)(static_cast<arma::uword>(step.head - 1));
    set_text(step, "B[i,j] = −m·|i − j|", "B_{ij} = -m \\lvert i - j \\rvert",
             "ALiBi: instead of adding positions to the inputs, each head lowers a score in proportion to the "
             "distance between query and key, more steeply for a larger slope m.",
             model.tokens, context.key_tokens());
    std::string note = "slope m = " + readable(slope);
    if (model.alibi_press) {
        note += " (Press et al.'s slope for head " + std::to_string(step.head) + " of " +
                std::to_string(model.n_heads()) + ": 2^" + readable(std::log2(slope)) + ")";
    }
    step.notes.push_back(note);
}

void describe_biased_scores(const StepContext& context, Step& step) {
    set_text(step, "S' + B", "S' + B",
             "The scaled scores plus the position bias: far-away keys start lower before the softmax.",
             context.model().tokens, context.key_tokens());
}

void describe_masked_scores(const StepContext& context, Step& step) {
    const Model& model = context.model();
    // the scaled scores, or the last elementwise step's (the bias, when there is one, is added to them)
    const StepId scores = scores_before(model, StepId::position_bias);
    set_text(step, score_symbol(scores, false) + "[i,j] = −∞ where blocked",
             // S_{c} as a group, so that its entry's subscript is not a second one
             (is_elementwise(scores) ? "{" + score_symbol(scores, true) + "}" : score_symbol(scores, true)) +
                 "_{ij} = -\\infty \\text{ where blocked}",
             "Blocked pairs become −∞, so that the softmax gives them a weight of exactly 0. A 0 would not do: "
             "exp(0) = 1 still counts.",
             model.tokens, context.key_tokens());
    if (model.mask_kind == MaskKind::causal) {
        step.notes.push_back("causal mask: query i sees keys 1 … i");
    }
    if (model.mask_kind == MaskKind::window) {
        step.notes.push_back("sliding window of " + std::to_string(model.window) + ": query i sees keys i − " +
                             std::to_string(model.window - 1) + " … i, itself included");
    }
    if (model.padding) {
        step.notes.push_back("padding: keys marked 0 are blocked for every query");
    }
    step.notes.push_back(std::to_string(context.blocked_cells()) + " of " + std::to_string(model.n() * model.m()) +
                         " cells blocked");
}

void describe_weights(const StepContext& context, Step& step) {
    const std::string scores = score_symbol(scores_before(context.model(), StepId::position_bias), false);
    set_text(step, "A = softmax(" + scores + ") along each row",
             "A = \\operatorname{softmax}(" + score_symbol(scores_before(context.model(), StepId::position_bias), true) +
                 ")",
             "The softmax turns each row of scores into positive weights that sum to 1: how much each query attends "
             "to each key.",
             context.model().tokens, context.key_tokens());
    const Model& model = context.model();
    if (model.sinks) {
        const double sink = (*model.sinks)(static_cast<arma::uword>(step.head - 1));
        step.formula = "A = softmax([" + scores + " s]) along each row, the sink's column dropped";
        step.latex = "A = \\operatorname{softmax}\\left(\\begin{bmatrix} " +
                     score_symbol(scores_before(model, StepId::position_bias), true) +
                     " & s \\end{bmatrix}\\right)_{:, 1..m}";
        step.explanation = "The sink logit s joins each row's softmax as one more key with no value, and its weight "
                           "is dropped: each row of weights sums to less than 1, and what is missing went to the sink.";
        step.notes.push_back("sink s = " + readable(sink) + " for this head; the rest of each row went to the sink");
        // a row whose keys are all blocked (gpt-oss): the sink takes all of it
        for (arma::uword i = 0; model.masked() && i < model.X.n_rows; ++i) {
            bool blocked = true;
            for (arma::uword j = 0; blocked && j < model.m(); ++j) {
                blocked = !model.allows(i, j);
            }
            if (blocked) {
                const std::string token = i < model.tokens.size() ? " (" + model.tokens[i] + ")" : "";
                step.notes.push_back("row " + std::to_string(i + 1) + token +
                                     " may attend to no key: all of its weight went to the sink, and its output row is 0");
            }
        }
        return;
    }
    // rounded weights need not add up to 1: 0.0634, 0.4683, 0.4683 round to 0.1, 0.5, 0.5
    const bool rounded = step_rounding(model, StepId::weights).has_value();
    step.notes.push_back(rounded ? "each row summed to 1 before rounding" : "each row sums to 1");
}

void describe_head_output(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "Z = A·V", "Z = A V",
             "Row i mixes the value rows, each multiplied by how much query i attends to it, and adds them up.",
             model.tokens, dimension_labels(model.d_v()));
    if (model.n_kv_heads() != model.n_heads()) {
        step.notes.push_back("the values of key/value head " + std::to_string(model.kv_head_of(step.head)));
    }
}

void describe_concat(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const int heads = static_cast<int>(model.n_heads());
    set_text(step, concat_formula(heads), concat_formula(heads, true),
             "The heads' outputs side by side, one block of d_v columns per head, in head order.", model.tokens,
             dimension_labels(model.n_heads() * model.d_v()));
    step.notes.push_back("head h fills columns (h−1)·d_v + 1 … h·d_v, d_v = " + std::to_string(model.d_v()));
}

void describe_output(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool several = model.n_heads() > 1;
    const std::string source = several ? concat_formula(static_cast<int>(model.n_heads())) : "Z";
    const std::string source_latex = several ? concat_formula(static_cast<int>(model.n_heads()), true) : "Z";
    if (model.W_O) {
        set_text(step, "", "", "The output projection W_O mixes the heads' results into one vector per token.",
                 model.tokens, dimension_labels(model.d_out()));
        set_projection_formulas(step, "O", source, source_latex, "O", model.b_O.has_value(), model.layout);
        return;
    }
    set_text(step, "O = " + source, "O = " + source_latex,
             several ? "There is no W_O in this example, so the output is the concatenation."
                     : "There is one head and no W_O, so the output is that head's weighted sum.",
             model.tokens, dimension_labels(model.n_heads() * model.d_v()));
}

// ── the table ───────────────────────────────────────────────────────────────
// One row per step (steps.def), in the order of StepId, which is made from the same rows.
constexpr StepRow k_steps[] = {
#define QKV_STEP(step, kind, ...) {.id = StepId::step, .name = #step, __VA_ARGS__},
#include "attention/steps.def"
};

// the example's weights (.parameter) are given, not computed
constexpr bool parameters_given() {
    for (const StepRow& row : k_steps) {
        if (row.parameter && step_kind(row.id) != StepKind::given) {
            return false;
        }
    }
    return true;
}
static_assert(parameters_given(), "a row marked .parameter whose kind in steps.def is not given");

}  // namespace

// ── names ───────────────────────────────────────────────────────────────────
// an elementwise step's row says how (StepRow::elementwise), and only such a row does
constexpr bool elementwise_rows_agree() {
    for (const StepRow& row : k_steps) {
        if ((row.elementwise != nullptr) != is_elementwise(row.id)) {
            return false;
        }
    }
    return true;
}
static_assert(elementwise_rows_agree(), "a row of k_elementwise_steps without its function, or the other way round");

const StepRow& step_row(StepId id) { return k_steps[static_cast<std::size_t>(id)]; }

StepId unrotated_queries(const Model& model) { return model.qk_norm ? StepId::normed_queries : StepId::queries; }
StepId unrotated_keys(const Model& model) { return model.qk_norm ? StepId::normed_keys : StepId::keys; }
StepId scored_queries(const Model& model) { return model.rope ? StepId::rotated_queries : unrotated_queries(model); }
StepId scored_keys(const Model& model) { return model.rope ? StepId::rotated_keys : unrotated_keys(model); }

std::vector<StepId> all_steps() {
    std::vector<StepId> ids;
    for (const auto& row : k_steps) {
        ids.push_back(row.id);
    }
    return ids;
}

}  // namespace qkv
