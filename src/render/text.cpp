// The annotated text format: for each step a heading, the formula and shape, a
// short explanation, the labelled table and notes. Colour is optional and
// decided by the caller (RenderOptions::color).
#include "render/render.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace qkv {

namespace {

constexpr std::size_t k_wrap_width = 78;

const char* const k_bold = "\x1b[1m";
const char* const k_dim = "\x1b[2m";
const char* const k_heading = "\x1b[1;36m";
const char* const k_reset = "\x1b[0m";

class TextWriter {
public:
    TextWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    // Text with qkv's symbols, or their ASCII spelling under --ascii.
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    std::string styled(const std::string& text, const char* style) const {
        return m_options.color ? std::string(style) + text + k_reset : text;
    }

    void wrapped(const std::string& text, const std::string& indent) {
        std::istringstream words(symbols(text));
        std::string word;
        std::string line;
        while (words >> word) {
            if (!line.empty() && display_width(indent + line + " " + word) > k_wrap_width) {
                m_out << indent << line << '\n';
                line.clear();
            }
            line += (line.empty() ? "" : " ") + word;
        }
        if (!line.empty()) {
            m_out << indent << line << '\n';
        }
    }

    void header(const Trace& trace) {
        const std::string title = trace.title.empty() ? "Self-attention, step by step" : trace.title;
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
        const Dims& d = trace.dims;
        std::ostringstream dims;
        dims << "n = " << d.n << (trace.cross ? " queries, m = " + std::to_string(d.m) + " keys" : " tokens")
             << ", d_model = " << d.d_model << ", heads = " << d.heads << ", d_k = " << d.d_k << ", d_v = " << d.d_v
             << ", d_out = " << d.d_out;
        m_out << dims.str() << "\n";
    }

    void step(const Trace& trace, const Step& step) {
        std::string heading = "Step " + std::to_string(step_number(trace, step)) + " · " + step.title;
        if (step.head != 0 && trace.dims.heads > 1) {
            heading += " · head " + std::to_string(step.head);
        }
        heading += "  [" + step.id + "]";
        m_out << '\n' << styled(symbols(heading), k_heading) << '\n';
        const Table table = build_table(step, m_options);
        m_out << "  " << symbols(step.formula) << "    (" << table.shape << ")\n";
        if (!m_options.brief) {
            wrapped(step.explanation, "  ");
        }
        m_out << '\n';
        draw_table(step, table);
        for (const auto& note : step.notes) {
            m_out << "  " << styled(symbols("· " + note), k_dim) << '\n';
        }
    }

private:
    void draw_table(const Step& step, const Table& table) {
        const std::string bar = m_options.ascii ? "|" : "│";
        const std::string rule = m_options.ascii ? "-" : "─";
        const std::string cross = m_options.ascii ? "+" : "┼";
        std::size_t label_width = 0;
        for (const auto& label : table.row_labels) {
            label_width = std::max(label_width, display_width(label));
        }
        std::vector<std::size_t> widths(table.col_labels.size(), 0);
        for (std::size_t j = 0; j < widths.size(); ++j) {
            widths[j] = display_width(table.col_labels[j]);
            for (const auto& row : table.cells) {
                widths[j] = std::max(widths[j], display_width(row[j]));
            }
        }
        const bool heatmap = m_options.color && step.id == "weights";

        m_out << "  " << pad_right("", label_width) << ' ' << bar;
        for (std::size_t j = 0; j < widths.size(); ++j) {
            m_out << ' ' << pad_left(table.col_labels[j], widths[j]);
        }
        m_out << '\n' << "  " << repeat(rule, label_width + 1) << cross;
        for (const auto width : widths) {
            m_out << repeat(rule, width + 1);
        }
        m_out << '\n';
        for (std::size_t i = 0; i < table.cells.size(); ++i) {
            m_out << "  " << pad_right(table.row_labels[i], label_width) << ' ' << bar;
            double row_max = -arma::datum::inf;
            for (const double value : table.values[i]) {
                if (!std::isnan(value)) {
                    row_max = std::max(row_max, value);
                }
            }
            for (std::size_t j = 0; j < widths.size(); ++j) {
                const std::string cell = pad_left(table.cells[i][j], widths[j]);
                const double value = table.values[i][j];
                if (heatmap && !std::isnan(value)) {
                    m_out << ' ' << shade(value, value == row_max) << cell << k_reset;
                } else {
                    m_out << ' ' << cell;
                }
            }
            m_out << '\n';
        }
        m_out << '\n';
    }

    // Background from dark (weight 0) to light (weight 1); the row's largest
    // weight is also bold and underlined.
    static std::string shade(double weight, bool row_max) {
        const int level = 236 + static_cast<int>(std::lround(std::clamp(weight, 0.0, 1.0) * 19.0));
        const int foreground = level > 247 ? 16 : 255;
        std::string code = "\x1b[48;5;" + std::to_string(level) + ";38;5;" + std::to_string(foreground) + "m";
        if (row_max) {
            code += "\x1b[1;4m";
        }
        return code;
    }

    static std::string pad_left(const std::string& text, std::size_t width) {
        const std::size_t used = display_width(text);
        return std::string(width > used ? width - used : 0, ' ') + text;
    }
    static std::string pad_right(const std::string& text, std::size_t width) {
        const std::size_t used = display_width(text);
        return text + std::string(width > used ? width - used : 0, ' ');
    }
    static std::string repeat(const std::string& unit, std::size_t count) {
        std::string result;
        for (std::size_t i = 0; i < count; ++i) {
            result += unit;
        }
        return result;
    }

    const RenderOptions& m_options;
    std::ostream& m_out;
};

}  // namespace

void render_text(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    TextWriter writer(options, out);
    writer.header(trace);
    for (const Step* step : select_steps(trace, options)) {
        writer.step(trace, *step);
    }
}

}  // namespace qkv
