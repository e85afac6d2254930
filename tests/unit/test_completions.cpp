// The shell completions the build writes (`qkv generate`, from the command
// line's table) offer every option that `qkv COMMAND --help` lists, and
// bash's, zsh's and fish's complete subcommands, options, step ids and
// example names when the shells run them.
// (tests/install_check.cmake checks that `cmake --install` puts them in place.)
#include "builtin/builtin.hpp"
#include "support.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using qkv::test::lines_of;
using qkv::test::run_qkv;

namespace {

struct ShellResult {
    int status = -1;
    std::string out;
};

// Runs SCRIPT with SHELL (bash, zsh, fish) from a temporary file; stdout and stderr together.
ShellResult run_script(const std::string& shell, const std::string& script) {
    static int count = 0;
    const fs::path path =
        fs::temp_directory_path() / ("qkv-completion-" + std::to_string(::getpid()) + "-" + std::to_string(++count));
    std::ofstream(path) << script;
    ShellResult result;
    FILE* pipe = popen((shell + " " + path.string() + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    while (const std::size_t got = fread(buffer, 1, sizeof buffer, pipe)) {
        result.out.append(buffer, got);
    }
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    fs::remove(path);
    return result;
}

bool has_shell(const std::string& shell) {
    return run_script("sh", "command -v " + shell + " >/dev/null").status == 0;
}

std::string completion(const std::string& file) { return std::string(QKV_COMPLETIONS) + "/" + file; }

std::string read_completion(const std::string& file) {
    const std::string text = qkv::test::read_file(completion(file));
    REQUIRE(!text.empty());
    return text;
}

// What bash's _qkv offers for LINE (the words so far, the last one being completed), one per line.
std::vector<std::string> bash_complete(const std::string& line) {
    const auto result = run_script("bash", "source '" + completion("qkv.bash") + "'\n" +
                                               "line='" + line + "'\n"
                                               "read -ra COMP_WORDS <<< \"$line\"\n"
                                               "[[ $line == *' ' ]] && COMP_WORDS+=('')\n"
                                               "COMP_LINE=$line\n"
                                               "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                                               "_qkv\n"
                                               "printf '%s\\n' \"${COMPREPLY[@]}\"\n");
    CAPTURE(line, result.out);
    REQUIRE(result.status == 0);
    std::vector<std::string> words;
    std::istringstream lines(result.out);
    for (std::string word; std::getline(lines, word);) {
        if (!word.empty()) {
            words.push_back(word);
        }
    }
    return words;
}

bool contains(const std::vector<std::string>& words, const std::string& word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

}  // namespace

TEST_CASE("bash completes every option that each subcommand's --help lists", "[completions][cli]") {
    const auto names = qkv::test::subcommands();
    REQUIRE(names.size() >= 7);
    const auto commands = bash_complete("qkv ");
    for (const auto& name : names) {
        CAPTURE(name);
        CHECK(contains(commands, name));
        const auto help = run_qkv({name, "--help"});
        REQUIRE(help.status == 0);
        const auto offered = bash_complete("qkv " + name + " -");
        for (const auto& option : qkv::test::help_options(help.out)) {
            CAPTURE(option);
            CHECK(contains(offered, option));
        }
    }
    const auto top = bash_complete("qkv -");
    for (const auto& option : qkv::test::help_options(run_qkv({"--help"}).out)) {
        CAPTURE(option);
        CHECK(contains(top, option));
    }
}

TEST_CASE("bash completes step ids, formats, example and lesson names", "[completions][cli]") {
    const auto steps = bash_complete("qkv run -s ");
    for (const auto& id : qkv::step_names()) {
        CAPTURE(id);
        CHECK(contains(steps, id));
    }
    CHECK(bash_complete("qkv explain illustrated -s scores,wei") == std::vector<std::string>{"scores,weights"});
    CHECK(bash_complete("qkv run -f la") == std::vector<std::string>{"latex"});
    CHECK(bash_complete("qkv bench --format ") == std::vector<std::string>{"text", "json"});
    CHECK(bash_complete("qkv worksheet masked -f ") == std::vector<std::string>{"markdown", "latex", "html", "yaml"});
    // explain, check and lesson write LaTeX too, and take --standalone with it
    CHECK(bash_complete("qkv explain masked -f la") == std::vector<std::string>{"latex"});
    CHECK(bash_complete("qkv check masked -f la") == std::vector<std::string>{"latex"});
    CHECK(bash_complete("qkv lesson 1 -f ") == std::vector<std::string>{"text", "markdown", "latex", "html"});
    for (const std::string command : {"explain", "check", "lesson"}) {
        CAPTURE(command);
        CHECK(bash_complete("qkv " + command + " --stand") == std::vector<std::string>{"--standalone"});
    }
    CHECK(bash_complete("qkv run --dec") == std::vector<std::string>{"--decode"});
    CHECK(bash_complete("qkv init --scale ") == std::vector<std::string>{"sqrt_dk", "none"});
    CHECK(bash_complete("qkv init --mask c") == std::vector<std::string>{"causal"});
    CHECK(bash_complete("qkv explain illustrated scaled_") == std::vector<std::string>{"scaled_scores["});

    // the names come from the qkv being completed: `qkv examples`, `qkv lesson`
    const std::string qkv = qkv::test::qkv_binary();
    const auto examples = bash_complete(qkv + " run ");
    for (const auto& example : qkv::builtin_examples()) {
        CAPTURE(example.name);
        CHECK(contains(examples, std::string(example.name)));
    }
    const auto lessons = bash_complete(qkv + " lesson ");
    for (const auto& lesson : qkv::builtin_lessons()) {
        CAPTURE(lesson.name);
        CHECK(contains(lessons, std::string(lesson.name)));
    }
}

TEST_CASE("the zsh and fish completions name every option that --help lists", "[completions][cli]") {
    const std::string zsh = read_completion("_qkv");
    const std::string fish = read_completion("qkv.fish");
    auto names = qkv::test::subcommands();
    names.push_back("");
    for (const auto& name : names) {
        CAPTURE(name);
        if (!name.empty()) {
            CHECK(zsh.find("'" + name + ":") != std::string::npos);
            CHECK(fish.find("-a " + name + " ") != std::string::npos);
        }
        const auto help = name.empty() ? run_qkv({"--help"}) : run_qkv({name, "--help"});
        for (const auto& option : qkv::test::help_options(help.out)) {
            CAPTURE(option);
            // zsh: '--format[' or {-f,--format}; fish: -l format, -s f
            const bool long_option = option.starts_with("--");
            CHECK((zsh.find(option + "[") != std::string::npos || zsh.find(option + ",") != std::string::npos ||
                   zsh.find(option + "}") != std::string::npos));
            CHECK(fish.find((long_option ? "-l " : "-s ") + option.substr(long_option ? 2 : 1) + " ") !=
                  std::string::npos);
        }
    }
}

TEST_CASE("the zsh completion parses and fish's completes subcommands and options", "[completions][cli]") {
    if (has_shell("zsh")) {
        const auto parsed = run_script("zsh", "zsh -n '" + completion("_qkv") + "'");
        CAPTURE(parsed.out);
        CHECK(parsed.status == 0);
    } else {
        WARN("zsh is not installed: the zsh completion's syntax is not checked");
    }
    if (!has_shell("fish")) {
        WARN("fish is not installed: the fish completion is not checked");
        return;
    }
    const auto fish = run_script("fish", "source '" + completion("qkv.fish") + "'\n" +
                                             "complete -C 'qkv ex'\n"
                                             "complete -C 'qkv run --dec'\n"
                                             "complete -C 'qkv bench -f '\n"
                                             "complete -C 'qkv run -s scores,wei'\n");
    CAPTURE(fish.out);
    CHECK(fish.status == 0);
    CHECK(fish.out.find("examples\t") != std::string::npos);
    CHECK(fish.out.find("explain\t") != std::string::npos);
    CHECK(fish.out.find("--decode\t") != std::string::npos);
    CHECK(fish.out.find("json\t") != std::string::npos);
    CHECK(fish.out.find("latex\t") == std::string::npos);
    CHECK(fish.out.find("scores,weights\t") != std::string::npos);
}

namespace {

// What zsh's _qkv hands to _arguments (one spec a line) for the words WORDS,
// or to _describe for the commands: zsh runs the completion with those
// functions replaced by ones that print their arguments.
std::string zsh_offers(const std::string& state, const std::string& words) {
    const auto result = run_script("zsh", "emulate zsh\n"
                                          "_arguments() { if [[ $1 == -C ]]; then state=$QKV_STATE; return 0; fi; "
                                          "print -rl -- \"$@\"; }\n"
                                          "_describe() { print -rl -- \"${(@P)4}\"; }\n"
                                          "_values() { shift 3; print -rl -- \"$@\"; }\n"
                                          "compadd() { print -rl -- \"${(@P)${@[-1]}}\"; }\n"
                                          "source '" + completion("_qkv") + "' >/dev/null 2>&1\n"
                                          "QKV_STATE=" + state + "\nwords=(" + words + ")\n"
                                          "print -- '-- offered'\n_qkv\n");
    CAPTURE(state, words, result.out);
    REQUIRE(result.status == 0);
    const auto start = result.out.find("-- offered\n");
    REQUIRE(start != std::string::npos);
    return result.out.substr(start + 11);
}

}  // namespace

TEST_CASE("zsh's completion offers every command, each command's every option and every step id", "[completions][cli]") {
    if (!has_shell("zsh")) {
        WARN("zsh is not installed: the zsh completion is not run");
        return;
    }
    const auto names = qkv::test::subcommands();
    const auto commands = lines_of(zsh_offers("command", ""));
    for (const auto& name : names) {
        CAPTURE(name);
        CHECK(std::any_of(commands.begin(), commands.end(),
                          [&name](const std::string& line) { return line.starts_with(name + ":"); }));
        const auto specs = lines_of(zsh_offers("argument", name));
        for (const auto& option : qkv::test::help_options(run_qkv({name, "--help"}).out)) {
            CAPTURE(option);
            // (-f --format)-f[Output format]:FORMAT:(...), --full[...], *--answers[...]
            CHECK(std::any_of(specs.begin(), specs.end(), [&option](const std::string& spec) {
                const auto at = spec.find(option + "[");
                return at != std::string::npos && (at == 0 || spec[at - 1] == ')' || spec[at - 1] == '*');
            }));
        }
    }
    const std::string run = zsh_offers("argument", "run");
    CHECK(run.find("--format[Output format]:FORMAT:(text markdown latex csv json svg html)") != std::string::npos);
    CHECK(run.find("1::Example file, built-in example name, or - for stdin:_qkv_examples") != std::string::npos);
    CHECK(zsh_offers("argument", "worksheet").find(":FORMAT:(markdown latex html yaml)") != std::string::npos);
    CHECK(zsh_offers("argument", "check").find("*--answers[") != std::string::npos);
    CHECK(zsh_offers("argument", "explain").find("*:Cells") != std::string::npos);

    const auto steps = run_script("zsh", "emulate zsh\n_values() { shift 3; print -rl -- \"$@\"; }\n"
                                         "compadd() { print -rl -- \"${(@P)${@[-1]}}\"; }\n"
                                         "_arguments() { :; }\n"
                                         "source '" + completion("_qkv") + "' >/dev/null 2>&1\n"
                                         "print -- '-- steps'\n_qkv_steps\nprint -- '-- cells'\n_qkv_cells\n");
    REQUIRE(steps.status == 0);
    const auto ids = lines_of(steps.out.substr(steps.out.find("-- steps\n") + 9));
    for (const auto& id : qkv::step_names()) {
        CAPTURE(id);
        CHECK(std::count(ids.begin(), ids.end(), id) == 2);  // in --steps and in explain's cells
    }
}

TEST_CASE("fish's completion offers each command's every option", "[completions][cli]") {
    if (!has_shell("fish")) {
        WARN("fish is not installed: the fish completion is not run");
        return;
    }
    for (const auto& name : qkv::test::subcommands()) {
        CAPTURE(name);
        const auto offered = run_script("fish", "source '" + completion("qkv.fish") + "'\n" +
                                                    "complete -C 'qkv " + name + " --'\n"
                                                    "complete -C 'qkv " + name + " -'\n");
        REQUIRE(offered.status == 0);
        for (const auto& option : qkv::test::help_options(run_qkv({name, "--help"}).out)) {
            CAPTURE(option);
            CHECK(("\n" + offered.out).find("\n" + option + "\t") != std::string::npos);
        }
    }
    const auto steps = run_script("fish", "source '" + completion("qkv.fish") + "'\ncomplete -C 'qkv run -s '\n");
    for (const auto& id : qkv::step_names()) {
        CAPTURE(id);
        CHECK(steps.out.find(id + "\t") != std::string::npos);
    }
}
