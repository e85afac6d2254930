#include "cli/common.hpp"

#include "cli/output.hpp"
#include "attention/steps.hpp"
#include "base/diagnostics.hpp"

#include <iostream>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace qkv::cli {

namespace {

std::optional<std::uint64_t> parse_size(const std::string& text) {
    std::size_t used = 0;
    double number = 0;
    try {
        number = std::stod(text, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    std::string unit = text.substr(used);
    for (auto& c : unit) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    double factor = 1;
    if (unit == "" || unit == "b") {
        factor = 1;
    } else if (unit == "k" || unit == "kib" || unit == "kb") {
        factor = 1024.0;
    } else if (unit == "m" || unit == "mib" || unit == "mb") {
        factor = 1024.0 * 1024;
    } else if (unit == "g" || unit == "gib" || unit == "gb") {
        factor = 1024.0 * 1024 * 1024;
    } else if (unit == "t" || unit == "tib" || unit == "tb") {
        factor = 1024.0 * 1024 * 1024 * 1024;
    } else {
        return std::nullopt;
    }
    if (!(number > 0) || number * factor > 1e18) {
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(number * factor);
}

}  // namespace

std::vector<StepId> step_list(const std::string& text) {
    std::vector<StepId> ids;
    std::stringstream list(text);
    std::string id;
    while (std::getline(list, id, ',')) {
        while (!id.empty() && std::isspace(static_cast<unsigned char>(id.back()))) {
            id.pop_back();
        }
        while (!id.empty() && std::isspace(static_cast<unsigned char>(id.front()))) {
            id.erase(0, 1);
        }
        if (id.empty()) {
            continue;
        }
        const auto step = find_step(id);
        if (!step) {
            throw InputError(usage_error("--steps: unknown step id \"" + id + "\"",
                                         did_you_mean(id, step_names()) + "valid step ids: " + step_name_list()));
        }
        ids.push_back(*step);
    }
    return ids;
}

Diagnostic usage_error(const std::string& what, const std::string& hint) { return {"", 0, 0, what, hint}; }

std::string error_line(const Diagnostic& diagnostic) {
    return "qkv: error: " + printable_line(format_where_what(diagnostic), 2000);
}

void print_error(const Diagnostic& diagnostic) {
    std::cerr << error_line(diagnostic) << '\n';
    if (!diagnostic.hint.empty()) {
        std::cerr << "  hint: " << printable_line(diagnostic.hint) << '\n';
    }
}

bool writes_format(Writer writer, const std::string& name) {
    const auto format = parse_format(name);
    return format && writes(writer, *format);
}

Diagnostic format_refused(const std::string& name, const std::string& command, Writer writer) {
    return usage_error("--format " + name + " is not available for " + command,
                       command + " writes " + format_list(writer));
}

ComputeOptions compute_options(const CommonOptions& options) {
    ComputeOptions result;
    result.steps = step_list(options.steps);
    result.head = options.head;
    return result;
}

Bindings common_bindings(CommonOptions& options) {
    Bindings bindings;
    bindings.bind("--format", &options.format)
        .bind("--precision", &options.precision)
        .bind("--steps", &options.steps)
        .bind("--head", &options.head)
        .bind("--full", &options.full)
        .bind("--color", &options.color)
        .bind("--ascii", &options.ascii)
        .bind("--dark", &options.dark)
        .bind("--brief", &options.brief)
        .bind("--standalone", &options.standalone)
        .bind("--float", &options.floats)
        .bind("--label-prefix", &options.label_prefix)
        .bind("--output", &options.output)
        .bind("--force", &options.force)
        .bind("--max-memory", &options.max_memory)
        .bind("--allow-any-path", &options.allow_any_path)
        .bind("--backward", &options.backward);
    return bindings;
}

std::uint64_t memory_limit(const std::string& max_memory) {
    const auto bytes = parse_size(max_memory);
    if (!bytes) {
        throw InputError(usage_error("--max-memory is \"" + max_memory + "\"; expected a size",
                                     "write e.g. --max-memory 8GiB or 512MiB"));
    }
    return *bytes;
}

LoadOptions load_options(const CommonOptions& options) {
    LoadOptions result;
    result.max_memory = memory_limit(options.max_memory);
    result.allow_any_path = options.allow_any_path;
    result.backward = options.backward;
    return result;
}

Model load(const std::string& file_or_name, const CommonOptions& options) {
    const LoadOptions loading = load_options(options);
    return load_model(read_source(file_or_name), loading);
}

Model load(const std::string& file_or_name, const CommonOptions& options, const ComputeOptions& kept) {
    LoadOptions loading = load_options(options);
    loading.kept_steps = kept.steps;
    loading.kept_head = kept.head;
    return load_model(read_source(file_or_name), loading);
}

bool colour_by_default() {
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    return isatty(STDOUT_FILENO) == 1 && (no_color == nullptr || no_color[0] == '\0') &&
           (term == nullptr || std::string(term) != "dumb");
}

RenderOptions render_options(const CommonOptions& options, const Trace& trace) {
    RenderOptions result;
    result.format = parse_format(options.format).value_or(Format::text);
    result.precision = options.precision;
    result.full = options.full;
    result.ascii = options.ascii;
    if (options.dark && result.format != Format::svg) {
        throw InputError(usage_error("--dark is given with -f " + format_name(result.format) +
                                         "; expected -f svg (only the SVG has a dark version)",
                                     "add -f svg, or leave out --dark"));
    }
    result.dark = options.dark;
    result.brief = options.brief;
    result.standalone = options.standalone;
    if (options.floats && result.format != Format::latex) {
        throw InputError(usage_error("--float is given with -f " + format_name(result.format) +
                                         "; expected -f latex (only LaTeX has table floats)",
                                     "add -f latex, or leave out --float"));
    }
    const bool label_characters = std::all_of(options.label_prefix.begin(), options.label_prefix.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '-' || c == '.' || c == '_';
    });
    if (!label_characters) {
        throw InputError(usage_error("--label-prefix is \"" + options.label_prefix +
                                         "\"; expected letters, digits and : - . _",
                                     "write e.g. --label-prefix attention:masked"));
    }
    if (!options.label_prefix.empty() && !options.floats) {
        throw InputError(usage_error("--label-prefix is given without --float; expected --float, whose tables it labels",
                                     "add --float, or leave out --label-prefix"));
    }
    result.floats = options.floats;
    result.label_prefix = options.label_prefix.empty() ? "qkv" : options.label_prefix;
    if (options.color == "always") {
        result.color = true;
    } else if (options.color == "auto") {
        result.color = options.output.empty() && colour_by_default();
    }
    result.color = result.color && result.format == Format::text;

    if (options.head > static_cast<int>(trace.dims.heads)) {
        const bool one = trace.dims.heads == 1;
        throw InputError(usage_error("--head " + std::to_string(options.head) + " does not exist: this example has " +
                                         (one ? std::string("one head") : std::to_string(trace.dims.heads) + " heads"),
                                     one ? "leave out --head: there is only head 1"
                                         : "heads are numbered from 1 to " + std::to_string(trace.dims.heads)));
    }
    result.head = options.head;

    if (!options.steps.empty()) {
        result.steps = step_list(options.steps);
        if (select_steps(trace, result).empty()) {
            throw InputError(usage_error("--steps: none of \"" + options.steps + "\" is in this example",
                                         step_requirements()));
        }
    }
    return result;
}

void write_streamed(const std::function<void(std::ostream&)>& produce, const CommonOptions& options) {
    write_to(options.output, options.force, produce);
}

void write_result(const std::string& content, const CommonOptions& options) {
    if (options.output.empty() || options.output == "-") {
        write_stdout(content);
        return;
    }
    write_file_atomically(options.output, content, options.force);
}

}  // namespace qkv::cli
