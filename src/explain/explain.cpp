// `qkv explain`: one cell's arithmetic written out with the numbers of the
// trace. Every operand is read from the trace (or, for a projection's weights,
// from the model), so an explanation shows exactly what `qkv run` computed;
// only the intermediate terms (products, exponentials, sums) are worked here.
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

namespace qkv {

namespace {

using explaining::decimals_text;
using explaining::divisor_text;
using explaining::Numbers;

// Works out one explanation: checks the cell, then dispatches on its step.
class Explainer {
public:
    Explainer(const Model& model, const Trace& trace, const CellRef& cell, const RenderOptions& options)
        : m_model(model), m_trace(trace), m_cell(cell), m_num(options), m_ascii(options.ascii) {}

    Explanation run() {
        const Step& step = cell_step(m_trace, m_cell);
        m_step = &step;
        m_row = static_cast<arma::uword>(m_cell.row - 1);
        m_whole_row = m_cell.col == 0;
        m_col = m_whole_row ? 0 : static_cast<arma::uword>(m_cell.col - 1);

        Explanation result;
        result.cell = m_cell;
        result.cell.head = step.head;
        if (m_whole_row) {
            const arma::rowvec row = step.values.row(m_row);
            result.values.assign(row.begin(), row.end());
        } else {
            result.values.push_back(step.values(m_row, m_col));
        }
        result.heading_parts = heading(result.values);
        result.heading = joined(result.heading_parts);

        // a gradient's cell is explained by explain_gradient (backward.cpp)
        static constexpr auto k_explain = step_handlers<void (Explainer::*)()>(
            {
                {StepId::positional, &Explainer::positional},
                {StepId::w_query, &Explainer::weight},
                {StepId::w_key, &Explainer::weight},
                {StepId::w_value, &Explainer::weight},
                {StepId::w_output, &Explainer::weight},
                {StepId::w_q_a, &Explainer::weight},
                {StepId::w_kv_a, &Explainer::weight},
                {StepId::b_query, &Explainer::bias},
                {StepId::b_key, &Explainer::bias},
                {StepId::b_value, &Explainer::bias},
                {StepId::b_output, &Explainer::bias},
                {StepId::encoded, &Explainer::encoded},
                {StepId::q_latent, &Explainer::latent},
                {StepId::kv_latent, &Explainer::latent},
                {StepId::rope_keys, &Explainer::latent},
                {StepId::normed_q_latent, &Explainer::normed_latent},
                {StepId::normed_kv_latent, &Explainer::normed_latent},
                {StepId::queries, &Explainer::projection},
                {StepId::keys, &Explainer::keys},
                {StepId::values, &Explainer::projection},
                {StepId::normed_queries, &Explainer::normed},
                {StepId::normed_keys, &Explainer::normed},
                {StepId::rotated_queries, &Explainer::rotated},
                {StepId::rotated_keys, &Explainer::rotated},
                {StepId::scores, &Explainer::scores},
                {StepId::scaled_scores, &Explainer::scaled_scores},
                {StepId::position_bias, &Explainer::position_bias},
                {StepId::biased_scores, &Explainer::biased_scores},
                {StepId::masked_scores, &Explainer::masked_scores},
                {StepId::weights, &Explainer::weights},
                {StepId::head_output, &Explainer::head_output},
                {StepId::concat, &Explainer::concat},
                {StepId::output, &Explainer::output},
            },
            {.given = &Explainer::given, .gradient = &Explainer::explained_elsewhere,
             .elementwise = &Explainer::elementwise});
        (this->*k_explain[step_index(step.id)])();
        result.lines = std::move(m_lines);
        return result;
    }

private:
    std::string symbols(const std::string& text) const { return m_ascii ? to_ascii(text) : text; }

    // "scores[1,2] = 4    (Scores, row 1 "Input 1", column 2 "Input 2")", the
    // example's labels marked as such.
    std::vector<HeadingPart> heading(const std::vector<double>& values) const {
        std::vector<HeadingPart> parts;
        parts.push_back({symbols(name() + " = " + (m_whole_row ? m_num.vector(values) : m_num(values[0])) + "    (" +
                                 m_step->title + ", row " + std::to_string(m_cell.row) + " \""),
                         false});
        parts.push_back({symbols(m_step->row_labels[m_row]), true});
        if (m_whole_row) {
            parts.push_back({"\")", false});
            return parts;
        }
        parts.push_back({"\", column " + std::to_string(m_cell.col) + " \"", false});
        parts.push_back({symbols(m_step->col_labels[m_col]), true});
        parts.push_back({"\")", false});
        return parts;
    }

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

    void given() {
        const bool inputs = m_step->id == StepId::inputs;
        const std::string matrix = inputs ? "X" : "C";
        if (inputs) {
            line("given by the example: row " + std::to_string(m_row + 1) + " of the inputs X is token \"" +
                 m_step->row_labels[m_row] + "\"'s vector");
        } else {
            line("given by the example: row " + std::to_string(m_row + 1) + " of the context C is context token \"" +
                 m_step->row_labels[m_row] + "\"'s vector");
        }
        line("nothing is computed for " + matrix + "; every later step starts from it");
    }

