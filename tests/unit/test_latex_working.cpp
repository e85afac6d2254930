// A step's working as equations (latex_working): the formula, the operands
// written out as matrices and the result, checked against values worked by
// hand for the built-in examples, read back against the trace, and compiled
// with pdflatex.
#include "builtin/builtin.hpp"
#include "render/latex.hpp"
#include "render/latex_working.hpp"
#include "support.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>

using namespace qkv;
using qkv::test::require_near;
using qkv::test::rows;

namespace {

// A built-in example's model and trace, kept together.
struct Example {
    Model model;
    Trace trace;
};

Example builtin(const std::string& name) {
    const BuiltinFile* file = find_builtin_example(name);
    REQUIRE(file != nullptr);
    Model model = test::load_text(std::string(file->text), name + ".yaml");
    Trace trace = compute(model);
    return {std::move(model), std::move(trace)};
}

Example from_yaml(const std::string& yaml) {
    Model model = test::load_text(yaml);
    Trace trace = compute(model);
    return {std::move(model), std::move(trace)};
}

// The layouts of one step's working, widest first.
std::vector<std::string> layouts(const Example& example, const std::string& step, int head = 1,
                                 const RenderOptions& options = {}) {
    const Step* found = example.trace.find(test::step(step), is_per_head(test::step(step)) ? head : 0);
    REQUIRE(found != nullptr);
    return latex_working_layouts(example.model, example.trace, *found, options);
}

// The working on one line: the widest layout.
std::string one_line(const Example& example, const std::string& step, int head = 1) {
    const auto all = layouts(example, step, head);
    REQUIRE_FALSE(all.empty());
    return all.front();
}

// The matrices a layout writes (bmatrix, or an array with rules between
// blocks), in order, read back as numbers; -\infty as −∞.
std::vector<arma::mat> matrices_of(const std::string& tex) {
    std::vector<arma::mat> found;
    std::size_t at = 0;
    while (true) {
        const std::size_t bmatrix = tex.find("\\begin{bmatrix}", at);
        const std::size_t array = tex.find("\\begin{array}{", at);
        if (bmatrix == std::string::npos && array == std::string::npos) {
            break;
        }
        std::size_t start = 0;
        std::string end;
        if (array < bmatrix) {
            // past the column specification, braces and all: {@{}cc|cc@{}}
            start = array + 13;
            for (int depth = 0; start == array + 13 || depth > 0; ++start) {
                depth += tex[start] == '{' ? 1 : tex[start] == '}' ? -1 : 0;
            }
            end = "\\end{array}";
        } else {
            start = bmatrix + 15;
            end = "\\end{bmatrix}";
        }
        const std::size_t stop = tex.find(end, start);
        REQUIRE(stop != std::string::npos);
        const std::string body = tex.substr(start, stop - start);
        at = stop + end.size();
        // a formula's own bmatrix ("\begin{bmatrix} Z_{1} & Z_{2} \end{bmatrix}") holds no numbers
        if (body.find("Z_") != std::string::npos || body.find("S'") != std::string::npos) {
            continue;
        }
        std::vector<std::vector<double>> cells(1);
        std::string cell;
        const auto flush = [&]() {
            cells.back().push_back(cell == "-\\infty" ? -arma::datum::inf : std::strtod(cell.c_str(), nullptr));
            cell.clear();
        };
        for (std::size_t i = 0; i < body.size(); ++i) {
            if (body.compare(i, 2, "\\\\") == 0) {
                flush();
                cells.emplace_back();
                ++i;
            } else if (body[i] == '&') {
                flush();
            } else {
                cell += body[i];
            }
        }
        flush();
        arma::mat M(cells.size(), cells.front().size());
        for (std::size_t i = 0; i < cells.size(); ++i) {
            REQUIRE(cells[i].size() == M.n_cols);
            for (std::size_t j = 0; j < cells[i].size(); ++j) {
                M(i, j) = cells[i][j];
            }
        }
        found.push_back(M);
    }
    return found;
}

// The relation before the last matrix of a working on one line: "=" or "\approx".
std::string relation_before_last_matrix(const std::string& tex) {
    std::size_t last = tex.rfind("\\begin{bmatrix}");
    const std::size_t array = tex.rfind("\\left[\\begin{array}");
    if (last == std::string::npos || (array != std::string::npos && array > last)) {
        last = array;
    }
    REQUIRE(last != std::string::npos);
    const std::size_t space = tex.rfind(' ', last - 2);
    return tex.substr(space + 1, last - space - 2);
}

// −∞ where −∞, the rest within eps.
void require_same(const arma::mat& got, const arma::mat& expected, double eps, const std::string& what) {
    INFO(what);
    REQUIRE(got.n_rows == expected.n_rows);
    REQUIRE(got.n_cols == expected.n_cols);
    for (arma::uword i = 0; i < got.n_rows; ++i) {
        for (arma::uword j = 0; j < got.n_cols; ++j) {
            CAPTURE(i, j, got(i, j), expected(i, j));
            if (std::isinf(expected(i, j))) {
                CHECK(got(i, j) == expected(i, j));
            } else {
                CHECK(std::abs(got(i, j) - expected(i, j)) <= eps);
            }
        }
    }
}

}  // namespace

