// A step's working as equations, the way a textbook writes it: the step's
// formula, the same with its operands written out as matrices, and the
// result, e.g. for the illustrated example's queries
//   Q = X W_Q = [1 0 1 0; 0 2 0 2; 1 1 1 1][1 0 1; 1 0 0; 0 0 1; 0 1 1] = [1 0 2; 2 2 2; 2 1 3]
// The operands are the trace's values of the steps the step reads (the step
// table's `reads`) and the example's weights; nothing is recomputed. Rows are
// tokens throughout, and every weight is shown in the x·W layout the model
// stores, which is W_Q itself for `layout: x_w` and the file's W_Qᵀ for
// `layout: pytorch`, so it fits the formula either way.
#include "render/latex_working.hpp"

#include "attention/step_handlers.hpp"
#include "attention/steps.hpp"
#include "model/model.hpp"
#include "render/latex.hpp"
#include "render/table.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

namespace qkv {

namespace {

// One piece of a line of working and how it joins the piece before it:
// "" for a product (side by side), "+" for a sum.
struct Term {
    std::string join;
    std::string tex;
};

// One line of the working: "= [X][W_Q]" or "\approx [Q]".
struct Line {
    std::string relation;
    std::vector<Term> terms;
};

// A number as the tables write it (format_number), in math: −∞ as -\infty.
std::string tex_math_number(const std::string& text) {
    if (text == "-inf") {
        return "-\\infty";
    }
    if (text == "inf") {
        return "\\infty";
    }
    if (text == "nan") {
        return "\\mathrm{NaN}";
    }
    return text;
}

// True when the written number reads back as the value itself, so that "="
// is true of it; an infinity is written exactly.
bool written_exactly(double value, const std::string& text) {
    if (std::isinf(value)) {
        return true;
    }
    return std::strtod(text.c_str(), nullptr) == value;
}

// The working of one step, built line by line: the formula's lines, then the
// operands, then the result. It keeps track of whether every number so far was
// written exactly (otherwise the next relation is \approx) and whether every
// matrix is small enough to write out.
class Working {
public:
    // `formula` is LaTeX math such as "S' = \frac{S}{\sqrt{d_k}} = \frac{S}{\sqrt{3}}": its first part
    // is the left-hand side, each further part (after " = ") a line of its own.
    Working(const RenderOptions& options, std::string_view formula) : m_precision(options.precision) {
        std::vector<std::string> parts = split_equals(formula);
        m_head = parts.front();
        for (std::size_t k = 1; k < parts.size(); ++k) {
            m_lines.push_back({"=", {{"", parts[k]}}});
        }
    }

    // A matrix as a bmatrix, each number as its table writes it.
    std::string matrix(const arma::mat& M) { return "\\begin{bmatrix}" + cells(M) + "\\end{bmatrix}"; }

    // A matrix cut by vertical rules into blocks of columns of the given
    // widths: the heads of a concatenation, or the scores and a sink's column.
    std::string blocks(const arma::mat& M, const std::vector<arma::uword>& widths) {
        std::string columns;
        for (const arma::uword width : widths) {
            columns += (columns.empty() ? "" : "|") + std::string(width, 'c');
        }
        // no padding outside the first and last columns, as in a bmatrix
        return "\\left[\\begin{array}{@{}" + columns + "@{}}" + cells(M) + "\\end{array}\\right]";
    }

    // A scalar as a table would write it.
    std::string number(double value) {
        const std::string text = format_number(value, m_precision, is_whole_number(value), true);
        m_exact = m_exact && written_exactly(value, text);
        return tex_math_number(text);
    }

    // The line with the operands written out; "=" when every number in it was written exactly.
    void operands(std::vector<Term> terms) { m_lines.push_back({relation(false), std::move(terms)}); }

    // The line with the result, `tex` as matrix() or blocks() wrote it. `rounded`: the step's values were
    // rounded (round:), so they are not exactly what the operands give.
    void result(std::string tex, bool rounded) { m_lines.push_back({relation(rounded), {{"", std::move(tex)}}}); }

