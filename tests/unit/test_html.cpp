// The HTML pages (OUTPUT FORMATS in man/qkv.1.in) read as files: self-contained (no script, style,
// font or image from anywhere), well formed, every id once, every cell of
// run's tables a button whose popover holds `qkv explain`'s lines for it, the
// same numbers as the text format, weights shaded with readable text, and a
// golden file per built-in example. The browser test (test_html_browser.cpp)
// opens them.
#include "builtin/builtin.hpp"
#include "render/html.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <regex>
#include <set>

using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::TempDir;

namespace {

std::vector<std::string> all_matches(const std::string& text, const std::string& pattern, int group = 1) {
    std::vector<std::string> found;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
        found.push_back((*it)[group].str());
    }
    return found;
}

// Text of HTML with its tags dropped and the five entities read back.
std::string unescaped(std::string text) {
    text = std::regex_replace(text, std::regex("<[^>]*>"), "");
    const std::pair<const char*, const char*> entities[] = {
        {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}};
    for (const auto& [entity, character] : entities) {
        for (std::size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) {
            text.replace(at, std::string(entity).size(), character);
        }
    }
    return text;
}

}  // namespace

TEST_CASE("every built-in example's HTML page is self-contained and matches its golden file", "[html][golden][cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const auto page = run_qkv({"run", name, "-f", "html"});
        REQUIRE(page.status == 0);
        CHECK(page.err.empty());
        qkv::test::require_self_contained_page(page.out);
        qkv::test::check_golden(name + ".html", page.out);
    }
}

TEST_CASE("in run's HTML page every cell is a button that opens its working, as qkv explain writes it", "[html][cli]") {
    for (const std::string name : {"illustrated", "two-heads", "masked", "backward"}) {
        CAPTURE(name);
        const std::string page = run_ok({"run", name, "-f", "html"});
        // every step the page shows, the example's weights among them
        const qkv::Trace trace = qkv::test::compute_text(std::string(qkv::find_builtin_example(name)->text));
        std::size_t cells = 0;
        for (const auto& step : trace.steps) {
            cells += step.values.n_elem;
        }
        const auto targets = all_matches(page, "popovertarget=\"([^\"]*)\" aria-label");
        CHECK(targets.size() == cells);
        // each button opens a popover of its own, and each popover is opened by one button
        const auto popovers = all_matches(page, "<div popover=\"auto\" id=\"([^\"]*)\"");
        CHECK(popovers == targets);
    }

    // a working holds explain's heading and every line of its arithmetic
    const std::string page = run_ok({"run", "two-heads", "-f", "html"});
    for (const std::string cell : {"scores[1,2]@2", "weights[3,1]@1", "output[2,1]", "queries[1,2]@2"}) {
        CAPTURE(cell);
        const std::string explained = run_ok({"explain", "two-heads", cell});
        const auto label = page.find("aria-label=\"" + cell + " = ");
        REQUIRE(label != std::string::npos);
        const std::string target = all_matches(page.substr(page.rfind("popovertarget=", label)), "popovertarget=\"([^\"]*)\"")[0];
        const auto open = page.find("<div popover=\"auto\" id=\"" + target + "\"");
        REQUIRE(open != std::string::npos);
        const std::string working = unescaped(page.substr(open, page.find("</div>", open) - open));
        std::istringstream lines(explained);
        for (std::string line; std::getline(lines, line);) {
            line = line.substr(line.find_first_not_of(' '));
            INFO("line: " << line);
            CHECK(working.find(line) != std::string::npos);
        }
    }
}

TEST_CASE("run's HTML tables hold the text format's numbers at the same precision", "[html][cli]") {
    for (const std::string precision : {"2", "4", "6"}) {
        CAPTURE(precision);
        const std::string text = run_ok({"run", "illustrated", "-s", "weights", "-p", precision, "--ascii"});
        const std::string page = run_ok({"run", "illustrated", "-s", "weights", "-p", precision, "-f", "html"});
        // the numbers of the text table, in reading order
        std::vector<std::string> in_text;
        for (const auto& line : all_matches(text, "Input \\d \\|([^\\n]*)")) {
            std::istringstream cells(line);
            for (std::string cell; cells >> cell;) {
                in_text.push_back(cell);
            }
        }
        const auto in_page = all_matches(page, "aria-label=\"weights\\[\\d,\\d\\] = [^\"]*\">([^<]*)</button>");
        REQUIRE(in_text.size() == 9);
        CHECK(in_page == in_text);
    }
}

TEST_CASE("weights are shaded as in the SVG, with text that reads on every shade", "[html][cli]") {
    const std::string page = run_ok({"run", "masked", "-f", "html", "-s", "weights"});
    const auto shades = all_matches(page, "style=\"background:(#[0-9a-f]{6});color:(#[0-9a-f]{6})\"", 0);
    REQUIRE(shades.size() == 16);
    for (const auto& style : shades) {
        const std::string background = style.substr(18, 7);
        const std::string text = style.substr(32, 7);
        INFO(style);
        CHECK(qkv::contrast_ratio(background, text) >= 4.5);
    }
    // the ramp's darkest and lightest ends, and the contrast rule across the whole ramp
    CHECK(qkv::ramp_colour(0.0) == "#f7fbff");
    CHECK(qkv::ramp_colour(1.0) == "#08306b");
    for (int k = 0; k <= 100; ++k) {
        const std::string background = qkv::ramp_colour(k / 100.0);
        CHECK(qkv::contrast_ratio(background, qkv::text_colour_on(background)) >= 4.5);
    }
    // each row's largest weight is marked (every one of them where several tie)
    const auto doc = nlohmann::json::parse(run_ok({"run", "masked", "-f", "json", "-s", "weights"}));
    std::size_t largest = 0;
    for (const auto& row : doc["steps"][0]["values"]) {
        double max = 0;
        for (const auto& value : row) {
            max = std::max(max, value.get<double>());
        }
        for (const auto& value : row) {
            largest += value.get<double>() == max ? 1 : 0;
        }
    }
    CHECK(largest >= 4);
    CHECK(all_matches(page, "class=\"shade max\"", 0).size() == largest);
    CHECK(qkv::contrast_ratio("#000000", "#ffffff") == Approx(21.0));
}

