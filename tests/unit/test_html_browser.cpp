// The HTML pages in a real browser: Debian's Chromium, headless, driven by
// python3-selenium through tests/browser/probe_page.py, which reports what a
// reader meets (a cell clicked, a cell reached with Tab and opened with
// Enter, the page at a phone's width and in print, the console). This file
// decides whether that is right. Needs chromium, chromium-driver and
// python3-selenium, as ./bootstrap test installs them; without them the tests
// say so and check nothing else.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

using qkv::test::run_ok;
using qkv::test::TempDir;

namespace {

std::string shell_quoted(const std::string& text) {
    std::string result = "'";
    for (const char c : text) {
        result += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return result + "'";
}

// What probe_page.py saw of PAGE, or null when the browser is not installed.
nlohmann::json probe(const std::string& page, const std::vector<std::string>& arguments = {}) {
    qkv::test::require_tag("browser");
    std::string command = "/usr/bin/python3 " + qkv::test::source_dir() + "/tests/browser/probe_page.py " +
                          shell_quoted(page);
    for (const auto& argument : arguments) {
        command += " " + shell_quoted(argument);
    }
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (std::size_t got = 0; (got = fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
        out.append(buffer, got);
    }
    const int status = pclose(pipe);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        WARN("chromium, chromium-driver or python3-selenium is missing (./bootstrap test installs them): "
             "the page was not opened in a browser");
        return nullptr;
    }
    INFO(out);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return nlohmann::json::parse(out);
}

// Runs of spaces as one, as a browser shows text outside <pre>.
std::string collapsed(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (!(c == ' ' && !out.empty() && out.back() == ' ')) {
            out += c;
        }
    }
    return out;
}

// The lines `qkv explain` writes for a cell, without their indent, spaces collapsed.
std::vector<std::string> explain_lines(const std::vector<std::string>& command) {
    std::vector<std::string> lines;
    std::istringstream in(run_ok(command));
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) {
            lines.push_back(collapsed(line.substr(line.find_first_not_of(' '))));
        }
    }
    return lines;
}

// What every page must be in the browser: nothing fetched, nothing in the
// console, no sideways scrolling of the page at a phone's width.
void require_tidy(const nlohmann::json& seen) {
    CHECK(seen["fetched"].empty());
    INFO("console: " << seen["console"].dump());
    CHECK(seen["console"].empty());
    CHECK(seen["phone"]["scroll_width"].get<int>() <= seen["phone"]["width"].get<int>());
}

}  // namespace

TEST_CASE("in a browser a clicked cell of run's page shows the lines qkv explain writes for it", "[html][cli][browser][slow]") {
    const TempDir dir;
    const std::string page = dir.write("two-heads.html", run_ok({"run", "two-heads", "-f", "html"}));
    for (const bool javascript : {true, false}) {
        CAPTURE(javascript);
        std::vector<std::string> arguments = {"--click", "button[aria-label^=\"weights[2,3]@2 = \"]"};
        if (!javascript) {
            arguments.push_back("--no-js");
        }
        const nlohmann::json seen = probe(page, arguments);
        if (seen.is_null()) {
            return;
        }
        require_tidy(seen);
        CHECK(seen["buttons"].get<int>() > 100);
        REQUIRE(seen.contains("click"));
        CHECK(seen["click"]["open"] == true);
        const std::string shown = collapsed(seen["click"]["text"]);
        for (const auto& line : explain_lines({"explain", "two-heads", "weights[2,3]@2"})) {
            INFO("line: " << line << "\nshown: " << shown);
            CHECK(shown.find(line) != std::string::npos);
        }
        // the printed page keeps the numbers and drops the controls
        CHECK(seen["print"]["popovers_hidden"] == true);
        CHECK(seen["print"]["cells_plain"] == true);
        // the text a reader sees holds the tables' numbers, not the workings
        const std::string text = seen["text"];
        CHECK(text.find("Step 7 · Attention weights · head 2") != std::string::npos);
        CHECK(text.find("given by the example") == std::string::npos);
    }
}

TEST_CASE("in a browser the keyboard alone reaches a cell, opens its working and closes it", "[html][cli][browser][slow]") {
    const TempDir dir;
    const std::string page = dir.write("illustrated.html", run_ok({"run", "illustrated", "-f", "html"}));
    const nlohmann::json seen = probe(page);
    if (seen.is_null()) {
        return;
    }
    require_tidy(seen);
    const auto& keyboard = seen["keyboard"];
    CHECK(keyboard["label"] == "inputs[1,1] = 1");
    CHECK(keyboard["open"] == true);
    const std::string shown = collapsed(keyboard["text"]);
    for (const auto& line : explain_lines({"explain", "illustrated", "inputs[1,1]"})) {
        INFO("line: " << line << "\nshown: " << shown);
        CHECK(shown.find(line) != std::string::npos);
    }
    CHECK(keyboard["closed_by_escape"] == true);
}

TEST_CASE("in a browser the pages of explain, run --decode, check and worksheet are tidy", "[html][cli][browser][slow]") {
    const TempDir dir;
    // a long path without a hyphen to break at, which check's page quotes in full and a phone must wrap
    const std::string homework = dir.path() + "/ACourseFolderWithALongName/ThreeWordsHomework/";
    std::filesystem::create_directories(homework);
    const std::string source = qkv::test::source_dir() + "/examples/homework/three-words/";
    for (const std::string file : {"model.yaml", "mistake-no-scaling.yaml"}) {
        std::filesystem::copy_file(source + file, homework + file);
    }
    // each command, and a line its page shows
    const std::vector<std::pair<std::vector<std::string>, std::string>> pages = {
        {{"explain", "masked", "weights[2]", "scores[1,2]", "-f", "html"}, "weights[2] ="},
        {{"run", "alibi-window", "--decode", "-f", "html"}, "cache"},
        {{"check", homework + "model.yaml", "--answers", homework + "mistake-no-scaling.yaml", "-f", "html"},
         "answered cells"},
        {{"worksheet", "masked", "-f", "html"}, "Step"},
        {{"worksheet", "gqa", "-f", "html", "--key"}, "Step"},
    };
    for (const auto& [command, shown] : pages) {
        CAPTURE(command[0], command[1]);
        // check's status is 1 when an answer is wrong, as here
        const auto written = qkv::test::run_qkv(command);
        REQUIRE(written.status == (command[0] == "check" ? 1 : 0));
        const nlohmann::json seen = probe(dir.write("page.html", written.out));
        if (seen.is_null()) {
            return;
        }
        require_tidy(seen);
        CHECK(seen["buttons"] == 0);
        CHECK(seen["text"].get<std::string>().find(shown) != std::string::npos);
    }
}

TEST_CASE("in a browser a lesson's folded answer opens, and its cells open their workings", "[html][cli][browser][slow]") {
    const TempDir dir;
    const std::string page = dir.write("lesson.html", run_ok({"lesson", "1", "-f", "html"}));
    for (const std::string selector : {"details > summary", "button.cell"}) {
        CAPTURE(selector);
        const nlohmann::json seen = probe(page, {"--click", selector});
        if (seen.is_null()) {
            return;
        }
        require_tidy(seen);
        const std::string text = seen["text"];
        if (selector == "button.cell") {
            CHECK(seen["click"]["open"] == true);
            CHECK(seen["click"]["text"].get<std::string>().find(" = ") != std::string::npos);
        } else {
            // a summary opens its <details>: the folded answer becomes visible text
            CHECK(seen["click"]["open"] == true);
            CHECK(seen["click"]["text"].get<std::string>().size() > std::string("Answer").size() + 10);
        }
    }
}
