// bash, zsh and fish completions, written from the command line's table at
// build time: every command, each of its flags with what its value completes
// to, its arguments, and the step ids of the step table.
#include "attention/steps.hpp"
#include "cli/flags.hpp"
#include "cli/generated.hpp"

#include <sstream>

namespace qkv::cli {

namespace {

std::string joined(const std::vector<std::string>& words, const std::string& separator = " ") {
    std::string text;
    for (const auto& word : words) {
        text += (text.empty() ? "" : separator) + word;
    }
    return text;
}

std::string step_ids() { return joined(step_names()); }

std::string command_names() {
    std::vector<std::string> names;
    for (const CommandDef* command : shown_commands()) {
        names.emplace_back(command->name);
    }
    return joined(names);
}

// The words a value of FLAG may be, where they are a fixed list.
std::vector<std::string> value_words(const Flag& flag, CommandId id) {
    if (flag.complete == Complete::format) {
        return format_choices(id);
    }
    if (flag.complete == Complete::choices) {
        return choices_of(flag);
    }
    return {};
}

// "-f --format"
std::string spellings(const Flag& flag, const std::string& separator = " ") {
    return flag.short_name.empty() ? std::string(flag.name)
                                   : std::string(flag.short_name) + separator + std::string(flag.name);
}

// ── bash ─────────────────────────────────────────────────────────────────────

// What bash offers for the value after FLAG: a `case` branch's body.
std::string bash_value(const Flag& flag, CommandId id) {
    switch (flag.complete) {
    case Complete::nothing:
        return "return 0";
    case Complete::file:
        return "_qkv_files '*'";
    case Complete::yaml_file:
    case Complete::example:
    case Complete::lesson:
        return "_qkv_files yaml yml";
    case Complete::example_name:
        return "_qkv_words \"$(_qkv_names \"$qkv\" examples)\"";
    case Complete::format:
    case Complete::choices:
        return "_qkv_words '" + joined(value_words(flag, id)) + "'";
    case Complete::steps:
        return "_qkv_step_list";
    case Complete::cells:
        return "_qkv_cells";
    }
    return "return 0";
}

// What bash offers for an argument.
std::string bash_argument(const Flag& flag, CommandId id) {
    switch (flag.complete) {
    case Complete::example:
        return "_qkv_words \"$(_qkv_names \"$qkv\" examples) -\"; _qkv_files yaml yml";
    case Complete::lesson:
        return "_qkv_words \"$(_qkv_names \"$qkv\" lesson)\"; _qkv_files yaml yml";
    default:
        return bash_value(flag, id);
    }
}

void write_bash_command(const CommandDef& command, std::ostringstream& out) {
    const CommandId id = command.id;
    std::vector<std::string> options;
    std::vector<std::string> with_value;
    std::vector<const Flag*> arguments;
    out << "        " << command.name << ")\n";
    out << "            case $prev in\n";
    for (const Flag* flag : flags_of(id)) {
        if (flag->is_argument()) {
            arguments.push_back(flag);
            continue;
        }
        options.push_back(spellings(*flag));
        if (!flag->value.empty()) {
            with_value.push_back(spellings(*flag, " | "));
            out << "                " << spellings(*flag, " | ") << ") " << bash_value(*flag, id) << "; return 0 ;;\n";
        }
    }
    out << "            esac\n";
    out << "            options='" << joined(options) << "'\n";
    out << "            if [[ $cur == -* ]]; then _qkv_words \"$options\"; return 0; fi\n";
    // the arguments so far: the words after the command that are neither
    // options nor their values
    out << "            local arguments=0\n";
    out << "            for ((i = i + 1; i < COMP_CWORD; i++)); do\n";
    out << "                case ${COMP_WORDS[i]} in\n";
    if (!with_value.empty()) {
        out << "                    " << joined(with_value, " | ") << ") ((i++)) ;;\n";
    }
    out << "                    -*) ;;\n";
    out << "                    *) ((arguments++)) ;;\n";
    out << "                esac\n";
    out << "            done\n";
    for (std::size_t k = 0; k < arguments.size(); ++k) {
        const bool last = k + 1 == arguments.size();
        out << "            if ((arguments " << (last && arguments[k]->repeatable ? ">=" : "==") << " " << k
            << ")); then " << bash_argument(*arguments[k], id) << "; fi\n";
    }
    out << "            ;;\n";
}

// ── zsh ──────────────────────────────────────────────────────────────────────

// Text inside a single-quoted _arguments spec: ' closes the quotes, and
// [ ] : \ are special in a description.
std::string zsh_text(std::string_view text) {
    std::string quoted;
    for (const char c : text) {
        if (c == '\'') {
            quoted += "'\\''";
        } else if (c == '[' || c == ']' || c == ':' || c == '\\') {
            quoted += '\\';
            quoted += c;
        } else {
            quoted += c;
        }
    }
    return quoted;
}

std::string zsh_action(const Flag& flag, CommandId id) {
    switch (flag.complete) {
    case Complete::nothing:
        return " ";
    case Complete::file:
        return "_files";
    case Complete::yaml_file:
        return "_files -g \"*.(yaml|yml)\"";
    case Complete::format:
    case Complete::choices:
        return "(" + joined(value_words(flag, id)) + ")";
    case Complete::steps:
        return "_qkv_steps";
    case Complete::example:
        return "_qkv_examples";
    case Complete::example_name:
        return "_qkv_example_names";
    case Complete::lesson:
        return "_qkv_lessons";
    case Complete::cells:
        return "_qkv_cells";
    }
    return " ";
}

// One spec of _arguments: '(-f --format)'{-f,--format}'[Output format]:FORMAT:(text ...)', or for the
// argument at POSITION (from 1) '1:Example file ...:_qkv_examples'.
std::string zsh_spec(const Flag& flag, CommandId id, int position = 0) {
    const std::string value = flag.value.empty() ? ""
                                                 : ":" + zsh_text(flag.value) + ":" + zsh_action(flag, id);
    if (flag.is_argument()) {
        const bool required = (flag.required & command_bit(id)) != 0;
        return "'" + (flag.repeatable ? std::string("*") : std::to_string(position)) + (required ? ":" : "::") +
               zsh_text(flag.help) + ":" + zsh_action(flag, id) + "'";
    }
    const std::string description = "[" + zsh_text(flag.help) + "]" + value + "'";
    if (flag.name == "--help" || flag.name == "--version") {
        return "'(- *)'{" + spellings(flag, ",") + "}'" + description;
    }
    if (!flag.short_name.empty()) {
        return "'(" + spellings(flag) + ")'{" + spellings(flag, ",") + "}'" + description;
    }
    return std::string("'") + (flag.repeatable ? "*" : "") + std::string(flag.name) + description;
}

// ── fish ─────────────────────────────────────────────────────────────────────

std::string fish_text(std::string_view text) {
    std::string quoted = "'";
    for (const char c : text) {
        if (c == '\'' || c == '\\') {
            quoted += '\\';
        }
        quoted += c;
    }
    return quoted + "'";
}

std::string fish_line(const Flag& flag, const std::string& condition, CommandId id) {
    std::string line = "complete -c qkv -n " + condition;
    if (!flag.short_name.empty()) {
        line += " -s " + std::string(flag.short_name.substr(1));
    }
    line += " -l " + std::string(flag.name.substr(2));
    if (!flag.value.empty()) {
        switch (flag.complete) {
        case Complete::file:
        case Complete::yaml_file:
        case Complete::example:
        case Complete::lesson:
            line += " -r -F";
            break;
        case Complete::example_name:
            line += " -x -a '(__qkv_examples)'";
            break;
        case Complete::steps:
            line += " -x -a \"(__qkv_steps $steps)\"";
            break;
        case Complete::format:
        case Complete::choices:
            line += " -x -a " + fish_text(joined(value_words(flag, id)));
            break;
        case Complete::nothing:
        case Complete::cells:
            line += " -x";
            break;
        }
    }
    return line + " -d " + fish_text(flag.help) + "\n";
}

}  // namespace

std::string bash_completion() {
    std::ostringstream out;
    out << R"sh(# bash completion for qkv                                   -*- shell-script -*-
# Written by `qkv generate bash` from qkv's own table of commands and flags.
# Installed as share/bash-completion/completions/qkv. Built-in example and
# lesson names are asked of the qkv being completed.

_qkv_steps=')sh" << step_ids() << R"sh('

# The names a list of qkv's prints: `qkv examples` (first column) or `qkv lesson` (after the number).
_qkv_names() {
    "$1" "$2" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { $1 = $2 } $1 ~ /^[a-z][a-z0-9_-]*$/ { print $1 }'
}

# Adds the words of $1 that start with $cur.
_qkv_words() {
    local word
    while IFS= read -r word; do
        [[ -n $word ]] && COMPREPLY+=("$word")
    done < <(compgen -W "$1" -- "$cur")
}

# Adds the files whose names end in .EXT, for each EXT given (any file for
# '*'), and the folders.
_qkv_files() {
    local word extension
    while IFS= read -r word; do
        [[ -n $word ]] && COMPREPLY+=("$word")
    done < <(
        for extension in "$@"; do
            if [[ $extension == '*' ]]; then
                compgen -f -- "$cur"
            else
                compgen -f -X "!*.$extension" -- "$cur"
            fi
        done
        compgen -d -- "$cur"
    )
    compopt -o filenames 2>/dev/null
}

# --steps: a comma-separated list; completes the id after the last comma.
_qkv_step_list() {
    local done_ids='' word
    [[ $cur == *,* ]] && done_ids=${cur%,*},
    while IFS= read -r word; do
        [[ -n $word ]] && COMPREPLY+=("$word")
    done < <(compgen -P "$done_ids" -W "$_qkv_steps" -- "${cur##*,}")
    compopt -o nospace 2>/dev/null
}

# explain's cells: a step id, then [ROW,COL]
_qkv_cells() {
    local word
    while IFS= read -r word; do
        [[ -n $word ]] && COMPREPLY+=("$word")
    done < <(compgen -S '[' -W "$_qkv_steps" -- "$cur")
    compopt -o nospace 2>/dev/null
}

_qkv() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD - 1]}
    local qkv=${COMP_WORDS[0]}
    local options
    COMPREPLY=()

    # the command: the first word after qkv that is not an option
    local command='' i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            -*) ;;
            *)
                command=${COMP_WORDS[i]}
                break
                ;;
        esac
    done

    case $command in
        '')
            if [[ $cur == -* ]]; then
                _qkv_words ')sh";
    std::vector<std::string> top;
    for (const Flag* flag : flags_of(CommandId::qkv)) {
        top.push_back(spellings(*flag));
    }
    out << joined(top) << "'\n            else\n                _qkv_words '" << command_names() << R"sh('
            fi
            ;;
)sh";
    for (const CommandDef* command : shown_commands()) {
        write_bash_command(*command, out);
    }
    out << R"sh(    esac
    return 0
}
complete -F _qkv qkv
)sh";
    return out.str();
}

