// The output formats, one row each: its name for -f/--format, which
// commands (and views of a command) write it, and for a document format the
// writer of documents (render/document.hpp) that the commands building one use. Every list of formats — the
// command line's choices, --help, the man page, completions, and the error
// that names a command's formats — is read from this table.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

enum class Format {
    text,
    markdown,
    latex,
    csv,
    json,
    svg,
    html,
    yaml,        // worksheet: the answers template that qkv check reads
    gradescope,  // check: Gradescope's results.json for one learner
};

struct Document;       // render/document.hpp
struct DocumentStyle;  // render/document.hpp

// How a document format writes any document (render/document.hpp).
using DocumentWriter = void (*)(const Document&, const DocumentStyle&, std::ostream&);

// What writes formats: a command, or a view of one (run --decode; check of a
// class, several answer files, whose reports follow one another or make one
// table).
enum class Writer { run, decode, explain, check, check_class, lesson, worksheet, bench };

// Every format, in the order of the table.
std::vector<Format> all_formats();
// The formats `writer` writes, in the table's order; the first is its default.
std::vector<Format> formats_of(Writer writer);
// True when `writer` writes `format`.
bool writes(Writer writer, Format format);
// True for the formats a person reads (text, Markdown, LaTeX, HTML): they show
// the example's weights and biases before the steps that use them; json and
// csv, whose readers are programs, carry the steps the spec lists, and the
// weights only when --steps names them.
bool read_by_people(Format format);
// The writer of a document format (text, Markdown, LaTeX, HTML); none for a
// format that is not one (csv, json, svg, yaml, gradescope).
DocumentWriter document_writer(Format format);
// The name -f/--format gives a format: "text", "markdown", …
std::string format_name(Format format);
// The format of a name, or none when no format has it.
std::optional<Format> parse_format(std::string_view name);
// The names of `formats`, in their order.
std::vector<std::string> format_names(const std::vector<Format>& formats);
// "text, markdown, json or html": the names `writer` writes, for messages.
std::string format_list(Writer writer);

}  // namespace qkv
