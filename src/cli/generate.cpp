// qkv generate: the man page and the shells' completions, written from the
// command line's table (the build runs it; it is not in --help).
#include "cli/commands.hpp"
#include "cli/generated.hpp"
#include "cli/output.hpp"

#include <fstream>
#include <sstream>

namespace qkv::cli {

CLI::App* setup_generate(CLI::App& app, GenerateOptions& options) {
    Bindings bindings;
    bindings.bind("what", &options.what)
        .bind("template", &options.page_template)
        .bind("--output", &options.output)
        .bind("--force", &options.force);
    return add_command(app, CommandId::generate, bindings);
}

int run_generate(const GenerateOptions& options) {
    std::string text;
    if (options.what == "man") {
        std::ifstream in(options.page_template, std::ios::binary);
        if (options.page_template.empty() || !in) {
            throw InputError(usage_error("generate man: cannot read the template \"" + options.page_template + "\"",
                                         "name the page's template, man/qkv.1.in"));
        }
        std::ostringstream page;
        page << in.rdbuf();
        text = man_page(page.str());
    } else if (options.what == "bash") {
        text = bash_completion();
    } else if (options.what == "zsh") {
        text = zsh_completion();
    } else {
        text = fish_completion();
    }
    write_to(options.output, options.force, [&text](std::ostream& out) { out << text; });
    return 0;
}

}  // namespace qkv::cli
