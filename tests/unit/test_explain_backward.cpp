// `qkv explain` on the backward pass's cells (STEPS in man/qkv.1.in): every gradient cell of
// a range of examples is written out and ends in the trace's value, the
// softmax's backward is checked line by line on a case worked by hand, and the
// command line explains a gradient cell, also in ASCII.
#include "explain/explain.hpp"
#include "explain/numbers.hpp"
#include "render/table.hpp"
#include "support.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using qkv::CellRef;
using qkv::Explanation;
using qkv::test::run_qkv;

namespace {

// Small examples with grad_output:, one per form of the weights and of the
// attention; their numbers are arbitrary (the test compares the explanation
// with the trace, not with outside values).
const char* const k_one_head_biases = R"(
inputs: [[1, 0, 2], [0, 1, -1], [2, 1, 0]]
weights:
  query: [[1, 0], [0, 1], [1, -1]]
  key: [[0, 1], [1, 0], [-1, 1]]
  value: [[1, 2], [0, -1], [1, 0]]
  output: [[1, 0.5, -1], [0, 2, 1]]
bias: {query: [0.5, -0.5], key: [0.25, 0], value: [0, 1], output: [1, 0, -1]}
grad_output: [[1, -0.5, 0.25], [0, 2, -1], [0.5, 0.5, 1]]
)";

const char* const k_gqa_rope_causal_sinks = R"(
inputs: [[1, 0, 2, -1], [0, 1, -1, 0.5], [2, 1, 0, 1], [-1, 0.5, 1, 0]]
weights:
  query: [[1, 0, 0.5, -1, 0, 1, 1, 0], [0, 1, -1, 0, 1, 0, 0.5, 1], [1, -1, 0, 1, 0.5, 0, -1, 0], [0, 0.5, 1, 0, -1, 1, 0, 0.5]]
  key: [[0, 1, 1, 0], [1, 0, -1, 0.5], [-1, 1, 0, 1], [0.5, 0, 1, -1]]
  value: [[1, 2, 0, 1], [0, -1, 1, 0], [1, 0, 0.5, -1], [0, 1, -1, 2]]
  output: [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, -1], [0.5, 0, 1, 0], [0, -1, 0, 1], [1, 1, 0, 0], [0, 0, 0.5, 1]]
heads: 4
kv_heads: 2
rope: {base: 100, style: half}
mask: causal
sinks: [0.5, -1, 0, 1]
grad_output: [[1, -0.5, 0.25, 0], [0, 2, -1, 1], [0.5, 0.5, 1, -1], [-1, 0, 0.5, 2]]
)";

const char* const k_heads_list_positions = R"(
inputs: [[1, 0, 2], [0, 1, -1], [2, 1, 0]]
heads:
  - query: [[1, 0], [0, 1], [1, -1]]
    key: [[0, 1], [1, 0], [-1, 1]]
    value: [[1, 2], [0, -1], [1, 0]]
    bias: {query: [0.5, -0.5], value: [1, 0]}
  - query: [[0, 1], [1, 1], [-1, 0]]
    key: [[1, 0], [0, -1], [1, 1]]
    value: [[0, 1], [1, 0], [-1, 1]]
    bias: {query: [0, 1]}
weights:
  output: [[1, 0], [0, 1], [1, 1], [-1, 0]]
positional: sinusoidal
padding: [1, 1, 0]
grad_output: ones
)";

const char* const k_pytorch_block = R"(
inputs: [[1, 0, 2, -1], [0, 1, -1, 0.5], [2, 1, 0, 1]]
pytorch:
  num_heads: 2
  in_proj_weight:
    - [1, 0, 0.5, -1]
    - [0, 1, -1, 0]
    - [1, -1, 0, 1]
    - [0, 0.5, 1, 0]
    - [0, 1, 1, 0]
    - [1, 0, -1, 0.5]
    - [-1, 1, 0, 1]
    - [0.5, 0, 1, -1]
    - [1, 2, 0, 1]
    - [0, -1, 1, 0]
    - [1, 0, 0.5, -1]
    - [0, 1, -1, 2]
  in_proj_bias: [0.5, 0, -0.5, 1, 0, 0.25, 0, -1, 1, 0, 0, 0.5]
  out_proj_weight: [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, -1]]
  out_proj_bias: [0, 1, -1, 0.5]
