// The regression corpus of bad inputs (tests/bad/, described in docs/hardening.md):
// every file and every command line must end with exit status 2, nothing on
// stdout, and exactly the expected `qkv: error:` lines, each with its
// FILE:LINE:COL and at most one hint line after it.
#include "support.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace qkv::test;

namespace {

std::string bad_dir() { return source_dir() + "/tests/bad"; }

std::string trim(std::string text) {
    const auto first = text.find_first_not_of(" \t");
    const auto last = text.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

// Words of a command line; '...' keeps spaces and may be empty.
std::vector<std::string> split_words(const std::string& line) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (i < line.size()) {
        if (line[i] == ' ') {
            ++i;
            continue;
        }
        std::string word;
        if (line[i] == '\'') {
            const std::size_t close = line.find('\'', i + 1);
            REQUIRE(close != std::string::npos);
            word = line.substr(i + 1, close - i - 1);
            i = close + 1;
        } else {
            const std::size_t end = line.find(' ', i);
            word = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
            i = end == std::string::npos ? line.size() : end;
        }
        words.push_back(word);
    }
    return words;
}

struct Expectation {
    std::string error;  // what follows "qkv: error: " (a prefix of the line)
    std::string hint;   // a fragment of the hint line after it; empty = not checked
};

struct Case {
    std::string name;
    CliRun run;
    std::vector<Expectation> expected;
};

// Runs one case and checks the contract of an input error.
void check_case(const Case& c) {
    INFO("case: " << c.name);
    REQUIRE_FALSE(c.expected.empty());
    const CliResult result = run_qkv(c.run);
    INFO("stderr:\n" << result.err);
    INFO("stdout:\n" << result.out.substr(0, 2000));
    CHECK(result.status == 2);
    CHECK(result.out.empty());

    // the lines: an error, then at most one hint; nothing else (no traces, no sanitizer reports)
    std::vector<std::string> errors;
    std::vector<std::string> hints;
    std::istringstream lines(result.err);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("qkv: error: ", 0) == 0) {
            errors.push_back(line.substr(12));
            hints.emplace_back();
        } else if (line.rfind("  hint: ", 0) == 0) {
            INFO("line: " << line);
            REQUIRE_FALSE(errors.empty());
            REQUIRE(hints.back().empty());
            hints.back() = line.substr(8);
        } else {
            FAIL("a line that is neither an error nor a hint: " << line);
        }
    }
    REQUIRE(errors.size() == c.expected.size());
    for (std::size_t i = 0; i < errors.size(); ++i) {
        INFO("error " << i + 1 << ": " << errors[i]);
        INFO("expected to start with: " << c.expected[i].error);
        CHECK(errors[i].rfind(c.expected[i].error, 0) == 0);
        if (!c.expected[i].hint.empty()) {
            INFO("hint: " << hints[i]);
            CHECK(hints[i].find(c.expected[i].hint) != std::string::npos);
        }
    }
}

// A YAML case: its comment lines say how it is run and what it must print.
Case file_case(const fs::path& path) {
    Case c;
    c.name = path.filename().string();
    c.run.cwd = bad_dir();
    std::string command = "run {}";
    std::istringstream text(read_file(path));
    std::string line;
    while (std::getline(text, line) && line.rfind("#", 0) == 0) {
        if (line.rfind("# run: ", 0) == 0) {
            command = trim(line.substr(7));
        } else if (line.rfind("# expect: ", 0) == 0) {
            c.expected.push_back({trim(line.substr(10)), ""});
        } else if (line.rfind("# hint: ", 0) == 0) {
            REQUIRE_FALSE(c.expected.empty());
            c.expected.back().hint = trim(line.substr(8));
        }
    }
    for (auto word : split_words(command)) {
        c.run.args.push_back(word == "{}" ? c.name : word);
    }
    return c;
}

// The lines of commands.txt: ARGS => ERROR [=> HINT]; "< FILE" among the args feeds FILE on stdin.
std::vector<Case> command_cases() {
    std::vector<Case> cases;
    std::istringstream text(read_file(bad_dir() + "/commands.txt"));
    std::string line;
    while (std::getline(text, line)) {
        if (trim(line).empty() || line.rfind("#", 0) == 0) {
            continue;
        }
        const std::size_t arrow = line.find(" => ");
        REQUIRE(arrow != std::string::npos);
        Case c;
        c.name = trim(line.substr(0, arrow));
        c.run.cwd = bad_dir();
        std::string expected = line.substr(arrow + 4);
        std::string hint;
        const std::size_t second = expected.find(" => ");
        if (second != std::string::npos) {
            hint = trim(expected.substr(second + 4));
            expected = expected.substr(0, second);
        }
        c.expected.push_back({trim(expected), hint});
        const auto words = split_words(c.name);
        for (std::size_t i = 0; i < words.size(); ++i) {
            if (words[i] == "<" && i + 1 < words.size()) {
                c.run.input = read_file(bad_dir() + "/" + words[++i]);
            } else {
                c.run.args.push_back(words[i]);
            }
        }
        cases.push_back(c);
    }
    return cases;
}

