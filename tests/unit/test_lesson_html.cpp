// Lessons written as one HTML page (-f html, OUTPUT FORMATS in man/qkv.1.in): every built-in lesson
// a well-formed page that fetches nothing, with unique ids, its answers folded
// in <details>, and tables that hold the numbers the text lesson shows. The
// xmllint test needs xmllint (libxml2-utils), as ./bootstrap installs it.
#include "builtin/builtin.hpp"
#include "io/lesson_loader.hpp"
#include "support.hpp"

#include <fstream>
#include <sstream>

using qkv::test::check_golden;
using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::TempDir;
using qkv::test::count_of;

namespace {

// The questions a lesson asks, as its file writes them (ask: or predict:).
std::size_t question_count(const std::string& name) {
    const auto found = qkv::find_lesson(name);
    const qkv::Lesson lesson = qkv::prepare_lesson(qkv::read_lesson(found.source, found.name));
    std::size_t count = 0;
    for (const auto& page : lesson.pages) {
        count += page.ask ? 1 : 0;
    }
    return count;
}

// The structural checks every lesson page must pass; `questions` is how many it asks.
void require_lesson_page(const std::string& page, std::size_t questions) {
    // the doctype and charset, no script, nothing fetched, each id once
    qkv::test::require_self_contained_page(page);
    CHECK(page.find("\x1b[") == std::string::npos);
    // every <details> opens with its <summary>, so that it reads without JavaScript
    CHECK(count_of(page, "<details") == count_of(page, "<details>\n<summary>"));
    CHECK(count_of(page, "<details") == count_of(page, "</details>"));
    for (const std::string element : {"section", "div", "ul", "table", "p", "strong", "code"}) {
        CAPTURE(element);
        CHECK(count_of(page, "<" + element + ">") + count_of(page, "<" + element + " ") ==
              count_of(page, "</" + element + ">"));
    }
    CHECK(count_of(page, "<div class=\"question\">") == questions);
    CHECK(count_of(page, "<summary>Answer</summary>") == questions);
}

// The cells of the first row of the first table after `heading` in a text
// lesson: "  Input 1 │ 0.06338 0.46831 0.46831" gives its three numbers.
std::vector<std::string> text_first_row(const std::string& lesson, const std::string& heading) {
    const auto at = lesson.find(heading);
    REQUIRE(at != std::string::npos);
    std::istringstream lines(lesson.substr(at));
    std::string line;
    bool after_rule = false;   // the rule "────┼────" ends the column labels
    while (std::getline(lines, line)) {
        if (line.find("┼") != std::string::npos) {
            after_rule = true;
            continue;
        }
        const auto bar = line.find("│");
        if (after_rule && bar != std::string::npos) {
            std::istringstream words(line.substr(bar + std::string("│").size()));
            std::vector<std::string> cells;
            std::string word;
            while (words >> word) {
                cells.push_back(word);
            }
            return cells;
        }
    }
    FAIL("no table after " << heading);
    return {};
}

const char* const k_repeating_lesson = R"(title: The weights twice
summary: the same step on two pages, with lists and code
model: illustrated
try: Try it with `qkv run illustrated -f html`.
script:
  - say: |
      The scores of query 1 are {scores[1]}.

      - one item with {weights[1,2]}
      - and `code` in another
    show: weights
    predict: Which key does query 2 attend to most?
    choose: weights[2]
  - say: The weights again.
    show: weights
    explain: weights[1,2]
    ask: What is the weight of key 2 for query 1?
    answer: weights[1,2]
)";

}  // namespace

TEST_CASE("every built-in lesson written as HTML is one self-contained page", "[lesson][html][cli]") {
    REQUIRE(qkv::builtin_lessons().size() >= 9);
    for (const auto& lesson : qkv::builtin_lessons()) {
        const std::string name(lesson.name);
        CAPTURE(name);
        // -f html never pauses nor asks: standard input is not read
        const auto result = run_qkv({"lesson", name, "-f", "html"}, "q\n");
        REQUIRE(result.status == 0);
        CHECK(result.err.empty());
        require_lesson_page(result.out, question_count(name));
        CHECK(result.out.find("<title>Lesson ") != std::string::npos);
        CHECK(result.out.find("<section id=\"end\">") != std::string::npos);
    }
}

