// HTML pages (OUTPUT FORMATS in man/qkv.1.in): one self-contained HTML5 document per command, its
// style inline, nothing fetched from anywhere, readable with JavaScript off
// (the pages hold no script: a cell's working is a popover its button opens,
// which the browser does by itself). Every command's page is built from the
// pieces here, so that run, explain, check, lessons and worksheets look alike:
// html_begin() and html_end() around the body, html_table() for a matrix,
// html_working() for the lines `qkv explain` writes of a cell.
#pragma once

#include "attention/trace.hpp"
#include "render/document.hpp"
#include "render/table.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

// Text for XML and HTML: & < > " ' as entities; control characters other
// than tab and line break (not allowed in XML 1.0) as spaces.
std::string xml_escape(std::string_view text);

// A colour's channels, 0 … 255.
struct Rgb {
    double r, g, b;
};
// The channels of "#rrggbb"; black for anything else.
Rgb parse_hex(const std::string& hex);

// The sequential blue scale of the SVG heatmaps, light (t = 0) to dark (t = 1),
// as "#rrggbb"; t is clamped to [0, 1]. The colour-blind-safe ramp of ColorBrewer's Blues.
std::string ramp_colour(double t);
// The diverging scale of the SVG heatmaps for values of either sign, t in
// [−1, 1] (clamped): blue for negative, the neutral light grey #f7f7f7 at 0,
// red for positive, as "#rrggbb". ColorBrewer's RdBu, colour-blind safe, its
// two arms equally light at equal distances from 0.
std::string diverging_colour(double t);
// The text colour that reads on `background` ("#rrggbb"): black or white,
// whichever contrasts more (WCAG's relative luminance): at least 4.58:1 on any colour.
std::string text_colour_on(const std::string& background);
// WCAG's contrast ratio of two "#rrggbb" colours, 1 to 21.
double contrast_ratio(const std::string& a, const std::string& b);

// The start of a page: doctype, <head> with its charset, viewport and style,
// then <body><main> and the page's <h1>. `title` is Unicode text (escaped here).
void html_begin(std::ostream& out, const std::string& title);
// Closes what html_begin() opened.
void html_end(std::ostream& out);

// A formula as qkv writes it in text ("Q = X·W_Q", "S = Q_rot·K_rotᵀ"),
// escaped, each "_" and the letters and digits after it as a subscript:
// Q = X·W<sub>Q</sub>, and a head index after it as a superscript:
// W_Q^(3) is W<sub>Q</sub><sup>(3)</sup>.
std::string html_formula(const std::string& formula);

// Paragraphs of prose (a blank line between them) as <p> elements.
std::string html_paragraphs(const std::string& text);

// What a page puts in one cell of html_table(): the cell's element whole,
// e.g. "<td>0.5</td>". i and j index the table's rows and columns (not the
// matrix's: see Table::rows and Table::cols), text is the formatted number.
using HtmlCellWriter = std::function<std::string(std::size_t i, std::size_t j, const std::string& text)>;

// A matrix as an HTML table inside a horizontally scrolling box: the column
// labels in a header row, each row's label as its row header, a caption when
// given. Without a cell writer, each cell is <td> with its number and its mark
// (check's ✓ ✗ →) as Table::marks hold them.
std::string html_table(const Table& table, const std::string& caption = "", const HtmlCellWriter& cell = {});

// A <td> shaded as the SVG shades a weight (value in 0 … 1 on the ramp), the
// text colour chosen for contrast, bold and underlined when it is its row's
// largest; `content` is already HTML.
std::string html_shaded_cell(double value, const std::string& content, bool largest = false);

// A cell's arithmetic: "scores[1,2] = 4" and the lines `qkv explain` writes.
struct HtmlWorking {
    std::string heading;
    std::vector<std::string> lines;
};

// The working as a block: the heading, then the lines in a <pre>.
std::string html_working(const HtmlWorking& working);


// A page holds at most this many cells' workings; more is refused with a hint.
inline constexpr std::size_t k_html_working_limit = 20000;

// run's page: the title, the description and sizes, then each chosen step as
// a section (heading, formula and shape, explanation, table, notes): the
// document run_document() builds, written by the HTML writer of documents.
// With `workings`, every cell of every table is a button that opens its
// working; weights are shaded as in the SVG. Throws InputError when the page
// would hold more than k_html_working_limit workings (--full on a large example).
void render_html(const Trace& trace, const RenderOptions& options, std::ostream& out,
                 const CellWorkings& workings = {});

// The chosen steps' parts as render_html() writes them, every cell holding
// its working (for a lesson's pages, which have their own title). `id_prefix`
// keeps the anchors of several traces on one page apart. Throws InputError
// as render_html() does.
std::vector<Block> worked_steps(const Trace& trace, const RenderOptions& options, const CellWorkings& workings,
                                const std::string& id_prefix);

}  // namespace qkv
