// A document (document.hpp) as one self-contained HTML page (OUTPUT FORMATS
// in man/qkv.1.in), with the page style of render/html.hpp: a group of blocks
// is a <section> that a printed page does not split, and each cell of a blank
// table an empty box (td.blank) large enough to write a number in by hand.
#include "render/html.hpp"
#include "render/render.hpp"
#include "render/document.hpp"

#include <sstream>

namespace qkv {

namespace {

// A given matrix's symbol from its LaTeX, as HTML: "W_{Q}" as W<sub>Q</sub>,
// "\mathrm{padding}" as padding; anything else as it is written.
std::string symbol_html(const std::string& latex) {
    std::string text = latex;
    if (text.starts_with("\\mathrm{") && text.ends_with("}")) {
        text = text.substr(8, text.size() - 9);
    }
    const auto sub = text.find("_{");
    if (sub != std::string::npos && text.ends_with("}")) {
        return xml_escape(text.substr(0, sub)) + "<sub>" + xml_escape(text.substr(sub + 2, text.size() - sub - 3)) +
               "</sub>";
    }
    return xml_escape(text);
}

// Each block of a document as HTML: whole elements, each ending in a line break.
class HtmlBlocks {
public:
    explicit HtmlBlocks(const DocumentStyle& style) : m_ascii(style.ascii) {}

    std::string operator()(const Prose& prose) const { return html_paragraphs(ascii(prose.text)); }
    std::string operator()(const Sizes& sizes) const {
        return "<p class=\"dims\">" + xml_escape(ascii(dims_line(sizes.dims, sizes.cross))) + "</p>\n";
    }
    std::string operator()(const Section& section) const {
        const std::string tag = "h" + std::to_string(section.level + 1);
        return "<" + tag + ">" + xml_escape(ascii(one_line(section.text))) + "</" + tag + ">\n";
    }
    // "Step 5 · Scores scores", its id the step's (and head's): unique on the page
    std::string operator()(const StepHeading& heading) const {
        const std::string id = heading.id + (heading.head_index != 0 ? "-h" + std::to_string(heading.head_index) : "");
        return "<h2 id=\"" + id + "\">" + xml_escape(ascii(joined_heading(heading, " · ", " · "))) + " <code>" +
               xml_escape(heading.id) + "</code></h2>\n";
    }
    std::string operator()(const Caption& caption) const {
        return "<h3>" + xml_escape(ascii(caption.name)) + " <span class=\"math\">" + symbol_html(caption.symbol) +
               "</span> " + shape(caption.rows, caption.cols) + "</h3>\n";
    }
    std::string operator()(const Formula& formula) const {
        return "<p class=\"formula\"><span class=\"math\">" + xml_escape(ascii(formula_text(formula.text, m_ascii))) +
               "</span> " + shape(formula.rows, formula.cols) + "</p>\n";
    }
    // a caption in the table's <caption>, with its shape
    std::string operator()(const TableBlock& block) const {
        const std::string caption =
            block.caption.empty() ? "" : ascii(formula_text(block.caption, m_ascii)) + " (" + block.table.shape + ")";
        if (block.role != TableRole::blank) {
            return html_table(block.table, caption);
        }
        // an empty box per cell, to write in
        return html_table(block.table, caption, [](std::size_t, std::size_t, const std::string&) {
            return std::string("<td class=\"blank\"></td>");
        });
    }
    std::string operator()(const Notes& notes) const {
        if (notes.items.empty()) {
            return "";
        }
        std::string out = "<ul class=\"note\">\n";
        for (const auto& item : notes.items) {
            out += "<li>" + xml_escape(ascii(one_line(item))) + "</li>\n";
        }
        return out + "</ul>\n";
    }
    std::string operator()(const Working& working) const {
        HtmlWorking lines{ascii(joined(working.heading)), {}};
        for (const auto& line : working.lines) {
            lines.lines.push_back(ascii(line));
        }
        return "<section class=\"explained\">\n" + html_working(lines) + "</section>\n";
    }
        // the page style keeps a <section> on one printed page
    std::string operator()(const Group& group) const { return "<section>\n" + blocks(group.blocks) + "</section>\n"; }

    std::string blocks(const std::vector<Block>& blocks) const {
        std::string out;
        for (const Block& block : blocks) {
            out += std::visit(*this, block);
        }
        return out;
    }

    std::string ascii(const std::string& text) const { return m_ascii ? to_ascii(text) : text; }

private:
    std::string shape(arma::uword rows, arma::uword cols) const {
        return "<span class=\"shape\">(" + shape_text(rows, cols, m_ascii) + ")</span>";
    }

    bool m_ascii;
};

}  // namespace

void write_html_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    const HtmlBlocks blocks(style);
    // the page's head and its <h1>
    html_begin(out, blocks.ascii(document.title));
    out << blocks.blocks(document.blocks);
    html_end(out);
}

}  // namespace qkv