    // The layouts, widest first; none when a matrix is too large.
    std::vector<std::string> layouts() const {
        if (!m_fits) {
            return {};
        }
        std::string one_line = m_head;
        for (const Line& line : m_lines) {
            one_line += " " + line.relation + " " + joined(line.terms);
        }
        std::string aligned = "\\begin{aligned}" + m_head;
        std::string narrow = aligned;
        bool several_terms = false;
        for (std::size_t k = 0; k < m_lines.size(); ++k) {
            const Line& line = m_lines[k];
            const std::string start = std::string(k == 0 ? " &" : " \\\\ &") + line.relation + " ";
            aligned += start + joined(line.terms);
            narrow += start + line.terms.front().tex;
            // the line broken before each further operand, with its operator repeated: "\cdot" for a product
            for (std::size_t t = 1; t < line.terms.size(); ++t) {
                const Term& term = line.terms[t];
                narrow += " \\\\ &\\quad " + (term.join.empty() ? std::string("\\cdot") : term.join) + " " + term.tex;
                several_terms = true;
            }
        }
        aligned += "\\end{aligned}";
        narrow += "\\end{aligned}";
        std::vector<std::string> result = {one_line, aligned};
        if (several_terms) {
            result.push_back(narrow);
        }
        return result;
    }

private:
    // "a = b = c" at the top level (outside braces) → {"a", "b", "c"}
    static std::vector<std::string> split_equals(std::string_view formula) {
        std::vector<std::string> parts(1);
        int depth = 0;
        for (std::size_t i = 0; i < formula.size(); ++i) {
            const char c = formula[i];
            depth += c == '{' ? 1 : c == '}' ? -1 : 0;
            if (depth == 0 && formula.substr(i, 3) == " = ") {
                parts.emplace_back();
                i += 2;
                continue;
            }
            parts.back() += c;
        }
        return parts;
    }

    static std::string joined(const std::vector<Term>& terms) {
        std::string text;
        for (const Term& term : terms) {
            text += term.join.empty() ? term.tex : " " + term.join + " " + term.tex;
        }
        return text;
    }

    std::string relation(bool rounded) const { return m_exact && !rounded ? "=" : "\\approx"; }

    // "1&0\\0&2": the rows of a matrix body; notes a matrix too large to write out.
    std::string cells(const arma::mat& M) {
        if (M.n_rows > k_working_limit || M.n_cols > k_working_limit) {
            m_fits = false;
            return "";
        }
        const bool whole = all_whole_numbers(M);
        std::string body;
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            body += i == 0 ? "" : "\\\\";
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                const std::string text = format_number(M(i, j), m_precision, whole, true);
                m_exact = m_exact && written_exactly(M(i, j), text);
                body += (j == 0 ? "" : "&") + tex_math_number(text);
            }
        }
        return body;
    }

    int m_precision;
    std::string m_head;
    std::vector<Line> m_lines;
    bool m_exact = true;  // every number written so far reads back as its value
    bool m_fits = true;   // every matrix within k_working_limit
};

// The values of the steps `step` reads, in the order of its arithmetic
// (the step table's `reads`); empty when the trace lacks one of them.
std::vector<const arma::mat*> read_values(const Model& model, const Trace& trace, const Step& step) {
    std::vector<const arma::mat*> values;
    for (const StepKey& key : step_row(step.id).reads(model, step.head)) {
        const Step* read = trace.find(key.id, key.head);
        if (read == nullptr) {
            return {};
        }
        values.push_back(&read->values);
    }
    return values;
}

// The result line, \approx when round: changed the step's values.
void add_result(Working& working, const Model& model, const Step& step) {
    const bool rounded = step_rounding(model, step.id).has_value() && !all_whole_numbers(step.values);
    working.result(working.matrix(step.values), rounded);
}

// Q = X W_Q + b_Q = [X][W_Q] + [b_Q] = [Q], likewise K, V and the output projection
std::optional<Working> projection(const Model& model, const Step& step, const RenderOptions& options,
                                  const arma::mat& source, const arma::mat& W, const std::optional<arma::rowvec>& b) {
    Working working(options, step.latex);
    std::vector<Term> terms = {{"", working.matrix(source)}, {"", working.matrix(W)}};
    if (b) {
        terms.push_back({"+", working.matrix(*b)});
    }
    working.operands(std::move(terms));
    add_result(working, model, step);
    return working;
}

// a sum of two steps' values: X + P = [X] + [P] = [X + P], S' + B likewise
std::optional<Working> sum(const Model& model, const Step& step, const RenderOptions& options, std::string_view formula,
                           const arma::mat& a, const arma::mat& b) {
    Working working(options, formula);
    working.operands({{"", working.matrix(a)}, {"+", working.matrix(b)}});
    add_result(working, model, step);
    return working;
}