    // What a weight's numbers make: "query" for W_Q and b_Q, and so on.
    std::string made() const {
        const StepId id = m_step->id;
        if (id == StepId::w_query || id == StepId::b_query) {
            return "query";
        }
        if (id == StepId::w_key || id == StepId::b_key) {
            return "key";
        }
        if (id == StepId::w_q_a) {
            return "query latent";
        }
        if (id == StepId::w_kv_a) {
            // its first r columns make the latent, its last d_r the rope key (in PyTorch's layout, its rows)
            const arma::uword out = m_model.layout == Layout::pytorch ? m_row : m_col;
            return m_whole_row || out < m_model.mla->kv_rank ? "latent" : "rope key";
        }
        return id == StepId::w_value || id == StepId::b_value ? "value" : "output";
    }

    // A weight of the example, W[r, c]: from number r of the row it reads to
    // number c of what it makes (the other way round in PyTorch's layout).
    void weight() {
        const std::string name = symbols(m_step->formula);
        const bool output = m_step->id == StepId::w_output;
        // with mla, the keys and values (and the queries, with q_rank) read a token's latent
        const bool from_latent = m_model.mla && (m_step->id == StepId::w_key || m_step->id == StepId::w_value ||
                                                 (m_step->id == StepId::w_query && m_model.mla->q_rank));
        const std::string source = output       ? (m_model.n_heads() > 1 ? "the concatenated heads' row" : "Z's row")
                                   : from_latent ? (m_step->id == StepId::w_query ? "a token's normed query latent"
                                                                                  : "a token's normed latent")
                                                 : "a token's row";
        const bool pytorch = m_model.layout == Layout::pytorch;
        // kv_a_proj_with_mqa's rope key is counted from its own first number
        const arma::uword skip = m_step->id == StepId::w_kv_a && made() == "rope key" ? m_model.mla->kv_rank : 0;
        const std::string r = std::to_string(m_row + 1 - (pytorch ? skip : 0));
        const std::string c = std::to_string(m_col + 1 - (pytorch ? 0 : skip));
        if (m_whole_row) {
            line("given by the example: row " + std::to_string(m_row + 1) + " of " + name + ", as the file writes it");
        } else if (m_model.layout == Layout::pytorch) {
            line("given by the example, in PyTorch's layout (out × in): the weight from number " + c + " of " + source +
                 " to number " + r + " of its " + made());
        } else {
            line("given by the example: the weight from number " + r + " of " + source + " to number " + c + " of its " +
                 made());
        }
        line("nothing is computed for " + name + "; it is used as written");
    }

    void bias() {
        const std::string name = symbols(m_step->formula);
        line("given by the example: " + name + (m_whole_row ? " is" : "[" + std::to_string(m_col + 1) + "] is") +
             " added to every token's " + made() + (m_whole_row ? "" : ", to its number " + std::to_string(m_col + 1)));
        line("nothing is computed for " + name + "; it is used as written");
    }

    void positional() {
        if (!m_model.P_sinusoidal) {
            line("given by the example (positional:): the vector added at position " + std::to_string(m_row + 1));
            return;
        }
        const double d_model = static_cast<double>(m_model.d_model());
        const auto p = static_cast<double>(m_row);
        line("sinusoidal: P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(p / 10000^(2i/d_model)), "
             "positions p from 0, d_model = " + m_num(d_model));
        for (const arma::uword c : columns()) {
            const auto two_i = static_cast<double>(c - c % 2);
            const double angle = p / std::pow(10000.0, two_i / d_model);
            const std::string function = c % 2 == 0 ? "sin" : "cos";
            line(cell_name(StepId::positional, m_row, static_cast<long>(c), 0) + " = " + function + "(" + m_num(p) +
                 " / 10000^(" + m_num(two_i) + "/" + m_num(d_model) + ")) = " + function + "(" + m_num(angle) +
                 ") = " + result_of(c % 2 == 0 ? std::sin(angle) : std::cos(angle), m_step->values(m_row, c)));
        }
    }

    void encoded() {
        const Step& inputs = step_of(StepId::inputs, 0);
        const Step& positions = step_of(StepId::positional, 0);
        for (const arma::uword c : columns()) {
            const double x = inputs.values(m_row, c);
            const double p = positions.values(m_row, c);
            line(cell_name(StepId::encoded, m_row, static_cast<long>(c), 0) + " = " +
                 cell_name(StepId::inputs, m_row, static_cast<long>(c), 0) + " + " +
                 cell_name(StepId::positional, m_row, static_cast<long>(c), 0) + " = " + m_num(x) + " + " + m_num.factor(p) +
                 " = " + result_of(x + p, m_step->values(m_row, c)));
        }
    }

