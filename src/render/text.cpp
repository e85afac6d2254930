// The annotated text format: for each step a heading, the formula and shape, a
// short explanation, the labelled table and notes. Colour is optional and
// decided by the caller (RenderOptions::color).
#include "render/palette.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace qkv {

namespace {

constexpr std::size_t k_wrap_width = 78;

std::string repeat(const std::string& unit, std::size_t count) {
    std::string result;
    for (std::size_t i = 0; i < count; ++i) {
        result += unit;
    }
    return result;
}

// Run's text tables: with colour, the weights shaded as a heatmap with each
// row's largest one marked.
class HeatmapSkin : public TextTableSkin {
public:
    HeatmapSkin(const Table& table, const RenderOptions& options) : TextTableSkin(options.ascii), m_table(table) {}

protected:
    std::string cell(const std::string& text, int row, std::size_t col) const override {
        const double value = row < 0 ? arma::datum::nan : m_table.values[row][col];
        if (std::isnan(value)) {
            return text;
        }
        return shade(value, value == m_table.row_maxima[row]) + text + k_reset;
    }

private:
    // Background from dark (weight 0) to light (weight 1); the row's largest
    // weight is also bold and underlined.
    static std::string shade(double weight, bool row_max) {
        const int level = 236 + static_cast<int>(std::lround(std::clamp(weight, 0.0, 1.0) * 19.0));
        const int foreground = level > 247 ? 16 : 255;
        std::string code = shade_256(level, foreground);
        if (row_max) {
            code += k_row_max;
        }
        return code;
    }

    const Table& m_table;
};

class TextWriter {
public:
    TextWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    // Text with qkv's symbols, or their ASCII spelling under --ascii.
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    std::string styled(const std::string& text, const char* style) const {
        return qkv::styled(text, style, m_options.color);
    }

    // Words wrapped at k_wrap_width: the first line after `indent`, the others
    // after `hanging` (the same by default), each line in `style` when set.
    // k_wrap_width, or two columns less than options.width when that is narrower
    std::size_t wrap_width() const {
        const std::size_t given = m_options.width > 0 ? static_cast<std::size_t>(std::max(20, m_options.width - 2)) : k_wrap_width;
        return std::min(k_wrap_width, given);
    }

    void wrapped(const std::string& text, const std::string& indent, const std::string& hanging = "",
                 const char* style = nullptr) {
        std::istringstream words(symbols(text));
        std::string word;
        std::string line;
        const std::string* lead = &indent;
        const auto flush = [&]() {
            m_out << *lead << (style != nullptr ? styled(line, style) : line) << '\n';
            lead = hanging.empty() ? &indent : &hanging;
            line.clear();
        };
        while (words >> word) {
            if (!line.empty() && display_width(*lead + line + " " + word) > wrap_width()) {
                flush();
            }
            line += (line.empty() ? "" : " ") + word;
        }
        if (!line.empty()) {
            flush();
        }
    }

    void header(const Trace& trace) {
        const std::string title = one_line(trace.title.empty() ? "Self-attention, step by step" : trace.title);
        m_out << styled(symbols(title), k_bold) << '\n';
        m_out << std::string(display_width(symbols(title)), '=') << '\n';
        if (!m_options.brief && !trace.description.empty()) {
            std::istringstream paragraphs(trace.description);
            std::string line;
            std::string paragraph;
            while (std::getline(paragraphs, line)) {
                paragraph += line + " ";
            }
            wrapped(paragraph, "");
        }
        m_out << dims_line(trace) << "\n";
    }

    void step(const Trace& trace, const Step& step) {
        const std::string heading = step_heading(trace, step) + "  [" + step_text(step.id) + "]";
        m_out << '\n' << styled(symbols(heading), k_heading) << '\n';
        const Table table = build_table(step, m_options);
        // subscripts written one way: [Z₁ … Z₂], or [Z_1 ... Z_2] with --ascii
        m_out << "  " << symbols(formula_text(step.formula, m_options.ascii)) << "    (" << table.shape << ")\n";
        if (!m_options.brief) {
            wrapped(step.explanation, "  ");
        }
        m_out << '\n';
        // a table wider than options.width is drawn in blocks of columns, one under the other
        const auto draw = [&](const Table& part) {
            return m_options.color && step.id == StepId::weights ? draw_table(part, HeatmapSkin(part, m_options))
                                                                 : draw_table(part, TextTableSkin(m_options.ascii));
        };
        const auto fits = [&](const std::string& drawn) {
            return m_options.width <= 0 || widest_line(drawn) <= static_cast<std::size_t>(m_options.width);
        };
        std::string whole = draw(table);
        if (fits(whole) || table.col_labels.size() < 2) {
            m_out << whole;
        } else {
            // as few blocks as fit, then as even as they can be
            std::vector<std::size_t> starts;
            const std::size_t n = table.col_labels.size();
            for (std::size_t first = 0; first < n;) {
                std::size_t last = first + 1;  // one past the block's last column; a block holds one column at least
                while (last < n && fits(draw(columns_of(table, first, last + 1)))) {
                    ++last;
                }
                starts.push_back(first);
                first = last;
            }
            const std::size_t even = (n + starts.size() - 1) / starts.size();
            bool evenly = true;
            for (std::size_t first = 0; first < n && evenly; first += even) {
                evenly = fits(draw(columns_of(table, first, std::min(n, first + even))));
            }
            if (evenly) {
                starts.clear();
                for (std::size_t first = 0; first < n; first += even) {
                    starts.push_back(first);
                }
            }
            for (std::size_t b = 0; b < starts.size(); ++b) {
                m_out << draw(columns_of(table, starts[b], b + 1 < starts.size() ? starts[b + 1] : n));
            }
        }
        for (const auto& note : step.notes) {
            wrapped("· " + note, "  ", "    ", k_dim);
        }
    }

private:
    const RenderOptions& m_options;
    std::ostream& m_out;

    // The columns of the widest line, colour escapes not counted.
    static std::size_t widest_line(const std::string& text) {
        std::size_t widest = 0;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            widest = std::max(widest, visible_width(line));
        }
        return widest;
    }

    // Columns first … last − 1 of a table, with all its rows.
    static Table columns_of(const Table& table, std::size_t first, std::size_t last) {
        Table part = table;
        auto keep = [first, last](auto& items) {
            items.erase(items.begin() + static_cast<std::ptrdiff_t>(last), items.end());
            items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(first));
        };
        keep(part.col_labels);
        keep(part.cols);
        for (auto& row : part.cells) {
            keep(row);
        }
        for (auto& row : part.values) {
            keep(row);
        }
        for (auto& row : part.marks) {
            if (!row.empty()) {
                keep(row);
            }
        }
        return part;
    }
};


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
    TextWriter writer(options, out);
    writer.header(trace);
    for (const Step* step : select_steps(trace, options)) {
        writer.step(trace, *step);
    }
}

}  // namespace qkv