// What a step's working reads: the example, the step, and the values of the
// steps it reads (in[0], in[1], … in the order of the step table's `reads`).
struct WorkingOf {
    const Model& model;
    const Step& step;
    const RenderOptions& options;
    const std::vector<const arma::mat*>& in;

    // this head's number of a per-head setting (ALiBi's slope, the sink)
    double per_head(const std::optional<arma::rowvec>& values) const {
        return (*values)(static_cast<arma::uword>(step.head - 1));
    }
};

// given, or with no working worth writing out: RoPE's rotations and the backward pass
std::optional<Working> no_working(const WorkingOf&) { return std::nullopt; }

// step: encoded, X + P = [X] + [P]; ALiBi's biased scores, S' + B, likewise
std::optional<Working> sum_working(const WorkingOf& w) {
    return sum(w.model, w.step, w.options, w.step.latex, *w.in[0], *w.in[1]);
}

// the projections, with the head's own weights (a key/value head's for keys and values)
std::optional<Working> queries_working(const WorkingOf& w) {
    const HeadWeights& head = w.model.heads.at(static_cast<std::size_t>(w.step.head - 1));
    return projection(w.model, w.step, w.options, *w.in[0], head.W_Q, head.b_Q);
}

std::optional<Working> keys_working(const WorkingOf& w) {
    if (w.model.mla) {
        return std::nullopt;  // [C·W_UK  K_R]: a product beside a copy, which its table and notes show
    }
    const HeadWeights& head = w.model.kv_weights(w.step.head);
    return projection(w.model, w.step, w.options, *w.in[0], head.W_K, head.b_K);
}

std::optional<Working> values_working(const WorkingOf& w) {
    const HeadWeights& head = w.model.kv_weights(w.step.head);
    return projection(w.model, w.step, w.options, *w.in[0], head.W_V, head.b_V);
}

// scores (n × m) = Q (n × d_k) · Kᵀ (d_k × m): the keys written out as columns
std::optional<Working> scores_working(const WorkingOf& w) {
    Working working(w.options, w.step.latex);
    working.operands({{"", working.matrix(*w.in[0])}, {"", working.matrix(w.in[1]->t())}});
    add_result(working, w.model, w.step);
    return working;
}

// S' = S / divisor = (1/divisor)·[S], with the divisor as a number; scale: none has nothing to work
std::optional<Working> scaled_scores_working(const WorkingOf& w) {
    if (w.model.scale_kind == ScaleKind::none) {
        return std::nullopt;
    }
    Working working(w.options, w.step.latex);
    working.operands({{"", "\\frac{1}{" + working.number(w.model.scale()) + "}" + working.matrix(*w.in[0])}});
    add_result(working, w.model, w.step);
    return working;
}

// ALiBi: B = −m·|i − j| = −m·[distances]
std::optional<Working> position_bias_working(const WorkingOf& w) {
    const Model& model = w.model;
    arma::mat distance(model.n(), model.m());
    for (arma::uword i = 0; i < model.n(); ++i) {
        for (arma::uword j = 0; j < model.m(); ++j) {
            distance(i, j) = i > j ? static_cast<double>(i - j) : static_cast<double>(j - i);
        }
    }
    const double slope = w.per_head(model.alibi);
    Working working(w.options, "B = -m \\lvert i - j \\rvert");
    const std::string m = working.number(slope);
    working.operands({{"", "-" + (slope < 0 ? "(" + m + ")" : m) + working.matrix(distance)}});
    add_result(working, model, w.step);
    return working;
}

// The scores a step reads as formulas write them: S', or an elementwise step's own symbol (S_{c}).
std::string scores_symbol(StepId id) {
    return is_elementwise(id) ? std::string(step_row(id).elementwise->symbol_latex) : std::string("S'");
}

// An elementwise step: its formula with the matrix it reads in place of its input, c \tanh([…]/c)
std::optional<Working> elementwise_working(const WorkingOf& w) {
    Working working(w.options, w.step.latex);
    working.operands({{"", elementwise_formula(step_row(w.step.id).elementwise->formula_latex,
                                               working.matrix(*w.in[0]))}});
    add_result(working, w.model, w.step);
    return working;
}