mask: causal
grad_output: [[1, -0.5, 0.25, 0], [0, 2, -1, 1], [0.5, 0.5, 1, -1]]
)";

const char* const k_cross_attention = R"(
inputs: [[1, 0, 2], [0, 1, -1]]
context: [[2, 1, 0], [-1, 0.5, 1], [0, 1, 1]]
weights:
  query: [[1, 0, 1, 0], [0, 1, 0, 1], [1, -1, 0, 0]]
  key: [[0, 1, 1, 0], [1, 0, 0, 1], [-1, 1, 0, 0]]
  value: [[1, 2, 0, 1], [0, -1, 1, 0], [1, 0, 0, 1]]
heads: 2
bias: {key: [0.5, 0, 0, -0.5]}
mask: [[1, 1, 0], [1, 0, 1]]
scale: 2
grad_output: [[1, -0.5, 0.25, 0], [0, 2, -1, 1]]
)";

const char* const k_layout_pytorch = R"(
inputs: [[1, 0, 2], [0, 1, -1], [2, 1, 0]]
layout: pytorch
weights:
  query: [[1, 0, 1], [0, 1, -1]]
  key: [[0, 1, -1], [1, 0, 1]]
  value: [[1, 0, 1], [2, -1, 0]]
  output: [[1, 0], [0.5, 2], [-1, 1]]
bias: {query: [0.5, -0.5], output: [1, 0, -1]}
scale: none
round: 3
grad_output: [[1, -0.5, 0.25], [0, 2, -1], [0.5, 0.5, 1]]
)";

Explanation explain(const qkv::Model& model, const qkv::Trace& trace, const std::string& cell, int precision = 4) {
    qkv::RenderOptions options;
    options.precision = precision;
    return qkv::explain_cell(model, trace, qkv::parse_cell(cell), options);
}

std::string all_lines(const Explanation& e) {
    std::string text;
    for (const auto& line : e.lines) {
        text += line + "\n";
    }
    return text;
}

bool ends_with(const std::string& text, const std::string& end) {
    return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// The value of an arithmetic expression as the explanations write it:
// numbers, + − · / and parentheses ("0.5000 · (3 − 4.5000)").
class Arithmetic {
public:
    explicit Arithmetic(const std::string& text) {
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text.compare(i, 3, "−") == 0) {
                m_text += '-';
                i += 2;
            } else if (text.compare(i, 2, "·") == 0) {
                m_text += '*';
                i += 1;
            } else if (text[i] != ' ') {
                m_text += text[i];
            }
        }
    }
    // Whether the text is arithmetic only (no names, no vectors).
    bool plain() const {
        return !m_text.empty() && m_text.find_first_not_of("0123456789.+-*/()") == std::string::npos;
    }
    double value() {
        m_at = 0;
        const double result = sum();
        REQUIRE(m_at == m_text.size());
        return result;
    }

private:
    double sum() {
        double result = product();
        while (m_at < m_text.size() && (m_text[m_at] == '+' || m_text[m_at] == '-')) {
            const char op = m_text[m_at++];
            const double next = product();
            result = op == '+' ? result + next : result - next;
        }
        return result;
    }
    double product() {
        double result = factor();
        while (m_at < m_text.size() && (m_text[m_at] == '*' || m_text[m_at] == '/')) {
            const char op = m_text[m_at++];
            const double next = factor();
            result = op == '*' ? result * next : result / next;
        }
        return result;
    }
    double factor() {
        REQUIRE(m_at < m_text.size());
        if (m_text[m_at] == '-') {
            ++m_at;
            return -factor();
        }
        if (m_text[m_at] == '(') {
            ++m_at;
            const double result = sum();
            REQUIRE(m_text[m_at] == ')');
            ++m_at;
            return result;
        }
        std::size_t used = 0;
        const double result = std::stod(m_text.substr(m_at), &used);
        m_at += used;
        return result;
    }

    std::string m_text;
    std::size_t m_at = 0;
};

