// GitHub-flavoured Markdown: a heading per step, the formula as $…$ math, the
// matrix as a pipe table with its labels, the notes as a list. Written to be
// pasted into docs; it renders on GitHub and through `pandoc -f gfm`.
#include "render/render.hpp"
#include "render/table.hpp"

#include <cctype>
#include <sstream>

namespace qkv {

namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || (c & 0x80) != 0; }

}  // namespace

// Backslash-escapes what Markdown would read as markup: emphasis, code, HTML
// tags (a token like <s> would otherwise strike the rest through), links,
// table pipes, math dollars and heading marks. An underscore inside a word
// (d_k) is left as it is: GFM never reads it as emphasis. Line breaks become
// spaces, so that the text stays one heading, one table cell or one item.
std::string markdown_escape(const std::string& text) {
    const std::string line = one_line(text);
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        bool escape = std::string_view("\\`*<>[]|$&~#").find(c) != std::string_view::npos;
        if (c == '_') {
            escape = i == 0 || i + 1 == line.size() || !is_word_char(line[i - 1]) || !is_word_char(line[i + 1]);
        }
        if (escape) {
            out += '\\';
        }
        out += c;
    }
    return out;
}

namespace {

// The lines of a paragraph joined with spaces; blank lines keep paragraphs apart.
std::vector<std::string> paragraphs(const std::string& text) {
    std::vector<std::string> result;
    std::istringstream lines(text);
    std::string line;
    std::string current;
    while (std::getline(lines, line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) {
            if (!current.empty()) {
                result.push_back(current);
                current.clear();
            }
            continue;
        }
        current += (current.empty() ? "" : " ") + line.substr(line.find_first_not_of(" \t"));
    }
    if (!current.empty()) {
        result.push_back(current);
    }
    return result;
}

}  // namespace

void render_markdown(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    const auto symbols = [&](const std::string& text) { return options.ascii ? to_ascii(text) : text; };
    const std::string title = trace.title.empty() ? "Self-attention, step by step" : trace.title;
    out << "# " << markdown_escape(symbols(title)) << "\n\n";
    if (!options.brief) {
        for (const auto& paragraph : paragraphs(trace.description)) {
            out << markdown_escape(symbols(paragraph)) << "\n\n";
        }
    }
    out << dims_line(trace) << "\n";

    for (const Step* step : select_steps(trace, options)) {
        out << "\n## " << markdown_escape(symbols(step_heading(trace, *step))) << " `" << step_name(step->id) << "`\n\n";
        const Table table = build_table(*step, options);
        out << '$' << step->latex << "$ (" << table.shape << ")\n\n";
        if (!options.brief) {
            out << markdown_escape(symbols(step->explanation)) << "\n\n";
        }
        out << draw_table(table, MarkdownTableSkin());
        if (!step->notes.empty()) {
            out << '\n';
            for (const auto& note : step->notes) {
                out << "- " << markdown_escape(symbols(note)) << '\n';
            }
        }
    }
}

}  // namespace qkv