// masking as a sum: S' + M, M being 0 where a query may attend and −∞ where it is blocked
std::optional<Working> masked_scores_working(const WorkingOf& w) {
    arma::mat M = w.model.allowed();
    M.transform([](double allowed) { return allowed == 0.0 ? -arma::datum::inf : 0.0; });
    const StepId read = step_row(w.step.id).reads(w.model, w.step.head).front().id;
    if (read == StepId::biased_scores) {
        const StepId scores = step_row(read).reads(w.model, w.step.head).front().id;
        return sum(w.model, w.step, w.options, "(" + scores_symbol(scores) + " + B) + M", *w.in[0], M);
    }
    return sum(w.model, w.step, w.options, scores_symbol(read) + " + M", *w.in[0], M);
}

// A = softmax of each row of S'; with a sink, softmax([S' s]) without the sink's column
std::optional<Working> weights_working(const WorkingOf& w) {
    Working working(w.options, w.step.latex);
    const arma::mat& S = *w.in[0];
    if (w.model.sinks) {
        const arma::mat sink = arma::mat(S.n_rows, 1).fill(w.per_head(w.model.sinks));
        const arma::mat scores = arma::join_rows(S, sink);
        working.operands({{"", "\\operatorname{softmax}\\left(" + working.blocks(scores, {S.n_cols, 1}) +
                                   "\\right)_{:, 1..m}"}});
    } else {
        working.operands({{"", "\\operatorname{softmax}\\left(" + working.matrix(S) + "\\right)"}});
    }
    add_result(working, w.model, w.step);
    return working;
}

// Z (n × d_v) = A (n × m) · V (m × d_v), V of the key/value head this query head reads
std::optional<Working> head_output_working(const WorkingOf& w) {
    Working working(w.options, w.step.latex);
    working.operands({{"", working.matrix(*w.in[0])}, {"", working.matrix(*w.in[1])}});
    add_result(working, w.model, w.step);
    return working;
}

// [Z_1 Z_2] = the heads' outputs side by side, a rule between heads
std::optional<Working> concat_working(const WorkingOf& w) {
    Working working(w.options, w.step.latex);
    const std::vector<arma::uword> widths(w.in.size(), w.model.d_v());
    const bool rounded = step_rounding(w.model, w.step.id).has_value() && !all_whole_numbers(w.step.values);
    working.result(working.blocks(w.step.values, widths), rounded);
    return working;
}

// O = concat W_O + b_O; without W_O the output is the concatenation itself, nothing to work
std::optional<Working> output_working(const WorkingOf& w) {
    if (!w.model.W_O) {
        return std::nullopt;
    }
    return projection(w.model, w.step, w.options, *w.in[0], *w.model.W_O, w.model.b_O);
}

std::optional<Working> working_of(const Model& model, const Trace& trace, const Step& step,
                                  const RenderOptions& options) {
    const std::vector<const arma::mat*> in = read_values(model, trace, step);
    if (in.size() != step_row(step.id).reads(model, step.head).size()) {
        return std::nullopt;
    }
    using Writer = std::optional<Working> (*)(const WorkingOf&);
    static constexpr auto k_working = step_handlers<Writer>(
        {
            {StepId::encoded, &sum_working},
            {StepId::queries, &queries_working},
            {StepId::keys, &keys_working},
            {StepId::values, &values_working},
            {StepId::scores, &scores_working},
            {StepId::scaled_scores, &scaled_scores_working},
            {StepId::position_bias, &position_bias_working},
            {StepId::biased_scores, &sum_working},
            {StepId::masked_scores, &masked_scores_working},
            {StepId::weights, &weights_working},
            {StepId::head_output, &head_output_working},
            {StepId::concat, &concat_working},
            {StepId::output, &output_working},
        },
        {.given = &no_working, .forward = &no_working, .gradient = &no_working, .elementwise = &elementwise_working});
    return k_working[step_index(step.id)](WorkingOf{model, step, options, in});
}

}  // namespace

std::vector<std::string> latex_working_layouts(const Model& model, const Trace& trace, const Step& step,
                                               const RenderOptions& options) {
    const std::optional<Working> working = working_of(model, trace, step, options);
    return working ? working->layouts() : std::vector<std::string>{};
}

std::string latex_working(const Model& model, const Trace& trace, const Step& step, const RenderOptions& options) {
    const std::vector<std::string> layouts = latex_working_layouts(model, trace, step, options);
    return layouts.empty() ? "" : latex_display(layouts, true);
}

}  // namespace qkv
