// `qkv check -f html`: one self-contained page (OUTPUT FORMATS in man/qkv.1.in) with the report's
// summary, each answered step's table with its cells classed by verdict, the
// wrong cells in words and the diagnosis; its numbers are the text report's.
#include "support.hpp"

#include <regex>
#include <sstream>

using qkv::test::check_golden;
using qkv::test::require_html_parses;
using qkv::test::require_self_contained_page;
using qkv::test::CliRun;
using qkv::test::k_illustrated_answers;
using qkv::test::run_qkv;
using qkv::test::count_of;

namespace {

qkv::test::CliResult run_in_repo(const std::vector<std::string>& args) {
    CliRun run;
    run.args = args;
    run.cwd = qkv::test::source_dir();
    return run_qkv(run);
}

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(' ');
    return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// The body cells of each table of a text check report, in order: the fields
// after "│" split at runs of two spaces or more, the true value in brackets.
std::vector<std::vector<std::string>> text_tables(const std::string& report) {
    std::vector<std::vector<std::string>> tables;
    bool in_table = false;
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
        if (line.find("┼") != std::string::npos) {
            tables.emplace_back();
            in_table = true;
            continue;
        }
        const auto bar = line.find("│");
        if (!in_table || bar == std::string::npos) {
            in_table = false;
            continue;
        }
        const std::string cells = line.substr(bar + std::string("│").size());
        const std::regex gap(" {2,}");
        for (auto it = std::sregex_token_iterator(cells.begin(), cells.end(), gap, -1);
             it != std::sregex_token_iterator(); ++it) {
            if (const std::string field = trimmed(*it); !field.empty()) {
                tables.back().push_back(field);
            }
        }
    }
    return tables;
}

// The body cells of each table of an HTML page, in order, with the true value
// of a wrong cell in brackets as the text report writes it.
std::vector<std::vector<std::string>> html_tables(const std::string& page) {
    std::vector<std::vector<std::string>> tables;
    const std::regex body("<tbody>([\\s\\S]*?)</tbody>");
    const std::regex cell("<td[^>]*>([^<]*)</td>");
    for (auto t = std::sregex_iterator(page.begin(), page.end(), body); t != std::sregex_iterator(); ++t) {
        const std::string rows = (*t)[1];
        tables.emplace_back();
        for (auto c = std::sregex_iterator(rows.begin(), rows.end(), cell); c != std::sregex_iterator(); ++c) {
            std::string text = std::regex_replace((*c)[1].str(), std::regex("\\(([^()]*)\\)$"), "[$1]");
            text = std::regex_replace(text, std::regex("&apos;"), "'");
            tables.back().push_back(text);
        }
    }
    return tables;
}

}  // namespace

TEST_CASE("check -f html is one self-contained page that libxml2 parses", "[check][html][cli][documents]") {
    const auto result = run_qkv({"check", "illustrated", "--answers", "-", "-f", "html"}, k_illustrated_answers);
    CHECK(result.status == 1);
    CHECK(result.err.empty());
    require_self_contained_page(result.out);
    require_html_parses(result.out);
    check_golden("check-illustrated.html", result.out);
}

TEST_CASE("check -f html colours each cell by its verdict", "[check][html][cli]") {
    const auto result = run_qkv({"check", "illustrated", "--answers", "-", "-f", "html"}, k_illustrated_answers);
    const std::string& page = result.out;
    // weights[1,1]: 0.0 written, the true value 0.0634 (the illustrated article, step 5) rounds to 0.1
    CHECK(page.find("<td class=\"wrong\">0.0 ✗ (0.1)</td>") != std::string::npos);
    CHECK(page.find("<td class=\"right\">16 ✓</td>") != std::string::npos);
    CHECK(page.find("<td class=\"carried\">2.0 →</td>") != std::string::npos);
    // keys, scores and weights: 9 each; 26 right, 1 wrong, 3 carried as the summary says
    CHECK(count_of(page, "<td class=\"right\">") == 26);
    CHECK(count_of(page, "<td class=\"wrong\">") == 1);
    CHECK(count_of(page, "<td class=\"carried\">") == 3);
    CHECK(page.find("<p class=\"verdict-wrong\"><strong>Summary:</strong> 30 answered cells in 4 steps: 26 right, 1 "
                    "wrong, 3 follow from your earlier answers. First mistake: weights.</p>") != std::string::npos);
    CHECK(page.find("weights[1,1]: you wrote 0.0; the true value 0.0634 rounds to 0.1.") != std::string::npos);
    CHECK(page.find("<code>qkv explain illustrated &apos;weights[1,1]&apos;</code>") != std::string::npos);
    for (const std::string id : {"check-keys-h1", "check-scores-h1", "check-weights-h1", "check-output"}) {
        CAPTURE(id);
        CHECK(page.find("<section id=\"" + id + "\">") != std::string::npos);
    }

    SECTION("answers all right: the summary in the colour of right") {
        const auto right = run_in_repo({"check", "examples/homework/three-words/model.yaml", "--answers",
                                        "examples/homework/three-words/right.yaml", "-f", "html"});
        CHECK(right.status == 0);
        CHECK(right.out.find("<p class=\"verdict-right\"><strong>Summary:</strong>") != std::string::npos);
        CHECK(right.out.find("class=\"wrong\"") == std::string::npos);
        CHECK(right.out.find("qkv explain") == std::string::npos);
    }
}

