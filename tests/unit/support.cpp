#include "support.hpp"

#include "io/answers.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace qkv::test {

StepId step(std::string_view name) {
    const auto id = find_step(name);
    if (!id) {
        FAIL("not a step id: " << name);
    }
    return *id;
}

namespace {
// A child that exits before reading its input must not kill the test run.
const bool k_ignore_sigpipe = (std::signal(SIGPIPE, SIG_IGN), true);
}  // namespace

std::string source_dir() { return QKV_SOURCE_DIR; }
namespace {
// QKV_TEST_BINARY, when set, runs qkv in place of the one built: a wrapper
// that starts it under an emulator (scripts/arm64-check).
const char* binary_path() {
    const char* wrapper = std::getenv("QKV_TEST_BINARY");
    return wrapper != nullptr && wrapper[0] != '\0' ? wrapper : QKV_BINARY;
}
}  // namespace

std::string qkv_binary() {
    require_tag("cli");
    return binary_path();
}

namespace {
const pid_t k_test_process = getpid();
}  // namespace

void require_tag(const std::string& tag) {
    const auto* tags = running_test_tags();
    if (tags == nullptr || std::find(tags->begin(), tags->end(), tag) != tags->end()) {
        return;
    }
    const std::string message =
        "this test needs the tag [" + tag + "]: CTest's labels come from the tags (README, Testing)";
    if (getpid() != k_test_process) {
        // a forked child has no test to fail: it must not go on to run the other tests
        std::fprintf(stderr, "%s\n", message.c_str());
        _exit(127);
    }
    FAIL(message);
}

std::vector<std::string> subcommands() {
    const auto help = run_qkv({"--help"});
    REQUIRE(help.status == 0);
    std::vector<std::string> names;
    const auto start = help.out.find("Subcommands:");
    REQUIRE(start != std::string::npos);
    std::istringstream lines(help.out.substr(start));
    std::string line;
    std::getline(lines, line);
    const std::regex entry("^  ([a-z]+) ");
    while (std::getline(lines, line) && !line.empty()) {
        std::smatch match;
        if (std::regex_search(line, match, entry)) {
            names.push_back(match[1]);
        }
    }
    return names;
}

std::set<std::string> help_options(const std::string& help) {
    std::set<std::string> options;
    const std::regex option("(^|[ ,])(--?[a-z][a-z-]*)");
    for (auto it = std::sregex_iterator(help.begin(), help.end(), option); it != std::sregex_iterator(); ++it) {
        options.insert((*it)[2]);
    }
    return options;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

std::string read_repo_file(const std::string& relative) {
    std::ifstream in(source_dir() + "/" + relative, std::ios::binary);
    if (!in) {
        FAIL("cannot read " << relative);
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Model load_text(const std::string& yaml, const std::string& name) { return load_model({name, yaml, ""}); }

Trace compute_text(const std::string& yaml) { return compute(load_text(yaml)); }

void exec_qkv(const std::vector<std::string>& args) {
    // not qkv_binary(): a forked child has no test to fail
    std::vector<std::string> storage{binary_path()};
    storage.insert(storage.end(), args.begin(), args.end());
    if (std::getenv("QKV_THREADS") == nullptr && std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
        setenv("QKV_THREADS", "2", 1);  // see CliRun
    }
    std::vector<char*> argv;
    for (auto& arg : storage) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
}

namespace {

// The program, its arguments and its environment for RUN: the tests' own
// environment, with qkv's threads as CliRun says and RUN's variables on top.
struct Command {
    std::vector<std::string> strings;  // the program and its arguments, then the environment
    std::vector<char*> argv;
    std::vector<char*> envp;
};

Command command_of(const CliRun& run) {
    std::map<std::string, std::string> environment;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string text = *entry;
        const auto equals = text.find('=');
        if (equals != std::string::npos) {
            environment[text.substr(0, equals)] = text.substr(equals + 1);
        }
    }
    if (run.env.count("QKV_THREADS") == 0 && run.env.count("OPENBLAS_NUM_THREADS") == 0) {
        environment["QKV_THREADS"] = "2";
    } else if (run.env.count("QKV_THREADS") == 0) {
        environment.erase("QKV_THREADS");
    }
    for (const auto& [name, value] : run.env) {
        environment[name] = value;
    }
    Command command;
    command.strings.push_back(run.binary.empty() ? std::string(binary_path()) : run.binary);
    command.strings.insert(command.strings.end(), run.args.begin(), run.args.end());
    const std::size_t arguments = command.strings.size();
    for (const auto& [name, value] : environment) {
        command.strings.push_back(name + "=" + value);
    }
    for (std::size_t i = 0; i < command.strings.size(); ++i) {
        (i < arguments ? command.argv : command.envp).push_back(command.strings[i].data());
    }
    command.argv.push_back(nullptr);
    command.envp.push_back(nullptr);
    return command;
}

// Starts COMMAND as RUN says with posix_spawn, which (unlike fork) copies
// nothing of the test process, not even the page tables of
// AddressSanitizer's shadow memory. A limit on the address space needs fork
// (run_qkv).
pid_t spawn_qkv(const CliRun& run, Command& command, int in_pipe[2], int out_pipe[2], int err_pipe[2]) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
        posix_spawn_file_actions_addclose(&actions, fd);
    }
    if (!run.cwd.empty()) {
        posix_spawn_file_actions_addchdir_np(&actions, run.cwd.c_str());
    }
    pid_t pid = -1;
    const int error =
        posix_spawn(&pid, command.argv[0], &actions, nullptr, command.argv.data(), command.envp.data());
    posix_spawn_file_actions_destroy(&actions);
    return error == 0 ? pid : -1;
}

}  // namespace

