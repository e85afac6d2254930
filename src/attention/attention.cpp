// Scaled dot-product attention, one step at a time, keeping every intermediate.
// Rows are tokens: X is n × d_model and Q = X·W_Q (see model/model.hpp).
#include "attention/attention.hpp"

#include <cmath>
#include <cstdio>

namespace qkv {

namespace {

std::string fixed(double value, int decimals = 4) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

std::vector<std::string> dimension_labels(arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword j = 1; j <= count; ++j) {
        labels.push_back("d" + std::to_string(j));
    }
    return labels;
}

// Builds the trace step by step, applying hand-calculation rounding where the
// model asks for it, so that rounded values are what later steps read.
class TraceBuilder {
public:
    explicit TraceBuilder(const Model& model) : m_model(model) {}

    const arma::mat& add(Step step) {
        const auto rounding = decimals_for(step.id);
        if (rounding) {
            step.values = round_to(step.values, *rounding);
            step.notes.push_back("rounded to " + std::to_string(*rounding) + (*rounding == 1 ? " decimal" : " decimals") +
                                 " by hand (round); later steps use the rounded values");
        }
        m_trace.steps.push_back(std::move(step));
        return m_trace.steps.back().values;
    }

    Trace& trace() { return m_trace; }

private:
    std::optional<int> decimals_for(const std::string& id) const {
        if (auto found = m_model.round.find(id); found != m_model.round.end()) {
            return found->second;
        }
        if (auto all = m_model.round.find("*"); all != m_model.round.end()) {
            return all->second;
        }
        return std::nullopt;
    }

    const Model& m_model;
    Trace m_trace;
};

Step make_step(std::string id, int head, std::string title, std::string formula, std::string latex,
               std::string explanation, std::vector<std::string> rows, std::vector<std::string> cols, arma::mat values) {
    Step step;
    step.id = std::move(id);
    step.head = head;
    step.title = std::move(title);
    step.formula = std::move(formula);
    step.latex = std::move(latex);
    step.explanation = std::move(explanation);
    step.row_labels = std::move(rows);
    step.col_labels = std::move(cols);
    step.values = std::move(values);
    return step;
}

// "Q = X·W_Q + b_Q" in the layout the user wrote.
std::string projection_formula(const std::string& result, const std::string& source, const std::string& weight,
                               bool has_bias, Layout layout) {
    std::string formula = result + " = " + source + "·W_" + weight + (layout == Layout::pytorch ? "ᵀ" : "");
    if (has_bias) {
        formula += " + b_" + weight;
    }
    return formula;
}

std::string projection_latex(const std::string& result, const std::string& source, const std::string& weight,
                             bool has_bias, Layout layout) {
    std::string latex = result + " = " + source + " W_{" + weight + "}" + (layout == Layout::pytorch ? "^\\top" : "");
    if (has_bias) {
        latex += " + b_{" + weight + "}";
    }
    return latex;
}

}  // namespace

arma::mat project(const arma::mat& X, const arma::mat& W, const std::optional<arma::rowvec>& b) {
    // (n × out) = X (n × in) · W (in × out), then b added to every row
    arma::mat result = X * W;
    if (b) {
        result.each_row() += *b;
    }
    return result;
}

arma::mat scores(const arma::mat& Q, const arma::mat& K) {
    // (n × m) = Q (n × d_k) · Kᵀ (d_k × m): entry (i, j) is q_i · k_j
    return Q * K.t();
}

arma::mat apply_mask(const arma::mat& S, const arma::mat& allowed) {
    arma::mat result = S;
    result.elem(arma::find(allowed == 0.0)).fill(-arma::datum::inf);
    return result;
}

arma::mat softmax_rows(const arma::mat& S) {
    arma::mat A(S.n_rows, S.n_cols);
    for (arma::uword i = 0; i < S.n_rows; ++i) {
        // subtract the row maximum so exp() cannot overflow; −∞ cells give exp = 0
        const double row_max = S.row(i).max();
        double sum = 0.0;
        for (arma::uword j = 0; j < S.n_cols; ++j) {
            const double e = std::exp(S(i, j) - row_max);
            A(i, j) = e;
            sum += e;
        }
        A.row(i) /= sum;
    }
    return A;
}

arma::mat weighted_sum(const arma::mat& A, const arma::mat& V) {
    // (n × d_v) = A (n × m) · V (m × d_v): row i is Σ_j a_ij · v_j
    return A * V;
}

arma::mat round_to(const arma::mat& M, int decimals) {
    const double factor = std::pow(10.0, decimals);
    arma::mat result = M;
    result.transform([factor](double value) { return std::isfinite(value) ? std::round(value * factor) / factor : value; });
    return result;
}

