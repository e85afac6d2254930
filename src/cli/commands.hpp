// One setup_…/run_… pair per subcommand (one file each). setup_… declares the
// subcommand's options on the CLI11 app; run_… does the work and returns the
// exit status. InputError escapes to main(), which prints it and exits 2.
#pragma once

#include "cli/common.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace qkv::cli {

struct RunOptions {
    CommonOptions common;
    std::string file = "illustrated";
};
CLI::App* setup_run(CLI::App& app, RunOptions& options);
int run_run(const RunOptions& options);

CLI::App* setup_examples(CLI::App& app);
int run_examples();

// "qkv 0.1.0 (Release build, BLAS: OpenBLAS 0.3.21)"
std::string version_text();

}  // namespace qkv::cli
