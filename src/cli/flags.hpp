// The command line's table: each command and each flag defined once, as a row
// (flags.cpp), and everything that describes them read from it: the CLI11
// set-up and so `--help`, the man page's options (man_page.cpp) and the bash,
// zsh and fish completions (completions.cpp), which `qkv generate` writes at
// build time. A command's own file only says where each value is stored
// (Bindings), and a row that no command stores fails at once, in every run.
#pragma once

#include "render/formats.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qkv::cli {

// qkv itself (its --help and --version), then its subcommands.
enum class CommandId { qkv, run, explain, init, check, worksheet, examples, lesson, playground, bench, generate };

// A set of commands, one bit each.
using Commands = std::uint32_t;
constexpr Commands command_bit(CommandId id) { return Commands{1} << static_cast<unsigned>(id); }

struct CommandDef {
    CommandId id;
    std::string_view name = {};  // as typed: "run" ("qkv" for qkv itself)
    std::string_view help = {};  // the one line of `qkv --help`
    bool hidden = false;    // left out of --help, the man page and the completions
    std::optional<Writer> writes = std::nullopt;  // its -f formats: the rows of render/formats.cpp
};

// What a value is, for the completions: what the shells offer after the flag
// (or as the argument).
enum class Complete {
    nothing,    // a number or a name the user makes up
    file,       // any file
    yaml_file,  // a .yaml or .yml file (or a folder)
    format,     // one of the command's formats (format_choices)
    steps,      // step ids separated by commas
    choices,    // one of the row's choices
    example,    // a built-in example's name, a YAML file or -
    example_name,  // a built-in example's name
    lesson,     // a lesson's number or name, or a lesson file
    cells,      // explain's cells: a step id, then [ROW,COL]
};

// How CLI11 checks a value as it parses it (the commands check the rest).
enum class Check {
    none,
    whole,      // a whole number from .low to .high
    tolerance,  // a number from 0 to 1e30
    choice,     // one of the row's choices
    format,     // a format's name (format_choices for the command; any format's name where the command refuses
                // the others with a message of its own)
    steps,      // a list that names at least one step id
};

struct Flag {
    std::string_view name = {};   // "--format"; an argument's name ("file") has no dashes
    std::string_view short_name = {};  // "-f", or empty
    std::string_view value = {};  // "FORMAT"; empty: a switch
    Commands commands = 0;        // the commands that take it
    std::string_view help = {};   // the one line of `qkv COMMAND --help`
    std::string_view man = {};    // the man page's text (roff), after the flag and its value
    Complete complete = Complete::nothing;
    std::string_view choices = {};  // for Complete::choices and Check::choice: the values, separated by spaces
    Check check = Check::none;
    std::int64_t low = 0;         // Check::whole's range
    std::int64_t high = 0;
    Commands required = 0;        // the commands in which the argument must be given
    bool repeatable = false;      // may be given again, one value each time (--answers a --answers b)

    bool is_argument() const { return !name.starts_with("-"); }
    bool takes(CommandId id) const { return (commands & command_bit(id)) != 0; }
};

std::span<const CommandDef> command_table();
std::span<const Flag> flag_table();
const CommandDef& command_def(CommandId id);
// The subcommands a user runs, in the table's order (not qkv itself, nor the hidden ones).
std::vector<const CommandDef*> shown_commands();

// The rows of one command, in the table's order (its arguments last).
std::vector<const Flag*> flags_of(CommandId id);
// The values of a Complete::choices or Check::choice row.
std::vector<std::string> choices_of(const Flag& flag);
// The names -f takes for this command, in the order its help lists them
// (the formats its row's Writer writes; none for a command without -f).
std::vector<std::string> format_choices(CommandId id);

// Where a command stores each value it takes, by the flag's long name (or
// the argument's name). Stored values keep their defaults until given.
using Storage = std::variant<bool*, int*, std::int64_t*, double*, std::string*, std::vector<std::string>*,
                             std::optional<std::string>*>;
class Bindings {
public:
    // `given`, when set, becomes true once the flag is on the command line.
    Bindings& bind(std::string_view name, Storage storage, bool* given = nullptr);

    struct Binding {
        std::string_view name;
        Storage storage;
        bool* given = nullptr;
    };
    const Binding* find(std::string_view name) const;

    // qkv's own --version: the text it prints.
    std::function<std::string()> version;

private:
    std::vector<Binding> m_bindings;
};

// Adds the command to `app` with every row of the table it takes, in the
// table's order, each stored where `bindings` says. A row without a binding
// is a programming error (std::logic_error), so no flag can be declared and
// not read. For CommandId::qkv it sets up `app` itself.
CLI::App* add_command(CLI::App& app, CommandId id, const Bindings& bindings);

}  // namespace qkv::cli
