// A document (document.hpp) as text for a terminal: headings in colour,
// prose and notes wrapped to 78 columns and indented by two, notes as
// "· …", tables as `qkv run` draws them under their caption and shape. One
// blank line between blocks (a table already ends with one), none under a
// heading; a document that continues other text starts with a blank line.
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
        m_out << "  " << styled(symbols(caption.name), k_bold, m_style.color) << "    ("
              << shape_text(caption.rows, caption.cols, m_style.ascii) << ")\n";
        m_blank = true;
    }
    void operator()(const Formula& formula) {
        separate();
        m_out << "  " << symbols(formula_text(formula.text, m_style.ascii)) << "    ("
              << shape_text(formula.rows, formula.cols, m_style.ascii) << ")\n";
        m_blank = false;
    }
    void operator()(const TableBlock& block) {
        separate();
        if (!block.caption.empty()) {
            m_out << "  " << styled(symbols(formula_text(block.caption, m_style.ascii)), k_bold, m_style.color)
                  << "    (" << block.table.shape << ")\n";
        }
        m_out << draw_table(block.table, TextTableSkin(m_style.ascii));
        m_blank = true;
    }
    void operator()(const Notes& notes) {
        for (const auto& note : notes.items) {
            wrapped(note, "  · ", "    ", k_dim);
        }
        m_blank = m_blank && notes.items.empty();  // a table's notes follow its blank line
    }
    // the heading in bold, the lines indented
    void operator()(const Working& working) {
        separate();
        m_out << styled(symbols(joined(working.heading)), k_bold, m_style.color) << '\n';
        for (const auto& line : working.lines) {
            m_out << "  " << symbols(line) << '\n';
        }
        m_blank = false;
    }
        // a terminal has no pages
    void operator()(const Group& group) { blocks(group.blocks); }

    void blocks(const std::vector<Block>& blocks) {
        for (const Block& block : blocks) {
            std::visit(*this, block);
        }
    }

    void title(const std::string& text) {
        m_out << styled(symbols(one_line(text)), k_heading, m_style.color) << '\n';
        m_blank = false;  // the title stands apart from what follows
    }

    void heading(const std::string& text) {
        separate();
        m_out << styled(symbols(one_line(text)), k_heading, m_style.color) << '\n';
        m_blank = true;  // what follows a heading sits right under it
    }

private:
    std::string symbols(const std::string& text) const { return m_style.ascii ? to_ascii(text) : text; }

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
    bool m_blank;  // the next block needs no blank line before it
};

}  // namespace

void write_text_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    TextWriter writer(style, out);
    if (document.title_in_fragment) {
        writer.title(document.title);
    }
    writer.blocks(document.blocks);
}

}  // namespace qkv
