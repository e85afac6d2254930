// SVG: the attention weights as heatmaps, one panel per head, token labels on
// both axes (queries down the side, keys across the top), the value in each
// cell when the matrix is small enough to read, and a colour scale. With
// --steps, each chosen step gets its own row of panels and its own scale.
#include "attention/steps.hpp"
#include "base/diagnostics.hpp"
#include "render/html.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace qkv {

namespace {

constexpr arma::uword k_max_cells = 256;        // per side of one panel
constexpr double k_label_font = 12.0;
constexpr double k_value_font = 11.0;
constexpr double k_char_width = 0.62;           // average glyph width per font size (sans-serif)
constexpr std::size_t k_max_label_chars = 14;

std::string px(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
    std::string text = buffer;
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) {
        text.resize(text.size() - 2);
    }
    return text;
}

double text_width(const std::string& text, double font) {
    return static_cast<double>(display_width(text)) * font * k_char_width;
}

// The sequential blue scale shared with the HTML pages (render/html.hpp); t in [0, 1].
std::string colour(double t) { return ramp_colour(t); }
constexpr int k_ramp_steps = 8;  // the scale bar's gradient stops: one per colour of the ramp

// One row of panels: a step id and its heads, sharing a colour scale.
struct Band {
    std::vector<const Step*> panels;
    double low = 0.0;
    double high = 1.0;
};

struct Geometry {
    double cell = 0;           // side of one square cell
    bool values = false;       // numbers written in the cells
    double row_label_width = 0;
    double col_label_height = 0;
    bool rotate_cols = false;
    arma::uword label_every = 1;
};

class SvgWriter {
public:
    SvgWriter(const Trace& trace, const RenderOptions& options) : m_trace(trace), m_options(options) {}

    void write(std::ostream& out) {
        const std::vector<Band> bands = make_bands();
        const std::string title = m_trace.title.empty() ? "Self-attention" : m_trace.title;
        constexpr double margin = 16;
        constexpr double title_height = 34;
        constexpr double panel_title = 22;
        constexpr double gap = 28;
        constexpr double scale_width = 70;

        // lay out every band first, to know the picture's size
        std::ostringstream body;
        double y = margin + title_height;
        double width = margin * 2 + text_width(title, 16);
        for (std::size_t b = 0; b < bands.size(); ++b) {
            const Band& band = bands[b];
            double x = margin;
            double band_height = 0;
            double grid_top = 0;
            double grid_height = 0;
            for (const Step* step : band.panels) {
                const Geometry g = geometry(*step);
                const double grid_w = g.cell * static_cast<double>(step->values.n_cols);
                const double grid_h = g.cell * static_cast<double>(step->values.n_rows);
                // axis captions: "query" left of the row labels, "key" above the column labels
                const double left = x + std::max(g.row_label_width, 64.0);
                const double top = y + panel_title + 16 + g.col_label_height;
                panel(body, *step, band, g, left, top);
                std::string heading = step->title;
                if (step->head != 0 && m_trace.dims.heads > 1) {
                    heading += " · head " + std::to_string(step->head);
                }
                body << "  <text x=\"" << px(left) << "\" y=\"" << px(y + 15)
                     << "\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(symbols(heading)) << "</text>\n";
                const double panel_width = std::max(left + grid_w - x, text_width(heading, 14) + 8);
                x += panel_width + gap;
                band_height = std::max(band_height, top + grid_h - y);
                grid_top = std::max(grid_top, top);
                grid_height = std::max(grid_height, grid_h);
            }
            scale_bar(body, band, b, x, grid_top, std::max(grid_height, 90.0));
            width = std::max(width, x + scale_width + margin);
            y += std::max(band_height, grid_top - y + 90) + gap + 8;
        }
        const double height = y - gap + margin;

        out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width) << "\" height=\"" << px(height)
            << "\" viewBox=\"0 0 " << px(width) << ' ' << px(height)
            << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" fill=\"#222\">\n";
        out << "  <title>" << xml_escape(symbols(title)) << "</title>\n";
        out << "  <defs>\n"
               "    <pattern id=\"blocked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\">\n"
               "      <rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>\n"
               "      <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bbbbbb\" stroke-width=\"2\"/>\n"
               "    </pattern>\n";
        for (std::size_t b = 0; b < bands.size(); ++b) {
            out << "    <linearGradient id=\"scale" << b + 1 << "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
            for (int k = 0; k <= k_ramp_steps; ++k) {
                const double t = static_cast<double>(k) / k_ramp_steps;
                out << "      <stop offset=\"" << px(t * 100) << "%\" stop-color=\"" << colour(t) << "\"/>\n";
            }
            out << "    </linearGradient>\n";
        }
        out << "  </defs>\n";
        out << "  <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
        out << "  <text x=\"" << px(margin) << "\" y=\"" << px(margin + 16) << "\" font-size=\"16\" font-weight=\"bold\">"
            << xml_escape(symbols(title)) << "</text>\n";
        out << body.str();
        out << "</svg>\n";
    }

