// Options shared by run, explain, check and lesson (their rows in flags.cpp),
// and the helpers every subcommand uses: load a model, resolve render options, write the result.
#pragma once

#include "attention/attention.hpp"
#include "attention/trace.hpp"
#include "base/diagnostics.hpp"
#include "io/loader.hpp"
#include "model/model.hpp"
#include "render/render.hpp"
#include "cli/flags.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace qkv::cli {

struct CommonOptions {
    std::string format = "text";
    int precision = 4;
    std::string steps;           // comma-separated step ids
    int head = 0;                // 0 = every head
    bool full = false;
    std::string color = "auto";
    bool ascii = false;
    bool dark = false;           // --dark: an SVG for a dark page (only where svg is a format)
    bool brief = false;
    bool standalone = false;
    bool floats = false;         // --float: LaTeX tables in table floats with caption and label
    std::string label_prefix;    // --label-prefix: the floats' labels are PREFIX:STEP[:headN]; empty = qkv
    std::string output;          // -o FILE; empty = stdout
    bool force = false;
    std::string max_memory = "4GiB";
    bool allow_any_path = false;
    bool decode = false;         // run --decode (only `run` declares the flag)
    bool backward = false;       // --backward: grad_output: ones unless the file gives it (run, explain, check)
};

// A problem with the command line itself: no file, no position.
Diagnostic usage_error(const std::string& what, const std::string& hint);

// "qkv: error: FILE:LINE:COL: what; expected", one line whatever the message quotes.
std::string error_line(const Diagnostic& diagnostic);
// Writes the error line, and its hint on a line of its own, to standard error.
void print_error(const Diagnostic& diagnostic);

// True when `writer` writes the format -f/--format names.
bool writes_format(Writer writer, const std::string& name);
// "--format svg is not available for check", with the formats it writes as
// the hint: a usage error for a format `command` does not write.
Diagnostic format_refused(const std::string& name, const std::string& command, Writer writer);

// Where each shared option is stored (flags.hpp): a command adds its own
// bindings to these.
Bindings common_bindings(CommonOptions& options);

// --max-memory's SIZE in bytes; a usage error when it is not a size.
std::uint64_t memory_limit(const std::string& max_memory);
LoadOptions load_options(const CommonOptions& options);

// Reads FILE|NAME|- and validates it (throws InputError).
Model load(const std::string& file_or_name, const CommonOptions& options);
// The same, for a computation that will keep only the steps `kept` chooses
// (the memory limit then counts only their matrices).
Model load(const std::string& file_or_name, const CommonOptions& options, const ComputeOptions& kept);

// The steps to keep while computing: those --steps and --head will show, so
// that a large input does not hold matrices nobody sees (throws InputError on
// an unknown step id).
ComputeOptions compute_options(const CommonOptions& options);

// The steps of a --steps list, checked (throws InputError on an unknown id).
std::vector<StepId> step_list(const std::string& text);

// Checks --steps and --head against the trace and resolves --color (throws InputError).
RenderOptions render_options(const CommonOptions& options, const Trace& trace);

// Runs `produce` on a stream that goes, a chunk at a time, to stdout or to
// options.output as write_result places it, so a large result is never held
// whole. Throws InputError when a write fails.
void write_streamed(const std::function<void(std::ostream&)>& produce, const CommonOptions& options);

// Writes to stdout, or to options.output by the rules of write_to in
// cli/output.hpp (atomically for a regular file, refusing to replace an
// existing one without --force). Throws InputError on failure.
void write_result(const std::string& content, const CommonOptions& options);

// True when stdout is a terminal, NO_COLOR is unset or empty and TERM is not "dumb".
bool colour_by_default();

}  // namespace qkv::cli
