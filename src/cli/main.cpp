// qkv's entry point: wires the subcommands to CLI11 and turns every input
// problem into the one-line error of the contract (exit 2).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "io/diagnostics.hpp"

#include <iostream>

#ifndef QKV_VERSION
#define QKV_VERSION "0.0.0"
#endif
#ifndef QKV_BUILD_TYPE
#define QKV_BUILD_TYPE "unknown"
#endif

#ifdef QKV_BLAS_OPENBLAS
extern "C" char* openblas_get_config();
#endif

namespace qkv::cli {

std::string version_text() {
    std::string blas = "none";
#ifdef QKV_BLAS_OPENBLAS
    blas = openblas_get_config();
#elif defined(QKV_BLAS_NAME)
    blas = QKV_BLAS_NAME;
#endif
    return std::string("qkv ") + QKV_VERSION + " (" + QKV_BUILD_TYPE + " build, BLAS: " + blas + ")";
}

namespace {

void print_error(const Diagnostic& diagnostic) {
    std::cerr << "qkv: error: " << format_where_what(diagnostic) << '\n';
    if (!diagnostic.hint.empty()) {
        std::cerr << "  hint: " << diagnostic.hint << '\n';
    }
}

int main_with_errors(int argc, char** argv) {
    CLI::App app("qkv: self-attention, step by step: compute, explain and check it by hand", "qkv");
    app.set_version_flag("--version", version_text());
    app.require_subcommand(0, 1);
    app.footer("Start with `qkv run` (the built-in example) or `qkv examples`. See `man qkv` for more.");

    RunOptions run_options;
    CLI::App* run = setup_run(app, run_options);
    CLI::App* examples = setup_examples(app);

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

    if (run->parsed()) {
        return run_run(run_options);
    }
    if (examples->parsed()) {
        return run_examples();
    }
    std::cout << app.help();
    return 0;
}

}  // namespace

}  // namespace qkv::cli

int main(int argc, char** argv) {
    qkv::cli::install_signal_handlers();
    try {
        return qkv::cli::main_with_errors(argc, argv);
    } catch (const qkv::InputError& error) {
        for (const auto& diagnostic : error.diagnostics()) {
            qkv::cli::print_error(diagnostic);
        }
        return 2;
    } catch (const std::bad_alloc&) {
        qkv::cli::print_error({"", 0, 0, "out of memory", "try a smaller example, or lower --max-memory's estimate"});
        return 2;
    } catch (const std::exception& error) {
        qkv::cli::print_error({"", 0, 0, std::string("internal error: ") + error.what(),
                               "please report this with the input that caused it"});
        return 2;
    }
}