    // x (a source row) times each column of W, plus the bias: queries, keys,
    // values and the output projection.
    void project_row(const Step& source, const std::string& source_name, const arma::mat& W, const std::string& w_name,
                     const std::optional<arma::rowvec>& b, const std::string& b_name) {
        const arma::rowvec x = source.values.row(m_row);
        line("x = " + row_name(source, m_row) + " = " + m_num.vector(x) + "    (row " + std::to_string(m_row + 1) +
             " of " + source_name + ")");
        const bool pytorch = m_model.layout == Layout::pytorch;
        for (const arma::uword j : columns()) {
            const arma::rowvec w = W.col(j).t();
            const std::string w_part = pytorch ? "row " + std::to_string(j + 1) + " of " + w_name + " as written"
                                               : "column " + std::to_string(j + 1) + " of " + w_name;
            line("w = " + w_part + " = " + m_num.vector(w));
            double computed = arma::dot(x, w);
            std::string working = "x·w = " + m_num.dot_terms(x, w);
            if (b) {
                const std::string bias = m_num((*b)(j));
                working = "x·w + " + b_name + "[" + std::to_string(j + 1) + "] = " + m_num.dot_terms(x, w) +
                          (bias[0] == '-' ? " − " + bias.substr(1) : " + " + bias);
                computed += (*b)(j);
            }
            line(cell_name(m_step->id, m_row, static_cast<long>(j), m_step->head) + " = " + working + " = " +
                 result_of(computed, m_step->values(m_row, j)));
        }
        if (pytorch) {
            line("(layout: pytorch: the file's " + w_name + " is out × in, so x meets its rows: x·" + w_name + "ᵀ)");
        }
    }

    void projection() {
        const bool kv = is_per_kv_head(m_step->id);
        const HeadWeights& weights =
            kv ? m_model.kv_weights(m_step->head) : m_model.heads[static_cast<std::size_t>(m_step->head - 1)];
        // what this projection reads: X, X + P, or the context C
        const StepKey read = step_inputs(m_model, {m_step->id, m_step->head}).front();
        const Step& source = step_of(read.id, read.head);
        const std::string source_name = source_words(read.id);
        const std::string letter = m_step->id == StepId::queries ? "Q" : m_step->id == StepId::keys ? "K" : "V";
        const arma::mat& W = letter == "Q" ? weights.W_Q : letter == "K" ? weights.W_K : weights.W_V;
        const auto& b = letter == "Q" ? weights.b_Q : letter == "K" ? weights.b_K : weights.b_V;
        // with mla, a head's blocks of the up-projections: W_UQ (or q_proj's W_Q), W_UK, W_UV
        std::string w_name = "W_" + (m_model.mla && (letter != "Q" || m_model.mla->q_rank) ? "U" + letter : letter);
        if (m_trace.dims.heads > 1) {
            const bool shared = kv && m_model.n_kv_heads() != m_model.n_heads();
            w_name += std::string(shared ? " (key/value head " : " (head ") + std::to_string(m_step->head) + ")";
        }
        project_row(source, source_name, W, w_name, b, "b_" + letter);
    }

    // what a projection reads, in words
    static std::string source_words(StepId id) {
        switch (id) {
            case StepId::context:
                return "the context C";
            case StepId::encoded:
                return "X + P";
            case StepId::normed_q_latent:
                return "the normed query latent C_Q,norm";
            case StepId::normed_kv_latent:
                return "the normed latent C";
            default:
                return "X";
        }
    }

    // mla: the query latent, the key/value latent and the rope keys, each x times its columns of a weight
    void latent() {
        const Mla& mla = *m_model.mla;
        const StepKey read = step_inputs(m_model, {m_step->id, 0}).front();
        const Step& source = step_of(read.id, read.head);
        if (m_step->id == StepId::q_latent) {
            project_row(source, source_words(read.id), *mla.W_qa, "W_DQ (q_a_proj)", std::nullopt, "");
        } else if (m_step->id == StepId::kv_latent) {
            project_row(source, source_words(read.id), mla.W_kva.head_cols(mla.kv_rank),
                        "W_DKV (the first r columns of kv_a_proj_with_mqa)", std::nullopt, "");
        } else {
            project_row(source, source_words(read.id), mla.W_kva.tail_cols(mla.rope_dim),
                        "W_KR (the last d_r columns of kv_a_proj_with_mqa)", std::nullopt, "");
        }
    }

    // mla: a latent row divided by its root mean square, times γ
    void normed_latent() {
        const Mla& mla = *m_model.mla;
        const bool queries = m_step->id == StepId::normed_q_latent;
        const StepKey read = step_inputs(m_model, {m_step->id, 0}).front();
        const Step& source = step_of(read.id, read.head);
        if (!queries) {
            const std::string token = std::to_string(m_row + 1);
            line("run --decode caches row " + token + " with rope_keys[" + token + "], turned at position " +
                 std::to_string(m_row));
        }
        norm_row(source.values.row(m_row), cell_name(read.id, m_row, -1, 0), "c", m_model.rms_eps(),
                 queries ? mla.q_norm : mla.kv_norm, 0.0, 0, "");
    }

