// `qkv explain`: cells parsed as written, the working shown with the real
// numbers, and every cell of every built-in example explained consistently
// with the trace. Expected numbers come from the illustrated article (its
// keys, queries, values and scores) or are worked by hand as noted.
#include "builtin/builtin.hpp"
#include "explain/explain.hpp"
#include "explain/operands.hpp"
#include "base/diagnostics.hpp"
#include "render/table.hpp"
#include "support.hpp"
#include "attention/step_handlers.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <map>
#include <cstdio>
#include <fstream>
#include <sstream>

using qkv::CellRef;
using qkv::Explanation;
using qkv::test::run_qkv;

namespace {

qkv::Model builtin_model(const std::string& name) {
    const auto* example = qkv::find_builtin_example(name);
    REQUIRE(example != nullptr);
    return qkv::test::load_text(std::string(example->text), "builtin:" + name);
}

Explanation explain(const qkv::Model& model, const std::string& cell, int precision = 4) {
    const qkv::Trace trace = qkv::compute(model);
    qkv::RenderOptions options;
    options.precision = precision;
    return qkv::explain_cell(model, trace, qkv::parse_cell(cell), options);
}

Explanation explain(const std::string& example, const std::string& cell, int precision = 4) {
    return explain(builtin_model(example), cell, precision);
}

bool has_line(const Explanation& e, const std::string& fragment) {
    for (const auto& line : e.lines) {
        if (line.find(fragment) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// The sum of "a·b + c·(−d) − e·f" as written (numbers with '-' signs, '−' operators).
double sum_of_terms(std::string text) {
    std::string normalised;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 3, "−") == 0) {
            normalised += '-';
            i += 2;
        } else if (text.compare(i, 2, "·") == 0) {
            normalised += '*';
            i += 1;
        } else if (text[i] != '(' && text[i] != ')') {
            normalised += text[i];
        }
    }
    // terms are separated by " + " and " - "
    double total = 0;
    int sign = 1;
    std::istringstream words(normalised);
    std::string word;
    while (words >> word) {
        if (word == "+") {
            sign = 1;
        } else if (word == "-") {
            sign = -1;
        } else {
            const auto star = word.find('*');
            REQUIRE(star != std::string::npos);
            total += sign * std::stod(word.substr(0, star)) * std::stod(word.substr(star + 1));
        }
    }
    return total;
}

}  // namespace

TEST_CASE("cells parse as STEP[ROW,COL], STEP[ROW] and @HEAD", "[explain]") {
    const CellRef score = qkv::parse_cell("scores[1,2]");
    CHECK(score.step == "scores");
    CHECK(score.row == 1);
    CHECK(score.col == 2);
    CHECK(score.head == 1);
    CHECK(score.text == "scores[1,2]");

    const CellRef row = qkv::parse_cell("output[3]");
    CHECK(row.step == "output");
    CHECK(row.row == 3);
    CHECK(row.col == 0);

    const CellRef headed = qkv::parse_cell("weights[2, 3]@2");
    CHECK(headed.step == "weights");
    CHECK(headed.row == 2);
    CHECK(headed.col == 3);
    CHECK(headed.head == 2);
}

TEST_CASE("a cell that does not parse is an input error naming the syntax", "[explain]") {
    const auto message = [](const std::string& text) {
        try {
            qkv::parse_cell(text);
        } catch (const qkv::InputError& error) {
            return error.diagnostics().front().what + " | " + error.diagnostics().front().hint;
        }
        return std::string("no error");
    };
    CHECK(message("scores(1,2)").find("STEP[ROW,COL]") != std::string::npos);
    CHECK(message("scores[a,2]").find("STEP[ROW,COL]") != std::string::npos);
    CHECK(message("weights[1,2]@x").find("STEP[ROW,COL]") != std::string::npos);
    CHECK(message("[1,2]").find("STEP[ROW,COL]") != std::string::npos);
    CHECK(message("score[1,2]").find("did you mean scores?") != std::string::npos);
    CHECK(message("scores[0,1]").find("numbered from 1") != std::string::npos);
    CHECK(message("scores[1,2]@0").find("numbered from 1") != std::string::npos);
}

