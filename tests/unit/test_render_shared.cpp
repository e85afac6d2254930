// What every output shares: the table of format names, the step heading and
// the table builder's marks (check's verdicts) and alignments.
#include "render/palette.hpp"
#include "render/render.hpp"
#include "render/table.hpp"
#include "support.hpp"

#include <algorithm>

namespace {

// The text without its ANSI colour codes.
std::string without_colour(const std::string& text) {
    std::string plain;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\x1b') {
            i = text.find('m', i);
            continue;
        }
        plain += text[i];
    }
    return plain;
}

// A 2 × 2 table with one right and one wrong cell, one left unanswered.
qkv::Table marked_table(bool color) {
    qkv::Table table;
    table.col_labels = {"a", "long label"};
    table.row_labels = {"x", "y"};
    table.cells = {{"12", "0.5"}, {"3", "~"}};
    table.values = {{12, 0.5}, {3, arma::datum::nan}};
    table.marks.assign(2, std::vector<qkv::CellMark>(2));
    table.marks[0][0].verdict = qkv::Mark::right;
    table.marks[0][1] = {.verdict = qkv::Mark::wrong, .true_value = "0.25"};
    table.marks[1][0].verdict = qkv::Mark::right;
    return qkv::drawn_marks(table, false, color, "[", "]");
}

}  // namespace

TEST_CASE("every format name reads back as its format, in the order -f lists them", "[render]") {
    const std::vector<std::string> expected = {"text", "markdown", "latex", "csv",  "json",
                                               "svg",  "html",     "yaml",  "gradescope"};
    CHECK(qkv::format_names(qkv::all_formats()) == expected);
    for (const auto format : qkv::all_formats()) {
        CAPTURE(qkv::format_name(format));
        CHECK(qkv::parse_format(qkv::format_name(format)) == format);
    }
    CHECK_FALSE(qkv::parse_format("pdf").has_value());
    CHECK_FALSE(qkv::parse_format("Text").has_value());
}

TEST_CASE("the table of formats says which command writes which, the first its default", "[render]") {
    using qkv::Writer;
    const auto names = [](Writer writer) { return qkv::format_names(qkv::formats_of(writer)); };
    using List = std::vector<std::string>;
    CHECK(names(Writer::run) == List{"text", "markdown", "latex", "csv", "json", "svg", "html"});
    CHECK(names(Writer::decode) == List{"text", "markdown", "latex", "json", "html"});
    CHECK(names(Writer::explain) == List{"text", "markdown", "latex", "json", "html"});
    CHECK(names(Writer::check) == List{"text", "markdown", "latex", "csv", "json", "html", "gradescope"});
    CHECK(names(Writer::check_class) == List{"text", "markdown", "csv", "json"});
    CHECK(names(Writer::lesson) == List{"text", "markdown", "latex", "html"});
    CHECK(names(Writer::worksheet) == List{"markdown", "latex", "html", "yaml"});
    CHECK(names(Writer::bench) == List{"text", "json"});
    CHECK(qkv::writes(Writer::check, qkv::Format::gradescope));
    CHECK_FALSE(qkv::writes(Writer::run, qkv::Format::yaml));
    CHECK(qkv::format_list(Writer::decode) == "text, markdown, latex, json or html");
}

TEST_CASE("each command refuses a format it does not write, naming those it writes", "[render][cli]") {
    // the lists in the messages are the table's
    const auto refused = [](const std::vector<std::string>& args) {
        const auto result = qkv::test::run_qkv(args);
        CHECK(result.status == 2);
        return result.err;
    };
    CHECK(refused({"run", "illustrated", "-f", "yaml"}) ==
          "qkv: error: --format yaml is not available for run\n"
          "  hint: run writes text, markdown, latex, csv, json, svg or html\n");
    CHECK(refused({"explain", "illustrated", "scores[1,1]", "-f", "gradescope"}) ==
          "qkv: error: --format gradescope is not available for explain\n"
          "  hint: explain writes text, markdown, latex, json or html\n");
    CHECK(refused({"worksheet", "illustrated", "-f", "gradescope"}).find(
              "expected -f markdown, latex, html or yaml\n  hint: markdown, latex and html are sheets to print; yaml "
              "is the answers template for qkv check\n") != std::string::npos);
    CHECK(refused({"lesson", "1", "-f", "svg"}).find("a lesson is played as text or written as markdown, latex or "
                                                     "html, not svg") != std::string::npos);
}

TEST_CASE("the step heading names the head only when the trace has several", "[render]") {
    const qkv::Trace one = qkv::test::compute_text(qkv::test::read_repo_file("examples/illustrated.yaml"));
    const qkv::Trace two = qkv::test::compute_text(qkv::test::read_repo_file("examples/two-heads.yaml"));
    const auto find = [](const qkv::Trace& trace, const std::string& id, int head) {
        return *std::find_if(trace.steps.begin(), trace.steps.end(),
                             [&](const qkv::Step& step) { return step.id == id && step.head == head; });
    };
    // the numbers and titles of tests/golden/illustrated.txt and two-heads.txt
    CHECK(qkv::step_heading(one, find(one, "scores", 1)) == "Step 5 · Scores");
    CHECK(qkv::step_heading(two, find(two, "keys", 2)) == "Step 3 · Keys · head 2");
    CHECK(qkv::step_heading(two, find(two, "keys", 2), ": ", ", ") == "Step 3: Keys, head 2");
}

TEST_CASE("marks follow their numbers, and colour does not move the columns", "[render][check]") {
    const qkv::TextTableSkin skin(false, 2, qkv::Align::left);
    const std::string plain = qkv::draw_table(marked_table(false), skin);
    // numbers right-aligned among themselves, marks after them, nothing after the last column
    CHECK(plain == "    │  a     long label\n"
                   "  ──┼────────────────────\n"
                   "  x │  12 ✓  0.5 ✗ [0.25]\n"
                   "  y │   3 ✓    ~\n"
                   "\n");
    const std::string coloured = qkv::draw_table(marked_table(true), skin);
    CHECK(coloured.find(std::string(qkv::k_red) + "✗" + qkv::k_reset + " [0.25]") != std::string::npos);
    CHECK(without_colour(coloured) == plain);
}

TEST_CASE("a table without marks draws as before the marks existed", "[render]") {
    qkv::Table table = marked_table(false);
    table.marks.clear();
    CHECK(qkv::draw_table(table, qkv::TextTableSkin(false)) == "    │  a long label\n"
                                                               "  ──┼──────────────\n"
                                                               "  x │ 12        0.5\n"
                                                               "  y │  3          ~\n"
                                                               "\n");
}

TEST_CASE("a Markdown code span and code block hold any backticks in their text", "[render]") {
    CHECK(qkv::markdown_code_span("scores[1,2] = 0") == "`scores[1,2] = 0`");
    CHECK(qkv::markdown_code_span("a`b") == "``a`b``");
    CHECK(qkv::markdown_code_span("a```b c`d") == "````a```b c`d````");
    CHECK(qkv::markdown_code_span("`x") == "`` `x ``");
    CHECK(qkv::markdown_code_block({"q = 1", "k = 2"}) == "```text\nq = 1\nk = 2\n```\n");
    CHECK(qkv::markdown_code_block({"```", "a````b"}, "") == "`````\n```\na````b\n`````\n");
}