    // mla: a head's key is [c·W_UK, k_rope]; its rope part is the rope key every head shares
    void keys() {
        if (!m_model.mla) {
            projection();
            return;
        }
        const int g = m_step->head;
        const std::vector<StepKey> reads = step_inputs(m_model, {m_step->id, g});
        const Step& latent = step_of(reads[0].id, reads[0].head);
        const Step& rope = step_of(reads[1].id, reads[1].head);
        const arma::uword d_n = m_model.mla->nope_dim;
        const arma::mat& W = m_model.kv_weights(g).W_K;
        const arma::rowvec c = latent.values.row(m_row);
        const bool pytorch = m_model.layout == Layout::pytorch;
        const std::string w_name = "W_UK" + (m_trace.dims.heads > 1 ? " (head " + std::to_string(g) + ")" : "");
        bool shown = false;
        for (const arma::uword j : columns()) {
            const std::string here = cell_name(m_step->id, m_row, static_cast<long>(j), g);
            if (j >= d_n) {
                const auto r = static_cast<long>(j - d_n);
                line("element " + std::to_string(j + 1) + " is past d_n = " + std::to_string(d_n) +
                     ": it is the rope key every head shares");
                line(here + " = " + cell_name(StepId::rope_keys, m_row, r, 0) + " = " +
                     result_of(rope.values(m_row, j - d_n), m_step->values(m_row, j)));
                continue;
            }
            if (!shown) {
                line("c = " + row_name(latent, m_row) + " = " + m_num.vector(c) + "    (row " +
                     std::to_string(m_row + 1) + " of the normed latent C)");
                shown = true;
            }
            const arma::rowvec w = W.col(j).t();
            line("w = " + (pytorch ? "row " + std::to_string(j + 1) + " of " + w_name + " as written"
                                   : "column " + std::to_string(j + 1) + " of " + w_name) +
                 " = " + m_num.vector(w));
            line(here + " = c·w = " + m_num.dot_terms(c, w) + " = " + result_of(arma::dot(c, w), m_step->values(m_row, j)));
        }
    }

    // A row x over its root mean square: r = 1/√(mean(x²) + eps), then each
    // cell (element first + c of x) times r and its gain, offset + γ.
    void norm_row(const arma::rowvec& x, const std::string& parts, const std::string& letter, double eps,
                  const arma::rowvec& gamma, double offset, arma::uword first, const std::string& note) {
        line(letter + " = " + parts + " = " + m_num.vector(x) + note);
        std::string squares;
        for (arma::uword k = 0; k < x.n_elem; ++k) {
            squares += (k == 0 ? "" : " + ") + m_num.factor(x(k)) + "²";
        }
        const double width = static_cast<double>(x.n_elem);
        const double mean = arma::dot(x, x) / width;
        const double r = 1.0 / std::sqrt(mean + eps);
        line("mean(" + letter + "²) = (" + squares + ") / " + m_num(width) + " = " + m_num(mean));
        line("r = 1/√(mean(" + letter + "²) + eps) = 1/√(" + m_num(mean) + " + " + readable(eps) + ") = " + m_num(r));
        for (const arma::uword c : columns()) {
            const arma::uword k = first + c;
            const double g = gamma(k);
            const std::string gamma_name = "γ[" + std::to_string(k + 1) + "]";
            const std::string gain = offset != 0.0 ? "(1 + " + gamma_name + ")" : gamma_name;
            const std::string gain_number = offset != 0.0 ? "(1 + " + m_num(g) + ")" : m_num.factor(g);
            line(cell_name(m_step->id, m_row, static_cast<long>(c), m_step->head) + " = " + letter + "[" +
                 std::to_string(k + 1) + "]·r·" + gain + " = " + m_num(x(k)) + " · " + m_num.factor(r) + " · " +
                 gain_number + " = " + result_of(x(k) * r * (offset + g), m_step->values(m_row, c)));
        }
    }

    // QK-norm: the row divided by its root mean square, times offset + γ
    void normed() {
        const QkNorm& norm = *m_model.qk_norm;
        const bool queries = m_step->id == StepId::normed_queries;
        const int h = m_step->head;
        const std::string letter = queries ? "q" : "k";
        // the numbers the mean runs over: the head's row, or over: all the token's every head
        arma::rowvec x;
        std::string parts;
        for (const StepKey& read : step_inputs(m_model, {m_step->id, h})) {
            const Step& source = step_of(read.id, read.head);
            x = arma::join_rows(x, arma::rowvec(source.values.row(m_row)));
            parts += (parts.empty() ? "" : ", ") + cell_name(read.id, m_row, -1, read.head);
        }
        // over: all, head h's elements are the h-th run of d_k in the whole row
        norm_row(x, parts, letter, m_model.qk_norm_eps(), queries ? norm.query : norm.key, norm.offset,
                 norm.over_all ? static_cast<arma::uword>(h - 1) * m_model.d_k() : 0,
                 norm.over_all ? "    (over: all: the token's whole projection, every head)" : "");
    }

