// The words of the backward pass's rows (steps_backward.cpp has their
// arithmetic): each gradient's formula as text and LaTeX, its explanation,
// labels and notes, in the file's layout for the weights' gradients.
#include "attention/attention.hpp"
#include "attention/divisor.hpp"
#include "attention/steps_parts.hpp"

#include <algorithm>

namespace qkv::step_parts::backward {

namespace {

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
