// qkv playground: the page, the WebAssembly in it against the command line,
// and the page used in a real browser (Debian's Chromium, headless, driven by
// python3-selenium through tests/browser/probe_playground.py). The
// WebAssembly runs under Node.js through tests/web/run_wasm.js, as the page
// runs it. A qkv built without emscripten cannot write the page: then these
// tests check that it says so.
#include "builtin/builtin.hpp"
#include "cli/flags.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <regex>
#include <string>
#include <vector>

using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::TempDir;

namespace {

#ifdef QKV_PLAYGROUND_BUILT
constexpr bool k_built = true;
#else
constexpr bool k_built = false;
#endif

// The page of `qkv playground ARGS`, or empty where qkv was built without it
// (after checking that it says so).
std::string page_of(const std::vector<std::string>& args = {}) {
    std::vector<std::string> command = {"playground"};
    command.insert(command.end(), args.begin(), args.end());
    const auto result = run_qkv(command);
    if (!k_built) {
        CHECK(result.status == 2);
        CHECK(result.err.find("built without its playground") != std::string::npos);
        WARN("this qkv was built without emscripten: the page is not checked");
        return "";
    }
    INFO(result.err);
    REQUIRE(result.status == 0);
    return result.out;
}

std::string base64(const std::string& bytes) {
    static const char* const k_digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
        n |= i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0;
        n |= i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
        out += k_digits[(n >> 18) & 63];
        out += k_digits[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? k_digits[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? k_digits[n & 63] : '=';
    }
    return out;
}

std::string unbase64(const std::string& text) {
    std::string out;
    unsigned n = 0;
    int bits = 0;
    for (const char c : text) {
        const auto digit = std::string_view("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").find(c);
        if (digit == std::string_view::npos) {
            continue;  // '=' and line breaks
        }
        n = (n << 6) | static_cast<unsigned>(digit);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((n >> bits) & 255);
        }
    }
    return out;
}

struct Call {
    std::vector<std::string> args;
    std::map<std::string, std::string> files;
};

}  // namespace

TEST_CASE("qkv playground writes one page under 1.5 MB that opens on the example, with nothing to fetch",
          "[cli][playground]") {
    const std::string page = page_of();
    if (page.empty()) {
        return;
    }
    CHECK(page.size() < 1500000);
    CHECK(page.starts_with("<!DOCTYPE html>\n"));
    CHECK(page.ends_with("</html>\n"));
    // nothing outside the page: no src, href, link, import or URL
    CHECK_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=\s*["'][a-z]+:)")));
    CHECK(page.find("<link") == std::string::npos);
    // (SVG's namespace is a name, never fetched: the diagram's elements are made in it)
    const std::string urls = std::regex_replace(page, std::regex("http://www\\.w3\\.org/2000/svg"), "");
    CHECK(urls.find("http://") == std::string::npos);
    CHECK(urls.find("https://") == std::string::npos);
    // the example in the editor, and its steps drawn for a reader without JavaScript
    CHECK(page.find("<textarea id=\"editor\"") != std::string::npos);
    CHECK(page.find("- [1, 0, 1, 0]") != std::string::npos);
    CHECK(page.find("srcdoc=\"&lt;!DOCTYPE html&gt;") != std::string::npos);
    CHECK(page.find("<option value=\"illustrated\" selected>") != std::string::npos);
    CHECK(page.find(std::string("qkv ") + QKV_PROJECT_VERSION) != std::string::npos);

    // another example, a file, and every way of getting one wrong
    const std::string rope = page_of({"rope"});
    CHECK(rope.find("<option value=\"rope\" selected>") != std::string::npos);
    TempDir dir;
    const std::string mine = dir.write("mine.yaml", "inputs: [[1, 0], [0, 1]]\nweights:\n  query: [[1, 0], [0, 1]]\n"
                                                    "  key: [[1, 0], [0, 1]]\n  value: [[1, 0], [0, 1]]\n");
    const std::string own = page_of({mine});
    CHECK(own.find("<option value=\"\" selected>") == std::string::npos);
    CHECK(own.find("query: [[1, 0], [0, 1]]") != std::string::npos);
    const auto bad = run_qkv({"playground", dir.write("bad.yaml", "inputs: [[1, 2], [3]]\n")});
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.starts_with("qkv: error: " + dir.path() + "/bad.yaml:1:"));
    const auto missing = run_qkv({"playground", "nosuch"});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("no such file, and no built-in example by that name") != std::string::npos);
    // -o writes the file and refuses to replace one without --force
    const std::string out = dir.path() + "/page.html";
    run_ok({"playground", "-o", out});
    CHECK(qkv::test::read_file(out) == page);
    const auto again = run_qkv({"playground", "-o", out});
    CHECK(again.status == 2);
    run_ok({"playground", "-o", out, "--force"});
}