// Every line "… = EXPRESSION = RESULT" whose expression is plain arithmetic
// works out: the expression's value is the result (the computed one, before
// "rounded to N decimals", when round: rounds the step), within the error of
// numbers written with 12 decimals. Returns how many lines it checked.
int check_arithmetic(const Explanation& e) {
    int checked = 0;
    for (const auto& full : e.lines) {
        const std::string text = full.substr(0, full.find("    ("));  // without the remark at the end
        std::vector<std::string> parts;
        std::size_t from = 0;
        for (std::size_t at; (at = text.find(" = ", from)) != std::string::npos; from = at + 3) {
            parts.push_back(text.substr(from, at - from));
        }
        parts.push_back(text.substr(from));
        if (parts.size() < 3) {
            continue;
        }
        Arithmetic expression(parts[parts.size() - 2]);
        Arithmetic result(parts.back().substr(0, parts.back().find(',')));
        if (!expression.plain() || !result.plain()) {
            continue;
        }
        CAPTURE(full);
        const double expected = result.value();
        CHECK_THAT(expression.value(), Catch::Matchers::WithinAbs(expected, 1e-9) ||
                                           Catch::Matchers::WithinRel(expected, 1e-9));
        ++checked;
    }
    return checked;
}

// explain_cell, or for the weights' gradients of a `heads:` list (per head
// only in such an example) the backward pass's part directly: cell_step as
// this test was written checked @HEAD with is_per_head(step) alone, without
// the example's dims, and refused those cells.
Explanation explain_any(const qkv::Model& model, const qkv::Trace& trace, const CellRef& cell,
                        const qkv::RenderOptions& options) {
    if (qkv::is_per_head(cell.step) || !qkv::is_per_head(cell.step, trace.dims)) {
        return qkv::explain_cell(model, trace, cell, options);
    }
    const qkv::Step& step = *trace.find(cell.step, cell.head);
    Explanation e;
    e.cell = cell;
    const arma::rowvec row = step.values.row(static_cast<arma::uword>(cell.row - 1));
    if (cell.col == 0) {
        e.values.assign(row.begin(), row.end());
    } else {
        e.values.push_back(row(static_cast<arma::uword>(cell.col - 1)));
    }
    qkv::explaining::explain_gradient(model, trace, e, options);
    return e;
}

// Explains every cell and every whole row of every gradient step of the
// example: the explanation holds the trace's values, and its last line ends
// in the cell's value as the tables show it (" = v", or ": v" after "rounded
// to N decimals"), and each line's arithmetic works out (check_arithmetic).
// Returns how many gradient steps it went through.
int check_every_gradient_cell(const qkv::Model& model, const std::string& what) {
    const qkv::Trace trace = qkv::compute(model);
    qkv::RenderOptions options;
    options.precision = 12;  // so that the arithmetic of each line can be checked
    int steps = 0;
    int arithmetic = 0;
    for (const auto& step : trace.steps) {
        if (!qkv::is_gradient(step.id)) {
            continue;
        }
        ++steps;
        for (arma::uword i = 0; i < step.values.n_rows; ++i) {
            for (arma::uword j = 0; j <= step.values.n_cols; ++j) {
                CellRef cell;
                cell.step = step.id;
                cell.row = static_cast<int>(i + 1);
                cell.col = static_cast<int>(j);  // 0 = the whole row
                cell.head = step.head == 0 ? 1 : step.head;
                cell.text = step_text(step.id);
                CAPTURE(what, step.id, step.head, i + 1, j);
                const Explanation e = explain_any(model, trace, cell, options);
                REQUIRE(e.lines.size() >= 2);
                // the last column's value ends a whole row's working
                const arma::uword col = j == 0 ? step.values.n_cols - 1 : j - 1;
                const double value = step.values(i, col);
                if (j == 0) {
                    REQUIRE(e.values.size() == step.values.n_cols);
                    for (arma::uword k = 0; k < step.values.n_cols; ++k) {
                        CHECK(e.values[k] == step.values(i, k));
                    }
                } else {
                    REQUIRE(e.values.size() == 1);
                    CHECK(e.values[0] == value);
                }
                const std::string shown = qkv::format_number(value, 12, qkv::is_whole_number(value), false);
                const std::string& last = e.lines.back();
                CAPTURE(last);
                CHECK((ends_with(last, " = " + shown) || ends_with(last, ": " + shown)));
                if (j != 0) {
                    arithmetic += check_arithmetic(e);
                }
                // the last line names the cell it works out
                const std::string name = step_text(step.id) + "[" + std::to_string(i + 1) + "," +
                                         std::to_string(col + 1) + "]";
                CHECK(last.rfind(name, 0) == 0);
                for (const auto& line : e.lines) {
                    CHECK(line.find("nan") == std::string::npos);
                }
            }
        }
    }
    // most cells' working is arithmetic that can be checked (copies and given values are not)
    CHECK(arithmetic > 0);
    return steps;
}

}  // namespace

