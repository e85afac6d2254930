// A worksheet as one self-contained HTML page (OUTPUT FORMATS in man/qkv.1.in): the page style of
// render/html.hpp, each given matrix and each step a <section> that a printed
// page does not split, and each cell to fill in an empty box (td.blank) large
// enough to write a number in by hand.
#include "render/html.hpp"
#include "render/render.hpp"
#include "render/worksheet.hpp"

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

class HtmlWorksheet : public WorksheetSkin {
public:
    explicit HtmlWorksheet(bool ascii) : m_ascii(ascii) {}

    std::string begin() const override { return ""; }
    // the page's head and <h1>: html_begin() writes them together
    std::string title(const std::string& text) const override {
        std::ostringstream out;
        html_begin(out, ascii(text));
        return out.str();
    }
    std::string paragraphs(const std::string& text) const override { return html_paragraphs(ascii(text)); }
    std::string dims(const Trace& trace) const override {
        return "<p class=\"dims\">" + xml_escape(ascii(dims_line(trace))) + "</p>\n";
    }
    std::string section(const std::string& text) const override { return "<h2>" + xml_escape(ascii(text)) + "</h2>\n"; }
    std::string matrix_label(const std::string& name, const std::string& latex, arma::uword rows,
                             arma::uword cols) const override {
        return "<h3>" + xml_escape(ascii(name)) + " <span class=\"math\">" + symbol_html(latex) +
               "</span> <span class=\"shape\">(" + shape_text(rows, cols, m_ascii) + ")</span></h3>\n";
    }
    // "Step 5 · Scores scores", its id the step's (and head's): unique on the page
    std::string step_heading(const Trace& trace, const Step& step) const override {
        const std::string id = step_text(step.id) + (step.head != 0 ? "-h" + std::to_string(step.head) : "");
        return "<h2 id=\"" + id + "\">" + xml_escape(ascii(qkv::step_heading(trace, step))) + " <code>" +
               step_text(step.id) + "</code></h2>\n";
    }
    std::string formula(const Step& step) const override {
        return "<p class=\"formula\"><span class=\"math\">" + xml_escape(ascii(formula_text(step.formula, m_ascii))) +
               "</span> <span class=\"shape\">(" + shape_text(step.values.n_rows, step.values.n_cols, m_ascii) +
               ")</span></p>\n";
    }
    std::string table(const Table& table, SheetTable kind) const override {
        if (kind != SheetTable::blank) {
            return html_table(table);
        }
        // an empty box per cell, to write in
        return html_table(table, "", [](std::size_t, std::size_t, const std::string&) {
            return std::string("<td class=\"blank\"></td>");
        });
    }
    std::string notes(const std::vector<std::string>& items) const override {
        if (items.empty()) {
            return "";
        }
        std::string out = "<ul class=\"note\">\n";
        for (const auto& item : items) {
            out += "<li>" + xml_escape(ascii(item)) + "</li>\n";
        }
        return out + "</ul>\n";
    }
    // the page style keeps a <section> on one printed page
    std::string keep_together(const std::string& part) const override { return "<section>\n" + part + "</section>\n"; }
    std::string end() const override {
        std::ostringstream out;
        html_end(out);
        return out.str();
    }

private:
    std::string ascii(const std::string& text) const { return m_ascii ? to_ascii(text) : text; }

    bool m_ascii;
};

}  // namespace

std::unique_ptr<WorksheetSkin> html_worksheet_skin(bool ascii) { return std::make_unique<HtmlWorksheet>(ascii); }

}  // namespace qkv