TEST_CASE("a qkv whose playground is not built yet says in one line the command that builds it", "[cli][playground]") {
    // a copy of the command alone, as `./bootstrap run` leaves it: in a build
    // folder (one with a CMakeCache.txt) before the page is built, and as if
    // installed without the page's files
    TempDir dir;
    namespace fs = std::filesystem;
    fs::create_directories(dir.path() + "/my build/bin");
    const std::string in_build = dir.path() + "/my build/qkv";
    fs::copy_file(qkv::test::qkv_binary(), in_build);
    dir.write("my build/CMakeCache.txt", "# a build folder\n");
    const std::string installed = dir.path() + "/my build/bin/qkv";
    fs::copy_file(qkv::test::qkv_binary(), installed);

    qkv::test::CliRun run{.args = {"playground", "-o", dir.path() + "/page.html"}};
    run.binary = in_build;
    const auto before = qkv::test::run_qkv(run);
    INFO(before.err);
    CHECK(before.status == 2);
    CHECK(before.out.empty());
    CHECK(qkv::test::lines_of(before.err).size() == 2);
    if (k_built) {
        CHECK(before.err == "qkv: error: the playground is not built yet; expected its files in " + dir.path() +
                                "/my build/share/qkv/playground\n  hint: build it with: cmake --build '" +
                                dir.path() + "/my build' --target playground\n");
    } else {
        CHECK(before.err.find("built without its playground") != std::string::npos);
        CHECK(before.err.find("  hint: ./bootstrap run installs emscripten and yaml-cpp's source; then build it "
                              "with: cmake --build '" + dir.path() + "/my build' --target playground\n") !=
              std::string::npos);
    }
    run.binary = installed;
    const auto without = qkv::test::run_qkv(run);
    INFO(without.err);
    CHECK(without.status == 2);
    CHECK(qkv::test::lines_of(without.err).size() == 2);
    CHECK(without.err.find(k_built ? "the playground's files are not installed; expected them in " + dir.path() +
                                         "/my build/share/qkv/playground"
                                   : std::string("built without its playground")) != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path() + "/page.html"));
}

TEST_CASE("the playground's WebAssembly writes what the command line writes, byte for byte, for every example, "
          "format, lesson and bad input", "[browser][cli][documents][playground]") {
    if (!k_built) {
        page_of();
        return;
    }
    if (!qkv::test::tool_installed("node", "nodejs", "the WebAssembly is not run")) {
        return;
    }
    const std::string answers = "answers:\n  queries:\n    - [2, 0, 2]\n    - [2, 2, 2]\n    - [2, 1, 4]\n";
    std::vector<Call> calls;
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        for (const auto& format : qkv::cli::format_choices(qkv::cli::CommandId::run)) {
            calls.push_back({{"run", name, "-f", format}});
        }
        calls.push_back({{"run", "model.yaml", "--backward", "-f", "markdown"}, {{"model.yaml", std::string(example.text)}}});
        for (const auto& format : qkv::cli::format_choices(qkv::cli::CommandId::explain)) {
            calls.push_back({{"explain", name, "output[1]", "weights[1,1]", "-f", format}});
        }
        calls.push_back({{"worksheet", name, "-f", "yaml"}});
    }
    for (const auto& format : qkv::cli::format_choices(qkv::cli::CommandId::check)) {
        calls.push_back({{"check", "illustrated", "--answers", "answers.yaml", "-f", format}, {{"answers.yaml", answers}}});
    }
    for (std::size_t lesson = 1; lesson <= qkv::builtin_lessons().size(); ++lesson) {
        for (const auto& format : qkv::cli::format_choices(qkv::cli::CommandId::lesson)) {
            calls.push_back({{"lesson", std::to_string(lesson), "-f", format}});
        }
    }
    calls.push_back({{"examples"}});
    calls.push_back({{"lesson"}});
    for (const auto& entry : std::filesystem::directory_iterator(qkv::test::source_dir() + "/tests/bad")) {
        if (entry.path().extension() == ".yaml") {
            calls.push_back({{"run", "model.yaml"}, {{"model.yaml", qkv::test::read_file(entry.path())}}});
        }
    }

    nlohmann::json list = nlohmann::json::array();
    for (const auto& call : calls) {
        nlohmann::json files = nlohmann::json::object();
        for (const auto& [name, text] : call.files) {
            files[name] = base64(text);
        }
        list.push_back({{"args", call.args}, {"files", files}});
    }
    TempDir dir;
    const std::string input = dir.write("calls.json", list.dump());
    const std::string output = dir.path() + "/results.json";
    const auto wasm = qkv::test::shell("node " + qkv::test::source_dir() + "/tests/web/run_wasm.js " QKV_WEB_DIR " < " +
                                       input + " > " + output);
    INFO(qkv::test::read_file(output).substr(0, 2000));
    REQUIRE(wasm.status == 0);
    const auto results = nlohmann::json::parse(qkv::test::read_file(output));
    REQUIRE(results.size() == calls.size());

    for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& call = calls[i];
        TempDir here;
        for (const auto& [name, text] : call.files) {
            here.write(name, text);
        }
        const auto native = run_qkv({call.args, "", here.path()});
        std::string command;
        for (const auto& arg : call.args) {
            command += " " + arg;
        }
        CAPTURE(command);
        CHECK(results[i]["status"].get<int>() == native.status);
        CHECK(unbase64(results[i]["stdout"].get<std::string>()) == native.out);
        CHECK(unbase64(results[i]["stderr"].get<std::string>()) == native.err);
    }
}