    // RoPE: each element is one of a pair, and the pair turns by p·θ_k
    void rotated() {
        const Rope& rope = *m_model.rope;
        const StepKey read = step_inputs(m_model, {m_step->id, m_step->head}).front();
        const Step& source = step_of(read.id, read.head);
        const arma::uword d = m_step->values.n_cols;
        const auto p = static_cast<double>(m_row);
        const bool half = rope.style == RopeStyle::half;
        // the convention first: the last line is the cell's value
        const std::string half_width = rope.skip > 0 ? "d_r/2" : rope.rotated(d) == d ? "d_k/2" : "d_rot/2";
        if (half) {
            line("style half (Hugging Face's rotate_half): element j pairs with element j + " + half_width);
            line("interleaved (RoFormer, Meta's Llama code) would pair 2j − 1 with 2j instead;");
        } else {
            line("style interleaved (RoFormer, Meta's Llama code): element 2j − 1 pairs with element 2j");
            line("half (Hugging Face's rotate_half) would pair j with j + " + half_width + " instead;");
        }
        line("permuting W_Q's and W_K's output columns turns one style into the other");
        const arma::uword d_rot = rope.rotated(d);
        if (const std::string factor = explaining::attention_factor_text(m_model, m_num); !factor.empty()) {
            line(factor);
        }
        line("position p = " + m_num(p) + " (row " + std::to_string(m_row + 1) + ", counted from 0); θ_k = " +
             m_num(rope.base) +
             (rope.skip > 0 ? "^(−2k/d_r), d_r = " + std::to_string(d_rot) + ", the last elements of d_k = " +
                                  std::to_string(d) + " (mla's rope part)"
              : d_rot == d ? "^(−2k/d_k), d_k = " + std::to_string(d)
                         : "^(−2k/d_rot), d_rot = " + std::to_string(d_rot) + " of d_k = " + std::to_string(d) +
                               " (partial_rotary_factor " + readable(rope.partial_rotary_factor) + ")"));
        for (const arma::uword c : columns()) {
            const std::string here = cell_name(m_step->id, m_row, static_cast<long>(c), m_step->head);
            if (rope.skip > 0 ? c < rope.skip : c >= d_rot) {
                // outside the rotated part: the element passes unchanged
                const std::string name = cell_name(read.id, m_row, static_cast<long>(c), read.head);
                line(rope.skip > 0 ? "element " + std::to_string(c + 1) + " is in the first d_n = " +
                                         std::to_string(rope.skip) + ", which do not turn: it passes unchanged"
                                   : "element " + std::to_string(c + 1) + " is past the first " +
                                         std::to_string(d_rot) + ", which turn: it passes unchanged");
                line(here + " = " + name + " = " + result_of(source.values(m_row, c), m_step->values(m_row, c)));
                continue;
            }
            const arma::uword k = half ? (c - rope.skip) % (d_rot / 2) : (c - rope.skip) / 2;
            const auto [a, b] = rope_pair(rope, k, d);
            const double theta = rope_frequency(rope, k, d, m_model.n());
            const double angle = p * theta;
            const double factor = rope_attention_factor(rope);
            const double cosine = factor * std::cos(angle);
            const double sine = factor * std::sin(angle);
            line("pair k = " + std::to_string(k) + ": elements " + std::to_string(a + 1) + " and " +
                 std::to_string(b + 1) + "; " + explaining::frequency_text(m_model, k, d, m_num) + ", angle = " +
                 m_num(p) + " · " + m_num(theta) + " = " + m_num(angle) + ", cos = " + m_num(cosine) +
                 ", sin = " + m_num(sine));
            const double x_a = source.values(m_row, a);
            const double x_b = source.values(m_row, b);
            const std::string name_a = cell_name(read.id, m_row, static_cast<long>(a), read.head);
            const std::string name_b = cell_name(read.id, m_row, static_cast<long>(b), read.head);
            if (c == a) {
                line(here + " = " + name_a + "·cos − " + name_b + "·sin = " + m_num(x_a) + " · " + m_num.factor(cosine) +
                     " − " + m_num.factor(x_b) + " · " + m_num.factor(sine) + " = " +
                     result_of(x_a * cosine - x_b * sine, m_step->values(m_row, c)));
            } else {
                line(here + " = " + name_b + "·cos + " + name_a + "·sin = " + m_num(x_b) + " · " + m_num.factor(cosine) +
                     " + " + m_num.factor(x_a) + " · " + m_num.factor(sine) + " = " +
                     result_of(x_b * cosine + x_a * sine, m_step->values(m_row, c)));
            }
        }
    }

    void scores() {
        const int h = m_step->head;
        const std::vector<StepKey> reads = step_inputs(m_model, {StepId::scores, h});
        const Step& queries = step_of(reads[0].id, reads[0].head);
        const Step& keys = step_of(reads[1].id, reads[1].head);
        if (m_model.n_kv_heads() != m_model.n_heads()) {
            line("query head " + std::to_string(h) + " reads key/value head " + std::to_string(reads[1].head) +
                 ", which it shares with other query heads");
        }
        const arma::rowvec q = queries.values.row(m_row);
        line("q = " + row_name(queries, m_row) + " = " + m_num.vector(q) + "    (query " +
             std::to_string(m_row + 1) + ")");
        for (const arma::uword j : columns()) {
            const arma::rowvec k = keys.values.row(j);
            line("k = " + row_name(keys, j) + " = " + m_num.vector(k) + "    (key " + std::to_string(j + 1) +
                 ": column " + std::to_string(j + 1) + " of Kᵀ)");
            line(cell_name(StepId::scores, m_row, static_cast<long>(j), h) + " = q·k = " + m_num.dot_terms(q, k) + " = " +
                 result_of(arma::dot(q, k), m_step->values(m_row, j)));
            if (m_model.mla) {
                absorbed_score(q, k, j);
            }
        }
    }

