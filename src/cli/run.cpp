#include "attention/attention.hpp"
#include "attention/decode.hpp"
#include "cli/commands.hpp"
#include "explain/explain.hpp"

#include <algorithm>
#include <vector>

namespace qkv::cli {

namespace {

// --decode is written in the formats of formats_of(Writer::decode), and shows its own walk
// through the positions, which --steps cannot choose from (both checked
// before the example is read).
void check_decode_options(const CommonOptions& options) {
    std::vector<Diagnostic> problems;
    if (!writes_format(Writer::decode, options.format)) {
        problems.push_back(usage_error(
            "--decode cannot be written as " + options.format + "; expected -f " + format_list(Writer::decode),
            "csv, latex and svg show the full computation's steps, and decoding ends in the same weights and "
            "outputs: run without --decode for them"));
    }
    if (!options.steps.empty()) {
        problems.push_back(usage_error(
            "--decode cannot be combined with --steps; expected one of the two",
            "--decode shows every position's cache, query, scores, weights and output; to choose steps of the full "
            "computation, run without --decode"));
    }
    if (options.backward) {
        problems.push_back(usage_error("--decode cannot be combined with --backward; expected one of the two",
                                       "decoding is the forward pass, a token at a time; run without --decode for "
                                       "the gradients"));
    }
    if (!problems.empty()) {
        throw InputError(std::move(problems));
    }
}

// Decoding needs causal self-attention: every reason it cannot be had, as usage errors.
void check_decodable(const Model& model) {
    std::vector<Diagnostic> problems;
    for (const DecodeObstacle& obstacle : decode_obstacles(model)) {
        problems.push_back(usage_error("--decode: " + obstacle.found + "; expected " + obstacle.expected,
                                       obstacle.hint + ", or run without --decode"));
    }
    if (!problems.empty()) {
        throw InputError(std::move(problems));
    }
}

// run --decode: the full computation (for the header, and for JSON its steps)
// and the decoding beside it. The loader's memory limit counts the full
// computation's n × m matrices, which bound the decoding's rows as well.
int run_decode(const RunOptions& options) {
    check_decode_options(options.common);
    const ComputeOptions computing = compute_options(options.common);
    const Model model = load(options.file, options.common, computing);
    check_decodable(model);
    const Trace trace = compute(model, computing);
    const DecodeTrace decoded = decode(model);
    const RenderOptions rendering = render_options(options.common, trace);
    write_streamed([&](std::ostream& out) { render_decode(trace, decoded, model, rendering, out); }, options.common);
    return 0;
}

// -f html: every cell's working is on the page, and a working reads the
// steps before it, so the trace keeps every step.
int run_html(const RunOptions& options) {
    ComputeOptions computing = compute_options(options.common);
    computing.steps.clear();
    computing.head = 0;
    const Model model = load(options.file, options.common, computing);
    const Trace trace = compute(model, computing);
    const RenderOptions rendering = render_options(options.common, trace);
    const CellWorkings workings = html_workings(model, trace, rendering);
    write_streamed([&](std::ostream& out) { render_html(trace, rendering, out, workings); }, options.common);
    return 0;
}

}  // namespace

CLI::App* setup_run(CLI::App& app, RunOptions& options) {
    Bindings bindings = common_bindings(options.common);
    bindings.bind("file", &options.file).bind("--decode", &options.common.decode);
    return add_command(app, CommandId::run, bindings);
}

int run_run(const RunOptions& options) {
    if (options.common.decode) {
        return run_decode(options);
    }
    if (!writes_format(Writer::run, options.common.format)) {
        throw InputError(format_refused(options.common.format, "run", Writer::run));
    }
    if (parse_format(options.common.format) == Format::html) {
        return run_html(options);
    }
    // only the steps that will be shown keep their matrices; the SVG's
    // weights read the masked scores to hatch the masked cells, and LaTeX's
    // working of a step writes out the steps it reads
    ComputeOptions computing = compute_options(options.common);
    const auto format = parse_format(options.common.format);
    if (format == Format::svg && !computing.steps.empty() &&
        std::find(computing.steps.begin(), computing.steps.end(), StepId::weights) != computing.steps.end()) {
        computing.steps.push_back(StepId::masked_scores);
    }
    if (format == Format::latex) {
        computing.steps.clear();
    }
    const Model model = load(options.file, options.common, computing);
    const Trace trace = compute(model, computing);
    const RenderOptions rendering = render_options(options.common, trace);
    write_streamed([&](std::ostream& out) { render(trace, rendering, out, &model); }, options.common);
    return 0;
}

}  // namespace qkv::cli