namespace {

// What probe_playground.py (or SCRIPT) saw of PAGE, or null when the browser is not installed.
nlohmann::json probe(const std::string& page, const std::string& options = "",
                     const std::string& script = "probe_playground.py") {
    qkv::test::require_tag("browser");
    const std::string report = page + ".json";
    const auto result = qkv::test::shell("/usr/bin/python3 " + qkv::test::source_dir() + "/tests/browser/" + script +
                                         " " + page + " " + options + " > " + report);
    if (result.status == 3) {
        WARN("chromium, chromium-driver or python3-selenium is missing (./bootstrap test installs them): "
             "the page was not opened in a browser");
        return nullptr;
    }
    INFO(result.out);
    REQUIRE(result.status == 0);
    return nlohmann::json::parse(qkv::test::read_file(report));
}

}  // namespace

TEST_CASE("the playground in Chromium from file://: window.qkv, an error as it is typed, a cell's working, "
          "grading, and the steps without JavaScript", "[browser][cli][documents][playground]") {
    const std::string page = page_of();
    if (page.empty()) {
        return;
    }
    TempDir dir;
    const std::string file = dir.write("playground.html", page);
    const nlohmann::json seen = probe(file);
    if (seen.is_null()) {
        return;
    }
    CHECK(seen["fetched"].empty());
    CHECK(seen["console"].empty());

    // window.qkv gives the command line's results, byte for byte
    const nlohmann::json& api = seen["api"];
    REQUIRE(api.contains("run"));
    const auto same = [](const nlohmann::json& result, const qkv::test::CliResult& native) {
        CHECK(result["status"].get<int>() == native.status);
        CHECK(result["stdout"].get<std::string>() == native.out);
        CHECK(result["stderr"].get<std::string>() == native.err);
    };
    same(api["run"], run_qkv({"run", "illustrated", "-f", "markdown"}));
    same(api["explain"], run_qkv({"explain", "illustrated", "scores[1,2]"}));
    TempDir answers;
    answers.write("answers.yaml", "scores:\n  - [1, 2, 3]\n");
    same(api["check"], run_qkv({{"check", "illustrated", "--answers", "answers.yaml"}, "", answers.path()}));
    same(api["lesson"], run_qkv({"lesson", "1"}));
    same(api["examples"], run_qkv({"examples"}));
    CHECK(api["version"] == QKV_PROJECT_VERSION);
    // and at BERT's size, as the command line computes it
    TempDir bert;
    bert.write("model.yaml", api["bert_yaml"].get<std::string>());
    same(api["bert"], run_qkv({{"run", "model.yaml", "-s", "output"}, "", bert.path()}));

    // a broken line: its message, with the line and column, below the editor
    const std::string error = seen["error"];
    CHECK(error.starts_with("qkv: error: model.yaml:"));
    CHECK(error.find("hint:") != std::string::npos);
    // a cell of the steps opens its arithmetic
    CHECK(seen["cell"]["open"] == true);
    CHECK(seen["cell"]["text"].get<std::string>().find("inputs[1,1] = 1") != std::string::npos);
    // the template holds a place for every answer, and a wrong one is marked
    CHECK(seen["template"].get<std::string>().find("queries:") != std::string::npos);
    const std::string graded = seen["graded"];
    CHECK(graded.find("Checking answers") != std::string::npos);
    CHECK(graded.find("✗") != std::string::npos);
    CHECK(graded.find("1 wrong") != std::string::npos);
    // one wrong weight gets its own diagnosis, worked from the true scores where the learner's queries are wrong
    CHECK(graded.find("weights[1,1]: you wrote 0.2; the true value 0.0634 rounds to 0.1. Each row was divided by "
                      "its sum without exponentiating first.") != std::string::npos);
    // a lesson's questions are answered in the page, and graded as on a terminal
    // or typed into the worksheet's empty tables, a box for every cell of the template
    const std::string sheet = run_ok({"worksheet", "illustrated", "-f", "html"});
    CHECK(seen["table_cells"].get<std::size_t>() == qkv::test::count_of(sheet, "<td class=\"blank\">"));
    CHECK(seen["table_cells"].get<std::size_t>() > 50);
    CHECK(seen["table_cell_label"].get<std::string>().find("Queries") != std::string::npos);
    const std::string tables = seen["graded_tables"];
    CHECK(tables.find("2 answered cells in 1 step: 1 right, 1 wrong") != std::string::npos);
    CHECK(seen["answers_from_tables"].get<std::string>().find("- [1, 5, ~]  # Input 1") != std::string::npos);

    // without JavaScript the example's steps are still there
    const nlohmann::json plain = probe(file, "--no-js");
    REQUIRE_FALSE(plain.is_null());
    const std::string text = plain["static"];
    CHECK(text.find("Scores") != std::string::npos);
    CHECK(text.find("Attention weights") != std::string::npos);
    CHECK(plain["fetched"].empty());

    // inside a notebook's output cell (an <iframe srcdoc>, as the README shows it)
    const nlohmann::json framed = probe(file, "--framed");
    REQUIRE_FALSE(framed.is_null());
    same(framed["framed"], run_qkv({"run", "illustrated", "-f", "json", "-s", "scores"}));
    CHECK(framed["framed_steps"].get<int>() > 1000);
    CHECK(framed["fetched"].empty());
    CHECK(framed["console"].empty());
}

