// explain's writer of one forward cell: Explainer checks the cell, then works
// its step's arithmetic with the numbers of the trace. Its steps up to the
// values are in explain.cpp, those from the scores on in explain_scores.cpp;
// nothing outside explain/ includes this.
#pragma once

#include "explain/explain.hpp"

#include "attention/attention.hpp"
#include "attention/cell.hpp"
#include "attention/step_handlers.hpp"
#include "attention/steps.hpp"
#include "base/numbers.hpp"
#include "explain/numbers.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::explaining {

// Works out one explanation: checks the cell, then dispatches on its step.
class Explainer {
public:
    Explainer(const Model& model, const Trace& trace, const CellRef& cell, const RenderOptions& options)
        : m_model(model), m_trace(trace), m_cell(cell), m_num(options), m_ascii(options.ascii) {}

    Explanation run();

private:
    std::string symbols(const std::string& text) const { return m_ascii ? to_ascii(text) : text; }

    // "scores[1,2] = 4    (Scores, row 1 "Input 1", column 2 "Input 2")", the
    // example's labels marked as such.
    std::vector<HeadingPart> heading(const std::vector<double>& values) const;

    // ── naming ──────────────────────────────────────────────────────────────
    // "scores[1,2]" (with "@2" when the example has several heads and the step is per head)
    std::string name() const { return cell_name(m_step->id, m_row, m_whole_row ? -1 : static_cast<long>(m_col), m_step->head); }

    std::string cell_name(StepId id, arma::uword row, long col, int head) const {
        std::string text = step_text(id) + "[" + std::to_string(row + 1);
        if (col >= 0) {
            text += "," + std::to_string(col + 1);
        }
        text += "]";
        if (head != 0 && m_trace.dims.heads > 1) {
            text += "@" + std::to_string(head);
        }
        return text;
    }

    std::string row_name(const Step& step, arma::uword row) const {
        return cell_name(step.id, row, -1, step.head) + " (" + step.row_labels[row] + ")";
    }

    const Step& step_of(StepId id, int head) const { return *m_trace.find(id, head); }

    // The decimals this step is rounded to by `round:`, or -1.
    int rounding(StepId id) const { return step_rounding(m_model, id).value_or(-1); }

    // "… = computed" and, when the step is rounded by hand, the rounded value the trace keeps.
    std::string result_of(double computed, double kept) const {
        const int decimals = rounding(m_step->id);
        if (decimals < 0) {
            return m_num(kept);
        }
        return m_num(computed) + ", rounded to " + decimals_text(decimals) + ": " + m_num(kept);
    }

    std::vector<arma::uword> columns() const {
        std::vector<arma::uword> cols;
        if (m_whole_row) {
            for (arma::uword j = 0; j < m_step->values.n_cols; ++j) {
                cols.push_back(j);
            }
        } else {
            cols.push_back(m_col);
        }
        return cols;
    }

    void line(std::string text) { m_lines.push_back(std::move(text)); }

    // ── the steps ───────────────────────────────────────────────────────────
    void explained_elsewhere() {}

    void given();

    // What a weight's numbers make: "query" for W_Q and b_Q, and so on.
    std::string made() const;

    // A weight of the example, W[r, c]: from number r of the row it reads to
    // number c of what it makes (the other way round in PyTorch's layout).
    void weight();

    void bias();

    void positional();

    void encoded();

    // x (a source row) times each column of W, plus the bias: queries, keys,
    // values and the output projection.
    void project_row(const Step& source, const std::string& source_name, const arma::mat& W, const std::string& w_name,
                     const std::optional<arma::rowvec>& b, const std::string& b_name);

    void projection();

    // what a projection reads, in words
    static std::string source_words(StepId id);

    // mla: the query latent, the key/value latent and the rope keys, each x times its columns of a weight
    void latent();

    // mla: a latent row divided by its root mean square, times γ
    void normed_latent();

    // mla: a head's key is [c·W_UK, k_rope]; its rope part is the rope key every head shares
    void keys();

    // A row x over its root mean square: r = 1/√(mean(x²) + eps), then each
    // cell (element first + c of x) times r and its gain, offset + γ.
    void norm_row(const arma::rowvec& x, const std::string& parts, const std::string& letter, double eps,
                  const arma::rowvec& gamma, double offset, arma::uword first, const std::string& note);

    // QK-norm: the row divided by its root mean square, times offset + γ
    void normed();

    // RoPE: each element is one of a pair, and the pair turns by p·θ_k
    void rotated();

    void scores();

    // mla: the same score from the latent, as a cache of latents computes it: W_UK
    // absorbed into the query, q_nope·W_UK·c + q_rope·k_rope
    void absorbed_score(const arma::rowvec& q, const arma::rowvec& k, arma::uword j);

    void scaled_scores();

    // An elementwise step (k_elementwise_steps): its row's f of each cell of the scores it reads.
    void elementwise();

    void position_bias();

    void biased_scores();

    // Why query i may not attend to key j, or "" when it may.
    std::string blocked_because(arma::uword i, arma::uword j) const;

    void masked_scores();

    void weights();

    void head_output() { head_output_of(m_step->head); }

    void head_output_of(int h);

    void concat();

    void output();

    const Model& m_model;
    const Trace& m_trace;
    const CellRef& m_cell;
    Numbers m_num;
    bool m_ascii;
    const Step* m_step = nullptr;
    arma::uword m_row = 0;
    arma::uword m_col = 0;
    bool m_whole_row = false;
    std::vector<std::string> m_lines;
};

}  // namespace qkv::explaining