TEST_CASE("the queries' working writes X, W_Q and Q as the illustrated example has them", "[latex][unit]") {
    const Example example = builtin("illustrated");
    // from the illustrated article, step 3: Q = X·W_Q
    const std::string X = "\\begin{bmatrix}1&0&1&0\\\\0&2&0&2\\\\1&1&1&1\\end{bmatrix}";
    const std::string W_Q = "\\begin{bmatrix}1&0&1\\\\1&0&0\\\\0&0&1\\\\0&1&1\\end{bmatrix}";
    const std::string Q = "\\begin{bmatrix}1&0&2\\\\2&2&2\\\\2&1&3\\end{bmatrix}";
    const auto all = layouts(example, "queries");
    REQUIRE(all.size() == 3);
    CHECK(all[0] == "Q = X W_{Q} = " + X + W_Q + " = " + Q);
    CHECK(all[1] == "\\begin{aligned}Q &= X W_{Q} \\\\ &= " + X + W_Q + " \\\\ &= " + Q + "\\end{aligned}");
    CHECK(all[2] == "\\begin{aligned}Q &= X W_{Q} \\\\ &= " + X + " \\\\ &\\quad \\cdot " + W_Q + " \\\\ &= " + Q +
                        "\\end{aligned}");
}

TEST_CASE("the keys, values and scores of the illustrated example are worked in whole numbers", "[latex][unit]") {
    const Example example = builtin("illustrated");
    const std::string X = "\\begin{bmatrix}1&0&1&0\\\\0&2&0&2\\\\1&1&1&1\\end{bmatrix}";
    // from the illustrated article, step 3
    CHECK(one_line(example, "keys") ==
          "K = X W_{K} = " + X + "\\begin{bmatrix}0&0&1\\\\1&1&0\\\\0&1&0\\\\1&1&0\\end{bmatrix} = "
                                 "\\begin{bmatrix}0&1&1\\\\4&4&0\\\\2&3&1\\end{bmatrix}");
    CHECK(one_line(example, "values") ==
          "V = X W_{V} = " + X + "\\begin{bmatrix}0&2&0\\\\0&3&0\\\\1&0&3\\\\1&1&0\\end{bmatrix} = "
                                 "\\begin{bmatrix}1&2&3\\\\2&8&0\\\\2&6&3\\end{bmatrix}");
    // step 4: the keys are written as columns, Kᵀ, so that row i of Q meets column j
    CHECK(one_line(example, "scores") ==
          "S = Q K^\\top = \\begin{bmatrix}1&0&2\\\\2&2&2\\\\2&1&3\\end{bmatrix}"
          "\\begin{bmatrix}0&4&2\\\\1&4&3\\\\1&0&1\\end{bmatrix} = "
          "\\begin{bmatrix}2&4&4\\\\4&16&12\\\\4&12&10\\end{bmatrix}");
}