namespace {

bool has(const nlohmann::json& text, const std::string& part) {
    return text.get<std::string>().find(part) != std::string::npos;
}

// The page used as a learner uses it (probe_learning.py), on a wide screen or a phone's.
void learn_in(const std::string& file, const std::string& options) {
    const nlohmann::json seen = probe(file, options, "probe_learning.py");
    if (seen.is_null()) {
        return;
    }
    CHECK(seen["fetched"].empty());
    CHECK(seen["console"].empty());

    // a lesson stops at each question: nothing below it until it is answered
    const auto& first = seen["lesson_first"];
    CHECK(has(first, "What shape will Q have?"));
    CHECK(has(first, "The lesson goes on once you answer"));
    CHECK_FALSE(has(first, "queries is 3 × 3"));
    CHECK_FALSE(has(first, "score of query 2"));
    CHECK(has(seen["shape_right"], "Right."));
    CHECK(has(seen["shape_right"], "queries is 3 × 3"));
    CHECK_FALSE(has(seen["shape_right"], "What weight will query 1"));
    CHECK(seen["scores_before"] == false);
    CHECK(has(seen["scores_wrong"], "Not quite: you wrote 16. That number is scores[2,2], not scores[2,3]."));
    CHECK(has(seen["scores_wrong"], "Try again"));
    CHECK(seen["scores_after_wrong"] == false);
    CHECK(has(seen["scores_right"], "Right."));
    CHECK(seen["scores_after"] == true);
    CHECK_FALSE(has(seen["scores_right"], "0.0634"));

    // the lesson in progress survives a control's change and a reload
    for (const char* when : {"after_control", "after_reload"}) {
        INFO(when);
        CHECK(seen[when]["shown"] == true);
        CHECK(has(seen[when]["text"], "What weight will query 1 give key 1?"));
        CHECK(has(seen[when]["text"], "scores[2,3] = 12"));
        CHECK_FALSE(has(seen[when]["text"], "third number of output 1"));
    }
    CHECK(has(seen["weight_wrong"], "Not quite: you wrote 2/10 = 0.2."));
    CHECK(has(seen["weight_wrong"], "without exponentiating"));
    CHECK_FALSE(has(seen["weight_wrong"], "0.0634"));
    CHECK(has(seen["weight_shown"], "weights[1,1] = 0.0634"));
    CHECK(has(seen["weight_shown"], "third number of output 1"));

    // the end offers the page's own next steps, and no command to type
    CHECK(has(seen["lesson_end"], "Score: 2 of 3 questions right."));
    CHECK(has(seen["lesson_end"], "End of lesson 1."));
    CHECK_FALSE(has(seen["lesson_end"], "qkv "));
    CHECK(seen["end_buttons"] ==
          nlohmann::json::array({"Next lesson: 2 · Why the scores are scaled", "Try it on a fresh example",
                                 "Back to the steps"}));
    CHECK(seen["next_lesson"] == "Lesson 2: Why the scores are scaled");

    // nothing typed is lost
    CHECK(has(seen["graded_tables"], "2 answered cells in 1 step: 1 right, 1 wrong"));
    CHECK(seen["tables_again"] == nlohmann::json::array({"1", "5", ""}));
    CHECK(has(seen["graded"], "weights[1,1]: you wrote 0.2; the true value 0.0634 rounds to 0.1."));
    CHECK_FALSE(has(seen["graded"], "answers.yaml"));
    CHECK_FALSE(has(seen["graded"], "qkv "));
    CHECK(has(seen["working"], "weights[1,1] = 0.063"));
    CHECK(has(seen["working"], "exp(s − max)"));
    CHECK(seen["answers_back"] == "weights:\n  - [0.2, ~, ~]\n  - ~\n  - ~\n");
    CHECK(seen["edit_back"] == "# mine");
    CHECK(seen["own_back"] == "title: my own");
    CHECK(seen["own_reload"] == "title: my own");

    // an unclosed bracket at its own line, marked; the Steps box stays put
    CHECK(has(seen["bracket_error"]["message"],
              "qkv: error: model.yaml:10:5: this [ is never closed (the YAML parser gave up at line 14"));
    CHECK(seen["bracket_error"]["marked"] == "10");
    CHECK(seen["steps_moved"].get<double>() < 1.0);
    CHECK(has(seen["steps_error"], "score"));

    // scores[2,3] lights query 2 and key 3; the scores are shaded
    const nlohmann::json operands = seen["operands"];
    CHECK(operands == nlohmann::json::parse(R"([["queries-h1", 2, 1], ["queries-h1", 2, 2], ["queries-h1", 2, 3],
                                                ["keys-h1", 3, 1], ["keys-h1", 3, 2], ["keys-h1", 3, 3]])"));
    CHECK(seen["shaded_scores"] == 9);

    // the diagram follows the example; several heads get a head view
    const auto& flow = seen["flow"];
    for (const char* name : {"illustrated", "two-heads", "gqa"}) {
        INFO(name);
        std::vector<std::string> steps;
        for (const auto& node : flow[name]["nodes"]) {
            steps.push_back(node[0]);
        }
        for (const char* step : {"inputs", "queries", "keys", "values", "scores", "weights", "head_output", "output"}) {
            CHECK(std::find(steps.begin(), steps.end(), step) != steps.end());
        }
        CHECK(flow[name]["clicked_scrolls"] == true);
    }
    CHECK(flow["illustrated"]["heads"].empty());
    CHECK(flow["two-heads"]["heads"].size() == 2);
    CHECK(flow["gqa"]["heads"].size() == 4);
    bool keys_two_heads = false;
    for (const auto& node : flow["gqa"]["nodes"]) {
        keys_two_heads = keys_two_heads || (node[0] == "keys" && has(node[1], "2"));
    }
    CHECK(keys_two_heads);
    // on a phone the steps, or the link to them, are on the first screen
    CHECK(seen["jump_top"].get<double>() < (options == "--phone" ? 844.0 : 1000.0));
}

// One test case for each screen, so that ctest runs them side by side.
void learn_on(const std::string& options) {
    const std::string page = page_of();
    if (page.empty()) {
        return;
    }
    TempDir dir;
    learn_in(dir.write("playground.html", page), options);
}

}  // namespace

TEST_CASE("the playground as a place to learn at 1400 x 1000: a lesson one question at a time, nothing typed lost, "
          "the page's own next steps, errors at their line, the flow, operands and heads drawn (SPEC 13a)",
          "[browser][cli][documents][playground][slow]") {
    learn_on("");
}

TEST_CASE("the playground as a place to learn on a phone, 390 x 844: the same, and the steps a tap away (SPEC 13a)",
          "[browser][cli][documents][playground][slow]") {
    learn_on("--phone");
}
