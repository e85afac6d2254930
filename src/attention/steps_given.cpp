// The example's weights and biases as rows of the step table (w_query …
// b_output): given, not computed, each shown as a table just before the step
// that uses it, so that every product can be checked by hand. They are shown
// in the file's layout, as the formulas of the projections write them: x·W
// (in × out), or PyTorch's out × in, where Q = X·W_Qᵀ.
#include "attention/steps_parts.hpp"

#include <algorithm>

namespace qkv::step_parts::given {

namespace {

bool any_head(const Model& model, std::optional<arma::rowvec> HeadWeights::*bias) {
    return std::any_of(model.heads.begin(), model.heads.end(),
                       [bias](const HeadWeights& head) { return (head.*bias).has_value(); });
}

// "columns 4 … 6 of the whole W_Q" (split weights) or "rows 4 … 6 of in_proj_weight" (a pytorch: block):
// where head `head`'s share sits in what the file wrote; empty when the file wrote this head's weight by itself
std::string share(const Model& model, int head, int count, arma::uword width, arma::uword offset,
                  const std::string& whole) {
    const bool block = model.weight_form == WeightForm::pytorch_block;
    if (model.weight_form == WeightForm::head_list || (!block && count < 2)) {
        return "";
    }
    // in_proj_weight stacks W_Q, W_K and W_V: `offset` rows come before this weight's
    const arma::uword first = (block ? offset : 0) + static_cast<arma::uword>(head - 1) * width + 1;
    const arma::uword last = first + width - 1;
    const std::string range = first == last ? std::to_string(first) : std::to_string(first) + " … " + std::to_string(last);
    if (block) {
        return (first == last ? "row " : "rows ") + range + " of in_proj_weight";
    }
    return (first == last ? "column " : "columns ") + range + " of the whole " + whole;
}

// A projection's weight: `letter` Q, K or V, making `what` ("query") numbers,
// `width` of them per head, for `count` heads.
void describe_weight(const StepContext& context, Step& step, const std::string& letter, const std::string& what,
                     arma::uword width, int count, arma::uword offset) {
    const Model& model = context.model();
    const bool pytorch = pytorch_layout(model);
    set_text(step, "W_" + letter, "W_{" + letter + "}",
             "The weights that make each token's " + what + ": " + (pytorch ? "row" : "column") + " c of W_" + letter +
                 ", dotted with the token's row, gives number c of its " + what + ".",
             dimension_labels(model.d_model()), dimension_labels(width));
    if (pytorch) {
        std::swap(step.row_labels, step.col_labels);
        step.notes.push_back("in PyTorch's layout, out × in, as the file writes it: " +
                             (what == "query" ? std::string("queries") : what + "s") + " are X·W_" + letter + "ᵀ");
    }
    if (const std::string where = share(model, std::max(step.head, 1), count, width, offset, "W_" + letter);
        !where.empty()) {
        step.notes.push_back(where);
    }
}

void describe_bias(Step& step, const std::string& letter, const std::string& what, arma::uword width) {
    set_text(step, "b_" + letter, "b_{" + letter + "}",
             "Added to every token's " + what + ", after the product with W_" + letter + ".",
             {"b_" + letter}, dimension_labels(width));
}

}  // namespace

// ── when a step exists ──────────────────────────────────────────────────────
bool output_weight_exists(const Model& model) { return model.W_O.has_value(); }
bool query_bias_exists(const Model& model) { return any_head(model, &HeadWeights::b_Q); }
bool key_bias_exists(const Model& model) { return any_head(model, &HeadWeights::b_K); }
bool value_bias_exists(const Model& model) { return any_head(model, &HeadWeights::b_V); }
bool output_bias_exists(const Model& model) { return model.b_O.has_value(); }
bool head_has_query_bias(const Model& model, int h) { return head_weights(model, h).b_Q.has_value(); }
bool kv_head_has_key_bias(const Model& model, int g) { return model.kv_weights(g).b_K.has_value(); }
bool kv_head_has_value_bias(const Model& model, int g) { return model.kv_weights(g).b_V.has_value(); }

// ── the values: the model's own ─────────────────────────────────────────────
arma::mat w_query(const Model& model, int h, StepInputs) { return in_layout(model, head_weights(model, h).W_Q); }
arma::mat w_key(const Model& model, int g, StepInputs) { return in_layout(model, model.kv_weights(g).W_K); }
arma::mat w_value(const Model& model, int g, StepInputs) { return in_layout(model, model.kv_weights(g).W_V); }
arma::mat w_output(const Model& model, int, StepInputs) { return in_layout(model, *model.W_O); }
arma::mat b_query(const Model& model, int h, StepInputs) { return *head_weights(model, h).b_Q; }
arma::mat b_key(const Model& model, int g, StepInputs) { return *model.kv_weights(g).b_K; }
arma::mat b_value(const Model& model, int g, StepInputs) { return *model.kv_weights(g).b_V; }
arma::mat b_output(const Model& model, int, StepInputs) { return *model.b_O; }

// ── the words ───────────────────────────────────────────────────────────────
void describe_w_query(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_head_weight(context, step, StepId::w_query);
        return;
    }
    describe_weight(context, step, "Q", "query", model.d_k(), static_cast<int>(model.n_heads()), 0);
}

void describe_w_key(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_head_weight(context, step, StepId::w_key);
        return;
    }
    describe_weight(context, step, "K", "key", model.d_k(), static_cast<int>(model.n_kv_heads()),
                    model.n_heads() * model.d_k());
}

void describe_w_value(const StepContext& context, Step& step) {
    const Model& model = context.model();
    if (model.mla) {
        mla::describe_head_weight(context, step, StepId::w_value);
        return;
    }
    describe_weight(context, step, "V", "value", model.d_v(), static_cast<int>(model.n_kv_heads()),
                    model.n_heads() * model.d_k() + model.n_kv_heads() * model.d_k());
}

void describe_w_output(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool pytorch = pytorch_layout(model);
    const std::string source = model.n_heads() > 1 ? "the concatenated heads" : "the head's weighted sum";
    set_text(step, "W_O", "W_{O}",
             "The weights that mix " + source + " into the output: " + (pytorch ? "row" : "column") +
                 " c of W_O, dotted with a token's row, gives number c of its output.",
             dimension_labels(model.n_heads() * model.d_v()), dimension_labels(model.d_out()));
    if (pytorch) {
        std::swap(step.row_labels, step.col_labels);
        step.notes.push_back(std::string("in PyTorch's layout, out × in, as the file writes it") +
                             (model.weight_form == WeightForm::pytorch_block ? " (out_proj.weight)" : "") +
                             ": the output is " + (model.n_heads() > 1 ? "concat" : "Z") + "·W_Oᵀ");
    }
}

void describe_b_query(const StepContext& context, Step& step) {
    describe_bias(step, "Q", "query", context.model().d_k());
}

void describe_b_key(const StepContext& context, Step& step) {
    describe_bias(step, "K", "key", context.model().d_k());
}

void describe_b_value(const StepContext& context, Step& step) {
    describe_bias(step, "V", "value", context.model().d_v());
}

void describe_b_output(const StepContext& context, Step& step) {
    describe_bias(step, "O", "output", context.model().d_out());
}

}  // namespace qkv::step_parts::given
