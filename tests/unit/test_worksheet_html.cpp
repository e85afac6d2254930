// `qkv worksheet -f html`: one self-contained page (OUTPUT FORMATS in man/qkv.1.in) with the givens
// as tables, each step asked as a section with an empty box per cell, and
// with --key the values the Markdown key holds.
#include "builtin/builtin.hpp"
#include "render/worksheet.hpp"
#include "support.hpp"

#include <regex>
#include <sstream>

using qkv::test::check_golden;
using qkv::test::require_html_parses;
using qkv::test::require_self_contained_page;
using qkv::test::run_ok;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) {
        ++count;
    }
    return count;
}

// The cells of the tables that follow each step's heading (<h2 id=…>), in
// order: a page's step sections, without the givens before them.
std::vector<std::string> step_cells(const std::string& page) {
    std::vector<std::string> cells;
    const auto first_step = page.find("<h2 id=\"");
    if (first_step == std::string::npos) {
        return cells;
    }
    // the header rows' empty corner is no cell of the matrix
    const std::string steps = std::regex_replace(page.substr(first_step), std::regex("<thead>.*</thead>"), "");
    const std::regex cell("<td( class=\"[a-z]+\")?>([^<]*)</td>");
    for (auto it = std::sregex_iterator(steps.begin(), steps.end(), cell); it != std::sregex_iterator(); ++it) {
        cells.push_back((*it)[2]);
    }
    return cells;
}

// The numbers of each pipe table's body rows after "## Step" in a Markdown sheet, in order.
std::vector<std::string> markdown_step_cells(const std::string& markdown) {
    std::vector<std::string> cells;
    const std::string steps = markdown.substr(markdown.find("\n## Step "));
    std::istringstream lines(steps);
    int row = 0;
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("|")) {
            row = 0;
            continue;
        }
        if (++row <= 2) {
            continue;  // the header and the divider
        }
        const std::regex field("\\|([^|]*)");
        int k = 0;
        for (auto it = std::sregex_iterator(line.begin(), line.end(), field); it != std::sregex_iterator(); ++it) {
            std::string text = (*it)[1];
            const auto first = text.find_first_not_of(' ');
            text = first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(' ') - first + 1);
            if (k++ > 0 && !text.empty()) {  // after the row label
                cells.push_back(text);
            }
        }
    }
    return cells;
}

}  // namespace

TEST_CASE("worksheet -f html is one self-contained page that libxml2 parses", "[worksheet][html][cli][documents]") {
    const std::string blank = run_ok({"worksheet", "masked", "-f", "html"});
    const std::string key = run_ok({"worksheet", "masked", "-f", "html", "--key"});
    for (const std::string* page : {&blank, &key}) {
        require_self_contained_page(*page);
        require_html_parses(*page);
    }
    check_golden("worksheet-masked.html", blank);
    check_golden("worksheet-masked.key.html", key);
    // several heads: each head's steps have ids of their own
    const std::string heads = run_ok({"worksheet", "two-heads", "-f", "html"});
    require_self_contained_page(heads);
    CHECK(heads.find("<h2 id=\"scores-h2\">") != std::string::npos);
}

TEST_CASE("an HTML worksheet has an empty box for each cell of the steps asked", "[worksheet][html][cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const qkv::Trace trace = qkv::test::compute_text(std::string(example.text));
        const std::string page = run_ok({"worksheet", name, "-f", "html"});
        std::size_t cells = 0;
        std::size_t steps = 0;
        for (const auto& step : trace.steps) {
            if (!qkv::is_given(step.id) && !qkv::is_gradient(step.id)) {
                cells += step.values.n_elem;
                ++steps;
            }
        }
        CHECK(count_of(page, "<td class=\"blank\"></td>") == cells);
        CHECK(count_of(page, "<h2 id=\"") == steps);
        // each step kept whole on a printed page: the style's section { break-inside: avoid }
        CHECK(count_of(page, "<section>") >= steps);
        CHECK(page.find("section, table { break-inside: avoid; }") != std::string::npos);
        // no number in the steps' tables
        for (const auto& cell : step_cells(page)) {
            CHECK(cell.empty());
        }
    }
    // one step asked: its 3 × 3 scores alone (the illustrated example)
    const std::string scores = run_ok({"worksheet", "illustrated", "-f", "html", "-s", "scores"});
    CHECK(count_of(scores, "<td class=\"blank\"></td>") == 9);
    CHECK(scores.find("<h2 id=\"scores-h1\">Step 5 · Scores <code>scores</code></h2>") != std::string::npos);
    CHECK(scores.find("<span class=\"math\">S = Q·Kᵀ</span> <span class=\"shape\">(3 × 3)</span>") !=
          std::string::npos);
    // the givens as tables, with their symbols
    CHECK(scores.find("<h3>Query weights <span class=\"math\">W<sub>Q</sub></span> <span class=\"shape\">(4 × 3)"
                      "</span></h3>") != std::string::npos);
}

TEST_CASE("an HTML worksheet's key holds the Markdown key's values, at the sheet's decimals", "[worksheet][html][cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const std::string page = run_ok({"worksheet", name, "-f", "html", "--key"});
        CHECK(page.find("class=\"blank\"") == std::string::npos);
        const auto cells = step_cells(page);
        REQUIRE_FALSE(cells.empty());
        CHECK(cells == markdown_step_cells(run_ok({"worksheet", name, "--key"})));
    }
    // the illustrated example's scores (from the illustrated article): 2, 4, 4 / 4, 16, 12 / 4, 12, 10
    const auto scores = step_cells(run_ok({"worksheet", "illustrated", "-f", "html", "--key", "-s", "scores"}));
    CHECK(scores == std::vector<std::string>{"2", "4", "4", "4", "16", "12", "4", "12", "10"});
    // -p sets the decimals: weights[1,1] is 0.0634
    CHECK(step_cells(run_ok({"worksheet", "illustrated", "-f", "html", "--key", "-s", "weights", "-p", "3"})).at(0) ==
          "0.063");
}

TEST_CASE("an HTML worksheet with --ascii is pure ASCII, its key's values those of the Unicode key",
          "[worksheet][html][cli]") {
    for (const std::string name : {"masked", "backward", "rope"}) {
        CAPTURE(name);
        const std::string page = run_ok({"worksheet", name, "-f", "html", "--key", "--backward", "--ascii"});
        for (const char c : page) {
            if (static_cast<unsigned char>(c) >= 0x80) {
                FAIL_CHECK("a byte outside ASCII");
                break;
            }
        }
        // the masked example's scores hold −∞, written -inf
        const auto cells = step_cells(page);
        const auto unicode = step_cells(run_ok({"worksheet", name, "-f", "html", "--key", "--backward"}));
        REQUIRE(cells.size() == unicode.size());
        for (std::size_t i = 0; i < cells.size(); ++i) {
            CHECK(cells[i] == (unicode[i] == "−∞" ? "-inf" : unicode[i]));
        }
    }
    // the formula spelled in ASCII, its subscript set as one, as run's page does
    CHECK(run_ok({"worksheet", "masked", "-f", "html", "--ascii"}).find("S&apos; = S / sqrt d<sub>k</sub> = S / sqrt 2") !=
          std::string::npos);
}