TEST_CASE("the softmax's working says approximately when the weights are rounded to the precision",
          "[latex][unit]") {
    const Example example = builtin("illustrated");
    // from the illustrated article, step 5: softmax([2, 4, 4]) = [0.0634, 0.4683, 0.4683]
    const std::string weights = one_line(example, "weights");
    CHECK(weights.starts_with("A = \\operatorname{softmax}(S') = \\operatorname{softmax}\\left("
                              "\\begin{bmatrix}2&4&4\\\\4&16&12\\\\4&12&10\\end{bmatrix}\\right) \\approx "
                              "\\begin{bmatrix}0.0634&0.4683&0.4683\\\\"));
    // softmax is one operand: no line to break, so two layouts
    CHECK(layouts(example, "weights").size() == 2);
    // step 6: Z = A·V with the weights as written and the values of step 3
    const std::string output = one_line(example, "head_output");
    CHECK(output.starts_with("Z = A V \\approx \\begin{bmatrix}0.0634&0.4683&0.4683\\\\"));
    CHECK(output.find("\\begin{bmatrix}1&2&3\\\\2&8&0\\\\2&6&3\\end{bmatrix} \\approx ") != std::string::npos);
}

TEST_CASE("steps with nothing to work out have no working", "[latex][unit]") {
    const Example example = builtin("illustrated");
    // the inputs are given; scale: none leaves the scores as they are; one head and no W_O: O = Z
    for (const char* step : {"inputs", "scaled_scores", "output"}) {
        CAPTURE(step);
        CHECK(layouts(example, step).empty());
        const Step* found = example.trace.find(test::step(step), is_per_head(test::step(step)) ? 1 : 0);
        CHECK(latex_working(example.model, example.trace, *found, {}).empty());
    }
    // RoPE's rotations and the gradients are not written out
    const Example rope = builtin("rope");
    CHECK(layouts(rope, "rotated_queries").empty());
    CHECK(layouts(rope, "rotated_keys").empty());
    CHECK_FALSE(layouts(rope, "scores").empty());
    const Example backward = builtin("backward");
    CHECK(layouts(backward, "grad_output").empty());
    CHECK(layouts(backward, "grad_scores").empty());
}

TEST_CASE("scaling writes the divisor, and masking adds 0 or minus infinity", "[latex][unit]") {
    const Example example = builtin("masked");
    // by hand: Q = X·W_Q = [[1,0],[0,1],[2,2],[0,0]], K = [[1,1],[0,1],[2,2],[0,0]], S = Q·Kᵀ;
    // d_k = 2, so S' = S/√2 with 1/√2 = 0.70710678…
    const std::string S = "\\begin{bmatrix}1&0&2&0\\\\1&1&2&0\\\\4&2&8&0\\\\0&0&0&0\\end{bmatrix}";
    const std::string S_scaled =
        "\\begin{bmatrix}0.7071&0.0000&1.4142&0.0000\\\\0.7071&0.7071&1.4142&0.0000\\\\"
        "2.8284&1.4142&5.6569&0.0000\\\\0.0000&0.0000&0.0000&0.0000\\end{bmatrix}";
    CHECK(one_line(example, "scores").ends_with(" = " + S));
    CHECK(one_line(example, "scaled_scores") ==
          "S' = \\frac{S}{\\sqrt{d_k}} = \\frac{S}{\\sqrt{2}} \\approx \\frac{1}{1.4142}" + S + " \\approx " + S_scaled);
    // causal, and the fourth key is padding: M is 0 where query i may see key j ≤ i, −∞ elsewhere
    const std::string M = "\\begin{bmatrix}0&-\\infty&-\\infty&-\\infty\\\\0&0&-\\infty&-\\infty\\\\"
                          "0&0&0&-\\infty\\\\0&0&0&-\\infty\\end{bmatrix}";
    const std::string masked =
        "\\begin{bmatrix}0.7071&-\\infty&-\\infty&-\\infty\\\\0.7071&0.7071&-\\infty&-\\infty\\\\"
        "2.8284&1.4142&5.6569&-\\infty\\\\0.0000&0.0000&0.0000&-\\infty\\end{bmatrix}";
    const auto all = layouts(example, "masked_scores");
    REQUIRE(all.size() == 3);
    CHECK(all[0] == "S' + M \\approx " + S_scaled + " + " + M + " \\approx " + masked);
    CHECK(all[2] == "\\begin{aligned}S' + M &\\approx " + S_scaled + " \\\\ &\\quad + " + M + " \\\\ &\\approx " +
                        masked + "\\end{aligned}");
    // the softmax reads the masked scores
    CHECK(one_line(example, "weights").find("\\operatorname{softmax}\\left(" + masked + "\\right)") !=
          std::string::npos);
}

