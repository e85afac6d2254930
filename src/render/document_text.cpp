// A document (document.hpp) as text for a terminal: the title in bold,
// headings in colour, prose and notes wrapped to 78 columns and indented by
// two, notes as "· …", tables as `qkv run` draws them under their caption and
// shape. One blank line between blocks (a table already ends with one), none
// under a heading; a document that continues other text starts with a blank
// line. A report's lines (statements, marked lists, a legend) are never
// wrapped, follow the title and one another with no blank line, and are
// indented by two inside a part; the summary stands apart, in bold.
#include "render/document.hpp"
#include "render/palette.hpp"
#include "render/render.hpp"

#include <sstream>

namespace qkv {

namespace {

constexpr std::size_t k_wrap_width = 78;

class TextWriter {
public:
    TextWriter(const DocumentStyle& style, std::ostream& out)
        : m_style(style), m_out(out), m_blank(!style.continues) {}

    void operator()(const Prose& prose) {
        std::istringstream lines(prose.text);
        std::string line;
        std::string paragraph;
        const auto flush = [&] {
            if (!paragraph.empty()) {
                separate();
                wrapped(paragraph, "  ", "  ", nullptr);
                m_blank = false;
                paragraph.clear();
            }
        };
        while (std::getline(lines, line)) {
            if (line.find_first_not_of(" \t") == std::string::npos) {
                flush();
            } else {
                paragraph += (paragraph.empty() ? "" : " ") + line.substr(line.find_first_not_of(" \t"));
            }
        }
        flush();
    }
    void operator()(const Sizes& sizes) { (*this)(Prose{dims_line(sizes.dims, sizes.cross)}); }
    void operator()(const Section& section) { heading(section.text); }
    void operator()(const StepHeading& step) { heading(joined_heading(step, " · ", " · ") + "  [" + step.id + "]"); }
    void operator()(const Caption& caption) {
        separate();
        m_lines = false;
        m_out << "  " << styled(symbols(caption.name), k_bold, m_style.color) << "    ("
              << shape_text(caption.rows, caption.cols, m_style.ascii) << ")\n";
        m_blank = true;
    }
    void operator()(const Formula& formula) {
        separate();
        m_lines = false;
        m_out << "  " << symbols(formula_text(formula.text, m_style.ascii)) << "    ("
              << shape_text(formula.rows, formula.cols, m_style.ascii) << ")\n";
        m_blank = false;
    }
    void operator()(const TableBlock& block) {
        separate();
        m_lines = false;
        if (!block.caption.empty()) {
            m_out << "  " << styled(symbols(formula_text(block.caption, m_style.ascii)), k_bold, m_style.color)
                  << "    (" << block.table.shape << ")\n";
        }
        if (block.role == TableRole::answers) {
            // each column's numbers right-aligned among themselves, each with its mark after it
            m_out << draw_table(drawn_marks(block.table, m_style.ascii, m_style.color, true_value_open(Format::text),
                                            true_value_close(Format::text)),
                                TextTableSkin(m_style.ascii, 2, Align::left));
        } else {
            m_out << draw_table(block.table, TextTableSkin(m_style.ascii));
        }
        m_blank = true;
    }
    void operator()(const Aside& aside) {
        separate();
        m_lines = false;
        wrapped(aside.text, "  ", "  ", k_dim);
        m_blank = false;
    }
    void operator()(const Notes& notes) {
        for (const auto& note : notes.items) {
            wrapped(note, "  · ", "    ", k_dim);
        }
        m_blank = m_blank && notes.items.empty();  // a table's notes follow its blank line
        m_lines = m_lines && notes.items.empty();
    }
    // the heading in bold, the lines indented
    void operator()(const Working& working) {
        separate();
        m_lines = false;
        m_out << styled(symbols(joined(working.heading)), k_bold, m_style.color) << '\n';
        for (const auto& line : working.lines) {
            m_out << "  " << symbols(line) << '\n';
        }
        m_blank = false;
    }
    // "Mistake: …", the label in the tone's colour
    void operator()(const Statement& statement) {
        for (const auto& line : statement.lines) {
            const std::string label = line.label.empty()          ? ""
                                      : line.tone == Mark::none ? symbols(line.label) + " "
                                                                : styled(symbols(line.label), mark_color(line.tone), m_style.color) + " ";
            report_line(label + spans(line.spans));
        }
    }
    void operator()(const MarkedList& list) {
        for (const auto& item : list.items) {
            report_line(mark(item.mark) + symbols(item.text));
        }
    }
    // "✓ right   ✗ wrong, the true value in brackets   …"
    void operator()(const Legend& legend) {
        std::string line;
        for (const auto& item : legend.items) {
            line += (line.empty() ? "" : "   ") + mark(item.mark) + symbols(item.text) +
                    (item.mark == Mark::wrong ? " " + true_value_words(Format::text) : "");
        }
        report_line(line);
    }
    void operator()(const Summary& summary) {
        separate();
        m_out << styled(symbols(summary.label + " " + summary.text), k_bold, m_style.color) << '\n';
        if (!summary.next.empty()) {
            m_out << spans(summary.next) << '\n';
        }
        m_blank = false;
        m_lines = true;
    }
        // a terminal has no pages
    void operator()(const Group& group) { blocks(group.blocks); }
    void operator()(const Part& part) {
        m_in_part = true;
        blocks(part.blocks);
        m_in_part = false;
    }

