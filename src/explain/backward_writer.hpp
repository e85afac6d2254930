// explain's writer of one gradient cell (STEPS in man/qkv.1.in): GradientWriter
// works a cell of the backward pass with the numbers of the trace, term by
// term. Its steps through the values' gradients are in backward.cpp, those of
// mla's latents, the weights and the inputs in backward_weights.cpp; nothing
// outside explain/ includes this.
#pragma once

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

namespace qkv::explaining::gradients {

// "₁₂" for 12: a head's subscript (the ASCII output writes "_12")
inline std::string subscript(int value) {
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

    void run();

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
    double dot_sum(const std::string& target, const std::vector<DotPart>& parts, const double* kept_value);

    // ── the steps ───────────────────────────────────────────────────────────
    void grad_output();

    // dO row i times row c of W_O (the x·W layout's W_O: column c of W_Oᵀ)
    void through_output_weight();

    void grad_concat() {
        line("an output value was a row of concat times a column of W_O, so the gradient goes back through W_Oᵀ");
        through_output_weight();
    }

    void grad_head_output();

    void grad_weights();

    // The gradient of a step of the scores: through the elementwise step that
    // reads it (its gradient times f′), or through the softmax.
    void score_gradient();

    void softmax_gradient();

    void grad_scores();

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
    void through_norm();

    // The cells of a row taken back through an RMSNorm y = x·r∘g, r = 1/√(mean(x²) + eps), from the row x
    // (`letter`), its gain g (`gain` names it) and dy: dx_k = r·g_k·dy_k − x_k·r³·mean(x∘g∘dy): its own
    // share, less what x_k did to r. Cell c is element first + c of the row.
    void norm_back_cells(const std::string& letter, const std::string& gain, const arma::rowvec& x,
                         const arma::rowvec& g, const arma::rowvec& dy, double eps, arma::uword first);

    // dγ[k] = Σ over the rows (and the heads that share γ) of dy_k·x_k·r
    void grad_norm_gain();

    void grad_queries();

    void grad_keys();

    void grad_values();

    // ── mla's latents ───────────────────────────────────────────────────────
    // dC_Q,norm[i,c] = Σ_h dQ_h[i,:]·W_UQ,h[c,:]
    void grad_normed_q_latent();

    // dK_R[i,c] = Σ_h dK_h[i, d_n + c]
    void grad_rope_keys();

    // dC[i,c] = Σ_h (dK_h[i, 1 … d_n]·W_UK,h[c,:] + dV_h[i,:]·W_UV,h[c,:])
    void grad_normed_kv_latent();

    // Back through a latent's RMSNorm, one row (norm_back_cells)
    void latent_norm_back();

    // dγ[c] = Σ_i dy[i,c]·c[i,c]·r_i
    void latent_norm_gain();

    // dW_DQ = Xᵀ·dC_Q, dW_kva = Xᵀ·[dC_KV dK_R] (their transposes in the pytorch layout)
    void grad_w_latent();

    // "row 3 of kv_b_proj, column 2 (head 1's W_UK)": where a row of a head's block sits in the file
    std::string mla_weight_row(StepId weight, int head, arma::uword row) const;

    // ── the weights' gradients ──────────────────────────────────────────────
    // Column `out` of the projections' gradients side by side: the step and
    // column it comes from, and a line that says whose it is when there are several.
    std::pair<const Step*, arma::uword> gradient_column(const Projection& p, arma::uword out,
                                                       const std::string& what);

    // dW[r,c]: x·W layout Σ_i S[i,r]·dY[i,c]; pytorch layout (out × in) Σ_i dY[i,r]·S[i,c].
    // `row_offset` is the first row of the block in in_proj_weight.
    void weight_cells(const Projection& p, bool out_first, arma::uword row_offset = 0);

    void grad_w_projection();

    void grad_w_output();

    // in_proj_weight stacks W_Q, W_K and W_V (each E × E, out × in): the block of the row
    void grad_in_proj_weight();

    // db[c] = Σ_i dY[i,c] for the cells' columns `cols`; `col_offset` is the
    // first column of the bias in the step (b_K's in in_proj_bias)
    void bias_cells(const Projection& p, const std::vector<arma::uword>& cols, arma::uword col_offset);

    void explained_elsewhere() {}

    void grad_b_query() { grad_bias("Q", m_model.d_k()); }
    void grad_b_key() { grad_bias("K", m_model.d_k()); }
    void grad_b_value() { grad_bias("V", m_model.d_v()); }
    void grad_b_output() { grad_bias("O", m_model.d_out()); }  // grad_b_output, grad_out_proj_bias

    void grad_bias(const std::string& letter, arma::uword width);

    // in_proj_bias holds b_Q, b_K and b_V one after the other, E each
    void grad_in_proj_bias();

    // ── the inputs' and the context's gradients ─────────────────────────────
    // "row 3 of W_Q, columns 1 … 2 (head 1)": where a head's weight row sits in the file
    std::string weight_row_text(const std::string& letter, int head, arma::uword row, arma::uword width) const;

    // dX (or dC) = each path's gradient row times its weight's transpose, summed
    // dX with mla: through W_DQ (or each head's W_Q) and through W_kva
    void latent_sources();

    void grad_sources();

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

}  // namespace qkv::explaining::gradients