TEST_CASE("hand rounding makes the result approximate even when every number is written exactly",
          "[latex][unit]") {
    // round: 2 carries the masked example's scores rounded to 2 decimals into the softmax: "0.71" is
    // written exactly as 0.7100, but softmax of the rounded scores is not exactly the rounded weights
    const Example example = from_yaml(std::string(find_builtin_example("masked")->text) + "round: 2\n");
    const std::string weights = one_line(example, "weights");
    CHECK(weights.starts_with("A = \\operatorname{softmax}(S') = \\operatorname{softmax}\\left("
                              "\\begin{bmatrix}0.7100&-\\infty&-\\infty&-\\infty\\\\"));
    CHECK(relation_before_last_matrix(weights) == "\\approx");
    // the projections stay whole numbers, which rounding leaves as they are
    CHECK(relation_before_last_matrix(one_line(example, "queries")) == "=");
}

TEST_CASE("a whole-number divisor is written as it is, with an equals sign", "[latex][unit]") {
    // d_k = 4: S' = S/√4 = S/2, and 2/2, 4/2 are exact
    const Example example = from_yaml(R"(
inputs: [[1, 0, 0, 0], [0, 1, 0, 0]]
weights:
  query: [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]]
  key:   [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
  value: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
)");
    CHECK(one_line(example, "scaled_scores") ==
          "S' = \\frac{S}{\\sqrt{d_k}} = \\frac{S}{\\sqrt{4}} = \\frac{1}{2}\\begin{bmatrix}2&0\\\\0&2\\end{bmatrix} = "
          "\\begin{bmatrix}1&0\\\\0&1\\end{bmatrix}");
    // scale: 0.5 is a divisor of the file's, written as the scale's note writes it
    const Example half = from_yaml(R"(
inputs: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
scale: 0.5
)");
    CHECK(one_line(half, "scaled_scores") ==
          "S' = S / 0.5 = \\frac{1}{0.5000}\\begin{bmatrix}1&0\\\\0&1\\end{bmatrix} = "
          "\\begin{bmatrix}2&0\\\\0&2\\end{bmatrix}");
}

