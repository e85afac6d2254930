// qkv's entry point: wires the subcommands to CLI11 and turns every input
// problem into the one-line error of the contract (exit 2).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "attention/engine.hpp"
#include "base/diagnostics.hpp"

#include <iostream>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifndef QKV_VERSION
#define QKV_VERSION "0.0.0"
#endif
#ifndef QKV_BUILD_TYPE
#define QKV_BUILD_TYPE "unknown"
#endif

namespace qkv::cli {

std::string version_text() {
    return std::string("qkv ") + QKV_VERSION + " (" + QKV_BUILD_TYPE + " build, BLAS: " + blas_name() + ")";
}

namespace {

int main_with_errors(int argc, char** argv) {
    CLI::App app("", "qkv");
    Bindings top;
    top.version = version_text;
    add_command(app, CommandId::qkv, top);
    app.require_subcommand(0, 1);
    app.footer("Start with `qkv run` (the built-in example) or `qkv examples`. See `man qkv` for more.");

    RunOptions run_options;
    CLI::App* run = setup_run(app, run_options);
    ExplainOptions explain_options;
    CLI::App* explain = setup_explain(app, explain_options);
    LessonOptions lesson_options;
    CLI::App* lesson = setup_lesson(app, lesson_options);
    CheckCommandOptions check_options;
    CLI::App* check = setup_check(app, check_options);
    WorksheetCommandOptions worksheet_options;
    CLI::App* worksheet = setup_worksheet(app, worksheet_options);
    ExamplesOptions examples_options;
    CLI::App* examples = setup_examples(app, examples_options);
    InitOptions init_options;
    CLI::App* init = setup_init(app, init_options);
#ifndef QKV_WEB
    // the commands of the machine qkv is installed on: not in the browser's
    // qkv (web/), which has no page to write, no CPU to time and no build to serve
    PlaygroundOptions playground_options;
    CLI::App* playground = setup_playground(app, playground_options);
    BenchOptions bench_options;
    CLI::App* bench = setup_bench(app, bench_options);
    GenerateOptions generate_options;
    CLI::App* generate = setup_generate(app, generate_options);
#endif

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            return app.exit(e);
        }
        std::string what = e.what();
        print_error({"", 0, 0, what, "run `qkv --help`, or `qkv COMMAND --help` for a command's options"});
        return 2;
    }

    // every command below may call BLAS
    reserve_blas_buffer();
    if (run->parsed()) {
        return run_run(run_options);
    }
    if (explain->parsed()) {
        return run_explain(explain_options);
    }
    if (lesson->parsed()) {
        return run_lesson(lesson_options);
    }
    if (check->parsed()) {
        return run_check(check_options);
    }
    if (worksheet->parsed()) {
        return run_worksheet(worksheet_options);
    }
    if (examples->parsed()) {
        return run_examples(examples_options);
    }
    if (init->parsed()) {
        return run_init(init_options);
    }
#ifndef QKV_WEB
    if (playground->parsed()) {
        return run_playground(playground_options);
    }
    if (bench->parsed()) {
        return run_bench(bench_options);
    }
    if (generate->parsed()) {
        return run_generate(generate_options);
    }
#endif
    std::cout << app.help();
    return 0;
}

}  // namespace

}  // namespace qkv::cli

int main(int argc, char** argv) {
    qkv::use_single_threaded_blas(argv);
    qkv::choose_blas_kernels();
#ifdef __GLIBC__
    // Keep glibc from raising its mmap threshold after the first large matrix
    // is freed: the n × d_model matrices would then come from the heap, and
    // repeated computations (qkv bench) would fragment it, more than doubling
    // the peak memory. 128 KiB is glibc's own starting value.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    qkv::cli::install_signal_handlers();
    try {
        const int status = qkv::cli::main_with_errors(argc, argv);
        // the WebAssembly's main returns without ending the program, which would flush it
        std::cout.flush();
        return status;
    } catch (const qkv::InputError& error) {
        for (const auto& diagnostic : error.diagnostics()) {
            qkv::cli::print_error(diagnostic);
        }
        return 2;
    } catch (const std::bad_alloc&) {
        qkv::cli::print_error({"", 0, 0, "out of memory",
                               "use fewer tokens or narrower weights, or raise the memory limit (ulimit -v)"});
        return 2;
    } catch (const std::exception& error) {
        qkv::cli::print_error({"", 0, 0, std::string("internal error: ") + error.what(),
                               "please report this with the input that caused it"});
        return 2;
    }
}
