// The HTML page every command shares (html_begin, html_table, html_working)
// and run's page (its document, written by document_html.cpp). One style sheet, written into every page: system fonts,
// tables that scroll sideways on a phone rather than widen the page, cells
// that look like numbers until focused, workings as popovers, and print rules
// that drop the controls.
#include "render/html.hpp"

#include "attention/cell.hpp"
#include "attention/steps.hpp"
#include "base/diagnostics.hpp"
#include "render/palette.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace qkv {

Rgb parse_hex(const std::string& hex) {
    unsigned r = 0;
    unsigned g = 0;
    unsigned b = 0;
    if (hex.size() != 7 || std::sscanf(hex.c_str(), "#%02x%02x%02x", &r, &g, &b) != 3) {
        return {0, 0, 0};
    }
    return {static_cast<double>(r), static_cast<double>(g), static_cast<double>(b)};
}

namespace {

// ColorBrewer's Blues, light to dark.
constexpr Rgb k_ramp[] = {
    {247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
    {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107},
};

// ColorBrewer's RdBu (11 classes), reversed: blue for negative, the neutral
// grey at 0 (the middle stop), red for positive. Colour-blind safe, and its
// two arms are equally light at equal distances from the middle.
constexpr Rgb k_diverging[] = {
    {5, 48, 97},     {33, 102, 172}, {67, 147, 195}, {146, 197, 222}, {209, 229, 240}, {247, 247, 247},
    {253, 219, 199}, {244, 165, 130}, {214, 96, 77},  {178, 24, 43},   {103, 0, 31},
};

// The colour at t in [0, 1] along `stops`, interpolated in sRGB, as "#rrggbb".
template <std::size_t N>
std::string interpolate(const Rgb (&stops)[N], double t) {
    constexpr int last = static_cast<int>(N) - 1;
    t = std::isfinite(t) ? std::clamp(t, 0.0, 1.0) : 0.0;
    const double at = t * last;
    const int low = std::min(static_cast<int>(at), last - 1);
    const double f = at - low;
    const Rgb& a = stops[low];
    const Rgb& b = stops[low + 1];
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", static_cast<int>(std::lround(a.r + (b.r - a.r) * f)),
                  static_cast<int>(std::lround(a.g + (b.g - a.g) * f)),
                  static_cast<int>(std::lround(a.b + (b.b - a.b) * f)));
    return buffer;
}

// black or white on a shade: one of the two is at least 4.58:1 on any colour
constexpr char k_dark_text[] = "#000000";
constexpr char k_light_text[] = "#ffffff";

// WCAG 2's relative luminance.
double luminance(const Rgb& c) {
    const auto channel = [](double v) {
        v /= 255.0;
        return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
}

constexpr char k_style[] = R"css(
:root { color-scheme: light; --ink: #1a1a1a; --muted: #555; --rule: #c8c8c8; --accent: #0b5cad;
        --right: #1b6e2a; --wrong: #b3261e; --carried: #8a5a00; --paper: #ffffff; --panel: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--paper); color: var(--ink);
       font: 16px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem 1rem 3rem; overflow-wrap: break-word; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.5rem; padding-top: 0.5rem; border-top: 1px solid var(--rule); }
h3 { font-size: 1rem; margin: 1.25rem 0 0.25rem; }
code, pre, .math { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
h2 code { font-weight: normal; color: var(--muted); }
.dims, .note, .shape { color: var(--muted); }
.formula { margin: 0.25rem 0; }
.math { background: var(--panel); padding: 0.1rem 0.35rem; border-radius: 3px; }
.scroll { overflow-x: auto; margin: 0.5rem 0; max-width: 100%; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
caption { text-align: left; color: var(--muted); padding-bottom: 0.25rem; }
th, td { padding: 0.2rem 0.5rem; border-bottom: 1px solid #e2e2e2; white-space: nowrap; }
thead th { border-bottom: 2px solid var(--rule); font-weight: 600; text-align: right; }
tbody th { text-align: left; font-weight: 600; border-right: 2px solid var(--rule); }
td { text-align: right; }
td.max { font-weight: 700; text-decoration: underline; }
td.right { color: var(--right); }
td.wrong { color: var(--wrong); background: #fdecea; }
td.carried { color: var(--carried); }
td.blank { min-width: 5rem; height: 2.2rem; border: 1px solid #999; }
button.cell { font: inherit; color: inherit; background: none; border: 0; padding: 0.1rem 0.15rem; margin: 0;
              cursor: pointer; border-radius: 3px; text-decoration: underline dotted; text-underline-offset: 3px; }
button.cell:hover { outline: 1px solid currentColor; }
button.cell:focus-visible { outline: 3px solid var(--accent); outline-offset: 1px; }
[popover].working { max-width: min(44rem, 94vw); max-height: 80vh; overflow: auto; padding: 1rem 1.25rem;
                    border: 1px solid var(--rule); border-radius: 6px; box-shadow: 0 8px 30px rgba(0,0,0,0.25);
                    color: var(--ink); background: var(--paper); }
.working h3 { margin-top: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.5rem 0; }
@supports (position-area: bottom) {
  [popover].working { inset: auto; margin: 0.25rem; position-area: bottom span-right;
                      position-try-fallbacks: flip-block, flip-inline, flip-block flip-inline; }
}
.working:not([popover]) { background: var(--panel); border-left: 3px solid var(--rule); padding: 0.25rem 0.75rem; margin: 0.5rem 0; }
section.page + section.page { border-top: 3px double var(--rule); margin-top: 2rem; }
.close { font: inherit; float: right; margin: -0.25rem -0.5rem 0 1rem; }
details { margin: 0.75rem 0; }
summary { cursor: pointer; color: var(--accent); }
.question { border-left: 4px solid var(--accent); padding: 0.25rem 0 0.25rem 0.75rem; margin: 1rem 0; }
.verdict-right { color: var(--right); } .verdict-wrong { color: var(--wrong); } .verdict-carried { color: var(--carried); }
@media (max-width: 40rem) { body { font-size: 15px; } main { padding: 0.5rem 0.6rem 2rem; } th, td { padding: 0.15rem 0.3rem; } }
@media print {
  body { font-size: 11pt; } main { max-width: none; padding: 0; }
  .scroll { overflow: visible; } [popover], .close { display: none !important; }
  button.cell { text-decoration: none; padding: 0; }
  section, table { break-inside: avoid; } h2 { break-after: avoid; }
  td.shade, td.wrong { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)css";

std::size_t count_cells(const Table& table) {
    std::size_t count = 0;
    for (const arma::uword i : table.rows) {
        for (const arma::uword j : table.cols) {
            count += i != k_gap && j != k_gap ? 1 : 0;
        }
    }
    return count;
}

// Refuses a page of more than k_html_working_limit workings, before anything is written.
void check_working_limit(const std::vector<const Step*>& steps, const RenderOptions& options) {
    std::size_t cells = 0;
    for (const Step* step : steps) {
        cells += count_cells(build_table(*step, options));
    }
    if (cells > k_html_working_limit) {
        throw InputError(Diagnostic{
            "", 0, 0,
            "an HTML page holds the working of at most " + std::to_string(k_html_working_limit) +
                " cells; these steps show " + std::to_string(cells),
            "leave out --full (large matrices are then summarised), or choose fewer steps with --steps"});
    }
}

}  // namespace

std::string xml_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
                    out += ' ';
                } else {
                    out += c;
                }
        }
    }
    return out;
}

std::string ramp_colour(double t) { return interpolate(k_ramp, t); }

std::string diverging_colour(double t) {
    // t = 0 is the middle stop exactly: the map's halves meet there
    return interpolate(k_diverging, std::isfinite(t) ? (t + 1) / 2 : 0.5);
}

double contrast_ratio(const std::string& a, const std::string& b) {
    const double la = luminance(parse_hex(a));
    const double lb = luminance(parse_hex(b));
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

std::string text_colour_on(const std::string& background) {
    return contrast_ratio(background, k_dark_text) >= contrast_ratio(background, k_light_text) ? k_dark_text
                                                                                                : k_light_text;
}

void html_begin(std::ostream& out, const std::string& title) {
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
        << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
        << "<meta name=\"generator\" content=\"qkv\"/>\n"
        << "<title>" << xml_escape(one_line(title)) << "</title>\n"
        << "<style>" << k_style << "</style>\n</head>\n<body>\n<main>\n"
        << "<h1>" << xml_escape(one_line(title)) << "</h1>\n";
}

void html_end(std::ostream& out) { out << "</main>\n</body>\n</html>\n"; }

std::string html_formula(const std::string& formula) {
    const auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    std::string out;
    for (std::size_t at = 0; at < formula.size();) {
        const std::size_t sub = formula.find('_', at);
        const bool subscript = sub != std::string::npos && sub > at && sub + 1 < formula.size() &&
                               is_name(formula[sub - 1]) && is_name(formula[sub + 1]);
        if (sub == std::string::npos) {
            out += xml_escape(formula.substr(at));
            break;
        }
        if (!subscript) {
            out += xml_escape(formula.substr(at, sub + 1 - at));
            at = sub + 1;
            continue;
        }
        std::size_t end = sub + 1;
        while (end < formula.size() && is_name(formula[end])) {
            ++end;
        }
        out += xml_escape(formula.substr(at, sub - at)) + "<sub>" + formula.substr(sub + 1, end - sub - 1) + "</sub>";
        // a head index after the subscript, W_Q^(3), as a superscript
        const std::size_t close = formula.compare(end, 2, "^(") == 0 ? formula.find(')', end) : std::string::npos;
        if (close != std::string::npos &&
            std::all_of(formula.begin() + static_cast<long>(end) + 2, formula.begin() + static_cast<long>(close), is_name)) {
            out += "<sup>" + formula.substr(end + 1, close - end) + "</sup>";
            end = close + 1;
        }
        at = end;
    }
    return out;
}

std::string html_paragraphs(const std::string& text) {
    std::string out;
    std::string paragraph;
    std::istringstream lines(text);
    std::string line;
    const auto flush = [&]() {
        if (!paragraph.empty()) {
            out += "<p>" + xml_escape(paragraph) + "</p>\n";
            paragraph.clear();
        }
    };
    while (std::getline(lines, line)) {
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos) {
            flush();
            continue;
        }
        paragraph += (paragraph.empty() ? "" : " ") + line.substr(first);
    }
    flush();
    return out;
}

std::string html_table(const Table& table, const std::string& caption, const HtmlCellWriter& cell) {
    std::string out = "<div class=\"scroll\">\n<table>\n";
    if (!caption.empty()) {
        out += "<caption>" + xml_escape(caption) + "</caption>\n";
    }
    out += "<thead><tr><td></td>";
    for (const auto& label : table.col_labels) {
        out += "<th scope=\"col\">" + xml_escape(label) + "</th>";
    }
    out += "</tr></thead>\n<tbody>\n";
    for (std::size_t i = 0; i < table.row_labels.size(); ++i) {
        out += "<tr><th scope=\"row\">" + xml_escape(table.row_labels[i]) + "</th>";
        for (std::size_t j = 0; j < table.cells[i].size(); ++j) {
            const std::string& text = table.cells[i][j];
            if (cell && table.rows[i] != k_gap && table.cols[j] != k_gap) {
                out += cell(i, j, text);
                continue;
            }
            std::string content = xml_escape(text);
            std::string kind;
            if (!table.marks.empty() && !table.marks[i][j].symbol.empty()) {
                const CellMark& mark = table.marks[i][j];
                content += " " + xml_escape(mark.symbol + mark.detail);
                kind = mark_name(mark.verdict);  // a page names the verdict as a class
            }
            out += (kind.empty() ? "<td>" : "<td class=\"" + kind + "\">") + content + "</td>";
        }
        out += "</tr>\n";
    }
    out += "</tbody>\n</table>\n</div>\n";
    return out;
}

std::string html_shaded_cell(double value, const std::string& content, bool largest) {
    if (!std::isfinite(value)) {
        return "<td>" + content + "</td>";
    }
    const std::string background = ramp_colour(value);
    return std::string("<td class=\"shade") + (largest ? " max" : "") + "\" style=\"background:" + background + ";color:" + text_colour_on(background) + "\">" +
           content + "</td>";
}

std::string html_working(const HtmlWorking& working) {
    std::string out = "<h3>" + xml_escape(working.heading) + "</h3>\n<pre>";
    for (const auto& line : working.lines) {
        out += xml_escape(line) + "\n";
    }
    return out + "</pre>\n";
}

std::vector<Block> worked_steps(const Trace& trace, const RenderOptions& options, const CellWorkings& workings,
                                const std::string& id_prefix) {
    check_working_limit(select_steps(trace, options), options);
    return run_steps(trace, options, {.workings = workings, .id_prefix = id_prefix});
}

void render_html(const Trace& trace, const RenderOptions& options, std::ostream& out, const CellWorkings& workings) {
    if (workings) {
        check_working_limit(select_steps(trace, options), options);
    }
    write_document(run_document(trace, options, {.workings = workings}), Format::html, {.ascii = options.ascii}, out);
}

}  // namespace qkv