CliResult run_qkv(const CliRun& run) {
    require_tag("cli");
    int in_pipe[2];
    int out_pipe[2];
    int err_pipe[2];
    REQUIRE(pipe(in_pipe) == 0);
    REQUIRE(pipe(out_pipe) == 0);
    REQUIRE(pipe(err_pipe) == 0);
    Command spawned = command_of(run);
    const pid_t pid = run.address_limit == 0 ? spawn_qkv(run, spawned, in_pipe, out_pipe, err_pipe) : fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(in_pipe[0], STDIN_FILENO);
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
            close(fd);
        }
        if (!run.cwd.empty() && chdir(run.cwd.c_str()) != 0) {
            _exit(127);
        }
        if (run.address_limit > 0) {
            const rlimit limit{run.address_limit, run.address_limit};
            if (setrlimit(RLIMIT_AS, &limit) != 0) {
                _exit(127);
            }
        }
        execve(spawned.argv[0], spawned.argv.data(), spawned.envp.data());
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    // Feed stdin and drain stdout/stderr together, so that no pipe fills up.
    fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
    std::size_t fed = 0;
    if (run.input.empty()) {
        close(in_pipe[1]);
        in_pipe[1] = -1;
    }
    CliResult result;
    int out_fd = out_pipe[0];
    int err_fd = err_pipe[0];
    // another qkv (QKV_TEST_BINARY: scripts/arm64-check's, under qemu) runs
    // many times slower: it gets ten times as long
    const int seconds = std::getenv("QKV_TEST_BINARY") != nullptr ? 10 * run.seconds : run.seconds;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (out_fd >= 0 || err_fd >= 0) {
        pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {in_pipe[1], POLLOUT, 0}};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                std::chrono::steady_clock::now());
        if (left.count() <= 0 || poll(fds, 3, static_cast<int>(left.count())) <= 0) {
            result.timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        char buffer[65536];
        for (int k = 0; k < 2; ++k) {
            int& fd = k == 0 ? out_fd : err_fd;
            if (fd >= 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
                const ssize_t got = read(fd, buffer, sizeof buffer);
                if (got <= 0) {
                    close(fd);
                    fd = -1;
                } else {
                    (k == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(got));
                }
            }
        }
        if (in_pipe[1] >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            const ssize_t wrote = write(in_pipe[1], run.input.data() + fed, run.input.size() - fed);
            if (wrote > 0) {
                fed += static_cast<std::size_t>(wrote);
            }
            if (wrote < 0 || fed == run.input.size()) {
                close(in_pipe[1]);
                in_pipe[1] = -1;
            }
        }
    }
    for (int fd : {in_pipe[1], out_fd, err_fd}) {
        if (fd >= 0) {
            close(fd);
        }
    }
    // it may still be running with its output closed
    int status = 0;
    rusage usage{};
    while (wait4(pid, &status, WNOHANG, &usage) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            result.timed_out = true;
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, &usage);
            break;
        }
        usleep(2000);
    }
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.peak_kib = static_cast<std::uint64_t>(usage.ru_maxrss);
    std::string command = "qkv";
    for (const auto& arg : run.args) {
        command += " " + arg;
    }
    INFO(command << " ran out of its time (CliRun::seconds, " << run.seconds << " s natively)");
    CHECK_FALSE(result.timed_out);
    return result;
}