std::vector<fs::path> yaml_files() {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(bad_dir())) {
        if (entry.path().extension() == ".yaml") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

TEST_CASE("Every bad file of the corpus gives exactly its expected errors", "[bad][slow][cli]") {
    const auto files = yaml_files();
    REQUIRE(files.size() >= 50);
    for (const auto& path : files) {
        DYNAMIC_SECTION(path.filename().string()) {
            const Case c = file_case(path);
            check_case(c);
        }
    }
}

TEST_CASE("Every bad command line of the corpus gives exactly its expected error", "[bad][cli]") {
    const auto cases = command_cases();
    REQUIRE(cases.size() >= 20);
    for (const auto& c : cases) {
        DYNAMIC_SECTION(c.name) { check_case(c); }
    }
}

TEST_CASE("A bad file read from standard input is reported as <stdin> with its positions", "[bad][cli]") {
    CliRun run;
    run.args = {"run", "-"};
    run.input = read_file(bad_dir() + "/ragged-rows.yaml");
    const Case c{"ragged-rows.yaml on stdin", run, {{"<stdin>:6:5: inputs row 2 has 2 numbers; row 1 has 3", ""}}};
    check_case(c);
}

TEST_CASE("A file larger than 64 MiB is refused before it is parsed", "[bad][cli]") {
    const fs::path path = fs::temp_directory_path() / ("qkv-bad-large-" + std::to_string(getpid()) + ".yaml");
    {
        std::ofstream out(path, std::ios::binary);
        const std::string chunk = "# " + std::string(1022, 'x') + "\n";
        for (int i = 0; i < 64 * 1024 + 1; ++i) {
            out << chunk;
        }
    }
    CliRun run;
    run.args = {"run", path.string()};
    const Case c{"a 64 MiB + 1 KiB file", run, {{path.string() + ": is larger than 64 MiB", "{file: m.csv}"}}};
    check_case(c);
    fs::remove(path);
}

TEST_CASE("An endless input such as /dev/zero is cut off at the size limit", "[bad][cli]") {
    CliRun run;
    run.args = {"run", "/dev/zero"};
    const Case c{"run /dev/zero", run, {{"/dev/zero: is larger than 64 MiB", ""}}};
    check_case(c);
}

// ── nothing lost: -o never damages a file, and interruptions leave nothing behind ──

namespace {

// The names of the files in `folder`, sorted.
std::vector<std::string> names_in(const TempFolder& folder) {
    std::vector<std::string> result;
    for (const auto& entry : fs::directory_iterator(folder.path())) {
        result.push_back(entry.path().filename().string());
    }
    std::sort(result.begin(), result.end());
    return result;
}

}  // namespace

TEST_CASE("An existing output file is neither replaced nor touched without --force", "[bad][cli]") {
    const TempFolder folder("bad-out");
    std::ofstream(folder.path() / "out.txt") << "keep me\n";
    CliRun run;
    run.args = {"run", "illustrated", "-o", "out.txt"};
    run.cwd = folder.path().string();
    check_case({"run illustrated -o out.txt", run, {{"out.txt: already exists; not replaced", "--force"}}});
    CHECK(read_file(folder.path() / "out.txt") == "keep me\n");
    CHECK(names_in(folder) == std::vector<std::string>{"out.txt"});
}

TEST_CASE("A bad input with -o leaves no output file and no temporary file", "[bad][cli]") {
    const TempFolder folder("bad-out");
    std::ofstream(folder.path() / "out.txt") << "keep me\n";
    CliRun run;
    run.args = {"run", bad_dir() + "/ragged-rows.yaml", "-o", "out.txt", "--force"};
    run.cwd = folder.path().string();
    check_case({"a bad file with -o --force", run, {{bad_dir() + "/ragged-rows.yaml:6:5: inputs row 2", ""}}});
    CHECK(read_file(folder.path() / "out.txt") == "keep me\n");
    run.args = {"run", bad_dir() + "/ragged-rows.yaml", "-o", "new.txt"};
    check_case({"a bad file with -o", run, {{bad_dir() + "/ragged-rows.yaml:6:5: inputs row 2", ""}}});
    CHECK(names_in(folder) == std::vector<std::string>{"out.txt"});
}

TEST_CASE("With --force the output file is replaced whole and nothing else is left", "[bad][cli]") {
    const TempFolder folder("bad-out");
    std::ofstream(folder.path() / "out.txt") << "old\n";
    CliRun run;
    run.args = {"run", "illustrated", "-o", "out.txt", "--force"};
    run.cwd = folder.path().string();
    const CliResult written = run_qkv(run);
    CHECK(written.status == 0);
    CHECK(written.out.empty());
    CHECK(written.err.empty());
    const CliResult printed = run_qkv({"run", "illustrated"});
    CHECK(read_file(folder.path() / "out.txt") == printed.out);
    CHECK(names_in(folder) == std::vector<std::string>{"out.txt"});
}

TEST_CASE("A pipe closed by its reader ends qkv quietly with status 0", "[bad][cli]") {
    int out_pipe[2];
    REQUIRE(pipe(out_pipe) == 0);
    close(out_pipe[0]);  // the reader is gone before qkv writes
    const TempFolder folder("bad-out");
    const std::string err_path = (folder.path() / "err.txt").string();
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(out_pipe[1], STDOUT_FILENO);
        const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(err_fd, STDERR_FILENO);
        signal(SIGPIPE, SIG_DFL);
        const std::string binary = qkv_binary();
        execl(binary.c_str(), binary.c_str(), "run", "two-heads", "--full", static_cast<char*>(nullptr));
        _exit(127);
    }
    close(out_pipe[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    INFO("stderr: " << read_file(err_path));
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_file(err_path).empty());
}

TEST_CASE("SIGINT during a run with -o leaves no output file and no temporary file", "[bad][cli]") {
    const TempFolder folder("bad-out");
    // big enough to take a moment, small enough for the sanitizer build
    std::ofstream(folder.path() / "big.yaml") << "inputs: {random: {rows: 1500, cols: 16, seed: 1}}\n"
                                              "weights:\n"
                                              "  query: {random: {rows: 16, cols: 16, seed: 2}}\n"
                                              "  key: {random: {rows: 16, cols: 16, seed: 3}}\n"
                                              "  value: {random: {rows: 16, cols: 16, seed: 4}}\n";
    for (const int delay_ms : {20, 80, 200}) {
        CAPTURE(delay_ms);
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            if (chdir(folder.path().c_str()) != 0) {
                _exit(127);
            }
            const int null_fd = open("/dev/null", O_WRONLY);
            dup2(null_fd, STDOUT_FILENO);
            dup2(null_fd, STDERR_FILENO);
            const std::string binary = qkv_binary();
            execl(binary.c_str(), binary.c_str(), "run", "big.yaml", "--full", "-f", "json", "-o", "out.json",
                  static_cast<char*>(nullptr));
            _exit(127);
        }
        usleep(delay_ms * 1000);
        kill(pid, SIGINT);
        int status = 0;
        waitpid(pid, &status, 0);
        const auto names = names_in(folder);
        if (std::find(names.begin(), names.end(), "out.json") != names.end()) {
            // qkv finished before the signal: the file is then whole
            CHECK(WIFEXITED(status));
            CHECK(WEXITSTATUS(status) == 0);
            fs::remove(folder.path() / "out.json");
        } else {
            CHECK(((WIFEXITED(status) && WEXITSTATUS(status) == 130) ||
                   (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)));
        }
        CHECK(names_in(folder) == std::vector<std::string>{"big.yaml"});
    }
}

