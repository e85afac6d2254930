// `qkv explain` for the backward pass (STEPS in man/qkv.1.in): one gradient cell's
// arithmetic with the numbers of the trace, term by term, ending in the cell's
// value. Every operand is read from the trace (or, for a weight, from the
// model), as explain.cpp does for the forward steps; the formulas are those of
// the step table's backward rows (attention/steps_backward.cpp), written out
// for one cell:
//   dConcat = dO·W_Oᵀ            dA = dZ·Vᵀ       dS' = A ∘ (dA − rowsum(dA ∘ A))
//   dS = dS' / scale             dQ = dS·K        dK = Σ_h dS_hᵀ·Q_h      dV = Σ_h A_hᵀ·dZ_h
//   dW = sourceᵀ·dY (x·W layout; dYᵀ·source in the pytorch layout)     db = Σ_i dY[i, :]
//   dX = Σ_h dQ_h·W_Q,hᵀ + Σ_g (dK_g·W_K,gᵀ + dV_g·W_V,gᵀ)
#include "explain/explain.hpp"

#include "attention/attention.hpp"
#include "base/numbers.hpp"
#include "attention/step_handlers.hpp"
#include "attention/steps.hpp"
#include "explain/numbers.hpp"

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace qkv::explaining {

namespace {

// "₁₂" for 12: a head's subscript (the ASCII output writes "_12")
std::string subscript(int value) {
    std::string text;
    for (const char digit : std::to_string(value)) {
        text += "\xE2\x82";
        text += static_cast<char>(0x80 + (digit - '0'));
    }
    return text;
}

// One dot product of a sum: the lines that name its vectors, a label when
// there are several ("queries' path, head 2"), its symbol ("dq·w") and vectors.
struct DotPart {
    std::vector<std::string> before;
    std::string label;
    std::string symbol;
    arma::rowvec a;
    arma::rowvec b;
};

// What a projection's weight gradient reads: its source (X, X + P or C), the
// gradients of its heads' projections side by side, each `width` columns wide.
struct Projection {
    std::string letter;            // "Q", "K", "V", "O"
    StepKey source;
    std::vector<StepKey> grads;
    arma::uword width = 0;         // each gradient's columns; 0: each its own step's width
    bool heads = true;             // the gradients are heads' (not mla's latent beside its rope key)
};

class GradientWriter {
public:
    GradientWriter(const Model& model, const Trace& trace, Explanation& explanation, const RenderOptions& options)
        : m_model(model),
          m_trace(trace),
          m_num(options),
          m_step(*trace.find(explanation.cell.step, explanation.cell.head)),
          m_lines(explanation.lines) {
        m_row = static_cast<arma::uword>(explanation.cell.row - 1);
        m_whole_row = explanation.cell.col == 0;
        m_col = m_whole_row ? 0 : static_cast<arma::uword>(explanation.cell.col - 1);
    }

    void run() {
        // a forward step's cell is explained by explain.cpp
        static constexpr auto k_explain = step_handlers<void (GradientWriter::*)()>(
            {
                {StepId::grad_output, &GradientWriter::grad_output},
                {StepId::grad_concat, &GradientWriter::grad_concat},
                {StepId::grad_head_output, &GradientWriter::grad_head_output},
                {StepId::grad_weights, &GradientWriter::grad_weights},
                {StepId::grad_scaled_scores, &GradientWriter::score_gradient},
                {StepId::grad_scores, &GradientWriter::grad_scores},
                {StepId::grad_normed_queries, &GradientWriter::grad_queries},
                {StepId::grad_queries, &GradientWriter::grad_queries},
                {StepId::grad_normed_keys, &GradientWriter::grad_keys},
                {StepId::grad_keys, &GradientWriter::grad_keys},
                {StepId::grad_q_norm, &GradientWriter::grad_norm_gain},
                {StepId::grad_k_norm, &GradientWriter::grad_norm_gain},
                {StepId::grad_values, &GradientWriter::grad_values},
                {StepId::grad_normed_q_latent, &GradientWriter::grad_normed_q_latent},
                {StepId::grad_q_latent, &GradientWriter::latent_norm_back},
                {StepId::grad_rope_keys, &GradientWriter::grad_rope_keys},
                {StepId::grad_normed_kv_latent, &GradientWriter::grad_normed_kv_latent},
                {StepId::grad_kv_latent, &GradientWriter::latent_norm_back},
                {StepId::grad_q_a_layernorm, &GradientWriter::latent_norm_gain},
                {StepId::grad_kv_a_layernorm, &GradientWriter::latent_norm_gain},
                {StepId::grad_w_q_a, &GradientWriter::grad_w_latent},
                {StepId::grad_w_kv_a, &GradientWriter::grad_w_latent},
                {StepId::grad_w_query, &GradientWriter::grad_w_projection},
                {StepId::grad_w_key, &GradientWriter::grad_w_projection},
                {StepId::grad_w_value, &GradientWriter::grad_w_projection},
                {StepId::grad_w_output, &GradientWriter::grad_w_output},
                {StepId::grad_out_proj_weight, &GradientWriter::grad_w_output},
                {StepId::grad_b_query, &GradientWriter::grad_b_query},
                {StepId::grad_b_key, &GradientWriter::grad_b_key},
                {StepId::grad_b_value, &GradientWriter::grad_b_value},
                {StepId::grad_b_output, &GradientWriter::grad_b_output},
                {StepId::grad_out_proj_bias, &GradientWriter::grad_b_output},
                {StepId::grad_in_proj_weight, &GradientWriter::grad_in_proj_weight},
                {StepId::grad_in_proj_bias, &GradientWriter::grad_in_proj_bias},
                {StepId::grad_inputs, &GradientWriter::grad_sources},
                {StepId::grad_context, &GradientWriter::grad_sources},
            },
            {.given = &GradientWriter::explained_elsewhere, .forward = &GradientWriter::explained_elsewhere,
             .elementwise_gradient = &GradientWriter::score_gradient});
        (this->*k_explain[step_index(m_step.id)])();
    }

private:
    // ── naming ──────────────────────────────────────────────────────────────
    bool several_heads() const { return m_trace.dims.heads > 1; }
    bool shared_kv() const { return m_model.n_kv_heads() != m_model.n_heads(); }
    bool pytorch_layout() const { return m_model.layout == Layout::pytorch; }

    // "@2" on a per-head step of an example with several heads
    std::string at_head(int head) const { return head != 0 && several_heads() ? "@" + std::to_string(head) : ""; }

    // "grad_scores[1,2]@2", or "grad_scores[1]@2" for a whole row (col < 0)
    std::string cell_name(StepId id, arma::uword row, long col, int head) const {
        std::string text = step_text(id) + "[" + std::to_string(row + 1);
        if (col >= 0) {
            text += "," + std::to_string(col + 1);
        }
        return text + "]" + at_head(head);
    }
    std::string here(arma::uword col) const { return cell_name(m_step.id, m_row, static_cast<long>(col), m_step.head); }

    // "grad_scores[2]@1 (Input 2)"
    std::string row_name(const Step& step, arma::uword row) const {
        return cell_name(step.id, row, -1, step.head) + " (" + step.row_labels[row] + ")";
    }
    // "column 2 of grad_scores@1"
    std::string column_name(const Step& step, arma::uword col) const {
        return "column " + std::to_string(col + 1) + " of " + step_text(step.id) + at_head(step.head);
    }
    // "head 2", or "key/value head 2" for the steps computed per key/value head with grouped-query attention
    std::string head_text(const Step& step) const {
        return (is_per_kv_head(step.id) && shared_kv() ? "key/value head " : "head ") + std::to_string(step.head);
    }
    // "X", "X + P", "C", "concat", "Z"
    std::string source_symbol(StepId id) const {
        if (id == StepId::encoded) {
            return "(X + P)";
        }
        if (id == StepId::context) {
            return "C";
        }
        if (id == StepId::concat) {
            return "concat";
        }
        if (id == StepId::normed_q_latent) {
            return "C_Q,norm";
        }
        if (id == StepId::normed_kv_latent) {
            return "C";
        }
        return id == StepId::head_output ? "Z" : "X";  // the inputs
    }

    const Step& step_of(const StepKey& key) const { return *m_trace.find(key.id, key.head); }
    std::vector<StepKey> reads() const { return step_inputs(m_model, {m_step.id, m_step.head}); }

    // ── numbers ─────────────────────────────────────────────────────────────
    // "… = computed" and, when `round:` rounds the step, the rounded value the trace keeps
    std::string result_of(double computed, double kept) const {
        const auto decimals = step_rounding(m_model, m_step.id);
        if (!decimals) {
            return m_num(kept);
        }
        return m_num(computed) + ", rounded to " + decimals_text(*decimals) + ": " + m_num(kept);
    }
    double kept(arma::uword col) const { return m_step.values(m_row, col); }

    // "a + b − c": the first number with its sign, then each as an operator
    std::string sum_terms(const arma::rowvec& values) const {
        std::string text;
        for (arma::uword k = 0; k < values.n_elem; ++k) {
            const std::string number = m_num(values(k));
            if (k == 0) {
                text += number;
            } else {
                text += number[0] == '-' ? " − " + number.substr(1) : " + " + number;
            }
        }
        return text;
    }

    std::vector<arma::uword> columns() const {
        std::vector<arma::uword> cols;
        for (arma::uword j = 0; j < m_step.values.n_cols; ++j) {
            if (m_whole_row || j == m_col) {
                cols.push_back(j);
            }
        }
        return cols;
    }

    void line(std::string text) { m_lines.push_back(std::move(text)); }
    // A line that names a vector, written once even when several cells of a row use it.
    void define(const std::string& text) {
        if (m_defined.insert(text).second) {
            line(text);
        }
    }

    // The dot products, one line each (with their label when there are
    // several), then their sum; the last line is "target = … = value", with the
    // kept value when the target is the cell, otherwise the computed one.
    double dot_sum(const std::string& target, const std::vector<DotPart>& parts, const double* kept_value) {
        arma::rowvec values(parts.size());
        for (std::size_t k = 0; k < parts.size(); ++k) {
            for (const auto& text : parts[k].before) {
                define(text);
            }
            values(k) = arma::dot(parts[k].a, parts[k].b);
            if (parts.size() > 1) {
                line(parts[k].label + ": " + parts[k].symbol + " = " + m_num.dot_terms(parts[k].a, parts[k].b) +
                     " = " + m_num(values(k)));
            }
        }
        const double total = arma::accu(values);
        const std::string value = kept_value ? result_of(total, *kept_value) : m_num(total);
        if (parts.size() == 1) {
            line(target + " = " + parts[0].symbol + " = " + m_num.dot_terms(parts[0].a, parts[0].b) + " = " + value);
        } else {
            line(target + " = " + sum_terms(values) + " = " + value);
        }
        return total;
    }

    // ── the steps ───────────────────────────────────────────────────────────
    void grad_output() {
        if (m_model.grad_output_ones) {
            line("grad_output: ones: L is the sum of every output value, so ∂L/∂O[i,j] = 1");
        } else {
            line("given by the example (grad_output:): how much the loss L changes with each output value");
        }
        for (const arma::uword c : columns()) {
            line(here(c) + " = ∂L/∂O[" + std::to_string(m_row + 1) + "," + std::to_string(c + 1) + "] = " +
                 m_num(kept(c)));
        }
    }

    // dO row i times row c of W_O (the x·W layout's W_O: column c of W_Oᵀ)
    void through_output_weight() {
        const Step& dO = step_of({StepId::grad_output, 0});
        const arma::rowvec d = dO.values.row(m_row);
        define("dO = " + row_name(dO, m_row) + " = " + m_num.vector(d));
        for (const arma::uword c : columns()) {
            const arma::rowvec w = m_model.W_O->row(c);
            const std::string file_name =
                m_model.weight_form == WeightForm::pytorch_block ? "out_proj_weight" : "W_O as written";
            const std::string where = pytorch_layout() ? "column " + std::to_string(c + 1) + " of " + file_name +
                                                             " (out × in: it is W_Oᵀ)"
                                                       : "row " + std::to_string(c + 1) + " of W_O, i.e. column " +
                                                             std::to_string(c + 1) + " of W_Oᵀ";
            line("w = " + where + " = " + m_num.vector(w));
            line(here(c) + " = dO·w = " + m_num.dot_terms(d, w) + " = " + result_of(arma::dot(d, w), kept(c)));
        }
    }

    void grad_concat() {
        line("an output value was a row of concat times a column of W_O, so the gradient goes back through W_Oᵀ");
        through_output_weight();
    }

    void grad_head_output() {
        const int h = m_step.head;
        const StepKey source = reads().front();
        if (source.id == StepId::grad_output && m_model.W_O) {
            line("one head: the output was Z·W_O, so dZ = dO·W_Oᵀ");
            through_output_weight();
            return;
        }
        const Step& from = step_of(source);
        const arma::uword d_v = m_model.d_v();
        const arma::uword first = static_cast<arma::uword>(h - 1) * d_v;
        if (m_model.n_heads() == 1) {
            line("one head and no W_O: the output is Z itself, so dZ = dO");
        } else {
            const bool concat = source.id == StepId::grad_concat;
            line("head " + std::to_string(h) + " filled columns " + std::to_string(first + 1) + " … " +
                 std::to_string(first + d_v) + " of " +
                 (concat ? std::string("the concatenation") : std::string("the output (no W_O: it is the concatenation)")) +
                 ", d_v = " + std::to_string(d_v) + "; its gradient is those columns of " + (concat ? "dConcat" : "dO"));
        }
        for (const arma::uword c : columns()) {
            line(here(c) + " = " + cell_name(from.id, m_row, static_cast<long>(first + c), 0) + " = " +
                 result_of(from.values(m_row, first + c), kept(c)));
        }
    }

    void grad_weights() {
        const std::vector<StepKey> in = reads();
        const Step& dZ = step_of(in[0]);
        const Step& V = step_of(in[1]);
        if (shared_kv()) {
            line("query head " + std::to_string(m_step.head) + " read the values of key/value head " +
                 std::to_string(V.head));
        }
        const arma::rowvec z = dZ.values.row(m_row);
        line("dz = " + row_name(dZ, m_row) + " = " + m_num.vector(z) + "    (row " + std::to_string(m_row + 1) +
             " of dZ)");
        for (const arma::uword j : columns()) {
            const arma::rowvec v = V.values.row(j);
            line("v = " + row_name(V, j) + " = " + m_num.vector(v) + "    (value " + std::to_string(j + 1) +
                 ": column " + std::to_string(j + 1) + " of Vᵀ)");
            line(here(j) + " = dz·v = " + m_num.dot_terms(z, v) + " = " + result_of(arma::dot(z, v), kept(j)));
        }
    }

    // The gradient of a step of the scores: through the elementwise step that
    // reads it (its gradient times f′), or through the softmax.
    void score_gradient() {
        const std::vector<StepKey> in = reads();
        if (in.front().id == StepId::weights) {
            softmax_gradient();
            return;
        }
        // the next step's gradient, and the scores it read
        const Step& grad = step_of(in[0]);
        const Step& input = step_of(in[1]);
        const StepId next = elementwise_after(m_model, input.id)->id;
        const Elementwise& f = *step_row(next).elementwise;
        const auto number = [this](double x) { return m_num(x); };
        line(step_text(next) + " = " + elementwise_formula(f.formula, step_text(input.id)) + ", so its slope is " +
             elementwise_formula(f.slope_formula, step_text(input.id)) + "; " + f.about(m_model, m_step.head, number));
        for (const arma::uword j : columns()) {
            const double g = grad.values(m_row, j);
            const double x = input.values(m_row, j);
            // f′ at x: the gradient 1 taken back
            const arma::mat slope = elementwise_gradient(m_model, next, m_step.head, arma::mat{1.0}, arma::mat{x});
            const std::string source = cell_name(input.id, m_row, static_cast<long>(j), input.head);
            line(here(j) + " = " + cell_name(grad.id, m_row, static_cast<long>(j), grad.head) + " · " +
                 elementwise_formula(f.slope_formula, source) + " = " + m_num(g) + " · " +
                 f.slope_working(m_model, m_step.head, x, number) + " = " + m_num(g) + " · " + m_num(slope(0, 0)) +
                 " = " + result_of(g * slope(0, 0), kept(j)));
        }
    }

    void softmax_gradient() {
        const std::vector<StepKey> in = reads();  // weights, grad_weights
        const Step& weights = step_of(in[0]);
        const Step& grad = step_of(in[1]);
        const arma::rowvec A = weights.values.row(m_row);
        const arma::rowvec dA = grad.values.row(m_row);
        const std::string i = std::to_string(m_row + 1);
        line("A = " + row_name(weights, m_row) + " = " + m_num.vector(A));
        line("dA = " + row_name(grad, m_row) + " = " + m_num.vector(dA));
        if (m_model.sinks) {
            line("the sink's column had no dA (it passes on no value), so the row term sums over the keys only");
        }
        if (m_model.alibi) {
            line("ALiBi's bias is a constant, so this is also the gradient of biased_scores");
        }
        const double r = arma::dot(dA, A);
        line("r = Σ_k dA[" + i + ",k]·A[" + i + ",k] = " + m_num.dot_terms(dA, A) + " = " + m_num(r) +
             "    (the row's dA, weighted by A)");
        for (const arma::uword j : columns()) {
            const std::string cell = i + "," + std::to_string(j + 1);
            if (!m_model.allows(m_row, j)) {
                line("key " + std::to_string(j + 1) + " is blocked: its weight A[" + cell +
                     "] is 0, so its gradient is 0");
            }
            line(here(j) + " = A[" + cell + "]·(dA[" + cell + "] − r) = " + m_num(A(j)) + " · (" + m_num(dA(j)) +
                 " − " + m_num.factor(r) + ") = " + result_of(A(j) * (dA(j) - r), kept(j)));
        }
    }

    void grad_scores() {
        const Step& from = step_of(reads().front());
        const bool none = m_model.scale_kind == ScaleKind::none;
        if (none) {
            line("this example does not scale (scale: none), so the gradient passes unchanged");
        } else {
            line("S' = S / scale, so the gradient is divided by the same divisor, " + divisor_text(m_model, m_num));
        }
        for (const arma::uword j : columns()) {
            const double s = from.values(m_row, j);
            const std::string source = cell_name(from.id, m_row, static_cast<long>(j), from.head);
            if (none) {
                line(here(j) + " = " + source + " = " + result_of(s, kept(j)));
            } else {
                line(here(j) + " = " + source + " / " + m_num(m_trace.scale) + " = " + m_num(s) + " / " +
                     m_num(m_trace.scale) + " = " + result_of(s / m_trace.scale, kept(j)));
            }
        }
    }

    // RoPE turned each pair (x_a, x_b) of a row by p·θ_k; the gradient of the
    // row before the rotation turns the rotated row's gradient g back:
    // g_a·cos + g_b·sin and g_b·cos − g_a·sin. `element` writes the lines of
    // g's element e and returns it; `g_name` names g ("dQ_rot").
    template <typename Element>
    void turn_back(const std::string& g_name, const Element& element) {
        const Rope& rope = *m_model.rope;
        const arma::uword d = m_step.values.n_cols;
        const bool half = rope.style == RopeStyle::half;
        const arma::uword d_rot = rope.rotated(d);
        const auto pair_of = [&](arma::uword c) {
            const arma::uword k = half ? c % (d_rot / 2) : c / 2;
            return std::pair{k, rope_pair(rope, k, d)};
        };
        // the rotated gradient's elements the cells need, in order (an element past the
        // rotated part needs itself alone)
        std::set<arma::uword> needed;
        for (const arma::uword c : columns()) {
            if (c >= d_rot) {
                needed.insert(c);
                continue;
            }
            const auto [k, ab] = pair_of(c);
            needed.insert(ab.first);
            needed.insert(ab.second);
        }
        std::vector<double> g(d, 0.0);
        for (const arma::uword e : needed) {
            g[e] = element(e, g_name + "[" + std::to_string(m_row + 1) + "," + std::to_string(e + 1) + "]");
        }
        const auto p = static_cast<double>(m_row);
        line("RoPE turned each pair by the angle p·θ_k, θ_k = " + m_num(rope.base) + "^(−2k/" +
             std::to_string(d_rot) + "), position p = " + m_num(p) + " (row " + std::to_string(m_row + 1) +
             ", counted from 0);");
        if (d_rot < d) {
            line("elements " + std::to_string(d_rot + 1) + " to " + std::to_string(d) +
                 " did not turn: their gradient passes back unchanged");
        }
        line("the gradient turns back by −p·θ_k: (g_a, g_b) → (g_a·cos + g_b·sin, g_b·cos − g_a·sin)");
        if (const std::string factor = attention_factor_text(m_model, m_num); !factor.empty()) {
            line(factor);
        }
        std::set<arma::uword> written;
        for (const arma::uword c : columns()) {
            if (c >= d_rot) {
                const std::string name = g_name + "[" + std::to_string(m_row + 1) + "," + std::to_string(c + 1) + "]";
                line(here(c) + " = " + name + " = " + result_of(g[c], kept(c)));
                continue;
            }
            const auto [k, ab] = pair_of(c);
            const auto [a, b] = ab;
            const double theta = rope_frequency(rope, k, d, m_model.n());
            const double angle = p * theta;
            const double cosine = rope_attention_factor(rope) * std::cos(angle);
            const double sine = rope_attention_factor(rope) * std::sin(angle);
            if (written.insert(k).second) {
                line("pair k = " + std::to_string(k) + " (" + (half ? "half" : "interleaved") + "): elements " +
                     std::to_string(a + 1) + " and " + std::to_string(b + 1) + "; θ = " + m_num(theta) +
                     ", angle = " + m_num(angle) + ", cos = " + m_num(cosine) + ", sin = " + m_num(sine));
            }
            const std::string name_a = g_name + "[" + std::to_string(m_row + 1) + "," + std::to_string(a + 1) + "]";
            const std::string name_b = g_name + "[" + std::to_string(m_row + 1) + "," + std::to_string(b + 1) + "]";
            if (c == a) {
                line(here(c) + " = " + name_a + "·cos + " + name_b + "·sin = " + m_num(g[a]) + " · " +
                     m_num.factor(cosine) + " + " + m_num.factor(g[b]) + " · " + m_num.factor(sine) + " = " +
                     result_of(g[a] * cosine + g[b] * sine, kept(c)));
            } else {
                line(here(c) + " = " + name_b + "·cos − " + name_a + "·sin = " + m_num(g[b]) + " · " +
                     m_num.factor(cosine) + " − " + m_num.factor(g[a]) + " · " + m_num.factor(sine) + " = " +
                     result_of(g[b] * cosine - g[a] * sine, kept(c)));
            }
        }
    }

    // Through QK-norm's RMSNorm, one row: y = x·r·g with r = 1/√(mean(x²) + eps), so
    // dx_k = r·g_k·dy_k − x_k·r³·mean(x∘g∘dy): its own share, less what x_k did to r.
    void through_norm() {
        const QkNorm& norm = *m_model.qk_norm;
        const bool queries = m_step.id == StepId::grad_queries;
        const std::vector<StepKey> in = reads();  // the normed rows' gradients, then the rows before the norm
        const std::size_t half = in.size() / 2;
        arma::rowvec dy;
        arma::rowvec x;
        std::string dy_names;
        std::string x_names;
        for (std::size_t k = 0; k < in.size(); ++k) {
            const arma::rowvec row = step_of(in[k]).values.row(m_row);
            std::string& names = k < half ? dy_names : x_names;
            names += (names.empty() ? "" : ", ") + cell_name(in[k].id, m_row, -1, in[k].head);
            (k < half ? dy : x) = arma::join_rows(k < half ? dy : x, row);
        }
        const std::string letter = queries ? "q" : "k";
        line("dy = " + dy_names + " = " + m_num.vector(dy) + "    (the gradient of the normed row)");
        line(letter + " = " + x_names + " = " + m_num.vector(x) + "    (the row before the norm" +
             (norm.over_all ? ", every head: over: all)" : ")"));
        const arma::uword first = norm.over_all ? static_cast<arma::uword>(m_step.head - 1) * m_model.d_k() : 0;
        norm_back_cells(letter, norm.offset != 0.0 ? "(1 + γ)" : "γ", x, norm.gain(queries), dy, m_model.qk_norm_eps(),
                        first);
    }

    // The cells of a row taken back through an RMSNorm y = x·r∘g, r = 1/√(mean(x²) + eps), from the row x
    // (`letter`), its gain g (`gain` names it) and dy: dx_k = r·g_k·dy_k − x_k·r³·mean(x∘g∘dy): its own
    // share, less what x_k did to r. Cell c is element first + c of the row.
    void norm_back_cells(const std::string& letter, const std::string& gain, const arma::rowvec& x,
                         const arma::rowvec& g, const arma::rowvec& dy, double eps, arma::uword first) {
        const double width = static_cast<double>(x.n_elem);
        const double mean_squares = arma::dot(x, x) / width;
        const double r = 1.0 / std::sqrt(mean_squares + eps);
        const double mean = arma::dot(x % g, dy) / width;
        line("r = 1/√(mean(" + letter + "²) + eps) = 1/√(" + m_num(mean_squares) + " + " + readable(eps) + ") = " +
             m_num(r));
        line("m = mean(" + letter + "∘" + gain + "∘dy) = " + m_num(mean) + "    (what the row's size passes back)");
        for (const arma::uword c : columns()) {
            const arma::uword k = first + c;
            line(here(c) + " = r·" + gain + "[" + std::to_string(k + 1) + "]·dy[" + std::to_string(k + 1) + "] − " +
                 letter + "[" + std::to_string(k + 1) + "]·r³·m = " + m_num(r) + " · " + m_num.factor(g(k)) + " · " +
                 m_num.factor(dy(k)) + " − " + m_num.factor(x(k)) + " · " + m_num.factor(r * r * r) + " · " +
                 m_num.factor(mean) + " = " + result_of(r * g(k) * dy(k) - x(k) * r * r * r * mean, kept(c)));
        }
    }

    // dγ[k] = Σ over the rows (and the heads that share γ) of dy_k·x_k·r
    void grad_norm_gain() {
        const QkNorm& norm = *m_model.qk_norm;
        const std::vector<StepKey> in = reads();  // the normed rows' gradients, then the rows before the norm
        const std::size_t half = in.size() / 2;
        const double eps = m_model.qk_norm_eps();
        const arma::uword d_k = m_model.d_k();
        arma::mat whole;  // over: all, the rows before the norm of every head side by side
        for (std::size_t j = half; norm.over_all && j < in.size(); ++j) {
            whole = arma::join_rows(whole, step_of(in[j]).values);
        }
        for (const arma::uword c : columns()) {
            // over: all, element c is element c mod d_k of head c / d_k + 1; else element c of every head
            std::vector<std::size_t> heads;
            for (std::size_t k = 0; k < half; ++k) {
                if (!norm.over_all || k == c / d_k) {
                    heads.push_back(k);
                }
            }
            const arma::uword e = norm.over_all ? c % d_k : c;
            arma::rowvec terms(heads.size() * step_of(in[0]).values.n_rows);
            std::string words;
            arma::uword t = 0;
            for (const std::size_t k : heads) {
                const arma::mat& dY = step_of(in[k]).values;
                const arma::mat& X = step_of(in[half + k]).values;
                // r of each row: over its head's d_k, or over every head's together
                const arma::vec r = rms_inverse(norm.over_all ? whole : X, eps);
                for (arma::uword i = 0; i < X.n_rows; ++i) {
                    terms(t++) = dY(i, e) * X(i, e) * r(i);
                }
                words += (words.empty() ? "" : ", ") + step_text(in[k].id) + at_head(in[k].head);
            }
            line("each row i of " + words + ": dy[i," + std::to_string(e + 1) + "]·x[i," + std::to_string(e + 1) +
                 "]·r_i, r_i = 1/√(mean(x_i²) + eps)");
            line(here(c) + " = " + sum_terms(terms) + " = " + result_of(arma::accu(terms), kept(c)));
        }
    }

    void grad_queries() {
        if (m_step.id == StepId::grad_queries && m_model.qk_norm) {
            through_norm();
            return;
        }
        const std::vector<StepKey> in = reads();  // grad_scores, keys (rotated with RoPE)
        const Step& dS = step_of(in[0]);
        const Step& K = step_of(in[1]);
        if (shared_kv()) {
            line("query head " + std::to_string(m_step.head) + " read the keys of key/value head " +
                 std::to_string(K.head));
        }
        const arma::rowvec s = dS.values.row(m_row);
        line("ds = " + row_name(dS, m_row) + " = " + m_num.vector(s) + "    (query " + std::to_string(m_row + 1) +
             "'s gradient for each key)");
        const auto element = [&](arma::uword e, const std::string& target, const double* kept_value) {
            const arma::rowvec k = K.values.col(e).t();
            return dot_sum(target, {{{"k = " + column_name(K, e) + " = " + m_num.vector(k)}, "", "ds·k", s, k}},
                           kept_value);
        };
        if (!m_model.rope) {
            for (const arma::uword c : columns()) {
                const double value = kept(c);
                element(c, here(c), &value);
            }
            return;
        }
        line("the scores read the rotated keys, so ds·K_rot is the gradient of the rotated query");
        turn_back("dQ_rot", [&](arma::uword e, const std::string& target) { return element(e, target, nullptr); });
    }

    void grad_keys() {
        if (m_step.id == StepId::grad_keys && m_model.qk_norm) {
            through_norm();
            return;
        }
        const std::vector<StepKey> in = reads();  // pairs (grad_scores@h, queries@h)
        const std::size_t count = in.size() / 2;
        const int g = m_step.head;
        if (count > 1) {
            line("key/value head " + std::to_string(g) + " is read by query heads " + std::to_string(in[0].head) +
                 " … " + std::to_string(in[in.size() - 2].head) + ": dK adds up their parts");
        }
        std::vector<arma::rowvec> columns_of_dS;
        for (std::size_t k = 0; k < count; ++k) {
            const Step& dS = step_of(in[2 * k]);
            columns_of_dS.push_back(dS.values.col(m_row).t());
        }
        const auto sub = [&](std::size_t k) { return count > 1 ? subscript(in[2 * k].head) : std::string(); };
        const auto element = [&](arma::uword e, const std::string& target, const double* kept_value) {
            std::vector<DotPart> parts;
            for (std::size_t k = 0; k < count; ++k) {
                const Step& dS = step_of(in[2 * k]);
                const Step& Q = step_of(in[2 * k + 1]);
                const arma::rowvec q = Q.values.col(e).t();
                parts.push_back({{"ds" + sub(k) + " = " + column_name(dS, m_row) + " = " +
                                      m_num.vector(columns_of_dS[k]) + "    (each query's gradient for key " +
                                      std::to_string(m_row + 1) + ")",
                                  "q" + sub(k) + " = " + column_name(Q, e) + " = " + m_num.vector(q)},
                                 "head " + std::to_string(in[2 * k].head),
                                 "ds" + sub(k) + "·q" + sub(k),
                                 columns_of_dS[k],
                                 q});
            }
            return dot_sum(target, parts, kept_value);
        };
        if (!m_model.rope) {
            for (const arma::uword c : columns()) {
                const double value = kept(c);
                element(c, here(c), &value);
            }
            return;
        }
        line("the scores read the rotated queries, so Σ dsᵀ·Q_rot is the gradient of the rotated key");
        turn_back("dK_rot", [&](arma::uword e, const std::string& target) { return element(e, target, nullptr); });
    }

    void grad_values() {
        const std::vector<StepKey> in = reads();  // pairs (weights@h, grad_head_output@h)
        const std::size_t count = in.size() / 2;
        if (count > 1) {
            line("key/value head " + std::to_string(m_step.head) + " is read by query heads " +
                 std::to_string(in[0].head) + " … " + std::to_string(in[in.size() - 2].head) +
                 ": dV adds up their parts");
        }
        const auto sub = [&](std::size_t k) { return count > 1 ? subscript(in[2 * k].head) : std::string(); };
        for (const arma::uword c : columns()) {
            std::vector<DotPart> parts;
            for (std::size_t k = 0; k < count; ++k) {
                const Step& A = step_of(in[2 * k]);
                const Step& dZ = step_of(in[2 * k + 1]);
                const arma::rowvec a = A.values.col(m_row).t();
                const arma::rowvec z = dZ.values.col(c).t();
                parts.push_back({{"a" + sub(k) + " = " + column_name(A, m_row) + " = " + m_num.vector(a) +
                                      "    (how much each query took from value " + std::to_string(m_row + 1) + ")",
                                  "dz" + sub(k) + " = " + column_name(dZ, c) + " = " + m_num.vector(z)},
                                 "head " + std::to_string(in[2 * k].head),
                                 "a" + sub(k) + "·dz" + sub(k),
                                 a,
                                 z});
            }
            const double value = kept(c);
            dot_sum(here(c), parts, &value);
        }
    }

    // ── mla's latents ───────────────────────────────────────────────────────
    // dC_Q,norm[i,c] = Σ_h dQ_h[i,:]·W_UQ,h[c,:]
    void grad_normed_q_latent() {
        const std::vector<StepKey> in = reads();  // every head's grad_queries
        line("every head's queries were this latent times its own block W_UQ of q_b_proj, so the gradient adds up "
             "each head's dQ row times row c of its block (column c of W_UQᵀ)");
        for (const arma::uword c : columns()) {
            std::vector<DotPart> parts;
            for (const StepKey& key : in) {
                const Step& dQ = step_of(key);
                const arma::rowvec d = dQ.values.row(m_row);
                const arma::rowvec w = m_model.heads[static_cast<std::size_t>(key.head - 1)].W_Q.row(c);
                const std::string sub = in.size() > 1 ? subscript(key.head) : "";
                parts.push_back({{"dq" + sub + " = " + row_name(dQ, m_row) + " = " + m_num.vector(d),
                                  "w = " + mla_weight_row(StepId::w_query, key.head, c) + " = " + m_num.vector(w)},
                                 "head " + std::to_string(key.head),
                                 "dq" + sub + "·w",
                                 d,
                                 w});
            }
            const double value = kept(c);
            dot_sum(here(c), parts, &value);
        }
    }

    // dK_R[i,c] = Σ_h dK_h[i, d_n + c]
    void grad_rope_keys() {
        const std::vector<StepKey> in = reads();  // every head's grad_keys
        const arma::uword d_n = m_model.mla->nope_dim;
        line(in.size() > 1 ? "one rope key served every head, so its gradient adds up each head's share: the last "
                             "d_r columns of its dK"
                           : "the one head's dK holds the rope key's gradient in its last d_r columns");
        for (const arma::uword c : columns()) {
            arma::rowvec terms(in.size());
            std::string names;
            for (std::size_t k = 0; k < in.size(); ++k) {
                terms(k) = step_of(in[k]).values(m_row, d_n + c);
                names += (k == 0 ? "" : " + ") + cell_name(in[k].id, m_row, static_cast<long>(d_n + c), in[k].head);
            }
            line(here(c) + " = " + names + " = " + sum_terms(terms) + " = " + result_of(arma::accu(terms), kept(c)));
        }
    }

    // dC[i,c] = Σ_h (dK_h[i, 1 … d_n]·W_UK,h[c,:] + dV_h[i,:]·W_UV,h[c,:])
    void grad_normed_kv_latent() {
        const std::vector<StepKey> in = reads();  // every head's grad_keys, then every head's grad_values
        const std::size_t H = in.size() / 2;
        const arma::uword d_n = m_model.mla->nope_dim;
        line("the latent made each head's keys (their first d_n numbers, through W_UK) and values (through W_UV): "
             "its gradient adds both paths of every head, each row of dK or dV times row c of the block");
        for (const arma::uword c : columns()) {
            std::vector<DotPart> parts;
            for (std::size_t k = 0; k < 2 * H; ++k) {
                const bool key = k < H;
                const Step& grad = step_of(in[k]);
                const HeadWeights& weights = m_model.heads[static_cast<std::size_t>(grad.head - 1)];
                const arma::rowvec d = key ? arma::rowvec(grad.values.row(m_row).head(d_n)) : arma::rowvec(grad.values.row(m_row));
                const arma::rowvec w = key ? weights.W_K.row(c) : weights.W_V.row(c);
                const std::string sub = H > 1 ? subscript(grad.head) : "";
                const std::string lower = key ? "dk" : "dv";
                parts.push_back({{lower + sub + " = " + row_name(grad, m_row) + (key ? ", its first d_n" : "") + " = " +
                                      m_num.vector(d),
                                  "w = " + mla_weight_row(key ? StepId::w_key : StepId::w_value, grad.head, c) + " = " +
                                      m_num.vector(w)},
                                 std::string(key ? "keys' path" : "values' path") +
                                     (H > 1 ? ", head " + std::to_string(grad.head) : std::string()),
                                 lower + sub + "·w",
                                 d,
                                 w});
            }
            const double value = kept(c);
            dot_sum(here(c), parts, &value);
        }
    }

    // Back through a latent's RMSNorm, one row (norm_back_cells)
    void latent_norm_back() {
        const std::vector<StepKey> in = reads();  // the normed latent's gradient, the latent
        const bool queries = m_step.id == StepId::grad_q_latent;
        const Step& grad = step_of(in[0]);
        const Step& latent = step_of(in[1]);
        const arma::rowvec g = queries ? m_model.mla->q_norm : m_model.mla->kv_norm;
        const arma::rowvec dy = grad.values.row(m_row);
        const arma::rowvec x = latent.values.row(m_row);
        line("dy = " + row_name(grad, m_row) + " = " + m_num.vector(dy) + "    (the gradient of the normed row)");
        line("c = " + row_name(latent, m_row) + " = " + m_num.vector(x) + "    (the row before the norm)");
        line("γ = " + m_num.vector(g) + " (" + (queries ? "q_a_layernorm" : "kv_a_layernorm") + ")");
        norm_back_cells("c", "γ", x, g, dy, m_model.rms_eps(), 0);
    }

    // dγ[c] = Σ_i dy[i,c]·c[i,c]·r_i
    void latent_norm_gain() {
        const std::vector<StepKey> in = reads();  // the normed latent's gradient, the latent
        const arma::mat& dY = step_of(in[0]).values;
        const arma::mat& X = step_of(in[1]).values;
        const arma::vec r = rms_inverse(X, m_model.rms_eps());
        line("r_i = 1/√(mean(c_i²) + eps) of each row i of " + step_text(in[1].id) + ": " +
             m_num.vector(arma::rowvec(r.t())));
        for (const arma::uword c : columns()) {
            const arma::rowvec terms = (dY.col(c) % X.col(c) % r).t();
            line("each row i: " + step_text(in[0].id) + "[i," + std::to_string(c + 1) + "]·" + step_text(in[1].id) +
                 "[i," + std::to_string(c + 1) + "]·r_i");
            line(here(c) + " = " + sum_terms(terms) + " = " + result_of(arma::accu(terms), kept(c)));
        }
    }

    // dW_DQ = Xᵀ·dC_Q, dW_kva = Xᵀ·[dC_KV dK_R] (their transposes in the pytorch layout)
    void grad_w_latent() {
        const std::vector<StepKey> in = reads();  // the source, then the gradients of what the weight made
        const bool queries = m_step.id == StepId::grad_w_q_a;
        Projection p;
        p.letter = queries ? "C_Q" : "[C_KV K_R]";
        p.source = in.front();
        p.grads.assign(in.begin() + 1, in.end());
        p.heads = false;
        const std::string s = source_symbol(p.source.id);
        const std::string w = queries ? "W_DQ" : "W_kva";
        const std::string d = queries ? "dC_Q" : "[dC_KV dK_R]";
        if (pytorch_layout()) {
            line("layout pytorch: d" + w + " is out × in like " + (queries ? "q_a_proj" : "kv_a_proj_with_mqa") +
                 " as written, " + d + "ᵀ·" + s + ": cell [r,c] = Σ_i " + d + "[i,r]·" + s + "[i,c]");
        } else {
            line("d" + w + " = " + s + "ᵀ·" + d + " (in × out, like " + (queries ? "q_a_proj" : "kv_a_proj_with_mqa") +
                 "): cell [r,c] = Σ_i " + s + "[i,r]·" + d + "[i,c]");
        }
        weight_cells(p, pytorch_layout());
    }

    // "row 3 of kv_b_proj, column 2 (head 1's W_UK)": where a row of a head's block sits in the file
    std::string mla_weight_row(StepId weight, int head, arma::uword row) const {
        const MlaBlock block = mla_block(m_model, weight, head);
        const std::string span = std::to_string(block.first + 1) + " … " + std::to_string(block.first + block.width);
        return (pytorch_layout() ? "column " : "row ") + std::to_string(row + 1) + " of " + block.file +
               (pytorch_layout() ? " as written, rows " : ", columns ") + span + " (" +
               (several_heads() ? "head " + std::to_string(head) + "'s " : std::string()) + "W_" + block.subscript + ")";
    }

    // ── the weights' gradients ──────────────────────────────────────────────
    // Column `out` of the projections' gradients side by side: the step and
    // column it comes from, and a line that says whose it is when there are several.
    std::pair<const Step*, arma::uword> gradient_column(const Projection& p, arma::uword out,
                                                       const std::string& what) {
        std::size_t k = 0;
        arma::uword col = out;
        for (; k + 1 < p.grads.size(); ++k) {
            const arma::uword width = p.width != 0 ? p.width : step_of(p.grads[k]).values.n_cols;
            if (col < width) {
                break;
            }
            col -= width;
        }
        const Step& grad = step_of(p.grads[k]);
        if (p.grads.size() > 1) {
            define(what + (p.heads ? " belongs to " + head_text(grad) + ": column " + std::to_string(col + 1) +
                                         " of its d" + p.letter
                                   : " comes from " + step_text(grad.id) + ": its column " + std::to_string(col + 1)));
        }
        return {&grad, col};
    }

    // dW[r,c]: x·W layout Σ_i S[i,r]·dY[i,c]; pytorch layout (out × in) Σ_i dY[i,r]·S[i,c].
    // `row_offset` is the first row of the block in in_proj_weight.
    void weight_cells(const Projection& p, bool out_first, arma::uword row_offset = 0) {
        const Step& S = step_of(p.source);
        const std::string s_name = source_symbol(p.source.id);
        for (const arma::uword c : columns()) {
            const arma::uword out = out_first ? m_row - row_offset : c;
            const arma::uword in = out_first ? c : m_row;
            const std::string what = out_first ? "row " + std::to_string(m_row + 1) : "column " + std::to_string(c + 1);
            const auto [grad, col] = gradient_column(p, out, what);
            const arma::rowvec x = S.values.col(in).t();
            const arma::rowvec y = grad->values.col(col).t();
            const std::string x_line = "x = " + column_name(S, in) + " = " + m_num.vector(x) + "    (element " +
                                       std::to_string(in + 1) + " of every row of " + s_name + ")";
            const std::string y_line = "dy = " + column_name(*grad, col) + " = " + m_num.vector(y);
            const double value = kept(c);
            if (out_first) {
                dot_sum(here(c), {{{y_line, x_line}, "", "dy·x", y, x}}, &value);
            } else {
                dot_sum(here(c), {{{x_line, y_line}, "", "x·dy", x, y}}, &value);
            }
        }
    }

    void grad_w_projection() {
        const std::vector<StepKey> in = reads();  // the source, then the projections' gradients
        Projection p;
        p.letter = m_step.id == StepId::grad_w_query ? "Q" : m_step.id == StepId::grad_w_key ? "K" : "V";
        p.source = in.front();
        p.grads.assign(in.begin() + 1, in.end());
        p.width = p.letter == "V" ? m_model.d_v() : m_model.d_k();
        if (m_model.mla && p.letter == "K") {
            p.width = m_model.mla->nope_dim;  // W_UK made only each key's first d_n numbers
        }
        const std::string s = source_symbol(p.source.id);
        const std::string d = "d" + p.letter;
        if (m_model.mla) {
            const bool latent = m_model.mla->q_rank.has_value();
            line(p.letter == "Q" ? "the queries were " + s + " times " + (latent ? "q_b_proj" : "q_proj") +
                                       ", each head its own columns"
                 : p.letter == "K" ? std::string("W_UK, each head's first d_n columns of its block of kv_b_proj, made "
                                                 "only the keys' first d_n numbers: dK's rope part is not used here")
                                   : std::string("W_UV is each head's last d_v columns of its block of kv_b_proj"));
        }
        if (pytorch_layout()) {
            line("layout pytorch: dW_" + p.letter + " is out × in like W_" + p.letter + " as written, " + d + "ᵀ·" + s +
                 ": cell [r,c] = Σ_i " + d + "[i,r]·" + s + "[i,c]");
        } else {
            line("dW_" + p.letter + " = " + s + "ᵀ·" + d + " (in × out, like W_" + p.letter + "): cell [r,c] = Σ_i " + s +
                 "[i,r]·" + d + "[i,c]");
        }
        if (p.letter != "Q" && m_model.cross()) {
            line("cross-attention: the keys and values read the context C");
        }
        weight_cells(p, pytorch_layout());
    }

    void grad_w_output() {
        const std::vector<StepKey> in = reads();  // concat (or Z), grad_output
        Projection p{"O", in[0], {in[1]}, m_model.d_out()};
        const std::string s = source_symbol(p.source.id);
        const bool out_first = pytorch_layout();
        if (out_first) {
            line((m_step.id == StepId::grad_out_proj_weight ? "out_proj_weight" : "layout pytorch: dW_O") +
                 std::string(" is out × in, dOᵀ·") + s + ": cell [r,c] = Σ_i dO[i,r]·" + s + "[i,c]");
        } else {
            line("dW_O = " + s + "ᵀ·dO (in × out, like W_O): cell [r,c] = Σ_i " + s + "[i,r]·dO[i,c]");
        }
        weight_cells(p, out_first);
    }

    // in_proj_weight stacks W_Q, W_K and W_V (each E × E, out × in): the block of the row
    void grad_in_proj_weight() {
        const std::vector<StepKey> in = reads();  // X, C (or X), dQ_1 … dQ_H, dK_1 … dK_G, dV_1 … dV_G
        const auto H = static_cast<std::size_t>(m_model.n_heads());
        const auto G = static_cast<std::size_t>(m_model.n_kv_heads());
        const arma::uword E = m_model.n_heads() * m_model.d_k();
        const arma::uword block = m_row / E;
        const std::string letter = block == 0 ? "Q" : block == 1 ? "K" : "V";
        Projection p;
        p.letter = letter;
        p.source = block == 0 ? in[0] : in[1];
        const std::size_t first = block == 0 ? 2 : block == 1 ? 2 + H : 2 + H + G;
        const std::size_t count = block == 0 ? H : G;
        p.grads.assign(in.begin() + static_cast<long>(first), in.begin() + static_cast<long>(first + count));
        p.width = letter == "V" ? m_model.d_v() : m_model.d_k();
        const std::string s = source_symbol(p.source.id);
        line("rows " + std::to_string(block * E + 1) + " … " + std::to_string(block * E + E) +
             " of in_proj_weight are W_" + letter + "'s (out × in), so this block is d" + letter + "ᵀ·" + s + ":");
        line("cell [r,c] = Σ_i d" + letter + "[i," + (block == 0 ? std::string("r") : "r − " + std::to_string(block * E)) +
             "]·" + s + "[i,c]");
        weight_cells(p, true, block * E);
    }

    // db[c] = Σ_i dY[i,c] for the cells' columns `cols`; `col_offset` is the
    // first column of the bias in the step (b_K's in in_proj_bias)
    void bias_cells(const Projection& p, const std::vector<arma::uword>& cols, arma::uword col_offset) {
        line("the bias was added to every row, so its gradient adds up d" + p.letter + "'s column over the rows");
        for (const arma::uword c : cols) {
            const auto [grad, col] = gradient_column(p, c - col_offset, "column " + std::to_string(c + 1));
            const arma::rowvec y = grad->values.col(col).t();
            line(here(c) + " = Σ_i " + step_text(grad->id) + "[i," + std::to_string(col + 1) + "]" +
                 at_head(grad->head) + " = " + sum_terms(y) + " = " + result_of(arma::accu(y), kept(c)));
        }
    }

    void explained_elsewhere() {}

    void grad_b_query() { grad_bias("Q", m_model.d_k()); }
    void grad_b_key() { grad_bias("K", m_model.d_k()); }
    void grad_b_value() { grad_bias("V", m_model.d_v()); }
    void grad_b_output() { grad_bias("O", m_model.d_out()); }  // grad_b_output, grad_out_proj_bias

    void grad_bias(const std::string& letter, arma::uword width) {
        Projection p;
        p.grads = reads();  // the projections' gradients (dO for the output's bias)
        p.letter = letter;
        p.width = width;
        if (m_step.id == StepId::grad_b_key && !m_model.rope && !m_model.sinks && !m_model.qk_norm) {
            // Σ_j dS[i,j] = 0 on each row when its weights sum to 1, so Σ_j dK[j,:] = Σ_i Q[i,:]·0
            line("b_K adds the same q·b_K to every score of a row, which the softmax ignores: this gradient is 0 "
                 "(up to rounding)");
        }
        bias_cells(p, columns(), 0);
    }

    // in_proj_bias holds b_Q, b_K and b_V one after the other, E each
    void grad_in_proj_bias() {
        const std::vector<StepKey> in = reads();  // dQ_1 … dQ_H, dK_1 … dK_G, dV_1 … dV_G
        const auto H = static_cast<std::size_t>(m_model.n_heads());
        const auto G = static_cast<std::size_t>(m_model.n_kv_heads());
        const arma::uword E = m_model.n_heads() * m_model.d_k();
        for (arma::uword block = 0; block < 3; ++block) {
            std::vector<arma::uword> cols;
            for (const arma::uword c : columns()) {
                if (c / E == block) {
                    cols.push_back(c);
                }
            }
            if (cols.empty()) {
                continue;
            }
            Projection p;
            p.letter = block == 0 ? "Q" : block == 1 ? "K" : "V";
            const std::size_t first = block == 0 ? 0 : block == 1 ? H : H + G;
            const std::size_t count = block == 0 ? H : G;
            p.grads.assign(in.begin() + static_cast<long>(first), in.begin() + static_cast<long>(first + count));
            p.width = block == 2 ? m_model.d_v() : m_model.d_k();
            line("columns " + std::to_string(block * E + 1) + " … " + std::to_string(block * E + E) +
                 " of in_proj_bias are b_" + p.letter + "'s");
            bias_cells(p, cols, block * E);
        }
    }

    // ── the inputs' and the context's gradients ─────────────────────────────
    // "row 3 of W_Q, columns 1 … 2 (head 1)": where a head's weight row sits in the file
    std::string weight_row_text(const std::string& letter, int head, arma::uword row, arma::uword width) const {
        const std::string r = std::to_string(row + 1);
        const bool kv = letter != "Q";
        const std::string who = (kv && shared_kv() ? "key/value head " : "head ") + std::to_string(head);
        const std::string span = std::to_string(static_cast<arma::uword>(head - 1) * width + 1) + " … " +
                                 std::to_string(static_cast<arma::uword>(head) * width);
        switch (m_model.weight_form) {
            case WeightForm::pytorch_block: {
                const arma::uword E = m_model.n_heads() * m_model.d_k();
                const arma::uword offset = letter == "Q" ? 0 : letter == "K" ? E : 2 * E;
                return "column " + r + " of in_proj_weight, rows " +
                       std::to_string(offset + static_cast<arma::uword>(head - 1) * width + 1) + " … " +
                       std::to_string(offset + static_cast<arma::uword>(head) * width) + " (W_" + letter +
                       (several_heads() ? ", " + who : std::string()) + ")";
            }
            case WeightForm::head_list:
                return (pytorch_layout() ? "column " + r + " of " : "row " + r + " of ") + who + "'s W_" + letter +
                       (pytorch_layout() ? " as written" : "");
            case WeightForm::split:
                break;
        }
        const bool split = m_model.n_heads() > 1 && (letter == "Q" ? true : m_model.n_kv_heads() > 1);
        if (pytorch_layout()) {
            return "column " + r + " of W_" + letter + " as written" + (split ? ", rows " + span + " (" + who + ")" : "");
        }
        return "row " + r + " of W_" + letter + (split ? ", columns " + span + " (" + who + ")" : "");
    }

    // dX (or dC) = each path's gradient row times its weight's transpose, summed
    // dX with mla: through W_DQ (or each head's W_Q) and through W_kva
    void latent_sources() {
        const std::vector<StepKey> in = reads();
        const Mla& mla = *m_model.mla;
        const std::string q_name = mla.q_rank ? "q_a_proj" : "q_proj";
        line(std::string("X made the ") + (mla.q_rank ? "query latent (q_a_proj)" : "queries (q_proj)") +
             " and, through kv_a_proj_with_mqa, the latent and the rope key: the gradient adds the paths");
        if (m_model.P) {
            line("P is fixed, so this is also the gradient of X + P");
        }
        const std::size_t queries = in.size() - 2;
        const auto file_row = [&](const std::string& name, arma::uword c) {
            return (pytorch_layout() ? "column " : "row ") + std::to_string(c + 1) + " of " + name +
                   (pytorch_layout() ? " as written" : "");
        };
        for (const arma::uword c : columns()) {
            std::vector<DotPart> parts;
            if (mla.q_rank) {
                const Step& grad = step_of(in[0]);
                const arma::rowvec d = grad.values.row(m_row);
                const arma::rowvec w = mla.W_qa->row(c);
                parts.push_back({{"dc_q = " + row_name(grad, m_row) + " = " + m_num.vector(d),
                                  "w = " + file_row(q_name, c) + " = " + m_num.vector(w)},
                                 "query latent's path",
                                 "dc_q·w",
                                 d,
                                 w});
            } else {
                for (std::size_t k = 0; k < queries; ++k) {
                    const Step& grad = step_of(in[k]);
                    const arma::rowvec d = grad.values.row(m_row);
                    const arma::rowvec w = m_model.heads[k].W_Q.row(c);
                    const std::string sub = queries > 1 ? subscript(grad.head) : "";
                    parts.push_back({{"dq" + sub + " = " + row_name(grad, m_row) + " = " + m_num.vector(d),
                                      "w = " + mla_weight_row(StepId::w_query, grad.head, c) + " = " + m_num.vector(w)},
                                     "queries' path" + (queries > 1 ? ", head " + std::to_string(grad.head) : std::string()),
                                     "dq" + sub + "·w",
                                     d,
                                     w});
                }
            }
            const Step& latent = step_of(in[queries]);
            const Step& rope = step_of(in[queries + 1]);
            const arma::rowvec d = arma::join_rows(latent.values.row(m_row), rope.values.row(m_row));
            const arma::rowvec w = mla.W_kva.row(c);
            parts.push_back({{"dkv = [" + row_name(latent, m_row) + ", " + row_name(rope, m_row) + "] = " +
                                  m_num.vector(d),
                              "w = " + file_row("kv_a_proj_with_mqa", c) + " = " + m_num.vector(w)},
                             "latent's and rope key's path",
                             "dkv·w",
                             d,
                             w});
            const double value = kept(c);
            dot_sum(here(c), parts, &value);
        }
    }

    void grad_sources() {
        if (m_model.mla) {
            latent_sources();
            return;
        }
        const std::vector<StepKey> in = reads();
        const bool inputs = m_step.id == StepId::grad_inputs;
        if (inputs && m_model.cross()) {
            line("cross-attention: X feeds only the queries, so only the queries' path comes back here;");
            line("the keys and values read the context C (see grad_context)");
        }
        if (inputs && m_model.P) {
            line("P is fixed, so this is also the gradient of X + P");
        }
        const auto H = static_cast<std::size_t>(m_model.n_heads());
        const auto G = static_cast<std::size_t>(m_model.n_kv_heads());
        for (const arma::uword c : columns()) {
            std::vector<DotPart> parts;
            std::size_t next = 0;
            const auto add = [&](const std::string& letter, const std::string& path, std::size_t count) {
                for (std::size_t k = 0; k < count; ++k, ++next) {
                    const Step& grad = step_of(in[next]);
                    const int head = grad.head;
                    const HeadWeights& weights =
                        letter == "Q" ? m_model.heads[static_cast<std::size_t>(head - 1)] : m_model.kv_weights(head);
                    const arma::mat& W = letter == "Q" ? weights.W_Q : letter == "K" ? weights.W_K : weights.W_V;
                    const std::string sub = count > 1 ? subscript(head) : "";
                    const std::string lower = letter == "Q" ? "dq" : letter == "K" ? "dk" : "dv";
                    const arma::rowvec d = grad.values.row(m_row);
                    const arma::rowvec w = W.row(c);
                    parts.push_back({{lower + sub + " = " + row_name(grad, m_row) + " = " + m_num.vector(d),
                                      "w = " + weight_row_text(letter, head, c, W.n_cols) + " = " + m_num.vector(w)},
                                     path + (count > 1 ? ", " + head_text(grad) : std::string()),
                                     lower + sub + "·w",
                                     d,
                                     w});
                }
            };
            if (inputs) {
                add("Q", "queries' path", H);
            }
            if (!inputs || !m_model.cross()) {
                add("K", "keys' path", G);
                add("V", "values' path", G);
            }
            const double value = kept(c);
            dot_sum(here(c), parts, &value);
        }
    }

    const Model& m_model;
    const Trace& m_trace;
    Numbers m_num;
    const Step& m_step;
    std::vector<std::string>& m_lines;
    arma::uword m_row = 0;
    arma::uword m_col = 0;
    bool m_whole_row = false;
    std::set<std::string> m_defined;
};

}  // namespace

void explain_gradient(const Model& model, const Trace& trace, Explanation& explanation, const RenderOptions& options) {
    GradientWriter(model, trace, explanation, options).run();
}

}  // namespace qkv::explaining