CliResult run_qkv(const std::vector<std::string>& args, const std::string& input) {
    CliRun run;
    run.args = args;
    run.input = input;
    return run_qkv(run);
}

std::string run_ok(const std::vector<std::string>& args, const std::string& input) {
    const auto result = run_qkv(args, input);
    INFO("qkv " << (args.empty() ? "" : args.front()) << "\nstderr: " << result.err);
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());
    return result.out;
}

Shell shell(const std::string& command) {
    require_tag("documents");
    Shell result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    std::size_t got = 0;
    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        result.out.append(buffer, got);
    }
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

TempDir::TempDir() {
    char name[] = "/tmp/qkv-test-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    m_path = name;
}

TempDir::~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(m_path, error);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
    const std::string file = m_path + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    return file;
}

void check_golden(const std::string& name, const std::string& actual) {
    const std::string path = source_dir() + "/tests/golden/" + name;
    const char* update = std::getenv("QKV_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1") {
        std::ofstream(path, std::ios::binary) << actual;
        return;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        FAIL("golden file tests/golden/" << name << " is missing; run with QKV_UPDATE_GOLDEN=1 to create it");
    }
    std::ostringstream expected;
    expected << in.rdbuf();
    if (expected.str() != actual) {
        FAIL("output differs from tests/golden/" << name << "\n--- expected ---\n"
                                                 << expected.str() << "\n--- got ---\n"
                                                 << actual);
    }
    SUCCEED("matches tests/golden/" << name);
}

void require_near(const arma::mat& actual, const arma::mat& expected, double eps, const std::string& what) {
    INFO(what);
    REQUIRE(actual.n_rows == expected.n_rows);
    REQUIRE(actual.n_cols == expected.n_cols);
    for (arma::uword i = 0; i < expected.n_rows; ++i) {
        for (arma::uword j = 0; j < expected.n_cols; ++j) {
            const double a = actual(i, j);
            const double e = expected(i, j);
            if (std::isinf(e) || std::isinf(a)) {
                if (a != e) {
                    FAIL(what << "[" << i + 1 << "," << j + 1 << "] is " << a << "; expected " << e);
                }
                continue;
            }
            const double difference = std::fabs(a - e);
            if (!(difference <= eps || difference <= eps * std::fabs(e))) {
                FAIL(what << "[" << i + 1 << "," << j + 1 << "] is " << a << "; expected " << e << " (difference "
                          << difference << ", tolerance " << eps << ")");
            }
        }
    }
    SUCCEED(what << " agrees within " << eps);
}

arma::mat rows(std::initializer_list<std::initializer_list<double>> values) {
    const arma::uword n_rows = values.size();
    const arma::uword n_cols = values.begin()->size();
    arma::mat result(n_rows, n_cols);
    arma::uword i = 0;
    for (const auto& row : values) {
        REQUIRE(row.size() == n_cols);
        arma::uword j = 0;
        for (const double value : row) {
            result(i, j++) = value;
        }
        ++i;
    }
    return result;
}

