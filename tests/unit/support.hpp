// Shared helpers for the test suite: loading YAML text, running the qkv binary
// as a user would, golden files, and matrix comparison.
#pragma once

#include "attention/attention.hpp"
#include "attention/steps.hpp"
#include "check/answers.hpp"
#include "io/loader.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace qkv {

// Tests name steps as users write them: step == "scores".
inline bool operator==(StepId id, std::string_view name) { return step_name(id) == name; }

}  // namespace qkv

namespace qkv::test {

// The step a test names ("scores"); fails the test on a name that is not a step.
StepId step(std::string_view name);

// The repository's root and the built binary (set by tests/CMakeLists.txt).
// A test that starts the binary needs the tag [cli].
std::string source_dir();
std::string qkv_binary();

// Fails the running test unless it has the tag [TAG]: each test states what it
// needs in its tags, which become CTest labels (tests/catch_labels.cmake), and
// the helpers that start qkv, pandoc or tmux check it.
void require_tag(const std::string& tag);
// The tags of the running test case, or nullptr outside one (main.cpp's listener).
const std::vector<std::string>* running_test_tags();
// In a forked child: replaces the process with qkv ARGS (exits 127 if that
// fails), with QKV_THREADS=2 unless it or OPENBLAS_NUM_THREADS is set.
[[noreturn]] void exec_qkv(const std::vector<std::string>& args);

// Reads a file of the repository (path relative to its root).
std::string read_repo_file(const std::string& relative);

Model load_text(const std::string& yaml, const std::string& name = "test.yaml");
Trace compute_text(const std::string& yaml);

struct CliResult {
    int status = -1;  // exit status, or 128 + signal
    std::string out;
    std::string err;
    bool timed_out = false;      // killed after CliRun::seconds
    std::uint64_t peak_kib = 0;  // the most memory it had resident (ru_maxrss)
};

// qkv runs with QKV_THREADS=2 unless `env` sets it or OPENBLAS_NUM_THREADS,
// so that the memory
// it estimates (which counts each thread's blocks) is the same on every machine.
struct CliRun {
    std::vector<std::string> args;               // without the program name
    std::string input;                           // standard input
    std::string cwd;                             // empty = current folder
    std::map<std::string, std::string> env;      // set (empty value: set to empty)
    std::uint64_t address_limit = 0;             // bytes of address space (ulimit -v), 0 = none
    std::string binary;                          // a copy of qkv to run instead of qkv_binary(); empty = that
    int seconds = 120;                           // then it is killed, and the test fails (10 × under QKV_TEST_BINARY)
};

CliResult run_qkv(const CliRun& run);
CliResult run_qkv(const std::vector<std::string>& args, const std::string& input = "");
// qkv ARGS, which must succeed (exit 0, nothing on stderr): its standard output.
std::string run_ok(const std::vector<std::string>& args, const std::string& input = "");

// The output of a reader of qkv's documents (pandoc, pdflatex, xmllint, …):
// stdout and stderr together, and its exit status. Needs the tag [documents].
struct Shell {
    int status = -1;
    std::string out;
};
Shell shell(const std::string& command);

// The pandoc command the README gives on the line that holds `marker` (such
// as "--mathjax"), from "pandoc" to the end of the line without its "-o FILE":
// the tests run the README's own commands. Fails the test if there is none.
std::string readme_pandoc_command(const std::string& marker);

// Whether TOOL is installed: a program on the PATH, or a TeX file (ending in
// .sty) that kpsewhich finds. When it is not, WARNs that PACKAGE (Debian's) is
// missing and what goes `unchecked`, and the test passes without it. Needs the
// tag [documents].
bool tool_installed(const std::string& tool, const std::string& package, const std::string& unchecked);

// The whole content of a file, byte for byte ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);
// The lines of TEXT, without their newlines.
std::vector<std::string> lines_of(const std::string& text);
// How many times `part` occurs in `text`, without overlapping.
std::size_t count_of(const std::string& text, const std::string& part);

// A fresh folder under /tmp, removed at the end of the test.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return m_path; }
    // Writes FILE in the folder; returns its path.
    std::string write(const std::string& name, const std::string& content) const;

private:
    std::string m_path;
};

