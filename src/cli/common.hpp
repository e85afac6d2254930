// Options shared by run, explain, check and lesson, and the helpers every
// subcommand uses: load a model, resolve render options, write the result.
#pragma once

#include "attention/trace.hpp"
#include "io/loader.hpp"
#include "model/model.hpp"
#include "render/render.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace qkv::cli {

struct CommonOptions {
    std::string format = "text";
    int precision = 4;
    std::string steps;           // comma-separated step ids
    int head = 0;                // 0 = every head
    bool full = false;
    std::string color = "auto";
    bool ascii = false;
    bool brief = false;
    bool standalone = false;
    std::string output;          // -o FILE; empty = stdout
    bool force = false;
    std::string max_memory = "4GiB";
    bool allow_any_path = false;
};

// Adds -f, -p, -s, --head, --full, --color, --ascii, --brief, --standalone,
// -o, --force, --max-memory, --allow-any-path.
void add_common_options(CLI::App& command, CommonOptions& options);

LoadOptions load_options(const CommonOptions& options);

// Reads FILE|NAME|- and validates it (throws InputError).
Model load(const std::string& file_or_name, const CommonOptions& options);

// Checks --steps and --head against the trace and resolves --color (throws InputError).
RenderOptions render_options(const CommonOptions& options, const Trace& trace);

// Writes to stdout, or atomically to options.output (refusing to replace an
// existing file without --force). Throws InputError on failure.
void write_result(const std::string& content, const CommonOptions& options);

// True when stdout is a terminal, NO_COLOR is unset or empty and TERM is not "dumb".
bool colour_by_default();

}  // namespace qkv::cli
