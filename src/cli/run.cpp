#include "attention/attention.hpp"
#include "cli/commands.hpp"


namespace qkv::cli {

CLI::App* setup_run(CLI::App& app, RunOptions& options) {
    CLI::App* command = app.add_subcommand("run", "Compute and print every step of attention");
    command->add_option("file", options.file, "Example file, built-in example name, or - for stdin")
        ->type_name("FILE|NAME|-");
    add_common_options(*command, options.common);
    return command;
}

int run_run(const RunOptions& options) {
    // only the steps that will be shown keep their matrices
    const ComputeOptions computing = compute_options(options.common);
    const Model model = load(options.file, options.common, computing);
    const Trace trace = compute(model, computing);
    const RenderOptions rendering = render_options(options.common, trace);
    write_streamed([&](std::ostream& out) { render(trace, rendering, out); }, options.common);
    return 0;
}

}  // namespace qkv::cli