TEST_CASE("a lesson file showing the same step on two pages gives every id once", "[lesson][html][cli]") {
    TempDir dir;
    const std::string file = dir.write("twice.yaml", k_repeating_lesson);
    const std::string page = run_ok({"lesson", file, "-f", "html"});
    require_lesson_page(page, 2);
    // the weights on both pages, each with its own ids
    CHECK(page.find("<section id=\"p1-t1-weights-h1\">") != std::string::npos);
    CHECK(page.find("<section id=\"p2-t1-weights-h1\">") != std::string::npos);
    CHECK(count_of(page, "popovertarget=\"p1-t1-weights-h1-1-2\"") == 2);   // the cell and its Close button
    CHECK(count_of(page, "popovertarget=\"p2-t1-weights-h1-1-2\"") == 2);
    // narration: values in <strong>, list items in one <ul>, code spans as <code>
    CHECK(page.find("<p>The scores of query 1 are <strong>[") != std::string::npos);
    CHECK(page.find("<ul>\n<li>one item with <strong>") != std::string::npos);
    CHECK(page.find("<li>and <code>code</code> in another</li>\n</ul>\n") != std::string::npos);
    CHECK(page.find("<p>Try it with <code>qkv run illustrated -f html</code>.</p>") != std::string::npos);
    CHECK(page.find("End of the lesson.") != std::string::npos);
}

TEST_CASE("an HTML lesson's table cell holds the number the text lesson shows, at the same precision",
          "[lesson][html][cli]") {
    const auto precision = GENERATE(as<std::string>{}, "2", "5");
    CAPTURE(precision);
    // lesson 1 (walkthrough) shows the weights of the illustrated example on
    // its fourth page; weights[1,1] is the softmax of query 1's scores [2, 4, 4]
    // at key 1, e²/(e² + 2e⁴) = 0.063379 (worked by hand)
    const std::string text = run_ok({"lesson", "1", "-p", precision});
    const std::string page = run_ok({"lesson", "1", "-f", "html", "-p", precision});
    const std::vector<std::string> row = text_first_row(text, "[weights]");
    REQUIRE(row.size() == 3);
    const auto section = page.find("<section id=\"p4-t1-weights-h1\">");
    REQUIRE(section != std::string::npos);
    const std::string button = "popovertarget=\"p4-t1-weights-h1-1-1\" aria-label=\"weights[1,1] = ";
    const auto cell = page.find(button, section);
    REQUIRE(cell != std::string::npos);
    const auto number_at = page.find('>', cell) + 1;
    const std::string number = page.substr(number_at, page.find("</button>", number_at) - number_at);
    CAPTURE(row, number);
    CHECK(number == row.front());
    CHECK(number == (precision == "2" ? "0.06" : "0.06338"));
}

TEST_CASE("an HTML lesson with --ascii is plain ASCII, and -o writes it to a file", "[lesson][html][cli]") {
    const std::string page = run_ok({"lesson", "1", "-f", "html", "--ascii"});
    for (const char c : page) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
    CHECK(page.find("<h1>Lesson 1: ") != std::string::npos);

    TempDir dir;
    const std::string path = dir.path() + "/lesson.html";
    const auto result = run_qkv({"lesson", "1", "-f", "html", "-o", path});
    REQUIRE(result.status == 0);
    CHECK(result.out.empty());
    CHECK(result.err.empty());
    std::ifstream written(path, std::ios::binary);
    std::ostringstream content;
    content << written.rdbuf();
    CHECK(content.str() == run_ok({"lesson", "1", "-f", "html"}));
}

TEST_CASE("a lesson written as HTML matches its golden file", "[lesson][html][golden][cli]") {
    const auto result = run_qkv({"lesson", "1", "-f", "html"});
    REQUIRE(result.status == 0);
    check_golden("lesson-walkthrough.html", result.out);
}

TEST_CASE("every built-in lesson written as HTML is well-formed markup", "[lesson][html][cli][documents]") {
    for (const auto& lesson : qkv::builtin_lessons()) {
        const std::string name(lesson.name);
        CAPTURE(name);
        qkv::test::require_html_parses(run_ok({"lesson", name, "-f", "html"}));
    }
}
