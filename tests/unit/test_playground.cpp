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
#include <regex>

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

TEST_CASE("qkv playground writes one page under 1 MB that opens on the example, with nothing to fetch",
          "[cli][playground]") {
    const std::string page = page_of();
    if (page.empty()) {
        return;
    }
    CHECK(page.size() < 1000000);
    CHECK(page.starts_with("<!DOCTYPE html>\n"));
    CHECK(page.ends_with("</html>\n"));
    // nothing outside the page: no src, href, link, import or URL
    CHECK_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=\s*["'][a-z]+:)")));
    CHECK(page.find("<link") == std::string::npos);
    CHECK(page.find("http://") == std::string::npos);
    CHECK(page.find("https://") == std::string::npos);
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

// What probe_playground.py saw of PAGE, or null when the browser is not installed.
nlohmann::json probe(const std::string& page, const std::string& options = "") {
    qkv::test::require_tag("browser");
    const std::string report = page + ".json";
    const auto result = qkv::test::shell("/usr/bin/python3 " + qkv::test::source_dir() +
                                         "/tests/browser/probe_playground.py " + page + " " + options + " > " + report);
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
          "grading, a lesson, and the steps without JavaScript", "[browser][cli][documents][playground]") {
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
    CHECK(seen["lesson"].get<std::string>().starts_with("Lesson 1"));
    CHECK(seen["lesson_questions"].get<int>() > 3);
    CHECK(seen["lesson_boxes"] == seen["lesson_questions"]);
    const std::string wrong = seen["lesson_wrong"];
    CHECK(wrong.find("Not quite: you wrote 2/10 = 0.2.") != std::string::npos);
    CHECK(wrong.find("without exponentiating") != std::string::npos);
    CHECK(wrong.find("Try again") != std::string::npos);
    CHECK(seen["lesson_right"].get<std::string>().find("Right.") != std::string::npos);
    CHECK(seen["lesson_end"].get<std::string>().find("Score: 1 of 1 question right.") != std::string::npos);

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
