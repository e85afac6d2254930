#include "render/formats.hpp"

#include "render/document.hpp"
#include "render/render.hpp"

#include <stdexcept>

namespace qkv {

// The writers of the document formats, each in a file of its own, named here
// by their rows and nowhere else (write_document calls them).
void write_text_document(const Document& document, const DocumentStyle& style, std::ostream& out);      // document_text.cpp
void write_markdown_document(const Document& document, const DocumentStyle& style, std::ostream& out);  // markdown.cpp
void write_latex_document(const Document& document, const DocumentStyle& style, std::ostream& out);     // document_latex.cpp
void write_html_document(const Document& document, const DocumentStyle& style, std::ostream& out);      // document_html.cpp

namespace {

constexpr unsigned bit(Writer writer) { return 1U << static_cast<unsigned>(writer); }

struct FormatRow {
    Format format;
    std::string_view name;
    unsigned writers;  // bit(Writer::…) of each writer that writes it
    bool read = false; // a person reads it: it shows the example's weights unasked
    DocumentWriter document = nullptr;  // a document format's writer
};

constexpr unsigned k_documents = bit(Writer::run) | bit(Writer::explain) | bit(Writer::check) | bit(Writer::lesson);

// One row per format, in the order -f/--format lists them.
constexpr FormatRow k_formats[] = {
    {Format::text, "text", k_documents | bit(Writer::decode) | bit(Writer::check_class) | bit(Writer::bench), true,
     write_text_document},
    {Format::markdown, "markdown", k_documents | bit(Writer::decode) | bit(Writer::check_class) | bit(Writer::worksheet),
     true, write_markdown_document},
    {Format::latex, "latex", k_documents | bit(Writer::decode) | bit(Writer::worksheet), true, write_latex_document},
    {Format::csv, "csv", bit(Writer::run) | bit(Writer::check) | bit(Writer::check_class)},
    {Format::json, "json", bit(Writer::run) | bit(Writer::decode) | bit(Writer::explain) | bit(Writer::check) |
                               bit(Writer::check_class) | bit(Writer::bench)},
    {Format::svg, "svg", bit(Writer::run)},
    {Format::html, "html", k_documents | bit(Writer::decode) | bit(Writer::worksheet), true, write_html_document},
    {Format::yaml, "yaml", bit(Writer::worksheet)},
    {Format::gradescope, "gradescope", bit(Writer::check)},
};

const FormatRow& row_of(Format format) {
    for (const auto& row : k_formats) {
        if (row.format == format) {
            return row;
        }
    }
    throw std::logic_error("an output format without a row");
}

}  // namespace

std::vector<Format> all_formats() {
    std::vector<Format> formats;
    for (const auto& row : k_formats) {
        formats.push_back(row.format);
    }
    return formats;
}

std::vector<Format> formats_of(Writer writer) {
    std::vector<Format> formats;
    for (const auto& row : k_formats) {
        if ((row.writers & bit(writer)) != 0) {
            formats.push_back(row.format);
        }
    }
    return formats;
}

bool writes(Writer writer, Format format) { return (row_of(format).writers & bit(writer)) != 0; }

std::string format_name(Format format) { return std::string(row_of(format).name); }

bool read_by_people(Format format) { return row_of(format).read; }

DocumentWriter document_writer(Format format) { return row_of(format).document; }

std::optional<Format> parse_format(std::string_view name) {
    for (const auto& row : k_formats) {
        if (row.name == name) {
            return row.format;
        }
    }
    return std::nullopt;
}

std::vector<std::string> format_names(const std::vector<Format>& formats) {
    std::vector<std::string> names;
    for (const auto format : formats) {
        names.push_back(format_name(format));
    }
    return names;
}

std::string format_list(Writer writer) { return join_list(format_names(formats_of(writer)), " or "); }

}  // namespace qkv