    // mla: the same score from the latent, as a cache of latents computes it: W_UK
    // absorbed into the query, q_nope·W_UK·c + q_rope·k_rope
    void absorbed_score(const arma::rowvec& q, const arma::rowvec& k, arma::uword j) {
        const Mla& mla = *m_model.mla;
        const int h = m_step->head;
        const arma::uword d_n = mla.nope_dim;
        const arma::rowvec q_nope = q.head(d_n);
        const arma::rowvec q_rope = q.tail(mla.rope_dim);
        const arma::rowvec k_rope = k.tail(mla.rope_dim);
        const arma::rowvec absorbed = q_nope * m_model.kv_weights(h).W_K.t();  // 1 × r
        const arma::rowvec c = step_of(StepId::normed_kv_latent, 0).values.row(j);
        const double latent = arma::dot(absorbed, c);
        const double rope = arma::dot(q_rope, k_rope);
        line("or from the latent, with W_UK absorbed into the query: (q_nope·W_UKᵀ)·c + q_rope·k_rope");
        line("  q_nope·W_UKᵀ = " + m_num.vector(q_nope) + "·W_UKᵀ = " + m_num.vector(absorbed) +
             "    (the absorbed query, r = " + std::to_string(mla.kv_rank) + " numbers)");
        line("  c = " + cell_name(StepId::normed_kv_latent, j, -1, 0) + " = " + m_num.vector(c) +
             "    (what a cache keeps of key " + std::to_string(j + 1) + ")");
        line("  q_rope·k_rope = " + m_num.dot_terms(q_rope, k_rope) + " = " + m_num(rope));
        const std::string rope_part = rope < 0 ? " − " + m_num(-rope) : " + " + m_num(rope);
        line("  " + cell_name(StepId::scores, m_row, static_cast<long>(j), h) + " = " + m_num.dot_terms(absorbed, c) +
             rope_part + " = " + result_of(latent + rope, m_step->values(m_row, j)));
    }

    void scaled_scores() {
        const Step& scores = step_of(StepId::scores, m_step->head);
        if (m_model.scale_kind == ScaleKind::none) {
            line("this example does not scale (scale: none), so the scores pass through unchanged");
        } else {
            line("the divisor is " + divisor_text(m_model, m_num));
        }
        for (const arma::uword j : columns()) {
            const double s = scores.values(m_row, j);
            std::string text = cell_name(StepId::scaled_scores, m_row, static_cast<long>(j), m_step->head) + " = " +
                               cell_name(StepId::scores, m_row, static_cast<long>(j), m_step->head);
            if (m_model.scale_kind == ScaleKind::none) {
                text += " = " + result_of(s, m_step->values(m_row, j));
            } else {
                text += " / " + m_num(m_trace.scale) + " = " + m_num(s) + " / " + m_num(m_trace.scale) + " = " +
                        result_of(s / m_trace.scale, m_step->values(m_row, j));
            }
            line(text);
        }
    }

    // An elementwise step (k_elementwise_steps): its row's f of each cell of the scores it reads.
    void elementwise() {
        const int h = m_step->head;
        const Elementwise& f = *step_row(m_step->id).elementwise;
        const auto number = [this](double x) { return m_num(x); };
        const StepKey input = step_inputs(m_model, {m_step->id, h}).front();
        const Step& in = step_of(input.id, input.head);
        line(f.about(m_model, h, number));
        for (const arma::uword j : columns()) {
            const double x = in.values(m_row, j);
            const double y = elementwise_value(m_model, m_step->id, h, arma::mat{x})(0, 0);
            line(cell_name(m_step->id, m_row, static_cast<long>(j), h) + " = " +
                 elementwise_formula(f.formula, cell_name(input.id, m_row, static_cast<long>(j), h)) + " = " +
                 f.working(m_model, h, x, number) + " = " + result_of(y, m_step->values(m_row, j)));
        }
    }

    void position_bias() {
        const double slope = (*m_model.alibi)(static_cast<arma::uword>(m_step->head - 1));
        line("slope m = " + m_num(slope) + (m_model.alibi_press ? " (Press et al.'s slope for head " +
                                                                       std::to_string(m_step->head) + " of " +
                                                                       std::to_string(m_model.n_heads()) + ")"
                                                                 : ""));
        line("the farther key j is from query i, the lower its score; the query's own key gets 0");
        for (const arma::uword j : columns()) {
            const double distance = std::fabs(static_cast<double>(m_row) - static_cast<double>(j));
            line(cell_name(StepId::position_bias, m_row, static_cast<long>(j), m_step->head) + " = −m·|i − j| = −" +
                 m_num(slope) + " · |" + std::to_string(m_row + 1) + " − " + std::to_string(j + 1) + "| = " +
                 result_of(distance == 0.0 ? 0.0 : -slope * distance, m_step->values(m_row, j)));
        }
    }