std::string zsh_completion() {
    std::ostringstream out;
    out << R"sh(#compdef qkv
# zsh completion for qkv, installed as share/zsh/vendor-completions/_qkv.
# Written by `qkv generate zsh` from qkv's own table of commands and flags;
# built-in example and lesson names are asked of the qkv being completed.

_qkv_step_ids=()sh" << step_ids() << R"sh()

# --steps: ids separated by commas
_qkv_steps() {
    _values -s , 'step id' $_qkv_step_ids
}

# explain's cells: STEP[ROW,COL]@HEAD, the step id first
_qkv_cells() {
    compadd -S '[' -q -a _qkv_step_ids
}

# the names qkv lists ($_qkv_command is the qkv being completed, set by _qkv)
_qkv_examples() {
    local -a names
    names=(${(f)"$(_call_program examples $_qkv_command examples 2>/dev/null | awk '{ print $1 }')"})
    _alternative "examples:built-in example:(${names[*]} -)" 'files:YAML file:_files -g "*.(yaml|yml)"'
}

_qkv_example_names() {
    local -a names
    names=(${(f)"$(_call_program examples $_qkv_command examples 2>/dev/null | awk '{ print $1 }')"})
    _describe 'built-in example' names
}

_qkv_lessons() {
    local -a names
    names=(${(f)"$(_call_program lessons $_qkv_command lesson 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { print $2 }')"})
    _alternative "lessons:lesson:(${names[*]})" 'files:lesson file:_files -g "*.(yaml|yml)"'
}

_qkv() {
    local curcontext=$curcontext state line
    local _qkv_command=$words[1]
    local -a commands
    commands=(
)sh";
    for (const CommandDef* command : shown_commands()) {
        std::string help;
        for (const char c : command->help) {
            help += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        out << "        '" << command->name << ":" << help << "'\n";
    }
    out << "    )\n    _arguments -C \\\n";
    for (const Flag* flag : flags_of(CommandId::qkv)) {
        out << "        " << zsh_spec(*flag, CommandId::qkv) << " \\\n";
    }
    out << R"sh(        '1:command:->command' \
        '*::argument:->argument'
    case $state in
        command)
            _describe -t commands 'qkv command' commands
            ;;
        argument)
            curcontext=${curcontext%:*:*}:qkv-$words[1]:
            case $words[1] in
)sh";
    for (const CommandDef* command : shown_commands()) {
        out << "                " << command->name << ")\n                    _arguments";
        int position = 0;
        for (const Flag* flag : flags_of(command->id)) {
            position += flag->is_argument() ? 1 : 0;
            out << " \\\n                        " << zsh_spec(*flag, command->id, position);
        }
        out << "\n                    ;;\n";
    }
    out << R"sh(            esac
            ;;
    esac
}