TEST_CASE("a score is query times key, term by term", "[explain]") {
    // the illustrated article: q1 = [1, 0, 2], k2 = [4, 4, 0], so score 1·4 + 0·4 + 2·0 = 4
    const Explanation e = explain("illustrated", "scores[1,2]");
    CHECK(e.heading.rfind("scores[1,2] = 4 ", 0) == 0);
    CHECK(has_line(e, "q = queries[1] (Input 1) = [1, 0, 2]"));
    CHECK(has_line(e, "k = keys[2] (Input 2) = [4, 4, 0]"));
    CHECK(has_line(e, "scores[1,2] = q·k = 1·4 + 0·4 + 2·0 = 4"));
    REQUIRE(e.values.size() == 1);
    CHECK(e.values[0] == 4.0);

    // a whole row: the article's scores for input 1 are [2, 4, 4]
    const Explanation row = explain("illustrated", "scores[1]");
    CHECK(row.heading.rfind("scores[1] = [2, 4, 4]", 0) == 0);
    CHECK(has_line(row, "scores[1,1] = q·k = 1·0 + 0·1 + 2·1 = 2"));
    CHECK(has_line(row, "scores[1,3] = q·k = 1·2 + 0·3 + 2·1 = 4"));
}

TEST_CASE("a projection is the input row times a column of W, term by term", "[explain]") {
    // the illustrated article: input 2 is [0, 2, 0, 2]; column 3 of W_Q is [1, 0, 1, 1]; its query is [2, 2, 2]
    const Explanation e = explain("illustrated", "queries[2,3]");
    CHECK(has_line(e, "x = inputs[2] (Input 2) = [0, 2, 0, 2]"));
    CHECK(has_line(e, "w = column 3 of W_Q = [1, 0, 1, 1]"));
    CHECK(has_line(e, "queries[2,3] = x·w = 0·1 + 2·0 + 0·1 + 2·1 = 2"));

    SECTION("with a bias and in PyTorch's layout") {
        // worked by hand: W_Q as written is out × in, so query 1 of x = [1, 2] meets row 1 [3, 4]:
        // 1·3 + 2·4 = 11, plus b_Q[1] = 0.5 gives 11.5
        const auto model = qkv::test::load_text(R"(
inputs: [[1, 2]]
layout: pytorch
weights: {query: [[3, 4], [5, 6]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
bias: {query: [0.5, -1]}
)");
        const Explanation p = explain(model, "queries[1,1]");
        CHECK(has_line(p, "w = row 1 of W_Q as written = [3, 4]"));
        CHECK(has_line(p, "queries[1,1] = x·w + b_Q[1] = 1·3 + 2·4 + 0.5000 = 11.5000"));
        CHECK(has_line(p, "layout: pytorch"));
        // 1·5 + 2·6 − 1 = 16
        CHECK(has_line(explain(model, "queries[1,2]"), "= 1·5 + 2·6 − 1 = 16"));
    }
}

TEST_CASE("the numbers of a dot product are the real ones and add up to the cell", "[explain]") {
    // at 12 decimals the written terms must reproduce the trace's value
    for (const std::string example : {"sky-is-blue", "two-heads", "cross"}) {
        const auto model = builtin_model(example);
        const auto trace = qkv::compute(model);
        for (const std::string step : {"queries", "keys", "values", "scores"}) {
            const qkv::Step* found = trace.find(step, 1);
            REQUIRE(found != nullptr);
            for (arma::uword i = 0; i < found->values.n_rows; ++i) {
                for (arma::uword j = 0; j < found->values.n_cols; ++j) {
                    const std::string cell = step + "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]";
                    CAPTURE(example, cell);
                    const Explanation e = explain(model, cell, 12);
                    const std::string& last = e.lines.back();
                    const auto start = last.find(" = ", last.find("x·w = ") != std::string::npos ? last.find("x·w")
                                                                                                   : last.find("q·k"));
                    const auto end = last.rfind(" = ");
                    REQUIRE(start != std::string::npos);
                    const double total = sum_of_terms(last.substr(start + 3, end - start - 3));
                    CHECK_THAT(total, Catch::Matchers::WithinAbs(found->values(i, j), 1e-9));
                }
            }
        }
    }
}

TEST_CASE("a weight is exp(s − max) over the row's sum", "[explain]") {
    // worked by hand from the article's scores [2, 4, 4]: exp(−2) = 0.1353, sum 2.1353,
    // weights 0.1353/2.1353 = 0.0634 and 1/2.1353 = 0.4683
    const Explanation e = explain("illustrated", "weights[1,1]");
    CHECK(has_line(e, "s = scaled_scores[1] (Input 1) = [2, 4, 4]"));
    CHECK(has_line(e, "max = 4"));
    CHECK(has_line(e, "exp(s − max) = [exp(-2), exp(0), exp(0)] = [0.1353, 1, 1]"));
    CHECK(has_line(e, "sum = 0.1353 + 1 + 1 = 2.1353"));
    CHECK(has_line(e, "weights[1,1] = exp(s1 − max) / sum = 0.1353 / 2.1353 = 0.0634"));

    const Explanation row = explain("illustrated", "weights[1]");
    CHECK(has_line(row, "= [0.1353, 1, 1] / 2.1353 = [0.0634, 0.4683, 0.4683]"));

    SECTION("blocked keys add exp(−∞) = 0") {
        // masked example, query 2 ("we") sees keys 1 and 2 only; both scores are 1/√2
        const Explanation m = explain("masked", "weights[2]");
        CHECK(has_line(m, "s = masked_scores[2] (we) = [0.7071, 0.7071, −∞, −∞]"));
        CHECK(has_line(m, "exp(s − max) = [exp(0), exp(0), exp(−∞), exp(−∞)] = [1, 1, 0, 0]"));
        CHECK(has_line(m, "= [1, 1, 0, 0] / 2 = [0.5000, 0.5000, 0, 0]"));
    }
}

TEST_CASE("an output row is the weighted value vectors and their sum", "[explain]") {
    // the article's values [1, 2, 3], [2, 8, 0], [2, 6, 3] weighted by 0.0634, 0.4683, 0.4683
    // (exact weights, not the article's one-decimal rounding): sum by hand [1.9366, 6.6831, 1.5951]
    const Explanation e = explain("illustrated", "output[1]");
    CHECK(has_line(e, "one head and no W_O"));
    CHECK(has_line(e, "  0.0634 · [1, 2, 3] = [0.0634, 0.1268, 0.1901]"));
    CHECK(has_line(e, "+ 0.4683 · [2, 8, 0] = [0.9366, 3.7465, 0]"));
    CHECK(has_line(e, "+ 0.4683 · [2, 6, 3] = [0.9366, 2.8099, 1.4049]"));
    CHECK(e.lines.back() == "= [1.9366, 6.6831, 1.5951]");

    // one cell of it: 0.0634·1 + 0.4683·2 + 0.4683·2
    const Explanation cell = explain("illustrated", "head_output[1,1]");
    CHECK(has_line(cell, "head_output[1,1] = a·v = 0.0634·1 + 0.4683·2 + 0.4683·2 = 1.9366"));
}

TEST_CASE("several heads: a cell names its head, concat and W_O are explained", "[explain]") {
    // two-heads: head 2's scores are divided by √2
    const Explanation scaled = explain("two-heads", "scaled_scores[1,2]@2");
    CHECK(scaled.heading.rfind("scaled_scores[1,2]@2 = 0.7071", 0) == 0);
    CHECK(has_line(scaled, "√d_k = √2 = 1.4142"));
    CHECK(has_line(scaled, "scores[1,2]@2 / 1.4142 = 1 / 1.4142 = 0.7071"));

    const Explanation concat = explain("two-heads", "concat[2]");
    CHECK(has_line(concat, "head_output[2]@1 = "));
    CHECK(has_line(concat, "head_output[2]@2 = "));
    // column 3 of the concatenation is head 2's first column
    CHECK(has_line(explain("two-heads", "concat[1,3]"), "concat[1,3] = head_output[1,1]@2 = "));

    const Explanation output = explain("two-heads", "output[1,2]");
    CHECK(has_line(output, "x = concat[1] (we) = "));
    CHECK(has_line(output, "w = column 2 of W_O = [0, 1, 0, 1]"));
}

TEST_CASE("masking, positions, rounding and given values are explained", "[explain]") {
    const Explanation masked = explain("masked", "masked_scores[2]");
    CHECK(has_line(masked, "masked_scores[2,1] = scaled_scores[2,1] = 0.7071"));
    CHECK(has_line(masked, "masked_scores[2,4] = −∞    (blocked by the causal mask: query 2 sees keys 1 to 2, and "
                           "padding: key 4 is marked 0)"));

    const auto positional = qkv::test::load_text(R"(
inputs: [[0, 0, 0, 0], [0, 0, 0, 0]]
positional: sinusoidal
weights: {query: [[1],[0],[0],[0]], key: [[1],[0],[0],[0]], value: [[1],[0],[0],[0]]}
round: {encoded: 1}
)");
    // position 1 (the second token), column 1: sin(1 / 10000^0) = sin(1) = 0.8415
    CHECK(has_line(explain(positional, "positional[2,1]"), "= sin(1 / 10000^(0/4)) = sin(1) = 0.8415"));
    // encoded keeps the hand-rounded value: 0 + 0.8415 rounds to 0.8 at one decimal
    CHECK(has_line(explain(positional, "encoded[2,1]"), "= 0 + 0.8415 = 0.8415, rounded to 1 decimal: 0.8000"));

    CHECK(has_line(explain("illustrated", "inputs[1,1]"), "given by the example"));
    CHECK(has_line(explain("cross", "context[2]"), "context token \"black\""));
}

namespace {

// "WHAT | HINT" of the error that explaining `cell` gives, or "no error".
std::string explain_error(const qkv::Model& model, const std::string& cell) {
    try {
        explain(model, cell);
    } catch (const qkv::InputError& error) {
        return error.diagnostics().front().what + " | " + error.diagnostics().front().hint;
    }
    return "no error";
}

}  // namespace

TEST_CASE("cells outside the example name the valid ranges", "[explain]") {
    const auto model = builtin_model("two-heads");
    const auto error_of = [&](const std::string& cell) { return explain_error(model, cell); };
    CHECK(error_of("scores[4,1]") == "cell scores[4,1]: row 4 is out of range; scores has 3 rows | valid cells: "
                                     "scores[ROW,COL] with ROW 1 to 3 and COL 1 to 3, or scores[ROW] for a whole row, "
                                     "then @1 to @2 for the head");
    CHECK(error_of("values[1,3]").find("column 3 is out of range; values has 2 columns") != std::string::npos);
    CHECK(error_of("weights[1,1]@3") ==
          "cell weights[1,1]@3: head 3 does not exist; this example has 2 heads | heads are numbered @1 to @2");
    CHECK(error_of("masked_scores[1,1]").find("this example has no masked_scores step") != std::string::npos);
    CHECK(error_of("weights[1]@3").find("head 3 does not exist") != std::string::npos);
}

TEST_CASE("a step the example lacks is named with the example's steps, each once", "[explain]") {
    const auto model = builtin_model("two-heads");
    try {
        explain(model, "masked_scores[1,1]");
        FAIL("no error");
    } catch (const qkv::InputError& error) {
        CHECK(error.diagnostics().front().hint == "its steps are inputs, w_query, queries, w_key, keys, w_value, "
                                                  "values, scores, scaled_scores, weights, head_output, concat, "
                                                  "w_output, output");
    }
}

TEST_CASE("@HEAD on a step that is not per head is an error naming the per-head steps", "[explain][cli]") {
    const auto model = builtin_model("two-heads");
    const auto error_of = [&](const std::string& cell) { return explain_error(model, cell); };
    CHECK(error_of("inputs[1,1]@2") == "cell inputs[1,1]@2: inputs is not per head, so it takes no @HEAD | leave out "
                                       "@2; the steps per head are w_query, queries, w_key, keys, w_value, "
                                       "values, scores, scaled_scores, weights, head_output");
    CHECK(error_of("output[1]@1").find("output is not per head") != std::string::npos);
    CHECK(error_of("concat[1]@3").find("concat is not per head") != std::string::npos);
    // without @HEAD, and on the steps per head, nothing changes
    CHECK(error_of("inputs[1,1]") == "no error");
    CHECK(error_of("weights[1,1]@2") == "no error");
    CHECK(error_of("scores[1]@1") == "no error");

    qkv::test::require_input_error(run_qkv({"explain", "two-heads", "inputs[1,1]@2"}),
                                   "cell inputs[1,1]@2: inputs is not per head");
}

TEST_CASE("a row, column or head written as 0 is reported with the valid ranges", "[explain][cli]") {
    const auto error_of = [](const std::string& example, const std::string& cell) {
        const auto result = run_qkv({"explain", example, cell});
        qkv::test::require_input_error(result, "counts from 0");
        return result.err;
    };
    // illustrated: 3 inputs, so scores is 3 × 3 (the article's three inputs); one head
    CHECK(error_of("illustrated", "scores[0,1]") ==
          "qkv: error: cell scores[0,1] counts from 0; scores has 3 rows and 3 columns, numbered from 1 as in a_ij\n"
          "  hint: valid cells: scores[ROW,COL] with ROW 1 to 3 and COL 1 to 3, or scores[ROW] for a whole row\n");
    CHECK(error_of("illustrated", "scores[1,0]").find("ROW 1 to 3 and COL 1 to 3") != std::string::npos);
    CHECK(error_of("illustrated", "scores[1,2]@0") ==
          "qkv: error: cell scores[1,2]@0 counts from 0; heads are numbered from 1, and this example has 1 head\n"
          "  hint: leave out @HEAD: there is only head 1\n");
    CHECK(error_of("two-heads", "scores[1,2]@0").find("hint: heads are numbered @1 to @2") != std::string::npos);
    CHECK(error_of("two-heads", "values[0]").find("values has 3 rows and 2 columns") != std::string::npos);
    // parsing alone, as lessons do, still refuses 0
    CHECK_THROWS_AS(qkv::parse_cell("scores[0,1]"), qkv::InputError);
    CHECK(qkv::parse_cell("scores[0,1]", true).from_zero);
}

TEST_CASE("explain's Markdown escapes labels in headings and fences the working safely", "[explain][cli][documents]") {
    // masked: token 1 is "<s>", which pandoc would otherwise read as a strike-through tag
    const auto result = run_qkv({"explain", "masked", "weights[1]", "-f", "markdown"});
    REQUIRE(result.status == 0);
    CHECK(result.out.rfind("### weights[1] = [1, 0, 0, 0]    (Attention weights, row 1 \"\\<s\\>\")\n", 0) == 0);
    const auto html = qkv::test::run_qkv({"explain", "masked", "weights[1]", "-f", "markdown"});
    // the heading through pandoc: the label as text, no tag
    char name[] = "/tmp/qkv-explain-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(name) << html.out;
    qkv::test::require_tag("documents");
    FILE* pipe = popen(("pandoc -f gfm -t html " + std::string(name)).c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string converted;
    char buffer[4096];
    for (std::size_t got = 0; (got = fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
        converted.append(buffer, got);
    }
    CHECK(pclose(pipe) == 0);
    std::remove(name);
    CHECK(converted.find("row 1 \"&lt;s&gt;\")</h3>") != std::string::npos);
    CHECK(converted.find("<s>") == std::string::npos);

    // a label holding ``` gets a longer fence, so that the block stays whole
    const std::string yaml = R"(
tokens: ['```', b]
inputs: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
)";
    const auto fenced = run_qkv({"explain", "-", "weights[1,1]", "-f", "markdown"}, yaml);
    REQUIRE(fenced.status == 0);
    CHECK(fenced.out.find("\n````text\n") != std::string::npos);
    CHECK(fenced.out.find("\n````\n") != std::string::npos);
    CHECK(fenced.out.find("(Attention weights, row 1 \"\\`\\`\\`\", column 1 \"\\`\\`\\`\")") != std::string::npos);
}

TEST_CASE("every cell of every built-in example is explained and agrees with the trace", "[explain]") {
    for (const auto& example : qkv::builtin_examples()) {
        const auto model = qkv::test::load_text(std::string(example.text));
        const auto trace = qkv::compute(model);
        qkv::RenderOptions options;
        for (const auto& step : trace.steps) {
            for (arma::uword i = 0; i < step.values.n_rows; ++i) {
                for (arma::uword j = 0; j <= step.values.n_cols; ++j) {
                    CellRef cell;
                    cell.step = step.id;
                    cell.row = static_cast<int>(i + 1);
                    cell.col = static_cast<int>(j);  // 0 = the whole row
                    cell.head = step.head == 0 ? 1 : step.head;
                    cell.text = step_text(step.id);
                    CAPTURE(example.name, step.id, step.head, i + 1, j);
                    const Explanation e = qkv::explain_cell(model, trace, cell, options);
                    REQUIRE_FALSE(e.lines.empty());
                    if (j == 0) {
                        REQUIRE(e.values.size() == step.values.n_cols);
                        continue;
                    }
                    const double value = step.values(i, j - 1);
                    REQUIRE(e.values.size() == 1);
                    CHECK(e.values[0] == value);
                    const bool whole = std::isfinite(value) && std::floor(value) == value;
                    const std::string shown = qkv::format_number(value, 4, whole, false);
                    CHECK(e.heading.find(" = " + shown + " ") != std::string::npos);
                    // the working ends in the cell's value, except for given values and masking
                    if (qkv::step_category(step.id) != qkv::StepCategory::given && step.id != "masked_scores") {
                        const std::string& last = e.lines.back();
                        CHECK(last.substr(last.size() - shown.size() - 3) == " = " + shown);
                    }
                }
            }
        }
    }
}

TEST_CASE("qkv explain prints each cell's working and exits 2 on a bad cell", "[explain][cli]") {
    const auto result = run_qkv({"explain", "illustrated", "scores[1,2]", "output[1]"});
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());
    CHECK(result.out.rfind("scores[1,2] = 4 ", 0) == 0);
    CHECK(result.out.find("\n\noutput[1] = [1.9366, 6.6831, 1.5951]") != std::string::npos);

    qkv::test::require_input_error(run_qkv({"explain", "illustrated", "scores[9,1]"}),
                                   "cell scores[9,1]: row 9 is out of range");
    qkv::test::require_input_error(run_qkv({"explain", "illustrated", "scores[1,2]@2"}), "head 2 does not exist");
    qkv::test::require_input_error(run_qkv({"explain", "illustrated", "scorez[1,2]"}), "unknown step \"scorez\"");
    qkv::test::require_input_error(run_qkv({"explain", "illustrated"}), "");
    qkv::test::require_input_error(run_qkv({"explain", "illustrated", "scores[1,2]", "-f", "svg"}),
                                   "explain writes text, markdown, latex, json or html");
    // its help offers those formats only, and none of the options of the others (--standalone is LaTeX's)
    const auto help = run_qkv({"explain", "--help"});
    CHECK(help.out.find("FORMAT:{text,markdown,latex,json,html}") != std::string::npos);
    CHECK(help.out.find("--dark") == std::string::npos);
    CHECK(help.out.find("--standalone") != std::string::npos);
    qkv::test::require_input_error(run_qkv({"explain", "illustrated", "scores[1,2]", "--dark"}), "--dark");

    const auto ascii = run_qkv({"explain", "masked", "weights[2]", "--ascii"});
    REQUIRE(ascii.status == 0);
    for (const char c : ascii.out) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
    CHECK(ascii.out.find("exp(-inf)") != std::string::npos);

    const auto precise = run_qkv({"explain", "illustrated", "weights[1,1]", "-p", "6"});
    CHECK(precise.out.find("= 0.063379") != std::string::npos);
}

TEST_CASE("qkv explain writes Markdown and JSON", "[explain][cli]") {
    const auto markdown = run_qkv({"explain", "illustrated", "scores[1,2]", "-f", "markdown"});
    REQUIRE(markdown.status == 0);
    CHECK(markdown.out.rfind("### scores[1,2] = 4", 0) == 0);
    CHECK(markdown.out.find("```text\nq = queries[1]") != std::string::npos);

    const auto json = run_qkv({"explain", "masked", "weights[2,1]", "masked_scores[2]", "-f", "json"});
    REQUIRE(json.status == 0);
    const auto doc = nlohmann::json::parse(json.out);
    CHECK(doc["schema_version"] == 1);
    REQUIRE(doc["cells"].size() == 2);
    CHECK(doc["cells"][0]["step"] == "weights");
    CHECK(doc["cells"][0]["head"] == 1);
    CHECK(doc["cells"][0]["row"] == 2);
    CHECK(doc["cells"][0]["col"] == 1);
    CHECK(doc["cells"][0]["values"][0] == 0.5);  // two equal scores share the weight
    CHECK(doc["cells"][1]["col"].is_null());
    CHECK(doc["cells"][1]["values"][3] == "-inf");
    CHECK(doc["cells"][1]["lines"].size() >= 4);
}

TEST_CASE("qkv explain's JSON lists each cell's operands, and run's JSON the steps each step reads",
          "[explain][cli]") {
    // scores[2,3]@3 of gqa: query 2 of query head 3, key 3 of key/value head 2, which head 3 reads
    const auto explained = run_qkv({"explain", "gqa", "scores[2,3]@3", "weights[1,2]@1", "-f", "json"});
    REQUIRE(explained.status == 0);
    const auto cells = nlohmann::json::parse(explained.out)["cells"];
    CHECK(cells[0]["operands"] == nlohmann::json::parse(R"([{"step": "queries", "head": 3, "row": 2, "col": null},
                                                             {"step": "keys", "head": 2, "row": 3, "col": null}])"));
    // a weight is worked from its whole row of masked scores
    CHECK(cells[1]["operands"] ==
          nlohmann::json::parse(R"([{"step": "masked_scores", "head": 1, "row": 1, "col": null}])"));
    const auto scaled = run_qkv({"explain", "two-heads", "scaled_scores[1,2]@2", "-f", "json"});
    REQUIRE(scaled.status == 0);
    const auto operands = nlohmann::json::parse(scaled.out)["cells"][0]["operands"];
    REQUIRE(operands.size() == 2);
    CHECK(operands[0] == nlohmann::json::parse(R"({"step": "scores", "head": 2, "row": 1, "col": 2})"));
    CHECK(operands[1] == nlohmann::json::parse(R"({"name": "scale"})"));

    const auto run = run_qkv({"run", "gqa", "-f", "json"});
    REQUIRE(run.status == 0);
    const auto doc = nlohmann::json::parse(run.out);
    std::map<std::string, nlohmann::json> reads;
    for (const auto& step : doc["steps"]) {
        reads[step["id"].get<std::string>() + "@" + step["head"].dump()] = step["reads"];
    }
    CHECK(reads["inputs@null"].empty());
    CHECK(reads["scores@4"] == nlohmann::json::parse(R"([{"id": "queries", "head": 4}, {"id": "keys", "head": 2}])"));
    CHECK(reads["head_output@2"] ==
          nlohmann::json::parse(R"([{"id": "weights", "head": 2}, {"id": "values", "head": 1}])"));
    CHECK(reads["output@null"] == nlohmann::json::parse(R"([{"id": "concat", "head": null}])"));
}

TEST_CASE("the operands of a cell are the rows, columns and numbers its arithmetic takes", "[explain]") {
    const auto operands_of = [](const std::string& example, const std::string& text) {
        const qkv::Model model = builtin_model(example);
        const qkv::Trace trace = qkv::compute(model);
        return qkv::cell_operands(model, trace, qkv::parse_cell(text));
    };
    // queries[2,1] = inputs[2] · column 1 of W_Q = [0, 2, 0, 2] · [1, 1, 0, 0] (the illustrated article)
    const auto query = operands_of("illustrated", "queries[2,1]");
    REQUIRE(query.size() == 2);
    CHECK(query[0].step.id == qkv::StepId::inputs);
    CHECK(query[0].row == 2);
    CHECK(arma::approx_equal(query[0].values, arma::mat{{0, 2, 0, 2}}, "absdiff", 0.0));
    CHECK(query[1].step.id == qkv::StepId::w_query);
    CHECK(query[1].col == 1);
    CHECK(arma::approx_equal(query[1].values, arma::mat{{1, 1, 0, 0}}, "absdiff", 0.0));
    // head_output[1,3]: query 1's weights and the values' third column, [3, 0, 3]
    const auto output = operands_of("illustrated", "head_output[1,3]");
    REQUIRE(output.size() == 2);
    CHECK(output[0].step.id == qkv::StepId::weights);
    CHECK(output[0].row == 1);
    CHECK(output[1].step.id == qkv::StepId::values);
    CHECK(output[1].col == 3);
    CHECK(arma::approx_equal(output[1].values, arma::mat{{3, 0, 3}}, "absdiff", 0.0));
    // scores[2,3] reads query 2 and key 3; a whole row reads every key
    const auto score = operands_of("illustrated", "scores[2,3]");
    REQUIRE(score.size() == 2);
    CHECK(score[1].step.id == qkv::StepId::keys);
    CHECK(score[1].row == 3);
    const auto scores_row = operands_of("illustrated", "scores[2]");
    REQUIRE(scores_row.size() == 2);
    CHECK(scores_row[1].row == 0);
    CHECK(scores_row[1].values.n_rows == 3);
    // the scaled scores take the scale: √2 with d_k = 2
    const auto scaled = operands_of("two-heads", "scaled_scores[1,2]@2");
    REQUIRE(scaled.size() == 2);
    CHECK(scaled[0].step == qkv::StepKey{qkv::StepId::scores, 2});
    CHECK(scaled[1].name == "scale");
    CHECK(scaled[1].values(0, 0) == std::sqrt(2.0));
    // a column of the concatenation is one head's cell: column 3 is head 2's first
    const auto concat = operands_of("two-heads", "concat[1,3]");
    REQUIRE(concat.size() == 1);
    CHECK(concat[0].step == qkv::StepKey{qkv::StepId::head_output, 2});
    CHECK(concat[0].col == 1);
    // the output projection: concat's row and a column of W_O
    const auto projected = operands_of("two-heads", "output[2,1]");
    REQUIRE(projected.size() == 2);
    CHECK(projected[0].step.id == qkv::StepId::concat);
    CHECK(projected[1].step.id == qkv::StepId::w_output);
    CHECK(projected[1].col == 1);
}