    void biased_scores() {
        const int h = m_step->head;
        const Step& scaled = step_of(StepId::scaled_scores, h);
        const Step& bias = step_of(StepId::position_bias, h);
        for (const arma::uword j : columns()) {
            const double s = scaled.values(m_row, j);
            const double b = bias.values(m_row, j);
            line(cell_name(StepId::biased_scores, m_row, static_cast<long>(j), h) + " = " +
                 cell_name(StepId::scaled_scores, m_row, static_cast<long>(j), h) + " + " +
                 cell_name(StepId::position_bias, m_row, static_cast<long>(j), h) + " = " + m_num(s) + " + " +
                 m_num.factor(b) + " = " + result_of(s + b, m_step->values(m_row, j)));
        }
    }

    // Why query i may not attend to key j, or "" when it may.
    std::string blocked_because(arma::uword i, arma::uword j) const {
        std::vector<std::string> reasons;
        const MaskView mask = mask_view(m_model);
        if (mask.window == 0 && mask.causal_blocks(i, j)) {
            reasons.push_back("the causal mask: query " + std::to_string(i + 1) + " sees keys 1 to " +
                              std::to_string(i + 1));
        }
        if (mask.window > 0 && (mask.causal_blocks(i, j) || mask.window_blocks(i, j))) {
            const arma::uword first = i + 1 > mask.window ? i + 2 - mask.window : 1;
            reasons.push_back("the sliding window of " + std::to_string(mask.window) + ": query " +
                              std::to_string(i + 1) + " sees keys " + std::to_string(first) + " to " +
                              std::to_string(i + 1));
        }
        if (mask.matrix_blocks(i, j)) {
            reasons.push_back("the mask: mask[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "] = 0");
        }
        if (mask.padding_blocks(j)) {
            reasons.push_back("padding: key " + std::to_string(j + 1) + " is marked 0");
        }
        std::string text;
        for (const auto& reason : reasons) {
            text += (text.empty() ? "" : ", and ") + reason;
        }
        return text;
    }

    void masked_scores() {
        const StepKey read = step_inputs(m_model, {StepId::masked_scores, m_step->head}).front();
        const Step& scaled = step_of(read.id, read.head);
        for (const arma::uword j : columns()) {
            const std::string here = cell_name(StepId::masked_scores, m_row, static_cast<long>(j), m_step->head);
            const std::string reason = blocked_because(m_row, j);
            if (reason.empty()) {
                line(here + " = " + cell_name(read.id, m_row, static_cast<long>(j), m_step->head) + " = " +
                     m_num(scaled.values(m_row, j)) + "    (query " + std::to_string(m_row + 1) +
                     " may attend to key " + std::to_string(j + 1) + ")");
            } else {
                line(here + " = −∞    (blocked by " + reason + ")");
            }
        }
        line("a −∞ score becomes exp(−∞) = 0 in the softmax: a weight of exactly 0");
    }

    void weights() {
        const int h = m_step->head;
        // the row the softmax reads: the masked scores, or the scaled ones without a mask
        const StepKey read = step_inputs(m_model, {StepId::weights, h}).front();
        const Step* source = &step_of(read.id, read.head);
        const arma::rowvec s = source->values.row(m_row);
        const bool sink = m_model.sinks.has_value();
        const double sink_logit = sink ? (*m_model.sinks)(static_cast<arma::uword>(h - 1)) : 0.0;
        const double row_max = sink ? std::max(s.max(), sink_logit) : s.max();
        line("s = " + row_name(*source, m_row) + " = " + m_num.vector(s));
        if (sink) {
            line("sink = " + m_num(sink_logit) + "    (head " + std::to_string(h) +
                 "'s sink logit: it joins the maximum and the sum, and gets no weight of its own)");
        }
        line("max = " + m_num(row_max) + "    (subtracted first, so that exp() cannot overflow; the weights do not change)");
        arma::rowvec e(s.n_elem);
        std::string exponents;
        for (arma::uword k = 0; k < s.n_elem; ++k) {
            e(k) = std::exp(s(k) - row_max);
            exponents += (k == 0 ? "" : ", ") + std::string("exp(") + m_num(s(k) - row_max) + ")";
        }
        line("exp(s − max) = [" + exponents + "] = " + m_num.vector(e));
        const double sink_share = sink ? std::exp(sink_logit - row_max) : 0.0;
        if (sink) {
            line("exp(sink − max) = exp(" + m_num(sink_logit - row_max) + ") = " + m_num(sink_share));
        }
        const double sum = arma::accu(e) + sink_share;
        std::string terms;
        for (arma::uword k = 0; k < e.n_elem; ++k) {
            terms += (k == 0 ? "" : " + ") + m_num(e(k));
        }
        if (sink) {
            terms += " + " + m_num(sink_share) + " (the sink)";
        }
        line("sum = " + terms + " = " + m_num(sum));
        if (m_whole_row) {
            const arma::rowvec computed = e / sum;
            const arma::rowvec kept = m_step->values.row(m_row);
            std::string text = name() + " = exp(s − max) / sum = " + m_num.vector(e) + " / " + m_num(sum) + " = " +
                               m_num.vector(computed);
            if (rounding(StepId::weights) >= 0) {
                text += ", rounded to " + decimals_text(rounding(StepId::weights)) + ": " + m_num.vector(kept);
            }
            line(text);
            if (sink) {
                line("the weights of this row sum to " + m_num(arma::accu(e) / sum) + "; the other " +
                     m_num(sink_share / sum) + " went to the sink, which passes on no value");
            } else {
                line("the weights of a row sum to 1");
            }
        } else {
            line(name() + " = exp(s" + std::to_string(m_col + 1) + " − max) / sum = " + m_num(e(m_col)) + " / " +
                 m_num(sum) + " = " + result_of(e(m_col) / sum, m_step->values(m_row, m_col)));
        }
    }