void require_input_error(const CliResult& result, const std::string& fragment) {
    INFO("stderr: " << result.err);
    INFO("stdout: " << result.out);
    CHECK(result.status == 2);
    CHECK(result.out.empty());
    REQUIRE(result.err.rfind("qkv: error: ", 0) == 0);
    CHECK(result.err.find(fragment) != std::string::npos);
    // every line is an error line or its hint: no stack traces, no sanitizer reports
    std::istringstream lines(result.err);
    std::string line;
    while (std::getline(lines, line)) {
        const bool error_line = line.rfind("qkv: error: ", 0) == 0;
        const bool hint_line = line.rfind("  hint: ", 0) == 0;
        CHECK((error_line || hint_line));
    }
}

namespace {

std::string reference_folder() { return std::string(source_dir()) + "/tests/reference/cases"; }

// rows of numbers, with "-inf" for −∞
arma::mat reference_matrix(const nlohmann::json& rows_json) {
    arma::mat result(rows_json.size(), rows_json.at(0).size());
    for (std::size_t i = 0; i < rows_json.size(); ++i) {
        for (std::size_t j = 0; j < rows_json[i].size(); ++j) {
            const auto& cell = rows_json[i][j];
            result(i, j) = cell.is_string() && cell.get<std::string>() == "-inf" ? -arma::datum::inf
                                                                                  : cell.get<double>();
        }
    }
    return result;
}

}  // namespace

std::vector<std::string> reference_cases() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(reference_folder())) {
        if (entry.path().extension() == ".yaml") {
            names.push_back(entry.path().stem().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

Model load_reference_case(const std::string& name) {
    return load_model({name + ".yaml", read_repo_file("tests/reference/cases/" + name + ".yaml"), reference_folder()});
}

int require_reference(const Trace& trace, const std::string& name) {
    const auto expected = nlohmann::json::parse(read_repo_file("tests/reference/cases/" + name + ".expected.json"));
    const auto heads = expected.at("heads").get<arma::uword>();
    const auto kv_heads = expected.at("kv_heads").get<arma::uword>();
    REQUIRE(trace.dims.heads == heads);
    REQUIRE(trace.dims.kv_heads == kv_heads);
    CHECK_THAT(trace.scale, Catch::Matchers::WithinRel(expected.at("scale").get<double>(), 1e-15));
    int compared = 0;
    for (const auto& [id_text, values] : expected.at("steps").items()) {
        const auto id = find_step(id_text);
        INFO(name << ": step " << id_text);
        REQUIRE(id.has_value());
        // a list of matrices (three levels deep) is per head; the weights' gradients are when the file lists its heads
        const bool per_head = values.at(0).at(0).is_array();
        CHECK(per_head == is_per_head(*id, trace.dims));
        if (!per_head) {
            const Step* step = trace.find(*id);
            REQUIRE(step != nullptr);
            require_near(step->values, reference_matrix(values), 1e-12, name + ": " + id_text);
            ++compared;
            continue;
        }
        REQUIRE(values.size() == (is_per_kv_head(*id) ? kv_heads : heads));
        for (std::size_t h = 1; h <= values.size(); ++h) {
            const Step* step = trace.find(*id, static_cast<int>(h));
            REQUIRE(step != nullptr);
            require_near(step->values, reference_matrix(values[h - 1]), 1e-12,
                         name + ": " + id_text + " head " + std::to_string(h));
            ++compared;
        }
    }
    return compared;
}

std::string first_diagnosis(const std::string& check_json) {
    const auto report = nlohmann::json::parse(check_json);
    const auto& step = report.at("steps").at(0);
    if (step.contains("diagnosis_id") && step["diagnosis_id"].is_string()) {
        return step["diagnosis_id"];
    }
    for (const auto& cell : step.at("cells")) {
        if (cell.contains("diagnosis_id") && cell["diagnosis_id"].is_string()) {
            return cell["diagnosis_id"];
        }
    }
    return "";
}

// A matrix as an answer: [[1.2346, -inf], ...] with `decimals` digits.
std::string yaml_matrix(const arma::mat& M, int decimals) {
    std::string text = "[";
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        text += i == 0 ? "[" : ", [";
        for (arma::uword j = 0; j < M.n_cols; ++j) {
            char buffer[64];
            if (std::isinf(M(i, j))) {
                std::snprintf(buffer, sizeof buffer, "%s", M(i, j) < 0 ? "-inf" : "inf");
            } else {
                std::snprintf(buffer, sizeof buffer, "%.*f", decimals, M(i, j));
            }
            text += (j == 0 ? "" : ", ") + std::string(buffer);
        }
        text += "]";
    }
    return text + "]";
}

// `id: [[...]]`, under answers.heads when the example has several heads (per-kv-head steps are
// numbered by key/value head there).
std::string answer_yaml(const std::string& id, int head, int n_heads, const arma::mat& M, int decimals) {
    if (head == 0 || n_heads == 1) {
        return id + ": " + yaml_matrix(M, decimals) + "\n";
    }
    std::string heads = "heads: [";
    for (int h = 1; h < head; ++h) {
        heads += "~, ";
    }
    return heads + "{" + id + ": " + yaml_matrix(M, decimals) + "}]\n";
}


std::string init_text(const std::vector<std::string>& options) {
    std::vector<std::string> args = {"init"};
    args.insert(args.end(), options.begin(), options.end());
    const auto result = run_qkv(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.status == 0);
    REQUIRE(result.err.empty());
    return result.out;
}

Answers answers_from(const std::string& yaml, const Trace& trace) {
    return read_answers({"answers.yaml", yaml, ""}, trace, AnswersIn::answer_file);
}

TempFolder::TempFolder(const std::string& purpose) {
    static int count = 0;
    m_path = std::filesystem::temp_directory_path() /
             ("qkv-" + purpose + "-" + std::to_string(::getpid()) + "-" + std::to_string(++count));
    std::filesystem::create_directories(m_path);
}

TempFolder::~TempFolder() {
    std::error_code error;
    std::filesystem::remove_all(m_path, error);
}

std::string TempFolder::add(const std::string& name, const std::string& text) const {
    std::ofstream(m_path / name) << text;
    return (m_path / name).string();
}

void require_self_contained_page(const std::string& page) {
    CHECK(page.starts_with("<!DOCTYPE html>\n"));
    CHECK(page.find("<meta charset=\"utf-8\"/>") != std::string::npos);
    CHECK(page.ends_with("</html>\n"));
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("<link") == std::string::npos);
    CHECK(page.find("<img") == std::string::npos);
    CHECK(page.find("@import") == std::string::npos);
    CHECK(page.find("url(") == std::string::npos);
    CHECK_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=)")));
    std::map<std::string, int> ids;
    const std::regex id(" id=\"([^\"]*)\"");
    for (auto it = std::sregex_iterator(page.begin(), page.end(), id); it != std::sregex_iterator(); ++it) {
        ++ids[(*it)[1]];
    }
    for (const auto& [name, count] : ids) {
        CAPTURE(name);
        CHECK(count == 1);
    }
}

