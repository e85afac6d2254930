// Sets a command up in CLI11 from its rows of the command line's table
// (flags.cpp): each flag with its names, value, help line and check, stored
// where the command's Bindings say.
#include "cli/flags.hpp"

#include "render/render.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace qkv::cli {

namespace {

// "\"abc\" is not a whole number from 0 to 17", or empty when TEXT is one in range
// (CLI11's own Range would call "abc" out of range).
CLI::Validator whole_number(std::int64_t low, std::int64_t high) {
    const std::string range = std::to_string(low) + " to " + std::to_string(high);
    return CLI::Validator(
        [low, high, range](std::string& text) {
            std::int64_t value = 0;
            const char* first = text.data() + (text.rfind('+', 0) == 0 ? 1 : 0);
            const char* last = text.data() + text.size();
            const auto [end, error] = std::from_chars(first, last, value);
            if (text.empty() || error != std::errc() || end != last) {
                return "\"" + text + "\" is not a whole number from " + range;
            }
            if (value < low || value > high) {
                return text + " is not in the range " + range;
            }
            return std::string();
        },
        "INT in [" + range + "]", "whole number");
}

CLI::Validator tolerance() {
    return CLI::Validator(
        [](std::string& text) {
            // NonNegativeNumber's own message would quote the largest double
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            const bool number = !text.empty() && *end == '\0' && value >= 0 && value <= 1e30;
            return number ? std::string() : "\"" + text + "\" is not a number from 0 to 1e30";
        },
        "T >= 0", "tolerance");
}

// The command's formats, and, where the command refuses the others with a
// message of its own (every command but bench), every format's name.
CLI::Validator format_of(CommandId id) {
    const std::vector<std::string> listed = format_choices(id);
    std::vector<std::string> known = listed;
    if (id != CommandId::bench) {
        const auto all = format_names(all_formats());
        known.insert(known.end(), all.begin(), all.end());
    }
    std::string braces;
    for (const auto& name : listed) {
        braces += (braces.empty() ? "{" : ",") + name;
    }
    return CLI::Validator(
        [known, listed](std::string& text) {
            return std::find(known.begin(), known.end(), text) != known.end()
                       ? std::string()
                       : "\"" + text + "\" is not a format; expected " + join_list(listed, ", ");
        },
        braces + "}", "format");
}

CLI::Validator step_list_given() {
    return CLI::Validator(
        [](std::string& text) {
            return text.find_first_not_of(", \t") == std::string::npos
                       ? std::string("the list is empty; expected step ids separated by commas")
                       : std::string();
        },
        "LIST", "step list");
}

CLI::Validator validator(const Flag& flag, CommandId id) {
    switch (flag.check) {
    case Check::none:
        break;
    case Check::whole:
        return whole_number(flag.low, flag.high);
    case Check::tolerance:
        return tolerance();
    case Check::choice:
        return CLI::IsMember(choices_of(flag));
    case Check::format:
        return format_of(id);
    case Check::steps:
        return step_list_given();
    }
    return CLI::Validator();
}

// CLI11's spelling of a row's names: "-f,--format", or "file".
std::string cli11_names(const Flag& flag) {
    return flag.short_name.empty() ? std::string(flag.name) : std::string(flag.short_name) + "," + std::string(flag.name);
}

CLI::Option* add_row(CLI::App& command, CommandId id, const Flag& flag, const Bindings::Binding& binding) {
    const std::string names = cli11_names(flag);
    const std::string help(flag.help);
    CLI::Option* option = std::visit(
        [&](auto* storage) -> CLI::Option* {
            using Value = std::remove_pointer_t<decltype(storage)>;
            if constexpr (std::is_same_v<Value, bool>) {
                return command.add_flag(names, *storage, help);
            } else if constexpr (std::is_same_v<Value, std::optional<std::string>>) {
                return command.add_option_function<std::string>(
                    names, [storage](const std::string& text) { *storage = text; }, help);
            } else {
                return command.add_option(names, *storage, help);
            }
        },
        binding.storage);
    if (!flag.value.empty()) {
        option->type_name(std::string(flag.value));
    }
    if (flag.check != Check::none) {
        option->check(validator(flag, id));
    }
    if ((flag.required & command_bit(id)) != 0) {
        option->required();
    }
    if (flag.repeatable && !flag.is_argument()) {
        option->allow_extra_args(false);  // one value each time: --answers a.yaml --answers b.yaml
    }
    if (binding.given != nullptr) {
        bool* given = binding.given;
        option->each([given](const std::string&) { *given = true; });
    }
    return option;
}

}  // namespace

Bindings& Bindings::bind(std::string_view name, Storage storage, bool* given) {
    m_bindings.push_back({name, storage, given});
    return *this;
}

const Bindings::Binding* Bindings::find(std::string_view name) const {
    for (const Binding& binding : m_bindings) {
        if (binding.name == name) {
            return &binding;
        }
    }
    return nullptr;
}

CLI::App* add_command(CLI::App& app, CommandId id, const Bindings& bindings) {
    const CommandDef& def = command_def(id);
    CLI::App* command = &app;
    if (id == CommandId::qkv) {
        app.description(std::string(def.help));
    } else {
        command = app.add_subcommand(std::string(def.name), std::string(def.help));
        if (def.hidden) {
            command->group("");
        }
    }
    // --help first, as CLI11 lists it; then the rows in the table's order
    for (const Flag* flag : flags_of(id)) {
        if (flag->name == "--help") {
            command->set_help_flag(cli11_names(*flag), std::string(flag->help));
        }
    }
    for (const Flag* flag : flags_of(id)) {
        if (flag->name == "--help") {
            continue;
        }
        if (flag->name == "--version") {
            if (bindings.version) {
                command->set_version_flag(std::string(flag->name), bindings.version, std::string(flag->help));
            }
            continue;
        }
        const Bindings::Binding* binding = bindings.find(flag->name);
        if (binding == nullptr) {
            throw std::logic_error("qkv " + std::string(def.name) + " takes " + std::string(flag->name) +
                                   " but stores it nowhere");
        }
        add_row(*command, id, *flag, *binding);
    }
    return command;
}

}  // namespace qkv::cli
