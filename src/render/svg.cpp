// SVG: the attention weights as heatmaps, one panel per head, token labels on
// both axes (queries down the side, keys across the top), the value in each
// cell when the matrix is small enough to read, and a colour scale. With
// --steps, each chosen step gets its own band of panels, its heads side by
// side (wrapping onto further lines past a set width), and its own scale.
// Masked cells are hatched grey and the scale's legend says so; --dark draws
// the same maps on a dark page.
#include "attention/steps.hpp"
#include "base/numbers.hpp"
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

std::string px(double value) { return trimmed(value, 1); }

double text_width(const std::string& text, double font) {
    return static_cast<double>(display_width(text)) * font * k_char_width;
}

// How a band's values become colours. Weights are probabilities, read
// against the sequential blue ramp from 0 to 1; every other step can take
// either sign, and is read against the diverging map centred on 0, its
// limits ±max|v| over the band, so that 0 is the neutral middle colour and
// v and −v are equally far from it. Both maps are shared with the HTML pages
// (render/html.hpp).
enum class ColourMap { sequential, diverging };
constexpr int k_ramp_steps = 10;  // the scale bar's gradient stops

// The page around the maps: the maps themselves are the same on both, so
// that a value has one colour in the light and the dark picture.
struct Theme {
    const char* background;
    const char* ink;        // titles and labels
    const char* muted;      // axis captions
    const char* outline;    // a panel's frame, the scale bar's ticks
};
constexpr Theme k_light = {"#ffffff", "#222222", "#595959", "#888888"};
constexpr Theme k_dark = {"#121212", "#e8e8e8", "#b0b0b0", "#9a9a9a"};

// A masked cell (a score of −∞, a weight of 0 because of it): a grey hatch,
// which no colour of either map looks like.
constexpr char k_masked_fill[] = "#bdbdbd";
constexpr char k_masked_hatch[] = "#525252";

// One row of panels: a step id and its heads, sharing a colour scale; the
// panels wrap onto further lines past k_band_width.
struct Band {
    std::vector<const Step*> panels;
    ColourMap map = ColourMap::sequential;
    double limit = 1.0;  // sequential: 0 … limit; diverging: −limit … limit
};

constexpr double k_band_width = 960;  // panels side by side up to this width, then a new line

struct Geometry {
    double cell = 0;           // side of one square cell
    bool values = false;       // numbers written in the cells
    double row_label_width = 0;
    double col_label_height = 0;
    bool rotate_cols = false;
    arma::uword label_every = 1;
};

// One panel placed in its band: its step, geometry, and the space it takes.
struct Placed {
    const Step* step = nullptr;
    Geometry g;
    std::string heading;
    double label_width = 0;    // from the panel's left edge to its grid
    double label_height = 0;   // from the panel's top edge to its grid
    double width = 0;
};

class SvgWriter {
public:
    SvgWriter(const Trace& trace, const RenderOptions& options)
        : m_trace(trace), m_options(options), m_theme(options.dark ? k_dark : k_light) {}

