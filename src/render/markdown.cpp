// GitHub-flavoured Markdown: the writer of documents (document.hpp) and what
// every Markdown output shares (escaping, code spans, math). A step has its
// heading, its formula as $…$ math, its matrix as a pipe table with its labels
// and its notes as a list. Written to be pasted into docs; it renders on
// GitHub and through `pandoc -f gfm`.
#include "render/render.hpp"
#include "render/table.hpp"
#include "render/document.hpp"

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

// A blank table's cells in Markdown: as wide as the key's numbers (and at
// least 6 columns), so that the source has room to write in too; GitHub and
// pandoc show them as empty cells.
class BlankTableSkin : public MarkdownTableSkin {
public:
    std::string number(const std::string& text) const override {
        return std::string(std::max<std::size_t>(display_width(text), 6), ' ');
    }
};

// Each block as Markdown: its lines, each ending in a line break, or nothing
// at all; the document puts a blank line between blocks.
class MarkdownBlocks {
public:
    explicit MarkdownBlocks(const DocumentStyle& style) : m_ascii(style.ascii) {}

    std::string operator()(const Prose& prose) const {
        std::string out;
        for (const auto& paragraph : paragraphs(prose.text)) {
            out += (out.empty() ? "" : "\n") + escaped(paragraph) + "\n";
        }
        return out;
    }
    std::string operator()(const Sizes& sizes) const { return escaped(dims_line(sizes.dims, sizes.cross)) + "\n"; }
    std::string operator()(const Section& section) const {
        return std::string(static_cast<std::size_t>(section.level) + 1, '#') + " " + escaped(section.text) + "\n";
    }
    // "## Step 5 · Scores `scores`"
    std::string operator()(const StepHeading& heading) const {
        return "## " + escaped(joined_heading(heading, " · ", " · ")) + " " + markdown_code_span(heading.id) + "\n";
    }
    std::string operator()(const Caption& caption) const {
        return "**" + escaped(caption.name) + "** " + markdown_math(caption.symbol) + " (" +
               shape_text(caption.rows, caption.cols, m_ascii) + ")\n";
    }
    // "$S = Q K^\top$ (3 × 3)"
    std::string operator()(const Formula& formula) const {
        return markdown_math(formula.latex) + " (" + shape_text(formula.rows, formula.cols, m_ascii) + ")\n";
    }
    // "**q = x₁·W_Q** (1 × 2)" over the table when it has a caption
    std::string operator()(const TableBlock& block) const {
        const std::string caption =
            block.caption.empty() ? ""
                                  : "**" + escaped(formula_text(block.caption, m_ascii)) + "** (" + block.table.shape + ")\n\n";
        if (block.role == TableRole::answers) {
            return caption + draw_table(drawn_marks(block.table, m_ascii, false, true_value_open(Format::markdown),
                                                    true_value_close(Format::markdown)),
                                        MarkdownTableSkin());
        }
        return caption + (block.role == TableRole::blank ? draw_table(block.table, BlankTableSkin())
                                                         : draw_table(block.table, MarkdownTableSkin()));
    }
    // equations are LaTeX's alone: the table shows the result
    std::string operator()(const Equations&) const { return ""; }
    std::string operator()(const Aside& aside) const { return "*" + escaped(aside.text) + "*\n"; }
    std::string operator()(const Notes& notes) const {
        std::string out;
        for (const auto& note : notes.items) {
            out += "- " + escaped(note) + "\n";
        }
        return out;
    }
    // "### scores[1,2] = 4    (…)" and the lines in a fenced block, which keeps their columns
    std::string operator()(const Working& working) const {
        std::string heading;
        for (const auto& part : working.heading) {
            heading += part.label ? escaped(part.text) : symbols(part.text);
        }
        std::vector<std::string> lines;
        for (const auto& line : working.lines) {
            lines.push_back(symbols(line));
        }
        // (a label may hold backticks: the block's fence is longer than any of them)
        return "### " + heading + "\n\n" + markdown_code_block(lines);
    }
    // one paragraph, its lines kept apart by hard line breaks: "**Mistake:** …  "
    std::string operator()(const Statement& statement) const {
        std::string out;
        for (const auto& line : statement.lines) {
            out += (out.empty() ? "" : "  \n") +
                   (line.label.empty() ? "" : "**" + escaped(line.label) + "**" + (line.spans.empty() ? "" : " ")) +
                   spans(line.spans);
        }
        return out.empty() ? "" : out + "\n";
    }
    std::string operator()(const VerdictBlock& verdict) const { return (*this)(statement_of(verdict)); }
    std::string operator()(const MarkedList& list) const {
        std::string out;
        for (const auto& item : list.items) {
            out += "- " + mark(item.mark) + escaped(item.text) + "\n";
        }
        return out;
    }
    // "✓ right · ✗ wrong, the true value in parentheses · …"
    std::string operator()(const Legend& legend) const {
        std::string out;
        for (const auto& item : legend.items) {
            out += (out.empty() ? "" : m_ascii ? "; " : " · ") + mark(item.mark) + escaped(item.text) +
                   (item.mark == Mark::wrong ? " " + true_value_words(Format::markdown) : "");
        }
        return out.empty() ? "" : out + "\n";
    }
    std::string operator()(const Summary& summary) const {
        return "**" + escaped(summary.label) + "** " + escaped(summary.text) + "\n" +
               (summary.next.empty() ? "" : "\n" + spans(summary.next) + "\n");
    }
    // paragraphs apart, the items of a list one under the other
    std::string operator()(const Passage& passage) const {
        std::string out;
        bool item = false;
        for (const auto& paragraph : passage.paragraphs) {
            out += out.empty() || (item && paragraph.item) ? "" : "\n";
            out += (paragraph.item ? "- " : "") + spans(paragraph.spans) + "\n";
            item = paragraph.item;
        }
        return out;
    }
    std::string operator()(const Lead& lead) const { return "*" + spans(lead.spans) + "*\n"; }
    // folded in <details>, which GitHub and pandoc's HTML open on a click; or
    // under its label; a cell's heading as code, which keeps its columns
    std::string operator()(const Answer& answer) const {
        const std::string heading = answer.sentence ? escaped(joined(answer.working.heading))
                                                    : markdown_code_span(symbols(joined(answer.working.heading)));
        std::vector<std::string> lines;
        for (const auto& line : answer.working.lines) {
            lines.push_back(symbols(line));
        }
        const std::string working = lines.empty() ? "" : "\n" + markdown_code_block(lines);
        if (answer.folded) {
            return "<details>\n<summary>" + escaped(answer.label) + "</summary>\n\n" + heading + "\n" + working +
                   "\n</details>\n";
        }
        return "**" + escaped(answer.label) + "** " + heading + "\n" + working;
    }
    std::string operator()(const QuestionBlock& question) const {
        std::string out = "**Question.** " + spans(question.prompt) +
                          (question.form.empty() ? "" : " " + escaped(question.form)) + "\n";
        if (!question.given.empty()) {
            out += "\n*Given:* " + spans(question.given) + "\n";
        }
        const std::string after = blocks(question.blocks);
        return after.empty() ? out : out + "\n" + after;
    }
    std::string operator()(const PageBlock& page) const { return blocks(page.blocks); }
        // a page of Markdown has no end: the group's blocks one after another
    std::string operator()(const Group& group) const { return blocks(group.blocks); }
    std::string operator()(const Part& part) const { return blocks(part.blocks); }

