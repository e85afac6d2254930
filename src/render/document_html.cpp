// A document (document.hpp) as one self-contained HTML page (OUTPUT FORMATS
// in man/qkv.1.in), with the page style of render/html.hpp: a group of blocks
// is a <section> that a printed page does not split, a part a <section> under
// its anchor; each cell of a blank table an empty box (td.blank) large enough
// to write a number in by hand, each cell with a working a button that opens
// it, weights shaded; the summary first, under the title.
#include "render/html.hpp"
#include "render/render.hpp"
#include "render/document.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

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
    // "Step 5 · Scores scores", its id the step's (and head's): unique on the
    // page; in a part, whose section is the anchor, none
    std::string operator()(const StepHeading& heading) const {
        const std::string id = heading.id + (heading.head_index != 0 ? "-h" + std::to_string(heading.head_index) : "");
        return (m_part.empty() ? "<h2 id=\"" + id + "\">" : std::string("<h2>")) +
               xml_escape(ascii(joined_heading(heading, " · ", " · "))) + " <code>" + xml_escape(heading.id) +
               "</code></h2>\n";
    }
    std::string operator()(const Caption& caption) const {
        return "<h3>" + xml_escape(ascii(caption.name)) + " <span class=\"math\">" + symbol_html(caption.symbol) +
               "</span> " + shape(caption.rows, caption.cols) + "</h3>\n";
    }
    // subscripts and superscripts as such: "Q·Kᵀ", "Z<sub>2</sub>"
    std::string operator()(const Formula& formula) const {
        return "<p class=\"formula\"><span class=\"math\">" + html_formula(ascii(formula_text(formula.text, m_ascii))) +
               "</span> " + shape(formula.rows, formula.cols) + "</p>\n";
    }
    // a caption in the table's <caption>, with its shape
    std::string operator()(const TableBlock& block) const {
        const std::string caption =
            block.caption.empty() ? "" : ascii(formula_text(block.caption, m_ascii)) + " (" + block.table.shape + ")";
        if (block.role == TableRole::answers) {
            // a cell is classed by its verdict: right, wrong or carried
            return html_table(drawn_marks(block.table, m_ascii, false, true_value_open(Format::html),
                                          true_value_close(Format::html)),
                              caption);
        }
        if (block.role == TableRole::values && (block.shaded || block.row_shaded || !block.workings.empty())) {
            return worked_table(block, caption);
        }
        if (block.role != TableRole::blank) {
            return html_table(block.table, caption);
        }
        // an empty box per cell, to write in
        return html_table(block.table, caption, [](std::size_t, std::size_t, const std::string&) {
            return std::string("<td class=\"blank\"></td>");
        });
    }
    // equations are LaTeX's alone: the table and its workings show the result
    std::string operator()(const Equations&) const { return ""; }
    std::string operator()(const Aside& aside) const { return "<p class=\"note\">" + text(aside.text) + "</p>\n"; }
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
    // in a panel, as a cell's working opens from a table
    std::string operator()(const Working& working) const {
        return "<div class=\"working\">\n" + html_working(lines_of(working)) + "</div>\n";
    }
    // each line a paragraph: "<p><strong class="verdict-wrong">Mistake:</strong> …</p>"
    std::string operator()(const Statement& statement) const {
        std::string out;
        for (const auto& line : statement.lines) {
            if (line.label.empty()) {
                out += "<p" + tone(line.tone) + ">" + spans(line.spans) + "</p>\n";
            } else {
                out += "<p><strong" + tone(line.tone) + ">" + text(line.label) + "</strong>" +
                       (line.spans.empty() ? "" : " " + spans(line.spans)) + "</p>\n";
            }
        }
        return out;
    }
    std::string operator()(const VerdictBlock& verdict) const { return (*this)(statement_of(verdict)); }
    std::string operator()(const MarkedList& list) const {
        if (list.items.empty()) {
            return "";
        }
        std::string out = "<ul>\n";
        for (const auto& item : list.items) {
            out += "<li>" + mark(item.mark) + text(item.text) + "</li>\n";
        }
        return out + "</ul>\n";
    }
    std::string operator()(const Legend& legend) const {
        std::string out;
        for (const auto& item : legend.items) {
            out += (out.empty() ? "" : m_ascii ? "; " : " · ") + mark(item.mark) + text(item.text) +
                   (item.mark == Mark::wrong ? " " + true_value_words(Format::html) : "");
        }
        return out.empty() ? "" : "<p class=\"note\">" + out + "</p>\n";
    }
    // (a page writes its summary first: see write_html_document)
    std::string operator()(const Summary& summary) const {
        std::string out = "<p" + tone(summary.tone) + "><strong>" + text(summary.label) + "</strong> " +
                          text(summary.text) + "</p>\n";
        if (!summary.next.empty()) {
            out += "<p class=\"note\">" + spans(summary.next) + "</p>\n";
        }
        return out;
    }
    // paragraphs, and each run of items one list
    std::string operator()(const Passage& passage) const {
        std::string out;
        bool in_list = false;
        for (const auto& paragraph : passage.paragraphs) {
            if (paragraph.item != in_list) {
                out += paragraph.item ? "<ul>\n" : "</ul>\n";
                in_list = paragraph.item;
            }
            out += paragraph.item ? "<li>" + spans(paragraph.spans) + "</li>\n" : "<p>" + spans(paragraph.spans) + "</p>\n";
        }
        return in_list ? out + "</ul>\n" : out;
    }
    std::string operator()(const Lead& lead) const { return "<p class=\"note\">" + spans(lead.spans) + "</p>\n"; }
    // folded in <details>, which opens without JavaScript; or under its verdict
    std::string operator()(const Answer& answer) const {
        const std::string working = "<div class=\"working\">\n" + html_working(lines_of(answer.working)) + "</div>\n";
        if (answer.folded) {
            return "<details>\n<summary>" + text(answer.label) + "</summary>\n" + working + "</details>\n";
        }
        return "<p" + tone(answer.tone) + "><strong>" + text(answer.label) + "</strong></p>\n" + working;
    }
    // a box holding the question and what follows about its answer
    std::string operator()(const QuestionBlock& question) const {
        std::string out = "<div class=\"question\">\n<p><strong>Question.</strong> " + spans(question.prompt) +
                          (question.form.empty() ? "" : " <span class=\"note\">" + text(question.form) + "</span>") +
                          "</p>\n";
        if (!question.given.empty()) {
            out += "<p class=\"given\"><em>Given:</em> " + spans(question.given) + "</p>\n";
        }
        return out + blocks(question.blocks) + "</div>\n";
    }
    // a section; after the first, a note where a terminal draws its "page 2 of 6" rule
    std::string operator()(const PageBlock& page) const {
        return "<section class=\"page\" id=\"page-" + std::to_string(page.number) + "\">\n" +
               (page.number > 1 ? "<p class=\"note\">Page " + std::to_string(page.number) + " of " +
                                      std::to_string(page.pages) + "</p>\n"
                                : "") +
               blocks(page.blocks) + "</section>\n";
    }
        // the page style keeps a <section> on one printed page
    std::string operator()(const Group& group) const { return "<section>\n" + blocks(group.blocks) + "</section>\n"; }
    std::string operator()(const Part& part) const {
        m_part = part.id;
        std::string out = "<section id=\"" + xml_escape(part.id) + "\">\n" + blocks(part.blocks) + "</section>\n";
        m_part.clear();
        return out;
    }

    std::string blocks(const std::vector<Block>& blocks) const {
        std::string out;
        for (const Block& block : blocks) {
            out += std::visit(*this, block);
        }
        return out;
    }

    std::string ascii(const std::string& text) const { return m_ascii ? to_ascii(text) : text; }

