// The man page's synopsis and options, written from the command line's table,
// its steps, from the step table, and its list of diagnoses, from check's
// catalogue of mistakes, into the page's template (man/qkv.1.in) at build time.
#include "attention/step_handlers.hpp"
#include "attention/steps.hpp"
#include "check/catalogue.hpp"
#include "cli/flags.hpp"
#include "cli/generated.hpp"
#include "model/keys.hpp"

#include <bit>
#include <sstream>
#include <stdexcept>

#ifndef QKV_VERSION
#define QKV_VERSION "0.0.0"
#endif

namespace qkv::cli {

namespace {

// roff writes a hyphen that must stay one (in a flag) as \-
std::string roff(std::string_view text) {
    std::string escaped;
    for (const char c : text) {
        if (c == '-') {
            escaped += "\\-";
        } else {
            escaped += c;
        }
    }
    return escaped;
}

// A flag of one command alone is documented with that command; the others,
// shared, under OPTIONS.
bool is_shared(const Flag& flag) {
    return std::popcount(flag.commands) > 1 || flag.takes(CommandId::qkv);
}

// ".BR \-f ", " \-\-format " \fIFORMAT\fR"", ".BI \-\-page " N"" or ".B \-\-key"
std::string man_heading(const Flag& flag) {
    if (!flag.short_name.empty()) {
        return ".BR " + roff(flag.short_name) + " \", \" " + roff(flag.name) +
               (flag.value.empty() ? "" : " \" \\fI" + std::string(flag.value) + "\\fR\"");
    }
    if (!flag.value.empty()) {
        return ".BI " + roff(flag.name) + " \" " + std::string(flag.value) + "\"";
    }
    return ".B " + roff(flag.name);
}

// The shared -f lists each command's formats, the first its default.
std::string formats_by_command() {
    std::string text = "Each command's formats, the first its default:";
    bool first = true;
    for (const CommandDef* command : shown_commands()) {
        const auto formats = format_choices(command->id);
        if (formats.empty() || command->id == CommandId::bench) {
            continue;
        }
        text += std::string(first ? "\n" : ";\n") + "\\fB" + std::string(command->name) + "\\fR:";
        for (std::size_t i = 0; i < formats.size(); ++i) {
            text += (i == 0 ? " " : ", ") + formats[i];
        }
        first = false;
    }
    return text + ".";
}

void write_entry(const Flag& flag, std::ostringstream& out) {
    out << ".TP\n" << man_heading(flag) << "\n" << flag.man << "\n";
    if (flag.complete == Complete::format && is_shared(flag)) {
        out << formats_by_command() << "\n";
    }
}

// .B qkv run
// .RI [ FILE | NAME | \- ]
// .RI [ options ]
void write_synopsis(std::ostringstream& out) {
    for (const CommandDef* command : shown_commands()) {
        out << ".B qkv " << command->name << "\n";
        bool options = false;
        for (const Flag* flag : flags_of(command->id)) {
            if (!flag->is_argument()) {
                options = options || flag->name != "--help";
                continue;
            }
            const bool required = (flag->required & command_bit(command->id)) != 0;
            std::string words;
            std::string_view rest = flag->value;
            while (!rest.empty()) {
                const auto bar = rest.find('|');
                words += (words.empty() ? "" : " | ") + roff(rest.substr(0, bar));
                rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
            }
            out << (required ? ".IR " + words : ".RI [ " + words + " ]") << (flag->repeatable ? " ...\n" : "\n");
        }
        if (options) {
            out << ".RI [ options ]\n";
        }
        out << ".br\n";
    }
    for (const Flag* flag : flags_of(CommandId::qkv)) {
        out << ".B qkv " << roff(flag->name) << "\n.br\n";
    }
}

// The step table's ids, marked * per query head, ** per key/value head and
// *** per weight set, each with its line: those of the forward pass (the
// given steps with them), or those of the backward pass.
void write_steps(bool backward, std::ostringstream& out) {
    out << ".TS\nl lx.\n";  // the second column takes the rest of the line and wraps in it
    for (const StepId id : all_steps()) {
        if (is_gradient(id) != backward) {
            continue;
        }
        const StepRow& row = step_row(id);
        const char* marks = row.heads == HeadKind::query        ? " *"
                            : row.heads == HeadKind::key_value  ? " **"
                            : row.heads == HeadKind::weight_set ? " ***"
                                                                : "";
        out << row.name << marks << "\tT{\n" << row.man << "\nT}\n";
    }
    out << ".TE\n";
}

// The keys of an example file (model/keys.def): a heading for each key and
// form, the keys whose meaning is empty joining the heading before theirs,
// then its meaning and the steps it feeds.
void write_keys(std::ostringstream& out) {
    const auto rows = key_rows();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const KeyRow& row = rows[i];
        std::size_t shared = i + 1;
        while (shared < rows.size() && rows[shared].meaning.empty()) {
            ++shared;
        }
        out << ".TP\n";
        if (shared > i + 1) {
            out << ".BR " << row.name;  // .BR title ", " description
            for (std::size_t j = i + 1; j < shared; ++j) {
                out << " \", \" " << rows[j].name;
            }
        } else if (row.form.empty()) {
            out << ".B " << row.name;
        } else {
            out << (row.italic ? ".BI " : ".BR ") << row.name << ": \" " << row.form << "\"";
        }
        out << "\n" << row.meaning << "\n";
        std::string steps;
        for (std::size_t j = i; j < shared; ++j) {
            for (const StepId id : rows[j].another_form ? std::span<const StepId>() : key_feeds(rows[j].key)) {
                steps += (steps.empty() ? "" : ", ") + std::string("\\fB") + roff(step_text(id)) + "\\fR";
            }
        }
        if (!steps.empty()) {
            out << ".br\nSteps: " << steps << ".\n";
        }
        i = shared - 1;
    }
}

void write_shared_options(std::ostringstream& out) {
    for (const Flag& flag : flag_table()) {
        if (!flag.is_argument() && is_shared(flag)) {
            write_entry(flag, out);
        }
    }
}

void write_command_options(const CommandDef& command, std::ostringstream& out) {
    std::string shared;
    for (const Flag* flag : flags_of(command.id)) {
        if (flag->is_argument() || flag->name == "--help") {
            continue;  // (every command takes --help)
        }
        if (is_shared(*flag)) {
            shared += (shared.empty() ? "" : ", ") + std::string("\\fB") +
                      roff(flag->short_name.empty() ? flag->name : flag->short_name) + "\\fR";
        } else {
            write_entry(*flag, out);
        }
    }
    if (!shared.empty()) {
        out << ".PP\n" << "Also " << shared << " (see \\fBOPTIONS\\fR).\n";
    }
}

}  // namespace