_qkv "$@"
)sh";
    return out.str();
}

std::string fish_completion() {
    std::ostringstream out;
    out << R"sh(# fish completion for qkv, installed as share/fish/vendor_completions.d/qkv.fish.
# Written by `qkv generate fish` from qkv's own table of commands and flags;
# built-in example and lesson names are asked of qkv itself.

set -l commands )sh" << command_names() << R"sh(
set -l steps )sh" << step_ids() << R"sh(

function __qkv_examples
    command -q qkv; or return
    qkv examples 2>/dev/null | string replace -r '^(\S+)\s+(.*)$' '$1\t$2'
end

function __qkv_lessons
    command -q qkv; or return
    qkv lesson 2>/dev/null | string replace -rf '^\s*\d+\s+(\S+)\s+(.*)$' '$1\t$2'
end

# the ids already written before the last comma, then each step id
function __qkv_steps
    set -l token (commandline -ct)
    set -l done (string replace -r '[^,]*$' '' -- $token)
    for id in $argv
        echo $done$id
    end
end

complete -c qkv -f
)sh";
    for (const CommandDef* command : shown_commands()) {
        out << "complete -c qkv -n \"not __fish_seen_subcommand_from $commands\" -a " << command->name << " -d "
            << fish_text(command->help) << "\n";
    }
    for (const Flag& flag : flag_table()) {
        if (flag.is_argument()) {
            continue;
        }
        // the commands that take it, each on a line of its own where its values differ by command
        std::vector<std::string> names;
        for (const CommandDef* command : shown_commands()) {
            if (!flag.takes(command->id)) {
                continue;
            }
            if (flag.complete == Complete::format) {
                out << fish_line(flag, "\"__fish_seen_subcommand_from " + std::string(command->name) + "\"",
                                 command->id);
            } else {
                names.emplace_back(command->name);
            }
        }
        if (flag.takes(CommandId::qkv) && names.empty()) {
            out << fish_line(flag, "\"not __fish_seen_subcommand_from $commands\"", CommandId::qkv);
        } else if (flag.takes(CommandId::qkv)) {
            out << fish_line(flag, "'true'", CommandId::qkv);
        } else if (!names.empty()) {
            out << fish_line(flag, "\"__fish_seen_subcommand_from " + joined(names) + "\"", CommandId::qkv);
        }
    }
    // the arguments: an example (a built-in name or a YAML file), a lesson
    for (const Flag& flag : flag_table()) {
        std::vector<std::string> names;
        for (const CommandDef* command : shown_commands()) {
            if (flag.takes(command->id)) {
                names.emplace_back(command->name);
            }
        }
        if (!flag.is_argument() || names.empty()) {
            continue;
        }
        const std::string condition = "\"__fish_seen_subcommand_from " + joined(names) + "\"";
        if (flag.complete == Complete::example) {
            out << "complete -c qkv -n " << condition << " -a '(__qkv_examples)' -F\n";
        } else if (flag.complete == Complete::example_name) {
            out << "complete -c qkv -n " << condition << " -a '(__qkv_examples)'\n";
        } else if (flag.complete == Complete::lesson) {
            out << "complete -c qkv -n " << condition << " -a '(__qkv_lessons)' -F\n";
        }
    }
    return out.str();
}

}  // namespace qkv::cli
