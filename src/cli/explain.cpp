#include "attention/attention.hpp"
#include "cli/commands.hpp"
#include "explain/explain.hpp"

#include <sstream>

namespace qkv::cli {

CLI::App* setup_explain(CLI::App& app, ExplainOptions& options) {
    CLI::App* command = app.add_subcommand("explain", "Show the arithmetic behind cells, e.g. scores[1,2] or output[1]");
    command->add_option("file", options.file, "Example file, built-in example name, or - for stdin")
        ->required()
        ->type_name("FILE|NAME|-");
    command->add_option("cells", options.cells, "Cells: STEP[ROW,COL] or STEP[ROW], then @HEAD if needed")
        ->required()
        ->type_name("CELL");
    command->add_option("--block-size", options.block_size,
                        "Also work the row out as FlashAttention does, B keys at a time")
        ->check(whole_number(1, 65536))
        ->type_name("B");
    add_common_options(*command, options.common, format_names(explain_formats()));
    add_backward_option(*command, options.common);
    return command;
}

int run_explain(const ExplainOptions& options) {
    // parse every cell first, so that a typo is reported before any work
    std::vector<CellRef> cells;
    for (const auto& text : options.cells) {
        // a 0 ("scores[0,1]") is reported once the example is loaded, with its valid ranges
        cells.push_back(parse_cell(text, true));
        if (options.block_size > 0 && !has_online_form(cells.back().step)) {
            throw InputError(usage_error("--block-size explains weights and head_output cells; " + text +
                                             " is a " + step_text(cells.back().step) + " cell",
                                         "ask for a weights or head_output cell, e.g. head_output[2], or leave out "
                                         "--block-size"));
        }
    }
    const Model model = load(options.file, options.common);
    const Trace trace = compute(model);
    const RenderOptions rendering = render_options(options.common, trace);
    std::vector<Explanation> explanations;
    for (const auto& cell : cells) {
        explanations.push_back(explain_cell(model, trace, cell, rendering, static_cast<arma::uword>(options.block_size)));
    }
    std::ostringstream out;
    render_explanations(explanations, rendering, out);
    write_result(out.str(), options.common);
    return 0;
}

}  // namespace qkv::cli