std::string readme_pandoc_command(const std::string& marker) {
    std::istringstream readme(read_repo_file("README.md"));
    std::string line;
    while (std::getline(readme, line)) {
        const std::size_t at = line.find("pandoc ");
        if (line.find(marker) == std::string::npos || at == std::string::npos) {
            continue;
        }
        std::string command = line.substr(at);
        const std::size_t output = command.find(" -o ");
        return output == std::string::npos ? command : command.substr(0, output);
    }
    FAIL("README.md has no pandoc command with " + marker);
    return "";
}

bool tool_installed(const std::string& tool, const std::string& package, const std::string& unchecked) {
    const bool tex_file = tool.size() > 4 && tool.compare(tool.size() - 4, 4, ".sty") == 0;
    if (shell((tex_file ? "kpsewhich " : "command -v ") + tool).status == 0) {
        return true;
    }
    WARN(tool + " is not installed (" + package + "): " + unchecked);
    return false;
}

void require_html_parses(const std::string& page) {
    if (!tool_installed("xmllint", "libxml2-utils", "the page's markup is not parsed")) {
        return;
    }
    TempDir dir;
    const Shell lint = shell("xmllint --noout " + dir.write("page.html", page));
    INFO(lint.out);
    CHECK(lint.status == 0);
    CHECK(lint.out.empty());
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) {
        ++count;
    }
    return count;
}

}  // namespace qkv::test