private:
    std::string text(const std::string& plain) const { return xml_escape(ascii(plain)); }

    HtmlWorking lines_of(const Working& working) const {
        HtmlWorking lines{ascii(joined(working.heading)), {}};
        for (const auto& line : working.lines) {
            lines.lines.push_back(ascii(line));
        }
        return lines;
    }

    // the smallest and largest finite value of a row, and how many are finite
    static std::tuple<double, double, std::size_t> row_range(const std::vector<double>& row) {
        double low = std::numeric_limits<double>::infinity();
        double high = -low;
        std::size_t count = 0;
        for (const double value : row) {
            if (std::isfinite(value)) {
                low = std::min(low, value);
                high = std::max(high, value);
                ++count;
            }
        }
        return {low, high, count};
    }

    // each kept cell a button that opens its working (a popover, after the
    // table) and weights shaded as in the SVG; a popover's id is the part's and
    // the cell's matrix row and column
    std::string worked_table(const TableBlock& block, const std::string& caption) const {
        const Table& table = block.table;
        std::string popovers;
        const auto cell = [&](std::size_t i, std::size_t j, const std::string& number) {
            std::string content = text(number);
            if (!block.workings.empty()) {
                const CellWorking& cell = block.workings[i][j];
                const std::string target =
                    m_part + "-" + std::to_string(table.rows[i] + 1) + "-" + std::to_string(table.cols[j] + 1);
                content = "<button type=\"button\" class=\"cell\" popovertarget=\"" + target + "\" aria-label=\"" +
                          xml_escape(cell.name + " = " + ascii(number)) + "\">" + content + "</button>";
                popovers += "<div popover=\"auto\" id=\"" + target + "\" class=\"working\">" +
                            "<button type=\"button\" class=\"close\" popovertarget=\"" + target +
                            "\" popovertargetaction=\"hide\">Close</button>\n" +
                            html_working(lines_of(cell.working)) + "</div>\n";
            }
            const double value = table.values[i][j];
            const bool largest = i < table.row_maxima.size() && value == table.row_maxima[i];
            if (block.row_shaded) {
                // equal scores share a row as their weights do: 1/k each
                const auto [low, high, count] = row_range(table.values[i]);
                return html_shaded_cell(high > low ? (value - low) / (high - low) : 1.0 / static_cast<double>(count),
                                        content, largest);
            }
            if (!block.shaded) {
                return "<td>" + content + "</td>";
            }
            return html_shaded_cell(value, content, largest);
        };
        const std::string drawn = html_table(table, caption, cell);
        return drawn + (popovers.empty() ? "" : "<div class=\"workings\">\n" + popovers + "</div>\n");
    }
    // a mark in its colour, by its class, and a space after it
    std::string mark(Mark mark) const {
        return mark == Mark::none ? ""
                                  : "<span class=\"verdict-" + mark_name(mark) + "\">" +
                                        xml_escape(mark_symbol(mark, m_ascii)) + "</span> ";
    }
    static std::string tone(Mark mark) {
        return mark == Mark::none ? "" : " class=\"verdict-" + mark_name(mark) + "\"";
    }
    // code as it is, to be copied
    std::string spans(const std::vector<Span>& spans) const {
        std::string out;
        for (const auto& span : spans) {
            out += span.kind == SpanKind::code      ? "<code>" + xml_escape(span.text) + "</code>"
                   : span.kind == SpanKind::formula ? text(formula_text(span.text, m_ascii))
                   : span.kind == SpanKind::value   ? "<strong>" + unbroken(text(span.text)) + "</strong>"
                   : span.kind == SpanKind::strong  ? "<strong>" + text(span.text) + "</strong>"
                                                    : text(span.text);
        }
        return out;
    }

    // a value's spaces do not break (&#160;, which XML reads too)
    static std::string unbroken(const std::string& html) {
        std::string out;
        for (const char c : html) {
            out += c == ' ' ? std::string("&#160;") : std::string(1, c);
        }
        return out;
    }

    std::string shape(arma::uword rows, arma::uword cols) const {
        return "<span class=\"shape\">(" + shape_text(rows, cols, m_ascii) + ")</span>";
    }

    bool m_ascii;
    mutable std::string m_part;  // the id of the part being written
};

}  // namespace

void write_html_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    const HtmlBlocks blocks(style);
    if (style.body_only) {
        out << blocks.blocks(document.blocks);
        return;
    }
    // the page's head and its <h1>
    html_begin(out, blocks.ascii(full_title(document)));
    // the summary first: on a page, the verdict is what a reader looks for
    std::vector<Block> rest;
    for (const Block& block : document.blocks) {
        if (std::holds_alternative<Summary>(block)) {
            out << std::visit(blocks, block);
        } else {
            rest.push_back(block);
        }
    }
    out << blocks.blocks(rest);
    html_end(out);
}

}  // namespace qkv