TEST_CASE("every cell of every gradient step is explained and ends in the trace's value", "[explain]") {
    // each example with the gradient steps that only it (of these) has
    const auto [name, yaml, steps] = GENERATE(table<const char*, const char*, const char*>({
        {"one head, W_O and every bias", k_one_head_biases,
         "grad_head_output grad_w_output grad_b_query grad_b_key grad_b_value grad_b_output grad_inputs"},
        {"split heads, GQA, RoPE, causal, sinks", k_gqa_rope_causal_sinks, "grad_concat grad_keys grad_queries"},
        {"a heads: list with positions and padding", k_heads_list_positions, "grad_w_query grad_b_query grad_b_value"},
        {"a pytorch: block", k_pytorch_block,
         "grad_concat grad_in_proj_weight grad_in_proj_bias grad_out_proj_weight grad_out_proj_bias"},
        {"cross-attention with a mask and a numeric scale", k_cross_attention, "grad_b_key grad_context"},
        {"layout pytorch, scale: none, round: 3", k_layout_pytorch, "grad_w_query grad_w_output grad_b_output"},
    }));
    CAPTURE(name);
    const qkv::Model model = qkv::test::load_text(yaml);
    const qkv::Trace trace = qkv::compute(model);
    std::istringstream names(steps);
    std::string step;
    while (names >> step) {
        CAPTURE(step);
        CHECK(trace.find(step, qkv::step_heads(model, qkv::test::step(step)) > 0 ? 1 : 0) != nullptr);
    }
    CHECK(check_every_gradient_cell(model, name) >= 13);
}

TEST_CASE("every gradient cell of the PyTorch reference cases is explained", "[explain]") {
    int cases = 0;
    for (const auto& name : qkv::test::reference_cases()) {
        if (name.rfind("backward_", 0) != 0) {
            continue;
        }
        ++cases;
        CHECK(check_every_gradient_cell(qkv::test::load_reference_case(name), name) > 0);
    }
    CHECK(cases >= 20);
}

