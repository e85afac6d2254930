// Scaled dot-product attention, one step at a time, keeping every intermediate.
// Rows are tokens: X is n × d_model and Q = X·W_Q (see model/model.hpp).
#include "attention/attention.hpp"

#include "attention/engine.hpp"

#include <algorithm>
#include <charconv>
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
        std::string label = "d";
        label += std::to_string(j);
        labels.push_back(std::move(label));
    }
    return labels;
}

// Builds the trace step by step, applying hand-calculation rounding where the
// model asks for it, so that rounded values are what later steps read. Steps
// the caller does not keep are listed by id, head, title and formulas only.
class TraceBuilder {
public:
    TraceBuilder(const Model& model, const ComputeOptions& options) : m_model(model), m_options(options) {}

    bool keeps(std::string_view id, int head) const {
        if (!m_options.steps.empty() &&
            std::find(m_options.steps.begin(), m_options.steps.end(), id) == m_options.steps.end()) {
            return false;
        }
        return head == 0 || m_options.head == 0 || head == m_options.head;
    }

    // Records a step with its values; returns the values later steps read.
    arma::mat add(Step step, arma::mat values) {
        const auto rounding = decimals_for(step.id);
        if (rounding) {
            values = round_to(values, *rounding);
            step.notes.push_back("rounded to " + std::to_string(*rounding) + (*rounding == 1 ? " decimal" : " decimals") +
                                 " by hand (round); later steps use the rounded values");
        }
        if (keeps(step.id, step.head)) {
            step.values = values;
        } else {
            step.explanation.clear();
            step.notes.clear();
            step.row_labels.clear();
            step.col_labels.clear();
        }
        m_trace.steps.push_back(std::move(step));
        return values;
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
    const ComputeOptions& m_options;
    Trace m_trace;
};

Step make_step(std::string id, int head, std::string title, std::string formula, std::string latex,
               std::string explanation, std::vector<std::string> rows, std::vector<std::string> cols) {
    Step step;
    step.id = std::move(id);
    step.head = head;
    step.title = std::move(title);
    step.formula = std::move(formula);
    step.latex = std::move(latex);
    step.explanation = std::move(explanation);
    step.row_labels = std::move(rows);
    step.col_labels = std::move(cols);
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


// What each step says about itself: title, formulas, explanation, labels and
// notes, everything but the values. Written once, for both ways of computing.
class StepText {
public:
    explicit StepText(const Model& model)
        : m_model(model),
          m_tokens(model.tokens),
          m_key_tokens(model.cross() ? model.context_tokens : model.tokens),
          // the projections read X + P when positions are added; keys and values
          // read the context C in cross-attention
          m_x_name(model.P ? "(X + P)" : "X"),
          m_c_name(model.C ? "C" : m_x_name) {}

    Step inputs() const {
        Step step = make_step("inputs", 0, "Inputs", "X", "X",
                              "Each row is one token's vector. Attention mixes these rows; every later step starts here.",
                              m_tokens, dimension_labels(m_model.d_model()));
        step.notes.push_back(std::to_string(m_model.n()) + (m_model.n() == 1 ? " token" : " tokens") +
                             ", d_model = " + std::to_string(m_model.d_model()));
        return step;
    }

    Step positional() const {
        return make_step("positional", 0, "Positional encodings", "P", "P",
                         "Attention by itself cannot tell positions apart, so each position p (from 0) gets a "
                         "vector of its own to add to its token.",
                         m_tokens, dimension_labels(m_model.d_model()));
    }

    Step encoded() const {
        return make_step("encoded", 0, "Inputs with positions", "X + P", "X + P",
                         "Each token's vector plus its position's vector; the projections read these rows.", m_tokens,
                         dimension_labels(m_model.d_model()));
    }

    Step context() const {
        return make_step("context", 0, "Context", "C", "C",
                         "Cross-attention: the keys and values are read from these rows, the queries from the "
                         "inputs.",
                         m_model.context_tokens, dimension_labels(m_model.d_model()));
    }

    Step queries(int h) const {
        const HeadWeights& head = m_model.heads[h - 1];
        return make_step("queries", h, "Queries",
                         projection_formula("Q", m_x_name, "Q", head.b_Q.has_value(), m_model.layout),
                         projection_latex("Q", m_x_name, "Q", head.b_Q.has_value(), m_model.layout),
                         m_model.layout == Layout::pytorch
                             ? "Each token's query, what it looks for: its row times W_Qᵀ. Every token uses the same "
                               "weights."
                             : "Each token's query, what it looks for: its row times W_Q. Every token uses the same "
                               "weights.",
                         m_tokens, dimension_labels(m_model.d_k()));
    }

    Step keys(int h) const {
        const HeadWeights& head = m_model.heads[h - 1];
        return make_step("keys", h, "Keys", projection_formula("K", m_c_name, "K", head.b_K.has_value(), m_model.layout),
                         projection_latex("K", m_c_name, "K", head.b_K.has_value(), m_model.layout),
                         "Each token's key, what it offers to be matched on. A query and a key match when their dot "
                         "product is large.",
                         m_key_tokens, dimension_labels(m_model.d_k()));
    }

    Step values(int h) const {
        const HeadWeights& head = m_model.heads[h - 1];
        return make_step("values", h, "Values",
                         projection_formula("V", m_c_name, "V", head.b_V.has_value(), m_model.layout),
                         projection_latex("V", m_c_name, "V", head.b_V.has_value(), m_model.layout),
                         "Each token's value, what it passes on to the queries that attend to it.", m_key_tokens,
                         dimension_labels(m_model.d_v()));
    }

    Step scores(int h) const {
        return make_step("scores", h, "Scores", "S = Q·Kᵀ", "S = Q K^\\top",
                         "Entry (i, j) is query i dotted with key j: how well token i's query matches token j's key. "
                         "The transpose turns each key into a column, so one product gives every pair.",
                         m_tokens, m_key_tokens);
    }

    Step scaled_scores(int h) const {
        std::string formula;
        std::string latex;
        std::string explanation;
        const double scale = m_model.scale();
        if (m_model.scale_kind == ScaleKind::none) {
            formula = "S' = S";
            latex = "S' = S";
            explanation = "This example does not scale (scale: none), so the scores pass through unchanged.";
        } else if (m_model.scale_kind == ScaleKind::sqrt_dk) {
            formula = "S' = S / √d_k = S / √" + std::to_string(m_model.d_k());
            latex = "S' = \\frac{S}{\\sqrt{d_k}} = \\frac{S}{\\sqrt{" + std::to_string(m_model.d_k()) + "}}";
            explanation = "Dividing by √d_k keeps the spread of the scores from growing with the width d_k, so "
                          "the softmax does not saturate on one key.";
        } else {
            formula = "S' = S / " + fixed(scale);
            latex = "S' = S / " + fixed(scale);
            explanation = "The scores are divided by the scale this example sets.";
        }
        Step step = make_step("scaled_scores", h, "Scaled scores", formula, latex, explanation, m_tokens, m_key_tokens);
        step.notes.push_back("divisor = " + fixed(scale) +
                             (m_model.scale_kind == ScaleKind::sqrt_dk ? " (√" + std::to_string(m_model.d_k()) + ")"
                                                                       : ""));
        return step;
    }

    Step masked_scores(int h) const {
        Step step = make_step("masked_scores", h, "Masked scores", "S'[i,j] = −∞ where blocked",
                              "S'_{ij} = -\\infty \\text{ where blocked}",
                              "Blocked pairs become −∞, so that the softmax gives them a weight of exactly 0. "
                              "A 0 would not do: exp(0) = 1 still counts.",
                              m_tokens, m_key_tokens);
        if (m_model.mask_kind == MaskKind::causal) {
            step.notes.push_back("causal mask: query i sees keys 1 … i");
        }
        if (m_model.padding) {
            step.notes.push_back("padding: keys marked 0 are blocked for every query");
        }
        step.notes.push_back(std::to_string(blocked_cells()) + " of " + std::to_string(m_model.n() * m_model.m()) +
                             " cells blocked");
        return step;
    }

    Step weights(int h) const {
        Step step = make_step("weights", h, "Attention weights", "A = softmax(S') along each row",
                              "A = \\operatorname{softmax}(S')",
                              "The softmax turns each row of scores into positive weights that sum to 1: how much "
                              "each query attends to each key.",
                              m_tokens, m_key_tokens);
        // rounded weights need not add up to 1: 0.0634, 0.4683, 0.4683 round to 0.1, 0.5, 0.5
        const bool rounded = m_model.round.count("weights") != 0 || m_model.round.count("*") != 0;
        step.notes.push_back(rounded ? "each row summed to 1 before rounding" : "each row sums to 1");
        return step;
    }

    Step head_output(int h) const {
        return make_step("head_output", h, "Weighted sum of values", "Z = A·V", "Z = A V",
                         "Row i mixes the value rows, each multiplied by how much query i attends to it, and adds "
                         "them up.",
                         m_tokens, dimension_labels(m_model.d_v()));
    }

    Step concat() const {
        const int n_heads = static_cast<int>(m_model.n_heads());
        Step step = make_step("concat", 0, "Concatenated heads", "[Z_1 … Z_" + std::to_string(n_heads) + "]",
                              "\\begin{bmatrix} Z_1 & \\cdots & Z_{" + std::to_string(n_heads) + "} \\end{bmatrix}",
                              "The heads' outputs side by side, one block of d_v columns per head, in head order.",
                              m_tokens, dimension_labels(m_model.n_heads() * m_model.d_v()));
        step.notes.push_back("head h fills columns " + std::string("(h−1)·d_v + 1 … h·d_v, d_v = ") +
                             std::to_string(m_model.d_v()));
        return step;
    }

    Step output() const {
        const int n_heads = static_cast<int>(m_model.n_heads());
        const std::string source = n_heads > 1 ? "[Z_1 … Z_" + std::to_string(n_heads) + "]" : "Z";
        const std::string source_latex = n_heads > 1 ? "\\mathrm{concat}" : "Z";
        if (m_model.W_O) {
            return make_step("output", 0, "Output",
                             projection_formula("O", source, "O", m_model.b_O.has_value(), m_model.layout),
                             projection_latex("O", source_latex, "O", m_model.b_O.has_value(), m_model.layout),
                             "The output projection W_O mixes the heads' results into one vector per token.", m_tokens,
                             dimension_labels(m_model.d_out()));
        }
        return make_step("output", 0, "Output", "O = " + source, "O = " + source_latex,
                         n_heads > 1 ? "There is no W_O in this example, so the output is the concatenation."
                                     : "There is one head and no W_O, so the output is that head's weighted sum.",
                         m_tokens, dimension_labels(m_model.n_heads() * m_model.d_v()));
    }

private:
    // Counted once, without building the n × m mask.
    arma::uword blocked_cells() const {
        if (!m_blocked) {
            const MaskView mask = mask_view(m_model);
            arma::uword count = 0;
            for (arma::uword j = 0; j < m_model.m(); ++j) {
                for (arma::uword i = 0; i < m_model.n(); ++i) {
                    count += mask.blocked(i, j) ? 1 : 0;
                }
            }
            m_blocked = count;
        }
        return *m_blocked;
    }

    const Model& m_model;
    const std::vector<std::string>& m_tokens;
    const std::vector<std::string>& m_key_tokens;
    std::string m_x_name;
    std::string m_c_name;
    mutable std::optional<arma::uword> m_blocked;
};

bool use_fast_path(const Model& model, const ComputeOptions& options) {
    if (!model.round.empty() || options.kernels == Kernels::textbook) {
        return false;
    }
    return options.kernels == Kernels::fast || model.n() * model.m() >= k_fast_path_cells;
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

namespace {

// `value` rounded to `decimals` places as it reads: its shortest decimal form
// (1.005, not the 1.00499999999999989… that the double holds) rounded half
// away from zero, as on paper. Infinities and NaN stay as they are.
double round_as_written(double value, int decimals) {
    if (!std::isfinite(value)) {
        return value;
    }
    char text[512];  // the fixed form of any double, −5e−324 included
    const auto written = std::to_chars(text, text + sizeof text, std::abs(value), std::chars_format::fixed);
    std::string digits(text, written.ptr);
    const std::size_t point = digits.find('.');
    if (point == std::string::npos || digits.size() - point - 1 <= static_cast<std::size_t>(decimals)) {
        return value;  // no more decimals than that already
    }
    const bool up = digits[point + 1 + decimals] >= '5';
    digits.resize(decimals == 0 ? point : point + 1 + decimals);
    if (up) {
        // add one in the last place kept, carrying through nines
        std::size_t i = digits.size();
        while (i > 0) {
            --i;
            if (digits[i] == '.') {
                continue;
            }
            if (digits[i] != '9') {
                ++digits[i];
                break;
            }
            digits[i] = '0';
            if (i == 0) {
                digits.insert(digits.begin(), '1');
            }
        }
    }
    double result = 0.0;
    std::from_chars(digits.data(), digits.data() + digits.size(), result);
    return std::signbit(value) ? -result : result;
}

}  // namespace

arma::mat round_to(const arma::mat& M, int decimals) {
    arma::mat result = M;
    result.transform([decimals](double value) { return round_as_written(value, decimals); });
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

Trace compute(const Model& model, const ComputeOptions& options) {
    TraceBuilder builder(model, options);
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

    const StepText text(model);
    const int n_heads = static_cast<int>(model.n_heads());

    // step 1: the inputs
    arma::mat X = builder.add(text.inputs(), model.X);

    // steps 2–3: positions, added to the inputs
    if (model.P) {
        const arma::mat P = builder.add(text.positional(), *model.P);
        X = builder.add(text.encoded(), X + P);
    }

    // step 4: the context rows that keys and values come from (cross-attention)
    arma::mat context;
    if (model.C) {
        context = builder.add(text.context(), *model.C);
    }
    const arma::mat& C = model.C ? context : X;

    if (use_fast_path(model, options)) {
        // steps 5–12 on the large-input path; it hands back only the steps kept
        const PackedWeights packed = pack_weights(model);
        EngineRequest request;
        request.X = &X;
        request.C = &C;
        request.weights = &packed;
        request.scale = model.scale();
        request.mask = mask_view(model);
        request.keep = [&builder](std::string_view id, int head) { return builder.keeps(id, head); };
        request.threads = options.threads;
        EngineResult result = run_engine(request);
        const auto take = [&result](const char* id, int head) {
            const auto found = result.kept.find({id, head});
            return found == result.kept.end() ? arma::mat() : std::move(found->second);
        };
        for (int h = 1; h <= n_heads; ++h) {
            builder.add(text.queries(h), take("queries", h));
            builder.add(text.keys(h), take("keys", h));
            builder.add(text.values(h), take("values", h));
            builder.add(text.scores(h), take("scores", h));
            builder.add(text.scaled_scores(h), take("scaled_scores", h));
            if (model.masked()) {
                builder.add(text.masked_scores(h), take("masked_scores", h));
            }
            builder.add(text.weights(h), take("weights", h));
            builder.add(text.head_output(h), take("head_output", h));
        }
        if (n_heads > 1) {
            builder.add(text.concat(), take("concat", 0));
        }
        builder.add(text.output(), std::move(result.output));
        return std::move(trace);
    }

    const arma::mat allowed = model.masked() ? model.allowed() : arma::mat();
    std::vector<arma::mat> head_outputs;
    for (int h = 1; h <= n_heads; ++h) {
        const HeadWeights& head = model.heads[h - 1];

        // step 5: projections, (n × d_k) = X (n × d_model) · W_Q (d_model × d_k)
        const arma::mat Q = builder.add(text.queries(h), project(X, head.W_Q, head.b_Q));
        const arma::mat K = builder.add(text.keys(h), project(C, head.W_K, head.b_K));
        const arma::mat V = builder.add(text.values(h), project(C, head.W_V, head.b_V));

        // step 6: scores, (n × m) = Q (n × d_k) · Kᵀ (d_k × m)
        const arma::mat S = builder.add(text.scores(h), scores(Q, K));

        // step 7: scaling
        arma::mat scaled = builder.add(text.scaled_scores(h), S / model.scale());

        // step 8: masking
        if (model.masked()) {
            scaled = builder.add(text.masked_scores(h), apply_mask(scaled, allowed));
        }

        // step 9: softmax along each row
        const arma::mat A = builder.add(text.weights(h), softmax_rows(scaled));

        // step 10: weighted sum of the values, (n × d_v) = A (n × m) · V (m × d_v)
        head_outputs.push_back(builder.add(text.head_output(h), weighted_sum(A, V)));
    }

    // step 11: concatenation of the heads, (n × H·d_v)
    arma::mat concat = head_outputs.front();
    if (n_heads > 1) {
        // head h fills columns (h−1)·d_v … h·d_v − 1
        concat.set_size(model.n(), head_outputs.size() * model.d_v());
        for (std::size_t h = 0; h < head_outputs.size(); ++h) {
            concat.cols(h * model.d_v(), (h + 1) * model.d_v() - 1) = head_outputs[h];
        }
        concat = builder.add(text.concat(), concat);
    }

    // step 12: output projection, (n × d_out) = concat (n × H·d_v) · W_O (H·d_v × d_out)
    builder.add(text.output(), model.W_O ? project(concat, *model.W_O, model.b_O) : concat);
    return std::move(trace);
}

}  // namespace qkv
