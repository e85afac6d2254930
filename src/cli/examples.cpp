#include "builtin/builtin.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "io/loader.hpp"

#include <algorithm>

namespace qkv::cli {

CLI::App* setup_examples(CLI::App& app) { return add_command(app, CommandId::examples, Bindings()); }

int run_examples() {
    std::size_t width = 0;
    for (const auto& example : builtin_examples()) {
        width = std::max(width, example.name.size());
    }
    std::string listing;
    for (const auto& example : builtin_examples()) {
        const Model model = load_model({"builtin:" + std::string(example.name), std::string(example.text), ""});
        // the summary is the description's first sentence, or the title
        std::string summary = model.title;
        if (!model.description.empty()) {
            std::string text = model.description;
            std::replace(text.begin(), text.end(), '\n', ' ');
            const auto stop = text.find(". ");
            summary = text.substr(0, stop == std::string::npos ? text.find_last_not_of(" .") + 1 : stop);
        }
        listing += std::string(example.name) + std::string(width - example.name.size() + 2, ' ') + summary + "\n";
    }
    write_stdout(listing);
    return 0;
}

}  // namespace qkv::cli