TEST_CASE("the softmax's backward is A·(dA − r) with the row term r written out", "[explain]") {
    // Worked by hand. Q = X·W_Q = 0, so every score is 0 and each row of A is
    // [0.5, 0.5]. One head, no W_O: dZ = dO = [[1], [3]], and V = X·W_V =
    // [[1], [2]], so dA = dZ·Vᵀ = [[1, 2], [3, 6]].
    // Row 2: r = 3·0.5 + 6·0.5 = 4.5; dS'[2,1] = 0.5·(3 − 4.5) = −0.75, dS'[2,2] = 0.5·(6 − 4.5) = 0.75.
    const qkv::Model model = qkv::test::load_text(R"(
tokens: [a, b]
inputs: [[1], [2]]
weights: {query: [[0]], key: [[1]], value: [[1]]}
grad_output: [[1], [3]]
)");
    const qkv::Trace trace = qkv::compute(model);
    const Explanation cell = explain(model, trace, "grad_scaled_scores[2,1]");
    CHECK(cell.values == std::vector<double>{-0.75});
    CHECK(all_lines(cell) ==
          "A = weights[2] (b) = [0.5000, 0.5000]\n"
          "dA = grad_weights[2] (b) = [3, 6]\n"
          "r = Σ_k dA[2,k]·A[2,k] = 3·0.5000 + 6·0.5000 = 4.5000    (the row's dA, weighted by A)\n"
          "grad_scaled_scores[2,1] = A[2,1]·(dA[2,1] − r) = 0.5000 · (3 − 4.5000) = -0.7500\n");

    // a whole row writes r once, then every cell; row 1: r = 1·0.5 + 2·0.5 = 1.5
    const Explanation row = explain(model, trace, "grad_scaled_scores[1]");
    CHECK(row.values == std::vector<double>{-0.25, 0.25});
    CHECK(all_lines(row) ==
          "A = weights[1] (a) = [0.5000, 0.5000]\n"
          "dA = grad_weights[1] (a) = [1, 2]\n"
          "r = Σ_k dA[1,k]·A[1,k] = 1·0.5000 + 2·0.5000 = 1.5000    (the row's dA, weighted by A)\n"
          "grad_scaled_scores[1,1] = A[1,1]·(dA[1,1] − r) = 0.5000 · (1 − 1.5000) = -0.2500\n"
          "grad_scaled_scores[1,2] = A[1,2]·(dA[1,2] − r) = 0.5000 · (2 − 1.5000) = 0.2500\n");

    // and the steps around it, by the same hand: dA[2,1] = dz·v = 3·1, dS = dS' / √1
    CHECK(all_lines(explain(model, trace, "grad_weights[2,1]")) ==
          "dz = grad_head_output[2] (b) = [3]    (row 2 of dZ)\n"
          "v = values[1] (a) = [1]    (value 1: column 1 of Vᵀ)\n"
          "grad_weights[2,1] = dz·v = 3·1 = 3\n");
    CHECK(explain(model, trace, "grad_scores[2,2]").lines.back() ==
          "grad_scores[2,2] = grad_scaled_scores[2,2] / 1 = 0.7500 / 1 = 0.7500");
}

TEST_CASE("a blocked cell's gradient is 0, and with sinks the row term runs over the keys", "[explain]") {
    const qkv::Model model = qkv::test::load_text(k_gqa_rope_causal_sinks);
    const qkv::Trace trace = qkv::compute(model);
    const Explanation e = explain(model, trace, "grad_scaled_scores[2,3]@3");
    const std::string text = all_lines(e);
    CHECK(text.find("the sink's column had no dA") != std::string::npos);
    CHECK(text.find("key 3 is blocked: its weight A[2,3] is 0, so its gradient is 0") != std::string::npos);
    CHECK(ends_with(e.lines.back(), "= 0"));
    CHECK(e.values == std::vector<double>{0.0});
}

TEST_CASE("with RoPE a query's gradient is turned back by the inverse rotation", "[explain]") {
    const qkv::Model model = qkv::test::load_text(k_gqa_rope_causal_sinks);
    const qkv::Trace trace = qkv::compute(model);
    // style half, d_k = 2: element 1 pairs with element 2; row 3 is at position 2, θ_0 = 1
    const Explanation first = explain(model, trace, "grad_queries[3,1]@2", 6);
    const std::string text = all_lines(first);
    CHECK(text.find("query head 2 read the keys of key/value head 1") != std::string::npos);
    CHECK(text.find("position p = 2 (row 3, counted from 0)") != std::string::npos);
    CHECK(text.find("elements 1 and 2") != std::string::npos);
    CHECK(first.lines.back().rfind("grad_queries[3,1]@2 = dQ_rot[3,1]·cos + dQ_rot[3,2]·sin = ", 0) == 0);
    const Explanation second = explain(model, trace, "grad_queries[3,2]@2", 6);
    CHECK(second.lines.back().rfind("grad_queries[3,2]@2 = dQ_rot[3,2]·cos − dQ_rot[3,1]·sin = ", 0) == 0);

    // the numbers: dQ_rot = dS·K_rot from the trace, turned back by −2 radians
    const arma::rowvec g = trace.find("grad_scores", 2)->values.row(2) * trace.find("rotated_keys", 1)->values;
    const double expected = g(0) * std::cos(2.0) + g(1) * std::sin(2.0);
    CHECK_THAT(trace.find("grad_queries", 2)->values(2, 0), Catch::Matchers::WithinAbs(expected, 1e-12));
    CHECK(ends_with(first.lines.back(), " = " + qkv::format_number(expected, 6, false, false)));
}