TEST_CASE("a file with more values than the limit is refused while it is read, not after", "[bad][limits][slow][cli]") {
    // 1,200,000 one-number lines: past the limit of 1,048,576 values, which the
    // event pass counts before any tree is built
    std::string input = "inputs:\n";
    for (int i = 0; i < 1200000; ++i) {
        input += "- 1\n";
    }
    const CliResult result = run_qkv({"run", "-"}, input);
    CHECK(result.status == 2);
    CHECK(result.out.empty());
    CHECK(result.err.rfind("qkv: error: <stdin>:", 0) == 0);
    CHECK(result.err.find("the document holds more than 1048576 values") != std::string::npos);
    CHECK(result.err.find("hint: write a large matrix as {file: m.csv}") != std::string::npos);
}

TEST_CASE("lines ended by a lone carriage return read like any other lines", "[bad][yaml][cli]") {
    const std::string input = "inputs: [[1, 0], [0, 1]]\rweights:\r  query: [[1], [1]]\r  key: [[1], [1]]\r"
                              "  value: [[2], [3]]\rscale: none\r";
    const CliResult result = run_qkv({"run", "-", "-f", "csv", "-s", "head_output"}, input);
    INFO(result.err);
    CHECK(result.status == 0);
    // both tokens attend equally (scores 1 and 1), so each output is (2 + 3) / 2
    CHECK(result.out.find("head_output,1,1,1,x1,d1,2.5") != std::string::npos);
    CHECK(result.out.find("head_output,1,2,1,x2,d1,2.5") != std::string::npos);
}

TEST_CASE("the memory estimate counts only the n × m matrices that will be kept", "[bad][limits][cli]") {
    // 4096 tokens and 16 heads: keeping the scores and weights of every head
    // would take 16 · 2 · 4096² doubles (4 GiB and more); the output alone needs little
    const std::string input = "inputs: {random: {rows: 4096, cols: 64, seed: 1}}\nheads: 16\nweights:\n"
                              "  query: {random: {rows: 64, cols: 64, seed: 2}}\n"
                              "  key: {random: {rows: 64, cols: 64, seed: 3}}\n"
                              "  value: {random: {rows: 64, cols: 64, seed: 4}}\n";
    const CliResult all = run_qkv({"run", "-", "-f", "csv", "-s", "scores,weights"}, input);
    CHECK(all.status == 2);
    CHECK(all.err.find("the computation needs about") != std::string::npos);
    const CliResult output = run_qkv({"run", "-", "-f", "csv", "-s", "output"}, input);
    INFO(output.err);
    CHECK(output.status == 0);
    CHECK(output.out.rfind("step,head,row,col,row_label,col_label,value\noutput,,1,1,", 0) == 0);
}