    void blocks(const std::vector<Block>& blocks) {
        for (const Block& block : blocks) {
            std::visit(*this, block);
        }
    }

    // in bold; a report's lines right under it, anything else after a blank line
    void title(const std::string& text) {
        m_out << styled(symbols(one_line(text)), k_bold, m_style.color) << '\n';
        m_blank = false;
        m_lines = true;
    }

    void heading(const std::string& text) {
        separate();
        m_out << styled(symbols(one_line(text)), k_heading, m_style.color) << '\n';
        m_blank = true;  // what follows a heading sits right under it
        m_lines = false;
    }

private:
    std::string symbols(const std::string& text) const { return m_style.ascii ? to_ascii(text) : text; }

    // a mark in its colour and a space after it; nothing for none
    std::string mark(Mark mark) const {
        return mark == Mark::none ? ""
                                  : styled(mark_symbol(mark, m_style.ascii), mark_color(mark), m_style.color) + " ";
    }

    // code as it is, to be copied; formula notation as text writes it
    std::string spans(const std::vector<Span>& spans) const {
        std::string text;
        for (const auto& span : spans) {
            text += span.kind == SpanKind::code      ? span.text
                    : span.kind == SpanKind::formula ? symbols(formula_text(span.text, m_style.ascii))
                                                     : symbols(span.text);
        }
        return text;
    }

    // a line of a report: right under the one before it, a blank line after anything else
    void report_line(const std::string& line) {
        if (!m_lines) {
            separate();
        }
        m_out << (m_in_part ? "  " : "") << line << '\n';
        m_blank = false;
        m_lines = true;
    }

    void separate() {
        if (!m_blank) {
            m_out << '\n';
        }
    }

    // `text` in lines of at most 78 columns, the first after `first`, the others after `indent`.
    void wrapped(const std::string& text, const std::string& first, const std::string& indent, const char* style) {
        std::istringstream words(symbols(text));
        std::string word;
        std::string line = symbols(first);
        bool empty = true;  // no word on the line yet
        while (words >> word) {
            if (!empty && display_width(line + " " + word) > k_wrap_width) {
                m_out << (style == nullptr ? line : styled(line, style, m_style.color)) << '\n';
                line = symbols(indent);
                empty = true;
            }
            line += (empty ? "" : " ") + word;
            empty = false;
        }
        if (!empty) {
            m_out << (style == nullptr ? line : styled(line, style, m_style.color)) << '\n';
        }
    }

    const DocumentStyle& m_style;
    std::ostream& m_out;
    bool m_blank;          // the next block needs no blank line before it
    bool m_lines = false;  // the last thing written is a report's line (or the title), which a report line follows directly
    bool m_in_part = false;
};

}  // namespace

void write_text_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    TextWriter writer(style, out);
    if (document.title_in_fragment) {
        writer.title(full_title(document, " · "));
    }
    writer.blocks(document.blocks);
}

}  // namespace qkv
