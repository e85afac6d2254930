// One setup_…/run_… pair per subcommand (one file each). setup_… declares the
// subcommand's options on the CLI11 app; run_… does the work and returns the
// exit status. InputError escapes to main(), which prints it and exits 2.
#pragma once

#include "cli/common.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

namespace qkv::cli {

struct RunOptions {
    CommonOptions common;
    std::string file = "illustrated";
};
CLI::App* setup_run(CLI::App& app, RunOptions& options);
int run_run(const RunOptions& options);

struct ExplainOptions {
    CommonOptions common;
    std::string file;
    std::vector<std::string> cells;
    int block_size = 0;  // --block-size: the online softmax of weights and head_output cells
};
CLI::App* setup_explain(CLI::App& app, ExplainOptions& options);
int run_explain(const ExplainOptions& options);

struct LessonOptions {
    CommonOptions common;
    std::string lesson;     // empty: list the lessons
    bool no_pause = false;
    int page = 1;           // --page: start here
    std::vector<std::string> answers;  // --answer, one per question in order
};
CLI::App* setup_lesson(CLI::App& app, LessonOptions& options);
int run_lesson(const LessonOptions& options);

// (named so that it does not hide qkv::CheckOptions, the grading options)
struct CheckCommandOptions {
    CommonOptions common;
    std::string file;
    std::vector<std::string> answers;  // --answers FILE|DIR, any number; none = the example's own answers:
    double tolerance = -1.0;  // --tolerance T; negative = rounding-aware
    int decimals = -1;        // --decimals N; negative = the example's decimals:, else 1
    std::string rubric;       // --rubric FILE; empty = the example's rubric:
    int block_size = 0;       // --block-size B: the keys read in blocks, as the online softmax reads them
};
CLI::App* setup_check(CLI::App& app, CheckCommandOptions& options);
int run_check(const CheckCommandOptions& options);

// (named so that it does not hide qkv::WorksheetOptions, the sheet's options)
struct WorksheetCommandOptions {
    CommonOptions common;  // setup_worksheet makes markdown the default, and -p unset (-1): decimals:, else 2
    std::string file;
    bool key = false;  // --key: the true values in the tables
};
CLI::App* setup_worksheet(CLI::App& app, WorksheetCommandOptions& options);
int run_worksheet(const WorksheetCommandOptions& options);

struct ExamplesOptions {
    std::string name;    // empty: the list; else the built-in example whose YAML is printed
    std::string output;  // -o FILE; empty = stdout
    bool force = false;
};
CLI::App* setup_examples(CLI::App& app, ExamplesOptions& options);
int run_examples(const ExamplesOptions& options);

struct InitOptions {
    int tokens = 3;        // the illustrated example's shape: 3 tokens, d_model 4, d_k 3
    int d_model = 4;
    int d_k = 3;
    int d_v = 0;           // 0 = same as d_k
    int heads = 1;
    std::int64_t seed = 1;
    bool seed_given = false;             // --seed was written (refused with --student)
    std::optional<std::string> student;  // --student ID: an exercise, its seed derived from the ID
    int max_int = 1;       // inputs and weights are whole numbers from 0 to max_int (1: softmax rarely saturates)
    bool negative = false; // --negative: from −max_int to max_int
    std::string mask;      // --mask causal; empty = no mask
    bool bias = false;     // --bias: b_Q, b_K and b_V (and b_O with W_O)
    std::string scale = "sqrt_dk";  // --scale sqrt_dk|none
    std::string output;    // -o FILE; empty = stdout
    bool force = false;
};
CLI::App* setup_init(CLI::App& app, InitOptions& options);
int run_init(const InitOptions& options);
// The commented starter file itself (YAML text); with --student, the first of
// the ID's draws that makes a good exercise (check/exercise.hpp). Throws
// InputError on options that cannot make one.
std::string starter_example(const InitOptions& options);

struct BenchOptions {
    std::optional<std::string> file;  // an example to time as it is; none: random data of the flags' size
    int tokens = 512;      // one BERT-base layer: 512 tokens, d_model 768, 12 heads
    int d_model = 768;
    int heads = 12;
    int kv_heads = 0;      // 0 = one per query head
    int window = 0;        // 0 = no mask
    bool rope = false;
    int rope_dim = 0;      // 0 = every element of each head turns
    std::string rope_scaling;  // empty: none
    bool qk_norm = false;
    bool mla = false;
    bool backward = false;
    // the example's number keys (model/keys.def) as flags, by the key's name, and whether each was given
    std::map<std::string, double> numbers;
    std::map<std::string, bool> numbers_given;
    std::vector<std::string> set;  // --set KEY=VALUE: a key of the example
    std::map<std::string, bool> given;  // whether each flag that shapes bench's own example was given
    int repeat = 10;
    int threads = 0;       // 0 = default_threads()
    std::string max_memory = "4GiB";
    std::string format = "text";
};
CLI::App* setup_bench(CLI::App& app, BenchOptions& options);
int run_bench(const BenchOptions& options);

struct GenerateOptions {
    std::string what;           // man, bash, zsh or fish
    std::string page_template;  // man: the page's template
    std::string output;
    bool force = false;
};
CLI::App* setup_generate(CLI::App& app, GenerateOptions& options);
int run_generate(const GenerateOptions& options);

struct PlaygroundOptions {
    std::string file = "illustrated";
    CommonOptions common;  // only -o and --force are taken
};
CLI::App* setup_playground(CLI::App& app, PlaygroundOptions& options);
int run_playground(const PlaygroundOptions& options);

// What the playground's page is made of, as the build leaves it in
// share/qkv/playground/ beside the command (../share/qkv/playground/ once
// installed): the page's template and script (web/playground.html and .js),
// and emscripten's module of qkv itself (its JavaScript, and the WebAssembly
// gzipped, in base64). Throws InputError, saying how to build them, where
// they are not.
struct PlaygroundAssets {
    std::string page;
    std::string script;
    std::string module;
    std::string wasm;
};
PlaygroundAssets playground_assets();

// "qkv 0.1.0 (Release build, BLAS: OpenBLAS 0.3.21)"
std::string version_text();

}  // namespace qkv::cli