std::string man_page(const std::string& page_template) {
    std::istringstream lines(page_template);
    std::ostringstream out;
    for (std::string line; std::getline(lines, line);) {
        for (std::size_t at = line.find("@PROJECT_VERSION@"); at != std::string::npos;
             at = line.find("@PROJECT_VERSION@")) {
            line.replace(at, 17, QKV_VERSION);
        }
        if (line == "@SYNOPSIS@") {
            write_synopsis(out);
        } else if (line == "@STEPS forward@" || line == "@STEPS backward@") {
            write_steps(line == "@STEPS backward@", out);
        } else if (line == "@DIAGNOSES@") {
            for (const checking::MistakeRow* mistake : checking::named_mistakes()) {
                // .B scores_no_transpose, or .BR mask_zero " (classic)"
                const std::string heading = mistake->classic ? ".BR " + std::string(mistake->id) + " \" (classic)\""
                                                             : ".B " + std::string(mistake->id);
                out << ".TP\n" << heading << "\n" << mistake->man << "\n";
            }
        } else if (line == "@KEYS@") {
            write_keys(out);
        } else if (line == "@OPTIONS@") {
            write_shared_options(out);
        } else if (line.starts_with("@OPTIONS ") && line.ends_with("@")) {
            const std::string name = line.substr(9, line.size() - 10);
            const CommandDef* found = nullptr;
            for (const CommandDef* command : shown_commands()) {
                found = command->name == name ? command : found;
            }
            if (found == nullptr) {
                throw std::invalid_argument("the man page's template names no command " + name + ": " + line);
            }
            write_command_options(*found, out);
        } else if (line.starts_with("@") && line.ends_with("@") && line.size() > 1) {
            throw std::invalid_argument("the man page's template has a mark qkv does not know: " + line);
        } else {
            out << line << "\n";
        }
    }
    return out.str();
}

}  // namespace qkv::cli
