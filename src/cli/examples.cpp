// qkv examples: the built-in examples, one a line; with a NAME, that example's
// YAML as it is written (comments included), to start a file of one's own from.
#include "builtin/builtin.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "io/loader.hpp"

#include <algorithm>

namespace qkv::cli {

namespace {

std::string listing() {
    std::size_t width = 0;
    for (const auto& example : builtin_examples()) {
        width = std::max(width, example.name.size());
    }
    std::string text;
    for (const auto& example : builtin_examples()) {
        const Model model = load_model({"builtin:" + std::string(example.name), std::string(example.text), ""});
        // the summary is the description's first sentence, or the title
        std::string summary = model.title;
        if (!model.description.empty()) {
            std::string description = model.description;
            std::replace(description.begin(), description.end(), '\n', ' ');
            const auto stop = description.find(". ");
            summary = description.substr(
                0, stop == std::string::npos ? description.find_last_not_of(" .") + 1 : stop);
        }
        text += std::string(example.name) + std::string(width - example.name.size() + 2, ' ') + summary + "\n";
    }
    return text;
}

}  // namespace

CLI::App* setup_examples(CLI::App& app, ExamplesOptions& options) {
    Bindings bindings;
    bindings.bind("name", &options.name).bind("--output", &options.output).bind("--force", &options.force);
    return add_command(app, CommandId::examples, bindings);
}

int run_examples(const ExamplesOptions& options) {
    std::string text;
    if (options.name.empty()) {
        text = listing();
    } else if (const BuiltinFile* example = find_builtin_example(options.name)) {
        text = std::string(example->text);
    } else {
        std::vector<std::string> names;
        for (const auto& builtin : builtin_examples()) {
            names.emplace_back(builtin.name);
        }
        throw InputError(Diagnostic{options.name, 0, 0, "no built-in example by that name",
                                    did_you_mean(options.name, names) + "built-in examples: " + comma_list(names)});
    }
    write_to(options.output, options.force, [&text](std::ostream& out) { out << text; });
    return 0;
}

}  // namespace qkv::cli