    void write(std::ostream& out) {
        const std::vector<Band> bands = make_bands();
        const std::string title = m_trace.title.empty() ? "Self-attention" : m_trace.title;
        constexpr double margin = 16;
        constexpr double title_height = 34;
        constexpr double panel_title = 22;
        constexpr double gap = 28;
        constexpr double line_gap = 20;   // between the lines of one band
        constexpr double scale_width = 110;

        // lay out every band first, to know the picture's size
        std::ostringstream body;
        double y = margin + title_height;
        double width = margin * 2 + text_width(title, 16);
        bool any_masked = false;
        for (std::size_t b = 0; b < bands.size(); ++b) {
            const Band& band = bands[b];
            // the band's panels in a grid of equal columns, as many across as fit
            // in k_band_width, the lines as even as they can be (4 panels: 2 + 2, not 3 + 1)
            std::vector<Placed> placed_panels;
            double column = 0;
            for (const Step* step : band.panels) {
                Placed placed;
                placed.step = step;
                placed.g = geometry(*step);
                placed.heading = step->title;
                if (step->head != 0 && m_trace.dims.heads > 1) {
                    placed.heading += " · head " + std::to_string(step->head);
                }
                // axis captions: "queries" left of the row labels, "keys" above the column labels
                placed.label_width = std::max(placed.g.row_label_width, 64.0);
                placed.label_height = panel_title + 16 + placed.g.col_label_height;
                const double grid_w = placed.g.cell * static_cast<double>(step->values.n_cols);
                placed.width = placed.label_width + std::max(grid_w, text_width(placed.heading, 14) + 8);  // the heading starts over the grid
                column = std::max(column, placed.width);
                placed_panels.push_back(placed);
            }
            const std::size_t fit = std::max<std::size_t>(1, static_cast<std::size_t>((k_band_width + gap) / (column + gap)));
            const std::size_t line_count = (placed_panels.size() + fit - 1) / fit;
            const std::size_t across = (placed_panels.size() + line_count - 1) / line_count;
            std::vector<std::vector<Placed>> lines;
            for (std::size_t k = 0; k < placed_panels.size(); ++k) {
                if (k % across == 0) {
                    lines.emplace_back();
                }
                placed_panels[k].width = column;
                lines.back().push_back(placed_panels[k]);
            }

            double band_right = margin;
            double bar_top = 0;
            double bar_height = 0;
            double line_top = y;
            for (std::size_t l = 0; l < lines.size(); ++l) {
                // the grids of one line share their top edge
                double label_height = 0;
                double grid_height = 0;
                for (const Placed& placed : lines[l]) {
                    label_height = std::max(label_height, placed.label_height);
                    grid_height = std::max(grid_height,
                                           placed.g.cell * static_cast<double>(placed.step->values.n_rows));
                }
                const double top = line_top + label_height;
                double x = margin;
                for (const Placed& placed : lines[l]) {
                    const double left = x + placed.label_width;
                    any_masked = panel(body, *placed.step, band, placed.g, left, top) || any_masked;
                    body << "  <text x=\"" << px(left) << "\" y=\"" << px(top - placed.label_height + 15)
                         << "\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(symbols(placed.heading))
                         << "</text>\n";
                    x += placed.width + gap;
                }
                band_right = std::max(band_right, x - gap);
                if (l == 0) {
                    bar_top = top;
                    bar_height = std::max(grid_height, 90.0);
                }
                line_top = top + grid_height + line_gap;
            }
            const double legend_bottom = scale_bar(body, band, b, band_right + gap, bar_top, bar_height);
            width = std::max(width, band_right + gap + scale_width + margin);
            y = std::max(line_top - line_gap, legend_bottom) + gap + 8;
        }
        const double height = y - gap + margin;

        out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width) << "\" height=\"" << px(height)
            << "\" viewBox=\"0 0 " << px(width) << ' ' << px(height)
            << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" fill=\"" << m_theme.ink << "\">\n";
        out << "  <title>" << xml_escape(symbols(title)) << "</title>\n";
        out << "  <defs>\n";
        if (any_masked) {
            out << "    <pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                   "patternTransform=\"rotate(45)\">\n"
                << "      <rect width=\"6\" height=\"6\" fill=\"" << k_masked_fill << "\"/>\n"
                << "      <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"" << k_masked_hatch
                << "\" stroke-width=\"3\"/>\n"
                << "    </pattern>\n";
        }
        for (std::size_t b = 0; b < bands.size(); ++b) {
            out << "    <linearGradient id=\"scale" << b + 1 << "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
            for (int k = 0; k <= k_ramp_steps; ++k) {
                const double t = static_cast<double>(k) / k_ramp_steps;
                const std::string stop =
                    bands[b].map == ColourMap::sequential ? ramp_colour(t) : diverging_colour(2 * t - 1);
                out << "      <stop offset=\"" << px(t * 100) << "%\" stop-color=\"" << stop << "\"/>\n";
            }
            out << "    </linearGradient>\n";
        }
        out << "  </defs>\n";
        out << "  <rect width=\"100%\" height=\"100%\" fill=\"" << m_theme.background << "\"/>\n";
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
        // one band per step id, its heads side by side, in the order the steps come
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
            auto band = std::find_if(bands.begin(), bands.end(),
                                     [&](const Band& b) { return b.panels.front()->id == step->id; });
            if (band == bands.end()) {
                bands.push_back({});
                band = bands.end() - 1;
            }
            band->panels.push_back(step);
        }
        for (auto& band : bands) {
            if (band.panels.front()->id == StepId::weights) {
                continue;  // probabilities: the sequential ramp, 0 … 1
            }
            band.map = ColourMap::diverging;
            band.limit = 0;
            for (const Step* step : band.panels) {
                for (const double value : step->values) {
                    if (std::isfinite(value)) {
                        band.limit = std::max(band.limit, std::abs(value));
                    }
                }
            }
            if (band.limit == 0) {
                band.limit = 1;  // all zeros (or all masked): every cell the neutral middle
            }
        }
        return bands;
    }

    // The cell's colour on the band's map; the masked hatch for a masked cell.
    static std::string fill_of(const Band& band, double value) {
        if (band.map == ColourMap::sequential) {
            return ramp_colour(value / band.limit);
        }
        return diverging_colour(value / band.limit);
    }

    // Whether cell (i, j) of `step` is masked: a score of −∞, or a weight
    // whose masked score is −∞ (run keeps masked_scores for the SVG).
    bool masked(const Step& step, arma::uword i, arma::uword j) const {
        if (std::isinf(step.values(i, j)) && step.values(i, j) < 0) {
            return true;
        }
        if (step.id != StepId::weights) {
            return false;
        }
        const Step* scores = m_trace.find(StepId::masked_scores, step.head);
        return scores != nullptr && i < scores->values.n_rows && j < scores->values.n_cols &&
               std::isinf(scores->values(i, j)) && scores->values(i, j) < 0;
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

    // Draws one panel with its grid's top-left corner at (left, top); whether it has a masked cell.
    bool panel(std::ostream& out, const Step& step, const Band& band, const Geometry& g, double left, double top) const {
        const arma::mat& M = step.values;
        const double grid_w = g.cell * static_cast<double>(M.n_cols);
        const double grid_h = g.cell * static_cast<double>(M.n_rows);
        const bool whole = all_whole_numbers(M);
        const bool keys_and_queries = step.row_labels.size() == M.n_rows && M.n_cols == m_trace.dims.m &&
                                      step_row(step.id).square;

        // axis captions
        out << "  <text x=\"" << px(left) << "\" y=\"" << px(top - g.col_label_height - 6)
            << "\" font-size=\"11\" fill=\"" << m_theme.muted << "\">"
            << symbols(keys_and_queries ? "keys →" : "columns →") << "</text>\n";
        out << "  <text x=\"" << px(left - 6) << "\" y=\"" << px(top - g.col_label_height - 6)
            << "\" text-anchor=\"end\" font-size=\"11\" fill=\"" << m_theme.muted << "\">"
            << symbols(keys_and_queries ? "queries ↓" : "rows ↓") << "</text>\n";

        // cells, each with a tooltip naming its row and column and its value
        bool any_masked = false;
        out << "  <g stroke=\"" << m_theme.background << "\" stroke-width=\"" << (g.cell >= 8 ? "1" : "0") << "\">\n";
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                const double value = M(i, j);
                const bool is_masked = masked(step, i, j);
                any_masked = any_masked || is_masked;
                out << "    <rect x=\"" << px(left + g.cell * static_cast<double>(j)) << "\" y=\""
                    << px(top + g.cell * static_cast<double>(i)) << "\" width=\"" << px(g.cell) << "\" height=\""
                    << px(g.cell) << "\" fill=\"" << (is_masked ? "url(#masked)" : fill_of(band, value))
                    << "\"><title>" << xml_escape(symbols(step.row_labels[i] + " → " + step.col_labels[j])) << ": "
                    << xml_escape(number(value, whole)) << (is_masked ? " (masked)" : "") << "</title></rect>\n";
            }
        }
        out << "  </g>\n";
        // the numbers, black or white, whichever reads better on the cell's colour;
        // a masked cell has none: its hatch says what it holds
        if (g.values) {
            out << "  <g font-size=\"" << px(k_value_font) << "\" text-anchor=\"middle\">\n";
            for (arma::uword i = 0; i < M.n_rows; ++i) {
                for (arma::uword j = 0; j < M.n_cols; ++j) {
                    const double value = M(i, j);
                    if (masked(step, i, j)) {
                        continue;
                    }
                    out << "    <text x=\"" << px(left + g.cell * (static_cast<double>(j) + 0.5)) << "\" y=\""
                        << px(top + g.cell * (static_cast<double>(i) + 0.5) + k_value_font * 0.35) << "\" fill=\""
                        << text_colour_on(fill_of(band, value)) << "\">" << xml_escape(number(value, whole))
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
            << px(grid_h) << "\" fill=\"none\" stroke=\"" << m_theme.outline << "\" stroke-width=\"1\"/>\n";
        return any_masked;
    }

    // The band's colour scale at (x, top), and under it the masked cells'
    // swatch when the band has any; returns the bottom edge of what it drew.
    double scale_bar(std::ostream& out, const Band& band, std::size_t index, double x, double top, double height) const {
        constexpr double bar = 14;
        out << "  <rect x=\"" << px(x) << "\" y=\"" << px(top) << "\" width=\"" << px(bar) << "\" height=\""
            << px(height) << "\" fill=\"url(#scale" << index + 1 << ")\" stroke=\"" << m_theme.outline
            << "\" stroke-width=\"1\"/>\n";
        // sequential: 0, half and the top; diverging: −limit, 0 (the neutral middle, marked across the bar) and +limit
        const double low = band.map == ColourMap::sequential ? 0.0 : -band.limit;
        out << "  <g font-size=\"11\">\n";
        for (const double t : {0.0, 0.5, 1.0}) {
            const double value = low + (band.limit - low) * t;
            const double ty = top + height * (1 - t);
            const bool zero = band.map == ColourMap::diverging && t == 0.5;
            out << "    <line x1=\"" << px(zero ? x : x + bar) << "\" y1=\"" << px(ty) << "\" x2=\"" << px(x + bar + 4)
                << "\" y2=\"" << px(ty) << "\" stroke=\"" << (zero ? m_theme.ink : m_theme.outline) << "\""
                << (zero ? " stroke-width=\"1.5\"" : "") << "/>\n";
            out << "    <text x=\"" << px(x + bar + 7) << "\" y=\"" << px(ty + 4) << "\">"
                << xml_escape(zero ? "0" : format_number(value, 2, false, m_options.ascii)) << "</text>\n";
        }
        out << "  </g>\n";
        double bottom = top + height;
        bool any_masked = false;
        for (const Step* step : band.panels) {
            for (arma::uword i = 0; i < step->values.n_rows && !any_masked; ++i) {
                for (arma::uword j = 0; j < step->values.n_cols && !any_masked; ++j) {
                    any_masked = masked(*step, i, j);
                }
            }
        }
        if (any_masked) {
            const std::string what = band.panels.front()->id == StepId::weights ? "0" : symbols("−∞");
            out << "  <rect x=\"" << px(x) << "\" y=\"" << px(bottom + 10) << "\" width=\"" << px(bar)
                << "\" height=\"" << px(bar) << "\" fill=\"url(#masked)\" stroke=\"" << m_theme.outline << "\"/>\n";
            out << "  <text x=\"" << px(x + bar + 7) << "\" y=\"" << px(bottom + 21) << "\" font-size=\"11\">masked ("
                << what << ")</text>\n";
            bottom += 10 + bar;
        }
        return bottom;
    }

    const Trace& m_trace;
    const RenderOptions& m_options;
    const Theme& m_theme;
};

}  // namespace

void render_svg(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    SvgWriter(trace, options).write(out);
}

}  // namespace qkv