TEST_CASE("a formula's subscripts are written as subscripts", "[html]") {
    CHECK(qkv::html_formula("Q = X·W_Q") == "Q = X·W<sub>Q</sub>");
    CHECK(qkv::html_formula("S = Q_rot·K_rotᵀ") == "S = Q<sub>rot</sub>·K<sub>rot</sub>ᵀ");
    CHECK(qkv::html_formula("S' = S / √d_k") == "S&apos; = S / √d<sub>k</sub>");
    CHECK(qkv::html_formula("A_ < B _x") == "A_ &lt; B _x");
    CHECK(qkv::html_formula("dX = dQ·W_Qᵀ") == "dX = dQ·W<sub>Q</sub>ᵀ");
    // a head index after a subscript is a superscript; a caret elsewhere stays text
    CHECK(qkv::html_formula("Q_3 = X·W_Q^(3)") == "Q<sub>3</sub> = X·W<sub>Q</sub><sup>(3)</sup>");
    CHECK(qkv::html_formula("S_3 = Q_rot^(3)·K_rot^(2)ᵀ") ==
          "S<sub>3</sub> = Q<sub>rot</sub><sup>(3)</sup>·K<sub>rot</sub><sup>(2)</sup>ᵀ");
    CHECK(qkv::html_formula("W_Q^(x y) and a^(2)") == "W<sub>Q</sub>^(x y) and a^(2)");
}

TEST_CASE("explain and run --decode write HTML pages too", "[html][cli]") {
    const std::string explained = run_ok({"explain", "masked", "weights[2,1]", "scores[3]", "-f", "html"});
    qkv::test::require_self_contained_page(explained);
    CHECK(explained.find("<title>The arithmetic of weights[2,1] and scores[3]</title>") != std::string::npos);
    const std::string text = run_ok({"explain", "masked", "weights[2,1]", "scores[3]"});
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) {
            continue;
        }
        line = line.substr(line.find_first_not_of(' '));
        INFO("line: " << line);
        CHECK(unescaped(explained).find(line) != std::string::npos);
    }

    const std::string decoded = run_ok({"run", "alibi-window", "--decode", "-f", "html"});
    qkv::test::require_self_contained_page(decoded);
    CHECK(decoded.find("<caption>") != std::string::npos);
    CHECK(all_matches(decoded, "<table>", 0).size() > 10);
}

TEST_CASE("HTML honours --ascii, --brief, --steps and --head", "[html][cli]") {
    const std::string ascii = run_ok({"run", "masked", "-f", "html", "--ascii"});
    for (const char c : ascii) {
        if (static_cast<unsigned char>(c) >= 0x80) {
            FAIL("non-ASCII byte in --ascii HTML");
        }
    }
    CHECK(ascii.find("-inf") != std::string::npos);

    const std::string brief = run_ok({"run", "illustrated", "-f", "html", "--brief"});
    CHECK(brief.find("dotted with") == std::string::npos);
    const std::string chosen = run_ok({"run", "two-heads", "-f", "html", "-s", "scores", "--head", "2"});
    CHECK(all_matches(chosen, "<section id=\"([^\"]*)\"") == std::vector<std::string>{"scores-h2"});
}

TEST_CASE("an HTML page of too many workings is refused before anything is written", "[html][cli]") {
    const std::string yaml = R"(
inputs: {random: {rows: 120, cols: 4, seed: 7}}
weights: {query: {random: {rows: 4, cols: 4, seed: 1}}, key: {random: {rows: 4, cols: 4, seed: 2}}, value: {random: {rows: 4, cols: 4, seed: 3}}}
)";
    const TempDir dir;
    const std::string path = dir.write("big.yaml", yaml);
    const auto refused = run_qkv({"run", path, "-f", "html", "--full", "-o", dir.path() + "/page.html"});
    qkv::test::require_input_error(refused, "an HTML page holds the working of at most 20000 cells");
    CHECK(refused.err.find("hint: leave out --full") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.path() + "/page.html"));
    // summarised, the same example makes a page
    CHECK(run_qkv({"run", path, "-f", "html", "-o", dir.path() + "/page.html"}).status == 0);
    CHECK(std::filesystem::exists(dir.path() + "/page.html"));
}

TEST_CASE("xmllint reads every HTML page as well-formed markup", "[html][cli][documents]") {
    const std::vector<std::vector<std::string>> commands = {
        {"run", "two-heads", "-f", "html"},
        {"run", "masked", "-f", "html", "--ascii"},
        {"run", "alibi-window", "--decode", "-f", "html"},
        {"explain", "masked", "weights[2]", "-f", "html"},
    };
    for (const auto& command : commands) {
        CAPTURE(command[0], command[1]);
        qkv::test::require_html_parses(run_ok(command));
    }
}
