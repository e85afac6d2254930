// GitHub-flavoured Markdown: a heading per step, the formula as $…$ math, the
// matrix as a pipe table with its labels, the notes as a list. Written to be
// pasted into docs; it renders on GitHub and through `pandoc -f gfm`.
#include "render/render.hpp"
#include "render/table.hpp"
#include "render/worksheet.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>
#include <utility>
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

// The longest run of backticks in `text`.
std::size_t longest_backticks(const std::string& text) {
    std::size_t longest = 0;
    for (std::size_t at = 0, run = 0; at < text.size(); ++at) {
        run = text[at] == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    return longest;
}

}  // namespace

std::string markdown_code_span(const std::string& text) {
    const std::string ticks(longest_backticks(text) + 1, '`');
    const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
    return ticks + (pad ? " " + text + " " : text) + ticks;
}

std::string markdown_code_block(const std::vector<std::string>& lines, const std::string& info) {
    std::size_t longest = 0;
    for (const auto& line : lines) {
        longest = std::max(longest, longest_backticks(line));
    }
    const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
    std::string block = fence + info + "\n";
    for (const auto& line : lines) {
        block += line + "\n";
    }
    return block + fence + "\n";
}

std::string markdown_math(const std::string& latex) {
    // GFM drops a backslash before punctuation (it reads "\," as an escaped
    // comma): the same spaces and delimiters spelled with letters, each ending
    // in a space so that a letter after it does not join the command
    static const std::pair<std::string_view, std::string_view> k_spelled[] = {
        {"\\,", "\\thinspace "}, {"\\:", "\\medspace "},  {"\\;", "\\thickspace "}, {"\\!", "\\negthinspace "},
        {"\\{", "\\lbrace "},    {"\\}", "\\rbrace "},    {"\\|", "\\Vert "},
    };
    const auto is_alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    const std::size_t first = latex.find_first_not_of(' ');
    const std::size_t last = latex.find_last_not_of(' ');
    const std::string body = first == std::string::npos ? "" : latex.substr(first, last - first + 1);
    std::string out = "$";
    for (std::size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        const char prev = out.back();
        const char next = i + 1 < body.size() ? body[i + 1] : ' ';
        const auto spelled = std::find_if(std::begin(k_spelled), std::end(k_spelled),
                                          [&](const auto& pair) { return body.compare(i, 2, pair.first) == 0; });
        if (spelled != std::end(k_spelled)) {
            out += spelled->second;
            ++i;
            if (i + 1 < body.size() && body[i + 1] == ' ') {
                out.pop_back();  // one space, not two
            }
        } else if (c == '\\' && i + 1 < body.size()) {
            // a command (\top) and its first letter, or an escape GFM keeps
            out += body.substr(i, 2);
            ++i;
        } else if (c == '_') {
            // after a letter or digit an underscore cannot open emphasis; after
            // anything else ("}_{", ")_{") a space keeps it from opening (TeX skips it)
            out += is_alnum(prev) || next == ' ' ? "_" : "_ ";
        } else if (c == '*') {
            out += "\\ast ";  // the same star, never emphasis
        } else if ((c == '<' && (std::isalpha(static_cast<unsigned char>(next)) != 0 || next == '/' || next == '!' ||
                                 next == '?')) ||
                   (c == '&' && (is_alnum(next) || next == '#'))) {
            // neither a tag (<b) nor an entity (&amp;)
            out += std::string(1, c) + " ";
        } else {
            out += c;
        }
    }
    // the closing dollar right after the math, as after "\thinspace " it would not be
    while (out.size() > 1 && out.back() == ' ') {
        out.pop_back();
    }
    return out + '$';
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

// "## Step 5 · Scores `scores`", with its own line breaks around it.
std::string step_heading_line(const Trace& trace, const Step& step, bool ascii) {
    const std::string heading = step_heading(trace, step);
    return "\n## " + markdown_escape(ascii ? to_ascii(heading) : heading) + " `" + std::string(step_name(step.id)) +
           "`\n\n";
}

// "$S = Q K^\top$ (3 × 3)"
std::string formula_line(const std::string& latex, const std::string& shape) {
    return markdown_math(latex) + " (" + shape + ")\n\n";
}

// The notes as a list, after a blank line; nothing for no notes.
std::string note_list(const std::vector<std::string>& notes, bool ascii) {
    std::string out = notes.empty() ? "" : "\n";
    for (const auto& note : notes) {
        out += "- " + markdown_escape(ascii ? to_ascii(note) : note) + "\n";
    }
    return out;
}

// A worksheet's table in Markdown: the empty cells as wide as the key's
// numbers (and at least 6 columns), so that the source has room to write in
// too; GitHub and pandoc show them as empty cells.
class SheetTableSkin : public MarkdownTableSkin {
public:
    std::string number(const std::string& text) const override {
        return std::string(std::max<std::size_t>(display_width(text), 6), ' ');
    }
};

class MarkdownWorksheet : public WorksheetSkin {
public:
    explicit MarkdownWorksheet(bool ascii) : m_ascii(ascii) {}

    std::string begin() const override { return ""; }
    std::string title(const std::string& text) const override { return "# " + escaped(text) + "\n"; }
    std::string paragraphs(const std::string& text) const override {
        std::string out;
        for (const auto& paragraph : qkv::paragraphs(text)) {
            out += "\n" + escaped(paragraph) + "\n";
        }
        return out;
    }
    std::string dims(const Trace& trace) const override { return "\n" + escaped(dims_line(trace)) + "\n"; }
    std::string section(const std::string& text) const override { return "\n## " + escaped(text) + "\n"; }
    std::string matrix_label(const std::string& name, const std::string& latex, arma::uword rows,
                             arma::uword cols) const override {
        return "\n**" + escaped(name) + "** " + markdown_math(latex) + " (" + shape_text(rows, cols, m_ascii) + ")\n";
    }
    // (each block of a sheet starts with a blank line and ends with one line break)
    std::string step_heading(const Trace& trace, const Step& step) const override {
        const std::string line = step_heading_line(trace, step, m_ascii);
        return line.substr(0, line.size() - 1);
    }
    std::string formula(const Step& step) const override {
        const std::string line = formula_line(step.latex, shape_text(step.values.n_rows, step.values.n_cols, m_ascii));
        return "\n" + line.substr(0, line.size() - 1);
    }
    std::string table(const Table& table, SheetTable kind) const override {
        return "\n" + (kind == SheetTable::blank ? draw_table(table, SheetTableSkin())
                                                 : draw_table(table, MarkdownTableSkin()));
    }
    std::string notes(const std::vector<std::string>& items) const override { return note_list(items, m_ascii); }
    std::string keep_together(const std::string& part) const override { return part; }
    std::string end() const override { return ""; }

private:
    std::string escaped(const std::string& text) const { return markdown_escape(m_ascii ? to_ascii(text) : text); }

    bool m_ascii;
};

}  // namespace

std::unique_ptr<WorksheetSkin> markdown_worksheet_skin(bool ascii) { return std::make_unique<MarkdownWorksheet>(ascii); }

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
        out << step_heading_line(trace, *step, options.ascii);
        const Table table = build_table(*step, options);
        out << formula_line(step->latex, table.shape);
        if (!options.brief) {
            out << markdown_escape(symbols(step->explanation)) << "\n\n";
        }
        out << draw_table(table, MarkdownTableSkin()) << note_list(step->notes, options.ascii);
    }
}

}  // namespace qkv