TEST_CASE("the inputs' gradient adds the queries', keys' and values' paths", "[explain]") {
    const qkv::Model self = qkv::test::load_text(k_one_head_biases);
    const std::string text = all_lines(explain(self, qkv::compute(self), "grad_inputs[1,2]"));
    CHECK(text.find("queries' path: dq·w = ") != std::string::npos);
    CHECK(text.find("keys' path: dk·w = ") != std::string::npos);
    CHECK(text.find("values' path: dv·w = ") != std::string::npos);

    const qkv::Model cross = qkv::test::load_text(k_cross_attention);
    const qkv::Trace trace = qkv::compute(cross);
    const std::string inputs = all_lines(explain(cross, trace, "grad_inputs[2,1]"));
    CHECK(inputs.find("cross-attention: X feeds only the queries") != std::string::npos);
    CHECK(inputs.find("keys' path") == std::string::npos);
    const std::string context = all_lines(explain(cross, trace, "grad_context[3,2]"));
    CHECK(context.find("queries' path") == std::string::npos);
    CHECK(context.find("keys' path, head 2") != std::string::npos);

    const qkv::Model positions = qkv::test::load_text(k_heads_list_positions);
    CHECK(all_lines(explain(positions, qkv::compute(positions), "grad_inputs[1]")).find("P is fixed") !=
          std::string::npos);
}

TEST_CASE("a weight's gradient says which head a column belongs to and follows the layout", "[explain]") {
    const qkv::Model split = qkv::test::load_text(k_gqa_rope_causal_sinks);
    const std::string key = all_lines(explain(split, qkv::compute(split), "grad_w_key[2,3]"));
    CHECK(key.find("column 3 belongs to key/value head 2: column 1 of its dK") != std::string::npos);

    const qkv::Model pytorch = qkv::test::load_text(k_layout_pytorch);
    const qkv::Trace trace = qkv::compute(pytorch);
    const Explanation query = explain(pytorch, trace, "grad_w_query[2,3]");
    CHECK(all_lines(query).find("layout pytorch: dW_Q is out × in") != std::string::npos);
    // out × in: row 2 is query element 2, column 3 input element 3: Σ_i dQ[i,2]·X[i,3]
    const arma::mat& dQ = trace.find("grad_queries", 1)->values;
    const arma::mat& X = trace.find("inputs", 0)->values;
    CHECK(query.values[0] == trace.find("grad_w_query", 0)->values(1, 2));
    CHECK_THAT(query.values[0], Catch::Matchers::WithinAbs(arma::dot(dQ.col(1), X.col(2)), 1e-3));
    CHECK(query.lines.back().find(", rounded to 3 decimals: ") != std::string::npos);

    const qkv::Model block = qkv::test::load_text(k_pytorch_block);
    const qkv::Trace block_trace = qkv::compute(block);
    CHECK(all_lines(explain(block, block_trace, "grad_in_proj_weight[6,1]"))
              .find("rows 5 … 8 of in_proj_weight are W_K's") != std::string::npos);
    CHECK(all_lines(explain(block, block_trace, "grad_in_proj_bias[1,10]"))
              .find("columns 9 … 12 of in_proj_bias are b_V's") != std::string::npos);
}

TEST_CASE("qkv explain writes a gradient cell, also in ASCII", "[explain][cli]") {
    const std::string file = qkv::test::source_dir() + "/tests/reference/cases/backward_gqa_four_heads_two_kv_heads.yaml";
    const auto result = run_qkv({"explain", file, "grad_scaled_scores[2,3]"});
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());
    CHECK(result.out.rfind("grad_scaled_scores[2,3]@1 = ", 0) == 0);
    CHECK(result.out.find("r = Σ_k dA[2,k]·A[2,k] = ") != std::string::npos);

    const auto ascii = run_qkv({"explain", file, "grad_scaled_scores[2]@3", "grad_keys[1,2]@1", "grad_inputs[1,1]",
                                "grad_output[1,1]", "--ascii"});
    REQUIRE(ascii.status == 0);
    for (const char c : ascii.out) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
    CHECK(ascii.out.find("r = sum_k dA[2,k]*A[2,k] = ") != std::string::npos);
    CHECK(ascii.out.find("ds_1 = column 1 of grad_scores@1") != std::string::npos);
}