    std::string blocks(const std::vector<Block>& blocks) const {
        std::string out;
        for (const Block& block : blocks) {
            const std::string text = std::visit(*this, block);
            if (!text.empty()) {
                out += (out.empty() ? "" : "\n") + text;
            }
        }
        return out;
    }

    std::string escaped(const std::string& text) const { return markdown_escape(symbols(text)); }

private:
    std::string symbols(const std::string& text) const { return m_ascii ? to_ascii(text) : text; }

    std::string mark(Mark mark) const { return mark == Mark::none ? "" : mark_symbol(mark, m_ascii) + " "; }

    std::string spans(const std::vector<Span>& spans) const {
        std::string out;
        for (const auto& span : spans) {
            // (a value as plain text, as the rest of the paragraph)
            out += span.kind == SpanKind::code     ? markdown_code_span(span.text)
                   : span.kind == SpanKind::strong ? "**" + escaped(span.text) + "**"
                                                   : escaped(span.text);
        }
        return out;
    }

    bool m_ascii;
};

}  // namespace

void write_markdown_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    const MarkdownBlocks blocks(style);
    const std::string body = blocks.blocks(document.blocks);
    if (document.title_in_fragment && !style.body_only) {
        out << "# " << blocks.escaped(full_title(document)) << "\n" << (body.empty() ? "" : "\n");
    }
    out << body;
}

}  // namespace qkv