TEST_CASE("check -f html holds the diagnosis and the wrong cells of the text report", "[check][html][cli]") {
    const std::vector<std::string> args = {"check", "examples/homework/three-words/model.yaml", "--answers",
                                           "examples/homework/three-words/mistake-no-transpose.yaml"};
    auto html_args = args;
    html_args.insert(html_args.end(), {"-f", "html"});
    const auto html = run_in_repo(html_args);
    CHECK(html.status == 1);
    // the sentences of tests/golden/check-three-words-mistake-no-transpose.txt
    CHECK(html.out.find("<p><strong class=\"verdict-wrong\">Mistake:</strong> The scores were computed as Q·K, "
                        "without transposing K.</p>") != std::string::npos);
    CHECK(html.out.find("<p><strong>Correct:</strong> S = Q·Kᵀ: entry (i, j) is query i dotted with key j") !=
          std::string::npos);
    CHECK(html.out.find("<li>… and 2 more wrong cells.</li>") != std::string::npos);
    CHECK(count_of(html.out, "<li><span class=\"verdict-wrong\">✗</span> scores[") == 3);

    SECTION("an answer of the wrong shape is said, with no table") {
        const auto shape = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers",
                                        "examples/homework/two-heads/mistake-heads-averaged.yaml", "-f", "html"});
        CHECK(shape.status == 1);
        CHECK(shape.out.find("<p class=\"verdict-wrong\">Your answer is 3 × 2; concat is 3 × 4.") != std::string::npos);
        CHECK(shape.out.find("The heads were averaged instead of concatenated.") != std::string::npos);
        require_self_contained_page(shape.out);
    }
}

TEST_CASE("check -f html's tables hold the text report's numbers at the same --precision", "[check][html][cli]") {
    const auto [extra, what] = GENERATE(table<std::vector<std::string>, std::string>({
        {std::vector<std::string>{}, "rounding-aware, the true values at the answers' decimals"},
        {std::vector<std::string>{"--tolerance", "0.001", "-p", "3"}, "with a tolerance, the true values at -p 3"},
        {std::vector<std::string>{"--tolerance", "0.001", "-p", "6"}, "with a tolerance, the true values at -p 6"},
    }));
    CAPTURE(what);
    for (const std::string answers : {"mistake-no-transpose", "mistake-no-exp", "rounded", "mistake-mask-zero"}) {
        CAPTURE(answers);
        std::vector<std::string> args = {"check", "examples/homework/three-words/model.yaml", "--answers",
                                         "examples/homework/three-words/" + answers + ".yaml"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto html_args = args;
        html_args.insert(html_args.end(), {"-f", "html"});
        const auto text = run_in_repo(args);
        const auto html = run_in_repo(html_args);
        CHECK(html.status == text.status);
        const auto expected = text_tables(text.out);
        REQUIRE_FALSE(expected.empty());
        CHECK(html_tables(html.out) == expected);
    }
}

TEST_CASE("check -f html grades one learner, and refuses a class with a usage error", "[check][html][cli]") {
    const auto result = run_in_repo({"check", "examples/homework/three-words/model.yaml", "--answers",
                                     "examples/homework/three-words", "-f", "html"});
    CHECK(result.status == 2);
    CHECK(result.out.empty());
    CHECK(result.err.find("qkv: error: -f html writes one learner's report") != std::string::npos);
    CHECK(result.err.find("hint: give one answers file, or use -f text, markdown, csv or json for a class") !=
          std::string::npos);
}