private:
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    std::vector<Band> make_bands() const {
        std::vector<const Step*> chosen;
        if (m_options.steps.empty()) {
            for (const Step* step : select_steps(m_trace, m_options)) {
                if (step->id == StepId::weights) {
                    chosen.push_back(step);
                }
            }
        } else {
            chosen = select_steps(m_trace, m_options);
        }
        std::vector<Band> bands;
        for (const Step* step : chosen) {
            if (step->values.n_rows > k_max_cells || step->values.n_cols > k_max_cells) {
                throw InputError(Diagnostic{
                    "", 0, 0,
                    "--format svg draws at most " + std::to_string(k_max_cells) + " × " + std::to_string(k_max_cells) +
                        " cells a panel; " + step_text(step->id) + " is " + std::to_string(step->values.n_rows) + " × " +
                        std::to_string(step->values.n_cols),
                    "use --format csv for the numbers, or a smaller example"});
            }
            if (bands.empty() || bands.back().panels.front()->id != step->id) {
                bands.push_back({});
            }
            bands.back().panels.push_back(step);
        }
        for (auto& band : bands) {
            if (band.panels.front()->id == StepId::weights) {
                continue;  // weights are read against the fixed scale 0 … 1
            }
            band.low = arma::datum::inf;
            band.high = -arma::datum::inf;
            for (const Step* step : band.panels) {
                for (const double value : step->values) {
                    if (std::isfinite(value)) {
                        band.low = std::min(band.low, value);
                        band.high = std::max(band.high, value);
                    }
                }
            }
            if (!std::isfinite(band.low)) {
                band.low = 0;
                band.high = 1;
            }
        }
        return bands;
    }

    // The labels of one axis as drawn: cut to k_max_label_chars (whole with
    // --full) without making two different labels look the same.
    std::vector<std::string> labels(const std::vector<std::string>& texts) const {
        std::vector<std::string> written;
        for (const auto& text : texts) {
            written.push_back(one_line(symbols(text)));
        }
        return shown_labels(written, k_max_label_chars, m_options.full, m_options.ascii);
    }

    std::string number(double value, bool whole) const {
        return format_number(value, m_options.precision, whole, m_options.ascii);
    }

    Geometry geometry(const Step& step) const {
        Geometry g;
        const arma::uword side = std::max(step.values.n_rows, step.values.n_cols);
        g.values = side <= k_summary_limit;
        if (g.values) {
            const bool whole = all_whole_numbers(step.values);
            double widest = 0;
            for (const double value : step.values) {
                widest = std::max(widest, text_width(number(value, whole), k_value_font));
            }
            g.cell = std::max(44.0, std::ceil(widest + 12));
        } else {
            g.cell = std::clamp(std::floor(480.0 / static_cast<double>(side)), 2.0, 24.0);
        }
        g.label_every = static_cast<arma::uword>(std::ceil(14.0 / g.cell));
        for (const auto& text : labels(step.row_labels)) {
            g.row_label_width = std::max(g.row_label_width, text_width(text, k_label_font) + 6);
        }
        double widest_col = 0;
        for (const auto& text : labels(step.col_labels)) {
            widest_col = std::max(widest_col, text_width(text, k_label_font));
        }
        g.rotate_cols = widest_col > g.cell * static_cast<double>(g.label_every) - 4;
        g.col_label_height = g.rotate_cols ? widest_col * 0.71 + 10 : k_label_font + 6;
        return g;
    }

    void panel(std::ostream& out, const Step& step, const Band& band, const Geometry& g, double left, double top) const {
        const arma::mat& M = step.values;
        const double grid_w = g.cell * static_cast<double>(M.n_cols);
        const double grid_h = g.cell * static_cast<double>(M.n_rows);
        const bool whole = all_whole_numbers(M);
        const double range = band.high > band.low ? band.high - band.low : 1.0;
        const bool keys_and_queries = step.row_labels.size() == M.n_rows && M.n_cols == m_trace.dims.m &&
                                      step_row(step.id).square;

        // axis captions
        out << "  <text x=\"" << px(left) << "\" y=\"" << px(top - g.col_label_height - 6)
            << "\" font-size=\"11\" fill=\"#666\">" << symbols(keys_and_queries ? "keys →" : "columns →") << "</text>\n";
        out << "  <text x=\"" << px(left - 6) << "\" y=\"" << px(top - g.col_label_height - 6)
            << "\" text-anchor=\"end\" font-size=\"11\" fill=\"#666\">"
            << symbols(keys_and_queries ? "queries ↓" : "rows ↓") << "</text>\n";

        // cells
        out << "  <g stroke=\"#ffffff\" stroke-width=\"" << (g.cell >= 8 ? "1" : "0") << "\">\n";
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                const double value = M(i, j);
                const std::string fill = std::isfinite(value) ? colour((value - band.low) / range) : "url(#blocked)";
                out << "    <rect x=\"" << px(left + g.cell * static_cast<double>(j)) << "\" y=\""
                    << px(top + g.cell * static_cast<double>(i)) << "\" width=\"" << px(g.cell) << "\" height=\""
                    << px(g.cell) << "\" fill=\"" << fill << "\"><title>"
                    << xml_escape(symbols(step.row_labels[i] + " → " + step.col_labels[j])) << ": "
                    << xml_escape(number(value, whole))
                    << "</title></rect>\n";
            }
        }
        out << "  </g>\n";
        if (g.values) {
            out << "  <g font-size=\"" << px(k_value_font) << "\" text-anchor=\"middle\">\n";
            for (arma::uword i = 0; i < M.n_rows; ++i) {
                for (arma::uword j = 0; j < M.n_cols; ++j) {
                    const double value = M(i, j);
                    const double t = std::isfinite(value) ? (value - band.low) / range : 0.0;
                    out << "    <text x=\"" << px(left + g.cell * (static_cast<double>(j) + 0.5)) << "\" y=\""
                        << px(top + g.cell * (static_cast<double>(i) + 0.5) + k_value_font * 0.35) << "\" fill=\""
                        << (t > 0.55 ? "#ffffff" : "#222222") << "\">" << xml_escape(number(value, whole))
                        << "</text>\n";
                }
            }
            out << "  </g>\n";
        }

        // row labels on the left, column labels on top
        const std::vector<std::string> row_labels = labels(step.row_labels);
        const std::vector<std::string> col_labels = labels(step.col_labels);
        out << "  <g font-size=\"" << px(k_label_font) << "\">\n";
        for (arma::uword i = 0; i < M.n_rows; i += g.label_every) {
            out << "    <text x=\"" << px(left - 6) << "\" y=\""
                << px(top + g.cell * (static_cast<double>(i) + 0.5) + k_label_font * 0.35)
                << "\" text-anchor=\"end\">" << xml_escape(row_labels[i]) << "</text>\n";
        }
        for (arma::uword j = 0; j < M.n_cols; j += g.label_every) {
            const double cx = left + g.cell * (static_cast<double>(j) + 0.5);
            if (g.rotate_cols) {
                out << "    <text transform=\"translate(" << px(cx + 3) << ',' << px(top - 6)
                    << ") rotate(-45)\">" << xml_escape(col_labels[j]) << "</text>\n";
            } else {
                out << "    <text x=\"" << px(cx) << "\" y=\"" << px(top - 6) << "\" text-anchor=\"middle\">"
                    << xml_escape(col_labels[j]) << "</text>\n";
            }
        }
        out << "  </g>\n";
        out << "  <rect x=\"" << px(left) << "\" y=\"" << px(top) << "\" width=\"" << px(grid_w) << "\" height=\""
            << px(grid_h) << "\" fill=\"none\" stroke=\"#888888\" stroke-width=\"1\"/>\n";
    }

    void scale_bar(std::ostream& out, const Band& band, std::size_t index, double x, double top, double height) const {
        constexpr double bar = 14;
        out << "  <rect x=\"" << px(x) << "\" y=\"" << px(top) << "\" width=\"" << px(bar) << "\" height=\""
            << px(height) << "\" fill=\"url(#scale" << index + 1 << ")\" stroke=\"#888888\" stroke-width=\"1\"/>\n";
        out << "  <g font-size=\"11\">\n";
        const double ticks[] = {0.0, 0.5, 1.0};
        for (const double t : ticks) {
            const double value = band.low + (band.high - band.low) * t;
            const double ty = top + height * (1 - t);
            out << "    <line x1=\"" << px(x + bar) << "\" y1=\"" << px(ty) << "\" x2=\"" << px(x + bar + 4)
                << "\" y2=\"" << px(ty) << "\" stroke=\"#888888\"/>\n";
            out << "    <text x=\"" << px(x + bar + 7) << "\" y=\"" << px(ty + 4) << "\">"
                << xml_escape(format_number(value, 2, false, m_options.ascii)) << "</text>\n";
        }
        out << "  </g>\n";
        bool blocked = false;
        for (const Step* step : band.panels) {
            blocked = blocked || step->values.has_inf();
        }
        if (blocked) {
            out << "  <rect x=\"" << px(x) << "\" y=\"" << px(top + height + 10) << "\" width=\"" << px(bar)
                << "\" height=\"" << px(bar) << "\" fill=\"url(#blocked)\" stroke=\"#888888\"/>\n";
            out << "  <text x=\"" << px(x + bar + 7) << "\" y=\"" << px(top + height + 21)
                << "\" font-size=\"11\">" << (m_options.ascii ? "-inf" : "−∞") << "</text>\n";
        }
    }

    const Trace& m_trace;
    const RenderOptions& m_options;
};

}  // namespace

void render_svg(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    SvgWriter(trace, options).write(out);
}

}  // namespace qkv
