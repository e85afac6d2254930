#include "attention/attention.hpp"
#include "cli/commands.hpp"
#include "explain/explain.hpp"

#include <sstream>

namespace qkv::cli {

CLI::App* setup_explain(CLI::App& app, ExplainOptions& options) {
    Bindings bindings = common_bindings(options.common);
    bindings.bind("file", &options.file).bind("cells", &options.cells).bind("--block-size", &options.block_size);
    return add_command(app, CommandId::explain, bindings);
}

int run_explain(const ExplainOptions& options) {
    if (!writes_format(Writer::explain, options.common.format)) {
        throw InputError(format_refused(options.common.format, "explain", Writer::explain));
    }
    // parse every cell first, so that a typo is reported before any work
    std::vector<CellRef> cells;
    for (const auto& text : options.cells) {
        // a 0 ("scores[0,1]") is reported once the example is loaded, with its valid ranges
        cells.push_back(parse_cell(text, true));
        if (options.block_size > 0 && !has_online_form(cells.back().step)) {
            throw InputError(usage_error("--block-size explains weights and head_output cells; " + text +
                                             " belongs to step " + step_text(cells.back().step),
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
        if (rendering.format == Format::json) {
            explanations.back().operands = cell_operands(model, trace, cell);  // what JSON says it is worked from
        }
    }
    std::ostringstream out;
    render_explanations(explanations, rendering, out);
    write_result(out.str(), options.common);
    return 0;
}

}  // namespace qkv::cli