    void head_output() { head_output_of(m_step->head); }

    void head_output_of(int h) {
        const Step& weights = step_of(StepId::weights, h);
        const Step& values = step_of(StepId::values, m_model.kv_head_of(h));
        const Step& target = step_of(StepId::head_output, h);
        const arma::rowvec a = weights.values.row(m_row);
        if (!m_whole_row) {
            const arma::rowvec v = values.values.col(m_col).t();
            line("a = " + row_name(weights, m_row) + " = " + m_num.vector(a));
            line("v = column " + std::to_string(m_col + 1) + " of the values = " + m_num.vector(v));
            line(cell_name(StepId::head_output, m_row, static_cast<long>(m_col), h) + " = a·v = " + m_num.dot_terms(a, v) +
                 " = " + m_num(target.values(m_row, m_col)));
            return;
        }
        // the weighted value vectors, one per key, then their sum
        line("each value row times query " + std::to_string(m_row + 1) + "'s weight for it, then the sum:");
        std::vector<std::string> left;
        std::vector<std::string> right;
        for (arma::uword j = 0; j < a.n_elem; ++j) {
            const arma::rowvec v = values.values.row(j);
            left.push_back(m_num(a(j)) + " · " + m_num.vector(v));
            right.push_back(m_num.vector(arma::rowvec(a(j) * v)) + "    (" + values.row_labels[j] + ")");
        }
        std::size_t width = 0;
        for (const auto& text : left) {
            width = std::max(width, display_width(text));
        }
        for (std::size_t j = 0; j < left.size(); ++j) {
            line((j == 0 ? "  " : "+ ") + left[j] + std::string(width - display_width(left[j]), ' ') + " = " +
                 right[j]);
        }
        line("= " + m_num.vector(arma::rowvec(target.values.row(m_row))));
    }

    void concat() {
        const auto d_v = static_cast<arma::uword>(m_trace.dims.d_v);
        if (m_whole_row) {
            line("the heads' output rows side by side, head 1 first:");
            std::vector<double> joined;
            for (int h = 1; h <= static_cast<int>(m_trace.dims.heads); ++h) {
                const arma::rowvec z = step_of(StepId::head_output, h).values.row(m_row);
                line("  " + cell_name(StepId::head_output, m_row, -1, h) + " = " + m_num.vector(z));
                joined.insert(joined.end(), z.begin(), z.end());
            }
            line("= " + m_num.vector(joined));
            return;
        }
        const int h = static_cast<int>(m_col / d_v) + 1;
        const arma::uword column = m_col % d_v;
        line("columns " + std::to_string((h - 1) * d_v + 1) + " to " + std::to_string(h * d_v) + " hold head " +
             std::to_string(h) + "'s output (d_v = " + std::to_string(d_v) + ")");
        line(name() + " = " + cell_name(StepId::head_output, m_row, static_cast<long>(column), h) + " = " +
             m_num(step_of(StepId::head_output, h).values(m_row, column)));
    }

    void output() {
        const bool several = m_trace.dims.heads > 1;
        if (m_model.W_O) {
            const Step& source = several ? step_of(StepId::concat, 0) : step_of(StepId::head_output, 1);
            project_row(source, several ? "the concatenated heads" : "the head output Z", *m_model.W_O, "W_O",
                        m_model.b_O, "b_O");
            return;
        }
        if (several) {
            line("there is no W_O, so the output is the concatenation of the heads");
            concat();
            return;
        }
        line("there is one head and no W_O, so the output is the head's weighted sum of the values");
        head_output_of(1);
    }

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

std::string symbols(const std::string& text, const RenderOptions& options) {
    return options.ascii ? to_ascii(text) : text;
}

}  // namespace

Explanation explain_cell(const Model& model, const Trace& trace, const CellRef& cell, const RenderOptions& options,
                         arma::uword block_size) {
    Explanation result = Explainer(model, trace, cell, options).run();
    if (is_gradient(cell.step)) {
        explaining::explain_gradient(model, trace, result, options);
    }
    if (block_size > 0 && has_online_form(cell.step)) {
        explaining::add_online_softmax(model, trace, result, options, block_size);
    }
    for (auto& line : result.lines) {
        line = symbols(line, options);
    }
    result.latex = cell_step(trace, cell).latex;
    return result;
}

}  // namespace qkv