// Compares with tests/golden/NAME; QKV_UPDATE_GOLDEN=1 rewrites the file instead.
// A mismatch fails showing expected and got.
void check_golden(const std::string& name, const std::string& actual);

// An HTML page of -f html stands alone (OUTPUT FORMATS in man/qkv.1.in): the doctype and charset,
// no script, nothing fetched (no src, href, url() or @import), each id once.
void require_self_contained_page(const std::string& page);
// The page is well-formed markup, as qkv writes every page (void elements
// closed, each attribute with a value, no entity XML lacks): `xmllint --noout`
// reads it without a word, so every element is closed and nested right, which
// libxml2's HTML 4 parser would not check. WARNs and passes when xmllint is not
// installed. Needs the tag [documents].
void require_html_parses(const std::string& page);

// Every entry within eps, absolute or relative; on failure names the first cell that differs.
void require_near(const arma::mat& actual, const arma::mat& expected, double eps, const std::string& what);

// The PyTorch reference cases of tests/reference/cases (their names, sorted),
// and the check of a trace against one case's expected values: every step the
// case lists, each per-head step for every head it lists (key/value heads for
// keys, values and rotated_keys), at 1e-12. Returns how many matrices it compared.
std::vector<std::string> reference_cases();
Model load_reference_case(const std::string& name);
int require_reference(const Trace& trace, const std::string& name);

// The subcommands `qkv --help` lists, and the options ("-f", "--format") a help text lists.
std::vector<std::string> subcommands();
std::set<std::string> help_options(const std::string& help);

// A matrix from rows, for expected values written in tests.
arma::mat rows(std::initializer_list<std::initializer_list<double>> values);

// The built-in error checks: exactly one or more "qkv: error:" lines (and hints), nothing on stdout, exit 2.
void require_input_error(const CliResult& result, const std::string& where_what_fragment);

// A matrix as answers write it: [[1.2346, -inf], ...] with `decimals` digits.
std::string yaml_matrix(const arma::mat& M, int decimals);
// The named mistake of `qkv check -f json`'s first step: the step's own, or its first wrong cell's; "" for none.
std::string first_diagnosis(const std::string& check_json);
// `id: [[...]]` as an answers: entry, under heads: [~, …, {id: …}] for head `head` of several.
std::string answer_yaml(const std::string& id, int head, int n_heads, const arma::mat& M, int decimals = 4);

// What `qkv init OPTIONS` writes, after checking that it succeeded quietly.
std::string init_text(const std::vector<std::string>& options);

// Answers read from YAML text as an answers file named answers.yaml.
Answers answers_from(const std::string& yaml, const Trace& trace);

// A folder of its own in the temporary folder, removed with everything in it
// when the object goes.
class TempFolder {
public:
    explicit TempFolder(const std::string& purpose);
    ~TempFolder();
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    // Writes `text` to the file NAME in the folder; its path.
    std::string add(const std::string& name, const std::string& text) const;

private:
    std::filesystem::path m_path;
};

// The answers of the check command in man/qkv.1.in, for the illustrated
// article: keys and scores right, weights[1,1] wrong (0.0634 rounds to 0.1),
// output row 1 following from the weights (error carried forward).
inline constexpr const char* k_illustrated_answers = R"(answers:
  keys:    [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
  scores:  [[2, 4, 4], [4, 16, 12], [4, 12, 10]]
  weights: [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.0, 0.9, 0.1]]   # 0.0634 rounds to 0.1: the first cell is wrong
  output:  [[2.0, 7.0, 1.5], ~, ~]   # ~ = not answered; row 1 follows from the weights above: consistent
)";

}  // namespace qkv::test