TEST_CASE("positions, a bias and the PyTorch layout appear in the projection's working", "[latex][unit]") {
    // by hand: X + P = [[2,2],[3,5]]; layout pytorch stores W_Qᵀ = [[1,1],[0,1]];
    // (X + P)·W_Qᵀ = [[2,4],[3,8]], plus b_Q = [1, −1]: [[3,3],[4,7]]
    const Example example = from_yaml(R"(
inputs: [[1, 2], [3, 4]]
positional: [[1, 0], [0, 1]]
layout: pytorch
weights: {query: [[1, 0], [1, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
bias: {query: [1, -1]}
)");
    const std::string XP = "\\begin{bmatrix}2&2\\\\3&5\\end{bmatrix}";
    const std::string W = "\\begin{bmatrix}1&1\\\\0&1\\end{bmatrix}";
    const std::string b = "\\begin{bmatrix}1&-1\\end{bmatrix}";
    const std::string Q = "\\begin{bmatrix}3&3\\\\4&7\\end{bmatrix}";
    CHECK(one_line(example, "encoded") ==
          "X + P = \\begin{bmatrix}1&2\\\\3&4\\end{bmatrix} + \\begin{bmatrix}1&0\\\\0&1\\end{bmatrix} = " + XP);
    const auto all = layouts(example, "queries");
    REQUIRE(all.size() == 3);
    CHECK(all[0] == "Q = (X + P) W_{Q}^\\top + b_{Q} = " + XP + W + " + " + b + " = " + Q);
    CHECK(all[2] == "\\begin{aligned}Q &= (X + P) W_{Q}^\\top + b_{Q} \\\\ &= " + XP + " \\\\ &\\quad \\cdot " + W +
                        " \\\\ &\\quad + " + b + " \\\\ &= " + Q + "\\end{aligned}");
    // no key bias: no "+ b_K"
    CHECK(one_line(example, "keys") == "K = (X + P) W_{K}^\\top = " + XP + "\\begin{bmatrix}1&0\\\\0&1\\end{bmatrix} = " +
                                           XP);
}

TEST_CASE("each head's working uses that head's weights", "[latex][unit]") {
    const Example example = builtin("two-heads");
    const std::string X = "\\begin{bmatrix}1&0&1&0\\\\0&1&0&1\\\\1&1&0&0\\end{bmatrix}";
    // heads: 2 splits W_Q by columns: head 1 has columns 1–2, head 2 columns 3–4;
    // by hand, X·W_Q of head 2: [1,0,1,0] → [0,1], [0,1,0,1] → [2,1], [1,1,0,0] → [1,1]
    CHECK(one_line(example, "queries", 1) ==
          "Q_{1} = X W_{Q}^{(1)} = " + X + "\\begin{bmatrix}1&0\\\\0&1\\\\1&0\\\\0&0\\end{bmatrix} = "
                                 "\\begin{bmatrix}2&0\\\\0&1\\\\1&1\\end{bmatrix}");
    CHECK(one_line(example, "queries", 2) ==
          "Q_{2} = X W_{Q}^{(2)} = " + X + "\\begin{bmatrix}0&1\\\\1&0\\\\0&0\\\\1&1\\end{bmatrix} = "
                                 "\\begin{bmatrix}0&1\\\\2&1\\\\1&1\\end{bmatrix}");
    // the concatenation: head 1's columns, a rule, head 2's
    const std::string concat = one_line(example, "concat");
    CHECK(concat.starts_with("\\begin{bmatrix} Z_{1} & Z_{2} \\end{bmatrix} \\approx "
                             "\\left[\\begin{array}{@{}cc|cc@{}}"));
    const auto blocks = matrices_of(concat);
    REQUIRE(blocks.size() == 1);
    require_same(blocks[0], example.trace.find(test::step("concat"))->values, 0.5e-4, "concat");
    // the output projection: concat·W_O with W_O as the file gives it (4 × 3)
    const std::string output = one_line(example, "output");
    CHECK(output.starts_with("O = \\begin{bmatrix} Z_{1} & Z_{2} \\end{bmatrix} W_{O} \\approx \\begin{bmatrix}"));
    CHECK(output.find("\\begin{bmatrix}1&0&0\\\\0&1&0\\\\0&0&1\\\\1&1&1\\end{bmatrix} \\approx ") !=
          std::string::npos);
}

TEST_CASE("with grouped-query heads a query head's working reads its key/value head", "[latex][unit]") {
    const Example example = builtin("gqa");
    // kv_heads: 2 of 4 heads: key/value head 2 has W_K's columns 3–4; by hand K = X·W_K of head 2
    const std::string K = "\\begin{bmatrix}0&1\\\\2&1\\\\1&1\\end{bmatrix}";
    CHECK(one_line(example, "keys", 2) ==
          "K_{2} = X W_{K}^{(2)} = \\begin{bmatrix}1&0&1&0\\\\0&1&0&1\\\\1&1&0&0\\end{bmatrix}"
          "\\begin{bmatrix}0&1\\\\1&0\\\\0&0\\\\1&1\\end{bmatrix} = " + K);
    // query head 3 reads key/value head ⌈3·2/4⌉ = 2: Q of head 3 (W_Q's columns 5–6) = [[1,1],[1,0],[1,0]],
    // S = Q·Kᵀ = [[1,3,2],[0,2,1],[0,2,1]]
    CHECK(one_line(example, "scores", 3) ==
          "S_{3} = Q_{3} K_{2}^\\top = \\begin{bmatrix}1&1\\\\1&0\\\\1&0\\end{bmatrix}\\begin{bmatrix}0&2&1\\\\1&1&1\\end{bmatrix} = "
          "\\begin{bmatrix}1&3&2\\\\0&2&1\\\\0&2&1\\end{bmatrix}");
    // query head 4's weighted sum reads the values of key/value head 2, head 2's those of head 1
    for (const int head : {1, 2, 3, 4}) {
        CAPTURE(head);
        const auto found = matrices_of(one_line(example, "head_output", head));
        REQUIRE(found.size() == 3);
        const arma::mat& V = example.trace.find(test::step("values"), example.model.kv_head_of(head))->values;
        require_same(found[1], V, 0, "V");
    }
}

TEST_CASE("sinks and ALiBi are written into the working", "[latex][unit]") {
    // a sink joins each row's softmax as one more column: head 2's sink is 3
    const Example sinks = builtin("sinks");
    const std::string weights = one_line(sinks, "weights", 2);
    CHECK(weights.starts_with("A_{2} = \\operatorname{softmax}\\left(\\begin{bmatrix} S'_{2} & s_{2} \\end{bmatrix}\\right)_{:, "
                              "1..m} \\approx \\operatorname{softmax}\\left(\\left[\\begin{array}{@{}ccc|c@{}}"));
    const auto found = matrices_of(weights);
    REQUIRE(found.size() == 2);
    CHECK(found[0].n_cols == 4);
    require_same(arma::mat(found[0].col(3)), arma::mat(3, 1).fill(3.0), 0, "the sink's column");
    require_same(arma::mat(found[0].cols(0, 2)), sinks.trace.find(test::step("masked_scores"), 2)->values, 0.5e-4, "S'");

    // ALiBi with two heads: Press et al.'s slopes 2^-4 and 2^-8; −0.0625·distance is exact in 4 decimals
    const Example alibi = builtin("alibi-window");
    const std::string distance = "\\begin{bmatrix}0&1&2&3&4\\\\1&0&1&2&3\\\\2&1&0&1&2\\\\3&2&1&0&1\\\\4&3&2&1&0"
                                 "\\end{bmatrix}";
    CHECK(one_line(alibi, "position_bias", 1).starts_with("B = -m \\lvert i - j \\rvert = -0.0625" + distance +
                                                          " = \\begin{bmatrix}0.0000&-0.0625&-0.1250&-0.1875&-0.2500"
                                                          "\\\\"));
    // 2^-8 = 0.00390625 is written 0.0039: approximately
    CHECK(one_line(alibi, "position_bias", 2).starts_with("B = -m \\lvert i - j \\rvert \\approx -0.0039" + distance));
    CHECK(one_line(alibi, "biased_scores", 1).starts_with("S'_{1} + B_{1} \\approx \\begin{bmatrix}"));
    CHECK(one_line(alibi, "masked_scores", 1).starts_with("(S' + B) + M \\approx \\begin{bmatrix}"));
}

TEST_CASE("a step with a matrix larger than 6 in either dimension has no working", "[latex][unit]") {
    const auto identity_rows = [](int rows, int cols) {
        std::string text = "[";
        for (int i = 0; i < rows; ++i) {
            text += i == 0 ? "[" : ", [";
            for (int j = 0; j < cols; ++j) {
                text += (j == 0 ? "" : ", ") + std::string(i % cols == j ? "1" : "0");
            }
            text += "]";
        }
        return text + "]";
    };
    const auto example = [&](int tokens, int d_model) {
        const std::string W = identity_rows(d_model, 2);
        return from_yaml("inputs: " + identity_rows(tokens, d_model) + "\nweights: {query: " + W + ", key: " + W +
                         ", value: " + W + "}\n");
    };
    // six tokens: every matrix is at most 6 × 6
    const Example six = example(6, 2);
    CHECK_FALSE(layouts(six, "queries").empty());
    CHECK_FALSE(layouts(six, "scores").empty());
    CHECK_FALSE(layouts(six, "weights").empty());
    // seven tokens: X, Q, S and A have 7 rows
    const Example seven = example(7, 2);
    for (const char* step : {"queries", "keys", "values", "scores", "scaled_scores", "weights", "head_output"}) {
        CAPTURE(step);
        CHECK(layouts(seven, step).empty());
        CHECK(latex_working(seven.model, seven.trace, *seven.trace.find(test::step(step), 1), {}).empty());
    }
    // d_model 7: X is 3 × 7 and W_Q 7 × 2, too wide and too tall; the scores (3 × 3) are fine
    const Example wide = example(3, 7);
    CHECK(layouts(wide, "queries").empty());
    CHECK_FALSE(layouts(wide, "scores").empty());
}

TEST_CASE("every working's last matrix is the step's value, and its operands give it", "[latex][unit]") {
    const RenderOptions options;
    for (const auto& file : builtin_examples()) {
        const Example example = builtin(std::string(file.name));
        for (const Step& step : example.trace.steps) {
            const auto all = latex_working_layouts(example.model, example.trace, step, options);
            if (all.empty()) {
                continue;
            }
            CAPTURE(file.name, step_name(step.id), step.head, all.front());
            // pure ASCII, for pdflatex in any input encoding
            for (const std::string& layout : all) {
                for (const char c : layout) {
                    CHECK(static_cast<unsigned char>(c) < 0x80);
                }
            }
            // the same matrices in every layout
            const auto found = matrices_of(all.front());
            REQUIRE_FALSE(found.empty());
            for (const std::string& layout : all) {
                const auto again = matrices_of(layout);
                REQUIRE(again.size() == found.size());
                for (std::size_t k = 0; k < found.size(); ++k) {
                    require_same(again[k], found[k], 0, "the same matrix in each layout");
                }
            }
            // "= [result]" is exact; "\approx [result]" within half a unit of the 4th decimal
            const bool exact = relation_before_last_matrix(all.front()) == "=";
            require_same(found.back(), step.values, exact ? 0 : 0.5e-4 + 1e-12, "the result");
            // the products multiply back to the result, to the rounding of their operands
            if (step.id == StepId::queries || step.id == StepId::keys || step.id == StepId::values ||
                step.id == StepId::scores || step.id == StepId::head_output || step.id == StepId::output) {
                REQUIRE(found.size() >= 3);
                arma::mat product = found[0] * found[1];
                if (found.size() == 4) {
                    product.each_row() += found[2].row(0);
                }
                require_same(product, step.values, 0.01, "the operands' product");
            }
            if (step.id == StepId::encoded || step.id == StepId::biased_scores || step.id == StepId::masked_scores) {
                REQUIRE(found.size() == 3);
                require_same(found[0] + found[1], step.values, 1e-4, "the operands' sum");
            }
        }
    }
}

TEST_CASE("latex_working sets its working as a display", "[latex][unit]") {
    const Example example = builtin("illustrated");
    const Step& step = *example.trace.find(test::step("scores"), 1);
    const std::string display = latex_working(example.model, example.trace, step, {});
    CHECK(display.find(layouts(example, "scores").front()) != std::string::npos);
    // the precision of -p: 2 decimals
    RenderOptions two;
    two.precision = 2;
    CHECK(latex_working(example.model, example.trace, *example.trace.find(test::step("weights"), 1), two)
              .find("\\approx \\begin{bmatrix}0.06&0.47&0.47\\\\") != std::string::npos);
}

TEST_CASE("every layout of every working compiles with pdflatex", "[latex][documents]") {
    test::TempDir dir;
    const RenderOptions options;
    for (const char* name : {"illustrated", "masked", "two-heads", "gqa", "sinks", "alibi-window", "cross"}) {
        CAPTURE(name);
        const Example example = builtin(name);
        // each layout on its own in a display of a plain amsmath document, and latex_working's output in
        // a document that latex_begin starts
        std::string displays;
        std::string workings;
        for (const Step& step : example.trace.steps) {
            for (const std::string& layout : latex_working_layouts(example.model, example.trace, step, options)) {
                displays += "\\[ " + layout + " \\]\n";
            }
            workings += latex_working(example.model, example.trace, step, options);
        }
        REQUIRE_FALSE(displays.empty());
        for (const auto& [kind, tex] :
             {std::pair<std::string, std::string>{"layouts", "\\documentclass{article}\n\\usepackage{amsmath}\n"
                                                             "\\begin{document}\n" + displays + "\\end{document}\n"},
              {"workings", latex_begin(true, "working") + workings + latex_end(true)}}) {
            CAPTURE(kind);
            const std::string file = std::string(name) + "-" + kind;
            dir.write(file + ".tex", tex);
            const auto result = test::shell("cd " + dir.path() + " && pdflatex -interaction=nonstopmode "
                                            "-halt-on-error " + file + ".tex");
            INFO(result.out.substr(result.out.size() > 3000 ? result.out.size() - 3000 : 0));
            CHECK(result.status == 0);
        }
    }
}
