// The annotated text format: run's document (render/document.hpp) written by
// the text writer of documents (document_text.cpp): for each step a heading,
// the formula and shape, a short explanation, the labelled table and notes.
// Colour is optional and decided by the caller (RenderOptions::color). And
// how a text table is drawn (TextTableSkin), which every text output shares.
#include "render/document.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <string>

namespace qkv {

namespace {

std::string repeat(const std::string& unit, std::size_t count) {
    std::string result;
    for (std::size_t i = 0; i < count; ++i) {
        result += unit;
    }
    return result;
}

}  // namespace

std::string TextTableSkin::row(const std::string& label, const std::vector<std::string>& cells, int row) const {
    std::string line = "  " + label + " " + (m_ascii ? "|" : "│");
    for (std::size_t j = 0; j < cells.size(); ++j) {
        line += std::string(m_spacing, ' ') + cell(cells[j], row, j);
    }
    return line + "\n";
}

std::string TextTableSkin::divider(std::size_t label_width, const std::vector<std::size_t>& widths) const {
    const std::string rule = m_ascii ? "-" : "─";
    std::string line = "  " + repeat(rule, label_width + 1) + (m_ascii ? "+" : "┼");
    for (const auto width : widths) {
        line += repeat(rule, width + m_spacing);
    }
    return line + "\n";
}

std::string TextTableSkin::end() const { return "\n"; }

std::string TextTableSkin::cell(const std::string& text, int, std::size_t) const { return text; }

void render_text(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    write_document(run_document(trace, options), Format::text,
                   {.ascii = options.ascii, .color = options.color, .width = options.width}, out);
}

}  // namespace qkv