arma::mat sinusoidal_positions(arma::uword n, arma::uword d_model) {
    // P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(p / 10000^(2i/d_model)), p from 0
    arma::mat P(n, d_model);
    for (arma::uword p = 0; p < n; ++p) {
        for (arma::uword c = 0; c < d_model; ++c) {
            const double two_i = static_cast<double>(c - c % 2);
            const double angle = static_cast<double>(p) / std::pow(10000.0, two_i / static_cast<double>(d_model));
            P(p, c) = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
    }
    return P;
}

Trace compute(const Model& model) {
    TraceBuilder builder(model);
    Trace& trace = builder.trace();
    trace.title = model.title;
    trace.description = model.description;
    trace.tokens = model.tokens;
    trace.cross = model.cross();
    if (model.cross()) {
        trace.context_tokens = model.context_tokens;
    }
    trace.dims = {model.n(), model.m(), model.d_model(), model.n_heads(), model.d_k(), model.d_v(), model.d_out()};
    trace.scale = model.scale();

    const auto& tokens = model.tokens;
    const auto& key_tokens = model.cross() ? model.context_tokens : model.tokens;
    const int n_heads = static_cast<int>(model.n_heads());

    // step 1: the inputs
    {
        Step step = make_step("inputs", 0, "Inputs", "X", "X",
                              "Each row is one token's vector. Attention mixes these rows; every later step starts here.",
                              tokens, dimension_labels(model.d_model()), model.X);
        step.notes.push_back(std::to_string(model.n()) + " tokens, d_model = " + std::to_string(model.d_model()));
        builder.add(std::move(step));
    }
    arma::mat X = trace.steps.back().values;
    std::string x_name = "X";
    std::string x_latex = "X";

    // steps 2–3: positions, added to the inputs
    if (model.P) {
        builder.add(make_step("positional", 0, "Positional encodings", "P",
                              "P",
                              "Attention by itself cannot tell positions apart, so each position p (from 0) gets a "
                              "vector of its own to add to its token.",
                              tokens, dimension_labels(model.d_model()), *model.P));
        const arma::mat P = trace.steps.back().values;
        builder.add(make_step("encoded", 0, "Inputs with positions", "X + P", "X + P",
                              "Each token's vector plus its position's vector; the projections read these rows.",
                              tokens, dimension_labels(model.d_model()), X + P));
        X = trace.steps.back().values;
        x_name = "(X + P)";
        x_latex = "(X + P)";
    }

    // step 4: the context rows that keys and values come from (cross-attention)
    arma::mat C = X;
    std::string c_name = x_name;
    std::string c_latex = x_latex;
    if (model.C) {
        builder.add(make_step("context", 0, "Context", "C", "C",
                              "Cross-attention: the keys and values are read from these rows, the queries from the "
                              "inputs.",
                              model.context_tokens, dimension_labels(model.d_model()), *model.C));
        C = trace.steps.back().values;
        c_name = "C";
        c_latex = "C";
    }

    const arma::mat allowed = model.allowed();
    std::vector<arma::mat> head_outputs;
    for (int h = 1; h <= n_heads; ++h) {
        const HeadWeights& head = model.heads[h - 1];

        // step 5: projections, (n × d_k) = X (n × d_model) · W_Q (d_model × d_k)
        const arma::mat Q = builder.add(make_step(
            "queries", h, "Queries", projection_formula("Q", x_name, "Q", head.b_Q.has_value(), model.layout),
            projection_latex("Q", x_latex, "Q", head.b_Q.has_value(), model.layout),
            "Each token's query, what it looks for: its row times W_Q. Every token uses the same weights.", tokens,
            dimension_labels(model.d_k()), project(X, head.W_Q, head.b_Q)));
        const arma::mat K = builder.add(make_step(
            "keys", h, "Keys", projection_formula("K", c_name, "K", head.b_K.has_value(), model.layout),
            projection_latex("K", c_latex, "K", head.b_K.has_value(), model.layout),
            "Each token's key, what it offers to be matched on. A query and a key match when their dot product is "
            "large.",
            key_tokens, dimension_labels(model.d_k()), project(C, head.W_K, head.b_K)));
        const arma::mat V = builder.add(make_step(
            "values", h, "Values", projection_formula("V", c_name, "V", head.b_V.has_value(), model.layout),
            projection_latex("V", c_latex, "V", head.b_V.has_value(), model.layout),
            "Each token's value, what it passes on to the queries that attend to it.", key_tokens,
            dimension_labels(model.d_v()), project(C, head.W_V, head.b_V)));

        // step 6: scores, (n × m) = Q (n × d_k) · Kᵀ (d_k × m)
        const arma::mat S = builder.add(make_step(
            "scores", h, "Scores", "S = Q·Kᵀ", "S = Q K^\\top",
            "Entry (i, j) is query i dotted with key j: how well token i's query matches token j's key. The transpose "
            "turns each key into a column, so one product gives every pair.",
            tokens, key_tokens, scores(Q, K)));

        // step 7: scaling
        {
            std::string formula;
            std::string latex;
            std::string explanation;
            const double scale = model.scale();
            if (model.scale_kind == ScaleKind::none) {
                formula = "S' = S";
                latex = "S' = S";
                explanation = "This example does not scale (scale: none), so the scores pass through unchanged.";
            } else if (model.scale_kind == ScaleKind::sqrt_dk) {
                formula = "S' = S / √d_k = S / √" + std::to_string(model.d_k());
                latex = "S' = \\frac{S}{\\sqrt{d_k}} = \\frac{S}{\\sqrt{" + std::to_string(model.d_k()) + "}}";
                explanation = "Dividing by √d_k keeps the spread of the scores from growing with the width d_k, so "
                              "the softmax does not saturate on one key.";
            } else {
                formula = "S' = S / " + fixed(scale);
                latex = "S' = S / " + fixed(scale);
                explanation = "The scores are divided by the scale this example sets.";
            }
            Step step = make_step("scaled_scores", h, "Scaled scores", formula, latex, explanation, tokens, key_tokens,
                                  S / scale);
            step.notes.push_back("divisor = " + fixed(scale) +
                                 (model.scale_kind == ScaleKind::sqrt_dk ? " (√" + std::to_string(model.d_k()) + ")"
                                                                         : ""));
            builder.add(std::move(step));
        }
        arma::mat scaled = trace.steps.back().values;

        // step 8: masking
        if (model.masked()) {
            Step step = make_step("masked_scores", h, "Masked scores", "S'[i,j] = −∞ where blocked",
                                  "S'_{ij} = -\\infty \\text{ where blocked}",
                                  "Blocked pairs become −∞, so that the softmax gives them a weight of exactly 0. "
                                  "A 0 would not do: exp(0) = 1 still counts.",
                                  tokens, key_tokens, apply_mask(scaled, allowed));
            const auto blocked = static_cast<arma::uword>(arma::accu(allowed == 0.0));
            if (model.mask_kind == MaskKind::causal) {
                step.notes.push_back("causal mask: query i sees keys 1 … i");
            }
            if (model.padding) {
                step.notes.push_back("padding: keys marked 0 are blocked for every query");
            }
            step.notes.push_back(std::to_string(blocked) + " of " + std::to_string(allowed.n_elem) + " cells blocked");
            scaled = builder.add(std::move(step));
        }

        // step 9: softmax along each row
        {
            Step step = make_step("weights", h, "Attention weights", "A = softmax(S') along each row",
                                  "A = \\operatorname{softmax}(S')",
                                  "The softmax turns each row of scores into positive weights that sum to 1: how much "
                                  "each query attends to each key.",
                                  tokens, key_tokens, softmax_rows(scaled));
            step.notes.push_back("each row sums to 1");
            builder.add(std::move(step));
        }
        const arma::mat A = trace.steps.back().values;

        // step 10: weighted sum of the values, (n × d_v) = A (n × m) · V (m × d_v)
        head_outputs.push_back(builder.add(make_step(
            "head_output", h, "Weighted sum of values", "Z = A·V", "Z = A V",
            "Row i mixes the value rows, each multiplied by how much query i attends to it, and adds them up.",
            tokens, dimension_labels(model.d_v()), weighted_sum(A, V))));
    }

    // step 11: concatenation of the heads, (n × H·d_v)
    arma::mat concat = head_outputs.front();
    if (n_heads > 1) {
        // (n × H·d_v): head h fills columns (h−1)·d_v … h·d_v − 1
        concat.set_size(model.n(), head_outputs.size() * model.d_v());
        for (std::size_t h = 0; h < head_outputs.size(); ++h) {
            concat.cols(h * model.d_v(), (h + 1) * model.d_v() - 1) = head_outputs[h];
        }
        Step step = make_step("concat", 0, "Concatenated heads", "[Z₁ … Z_" + std::to_string(n_heads) + "]",
                              "\\begin{bmatrix} Z_1 & \\cdots & Z_{" + std::to_string(n_heads) + "} \\end{bmatrix}",
                              "The heads' outputs side by side, one block of d_v columns per head, in head order.",
                              tokens, dimension_labels(concat.n_cols), concat);
        step.notes.push_back("head h fills columns " + std::string("(h−1)·d_v + 1 … h·d_v, d_v = ") +
                             std::to_string(model.d_v()));
        concat = builder.add(std::move(step));
    }

    // step 12: output projection, (n × d_out) = concat (n × H·d_v) · W_O (H·d_v × d_out)
    {
        const std::string source = n_heads > 1 ? "[Z₁ … Z_" + std::to_string(n_heads) + "]" : "Z";
        const std::string source_latex = n_heads > 1 ? "\\mathrm{concat}" : "Z";
        Step step;
        if (model.W_O) {
            step = make_step("output", 0, "Output", projection_formula("O", source, "O", model.b_O.has_value(), model.layout),
                             projection_latex("O", source_latex, "O", model.b_O.has_value(), model.layout),
                             "The output projection W_O mixes the heads' results into one vector per token.", tokens,
                             dimension_labels(model.d_out()), project(concat, *model.W_O, model.b_O));
        } else {
            step = make_step("output", 0, "Output", "O = " + source, "O = " + source_latex,
                             n_heads > 1 ? "There is no W_O in this example, so the output is the concatenation."
                                         : "There is one head and no W_O, so the output is that head's weighted sum.",
                             tokens, dimension_labels(concat.n_cols), concat);
        }
        builder.add(std::move(step));
    }
    return std::move(trace);
}

}  // namespace qkv
