// What every LaTeX output shares (latex.hpp): the skins that draw a table as a
// tabular, the layouts TeX chooses among to fit \linewidth, displays, a
// worksheet's boxed tables, and the start and end of a fragment or a whole
// article. The writer of documents is document_latex.cpp.
#include "render/latex.hpp"
#include "base/numbers.hpp"
#include "render/html.hpp"
#include "render/render.hpp"
#include "render/table.hpp"
#include "render/document.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>

namespace qkv {

namespace {

class LatexSkin : public TableSkin {
public:
    std::string label(const std::string& text) const override {
        return text == "…" || text == "..." ? "$\\vdots$" : tex_escape(text);
    }
    // the gap among the columns runs across: ⋯ above the ⋯ of the cells
    std::string col_label(const std::string& text) const override {
        return text == "…" || text == "..." ? "$\\cdots$" : tex_escape(text);
    }
    std::string number(const std::string& text) const override { return tex_number(text); }

    // booktabs: no vertical rules, and no space outside the first and last columns
    std::string begin(std::size_t n_cols) const override {
        return "\\begin{tabular}{@{}l" + std::string(n_cols, 'r') + "@{}}\n\\toprule\n";
    }
    std::string row(const std::string& label, const std::vector<std::string>& cells, int) const override {
        std::string line = label;
        for (const auto& cell : cells) {
            line += " & " + cell;
        }
        return line + " \\\\\n";
    }
    std::string divider(std::size_t, const std::vector<std::size_t>&) const override { return "\\midrule\n"; }
    std::string end() const override { return "\\bottomrule\n\\end{tabular}\n"; }
};

// latex_table()'s skin: its cells are LaTeX already (math, dots, shading).
class PreparedSkin : public LatexSkin {
public:
    std::string number(const std::string& text) const override { return text; }
};

// ── fitting wide tables to the page ─────────────────────────────────────────
// The width of a tabular is estimated from Computer Modern's metrics (measured
// with \settowidth): a digit is the unit, a math minus 1.56 digits, \cdots
// 2.67, each printable ASCII character its own width. A table that is too
// wide at \normalsize is set smaller with less space between the columns; one
// still too wide at \scriptsize is cut into blocks of columns, each with the
// row labels, so that it fits in any document without extra packages.

// The line width the table must fit: the standalone document's (letter paper,
// 2.5 cm margins), or for a fragment that of a default article, 345pt.
constexpr double k_standalone_width = 472.0;
constexpr double k_fragment_width = 345.0;

struct TableSize {
    const char* command;   // the font size, "" for \normalsize
    double digit;          // a digit's width in pt
    double tabcolsep;      // pt on each side of a column
};
constexpr TableSize k_sizes[] = {
    {"", 5.0, 6.0}, {"\\small", 4.63, 4.0}, {"\\footnotesize", 4.25, 3.0}, {"\\scriptsize", 3.99, 2.0}};
constexpr std::size_t k_block_size = 2;  // the size of tables cut into blocks: \footnotesize

// cmr10's widths of the ASCII characters from the space to '~' as tex_escape
// writes them, in digits (5pt), from \settowidth.
constexpr double k_ascii_widths[] = {
    0.67, 0.56, 1.00, 1.67, 1.00, 1.67, 1.56, 0.56, 0.78, 0.78, 1.00, 1.56, 0.56, 0.67, 0.56, 1.00,
    1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 0.56, 0.56, 1.56, 1.56, 1.56, 0.94,
    1.56, 1.50, 1.42, 1.44, 1.53, 1.36, 1.31, 1.57, 1.50, 0.72, 1.03, 1.56, 1.25, 1.83, 1.50, 1.56,
    1.36, 1.56, 1.47, 1.11, 1.44, 1.50, 1.50, 2.06, 1.50, 1.50, 1.22, 0.56, 1.00, 0.56, 1.00, 0.72,
    0.56, 1.00, 1.11, 0.89, 1.11, 0.89, 0.61, 1.00, 1.11, 0.56, 0.61, 1.06, 0.56, 1.67, 1.11, 1.00,
    1.11, 1.06, 0.78, 0.79, 0.78, 1.11, 1.06, 1.44, 1.06, 1.06, 0.89, 1.00, 0.56, 1.00, 1.00,
};
static_assert(std::size(k_ascii_widths) == 0x7F - 0x20);

// The width in digits of a label, or of a number set in math (number = true:
// '-' is a minus sign).
double width_in_digits(const std::string& text, bool number) {
    if (text == "…" || text == "...") {
        return 2.67;
    }
    double units = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto [code, length] = decode_code_point(text, i);
        if (code == '-' && number) {
            units += 1.56;
        } else if (code >= 0x20 && code < 0x7F) {
            units += k_ascii_widths[code - 0x20];
        } else if (code == 0x2212) {
            units += 1.56;  // −
        } else if (code == 0x221E) {
            units += 2.0;   // ∞
        } else if (code == 0x2026) {
            units += 2.67;  // …
        } else {
            units += 1.5;   // an accented letter, Greek, a symbol or "?": at most a capital's width
        }
        i += length;
    }
    return units;
}

struct ColumnWidths {
    double labels = 0;            // the row-label column, in digits
    std::vector<double> columns;  // each number column, in digits
};

// Each column at least `least` digits wide (a worksheet's room to write in).
ColumnWidths column_widths(const Table& table, double least = 0) {
    ColumnWidths widths;
    for (const auto& label : table.row_labels) {
        widths.labels = std::max(widths.labels, width_in_digits(label, false));
    }
    for (std::size_t j = 0; j < table.col_labels.size(); ++j) {
        double width = std::max(least, width_in_digits(table.col_labels[j], false));
        for (const auto& row : table.cells) {
            width = std::max(width, width_in_digits(row[j], true));
        }
        widths.columns.push_back(width);
    }
    return widths;
}

// The estimated width in pt of the columns [from, to) with the row labels.
double tabular_width(const ColumnWidths& widths, std::size_t from, std::size_t to, const TableSize& size) {
    double width = widths.labels * size.digit + 2 * size.tabcolsep + 0.4;  // 0.4pt: the rule after the labels
    for (std::size_t j = from; j < to; ++j) {
        width += widths.columns[j] * size.digit + 2 * size.tabcolsep;
    }
    return width;
}

// The columns [from, to) of a table, with all its rows.
Table columns_of(const Table& table, std::size_t from, std::size_t to) {
    Table part = table;
    part.col_labels.assign(table.col_labels.begin() + static_cast<long>(from), table.col_labels.begin() + static_cast<long>(to));
    part.cols.assign(table.cols.begin() + static_cast<long>(from), table.cols.begin() + static_cast<long>(to));
    for (std::size_t i = 0; i < table.cells.size(); ++i) {
        part.cells[i].assign(table.cells[i].begin() + static_cast<long>(from), table.cells[i].begin() + static_cast<long>(to));
        part.values[i].assign(table.values[i].begin() + static_cast<long>(from), table.values[i].begin() + static_cast<long>(to));
        if (!table.marks.empty()) {
            part.marks[i].assign(table.marks[i].begin() + static_cast<long>(from), table.marks[i].begin() + static_cast<long>(to));
        }
    }
    return part;
}

// How a table is fitted to the page: the line width, the least width of a
// number column in digits, whether it may be set smaller before it is cut
// into blocks of columns, and what goes at the start of its center
// environment (a worksheet's row height).
struct TableFit {
    double line_width = k_fragment_width;
    double least_column = 0;
    bool shrink = true;
    std::string setup;
};

// The table in a center environment, drawn by `skin`, set small enough to
// fit the line, or cut into blocks of columns when even \scriptsize is too
// wide (or, for a table that may not shrink, \normalsize).
std::string fitted_table(const Table& table, const TableSkin& skin, const TableFit& fit) {
    const ColumnWidths widths = column_widths(table, fit.least_column);
    const std::size_t n = widths.columns.size();
    const double room = fit.line_width - 2.0;  // a little slack for the estimate
    std::size_t size = 0;
    while (fit.shrink && size + 1 < std::size(k_sizes) && tabular_width(widths, 0, n, k_sizes[size]) > room) {
        ++size;
    }
    std::vector<std::pair<std::size_t, std::size_t>> blocks = {{0, n}};
    if (tabular_width(widths, 0, n, k_sizes[size]) > room) {
        // the fewest blocks of near-equal numbers of columns that each fit
        size = fit.shrink ? k_block_size : 0;
        for (std::size_t count = 2; count <= n; ++count) {
            blocks.clear();
            bool fits = true;
            for (std::size_t b = 0, from = 0; b < count; ++b) {
                const std::size_t to = from + n / count + (b < n % count ? 1 : 0);
                fits = fits && tabular_width(widths, from, to, k_sizes[size]) <= room;
                blocks.emplace_back(from, to);
                from = to;
            }
            if (fits) {
                break;
            }
        }
    }
    std::string out = "\\begin{center}\n" + fit.setup;
    if (size > 0) {
        out += std::string(k_sizes[size].command) + "\\setlength{\\tabcolsep}{" +
               trimmed(k_sizes[size].tabcolsep, 4) + "pt}\n";
    }
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        out += b == 0 ? "" : "\n\\medskip\n";
        out += draw_table(blocks.size() == 1 ? table : columns_of(table, blocks[b].first, blocks[b].second), skin);
    }
    return out + "\\end{center}\n";
}

std::string joined_paragraphs(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::string result;
    bool blank = false;
    while (std::getline(lines, line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) {
            blank = !result.empty();
            continue;
        }
        result += result.empty() ? "" : (blank ? "\n\n" : "\n");
        result += tex_prose(line.substr(line.find_first_not_of(" \t")));
        blank = false;
    }
    return result;
}

// ── the parts of a document ────────────────────────────────────────────────

// The start of a whole document, for pdflatex.
constexpr const char* k_preamble =
    "\\documentclass{article}\n"
    "\\usepackage[utf8]{inputenc}\n"
    "% T1 and Latin Modern when installed; plain Computer Modern otherwise\n"
    "\\IfFileExists{lmodern.sty}{\\usepackage[T1]{fontenc}\\usepackage{lmodern}}{}\n"
    "\\usepackage{amsmath, amssymb, booktabs}\n"
    "\\usepackage[table]{xcolor}\n"
    "\\usepackage[margin=2.5cm]{geometry}\n"
    "\\begin{document}\n\n";

std::string itemize(const std::vector<std::string>& items) {
    if (items.empty()) {
        return "";
    }
    std::string out = "\\begin{itemize}\n";
    for (const auto& item : items) {
        out += "  \\item " + tex_prose(item) + "\n";
    }
    return out + "\\end{itemize}\n";
}

// ── worksheets ──────────────────────────────────────────────────────────────

// A worksheet's table: every cell boxed, a column wide enough and a row tall
// enough (\arraystretch) to write a number in by hand; the key's numbers to
// the right of their cells, where the blank sheet leaves them out.
class SheetSkin : public LatexSkin {
public:
    SheetSkin(bool blank, double column_em) : m_blank(blank), m_column_em(column_em) {}

    std::string col_label(const std::string& text) const override { return "\\hfill " + LatexSkin::col_label(text); }
    std::string number(const std::string& text) const override {
        return m_blank ? "" : "\\hfill " + tex_number(text);
    }
    std::string begin(std::size_t n_cols) const override {
        const std::string column = "p{" + trimmed(m_column_em, 4) + "em}|";
        std::string spec = "|l|";
        for (std::size_t j = 0; j < n_cols; ++j) {
            spec += column;
        }
        return "\\begin{tabular}{" + spec + "}\n\\hline\n";
    }
    std::string row(const std::string& label, const std::vector<std::string>& cells, int r) const override {
        return LatexSkin::row(label, cells, r) + "\\hline\n";
    }
    std::string divider(std::size_t, const std::vector<std::size_t>&) const override { return ""; }
    std::string end() const override { return "\\end{tabular}\n"; }

private:
    bool m_blank;
    double m_column_em;
};

// Room to write in: a number column is at least this many digits wide (about
// 1.4 cm at 10pt), and two digits wider than the key's widest number.
constexpr double k_sheet_column_digits = 8.0;
constexpr const char* k_sheet_row_height = "\\renewcommand{\\arraystretch}{2.2}\n";
// The lines of tables at that height (about 0.93 cm each) that fit on a page
// with a step's heading and notes.
constexpr std::size_t k_sheet_page_lines = 20;

}  // namespace

namespace {

// ── choosing a layout in TeX ────────────────────────────────────────────────
// A fragment cannot know its line width, so TeX chooses: \qkvlayout{blocks}
// measures every \qkvblock{tabular} of one layout at \normalsize, \small and
// \footnotesize, and sets the blocks at the first size at which the widest
// fits \linewidth; \qkvlastlayout does the same and, when nothing has fitted,
// sets them at \footnotesize anyway. \qkvdisplay and \qkvlastdisplay do the
// same for the alternatives of a display. \qkvfresh starts a choice. The
// definitions may be read more than once (several fragments \input into one
// document): \providecommand, and no \newif, whose name would unbalance a
// skipped conditional. \qkvcell shades a cell when colortbl is loaded.
constexpr const char* k_layout_macros = R"tex(% qkv's layouts: TeX sets the first one that fits \linewidth
\ifdefined\qkvbox\else\newsavebox\qkvbox\fi
\ifdefined\qkvwidest\else\newdimen\qkvwidest\fi
\providecommand\qkvfresh{\def\qkvdone{0}}
\providecommand\qkvput[2]{\def\qkvdone{1}\def\qkvsep{}%
  \def\qkvblock##1{\qkvsep\def\qkvsep{\par\medskip}{#1##1}\par}#2}
\providecommand\qkvtry[2]{\ifnum\qkvdone=0
  \qkvwidest=0pt
  \def\qkvblock##1{\sbox\qkvbox{#1##1}\ifdim\wd\qkvbox>\qkvwidest\qkvwidest=\wd\qkvbox\fi}#2%
  \ifdim\qkvwidest>\linewidth\else\qkvput{#1}{#2}\fi\fi}
\providecommand\qkvlayout[1]{\qkvtry{}{#1}\qkvtry{\small\setlength\tabcolsep{4pt}}{#1}%
  \qkvtry{\footnotesize\setlength\tabcolsep{3pt}}{#1}}
\providecommand\qkvlastlayout[1]{\qkvlayout{#1}%
  \ifnum\qkvdone=0 \qkvput{\footnotesize\setlength\tabcolsep{3pt}}{#1}\fi}
\providecommand\qkvdisplay[1]{\ifnum\qkvdone=0 \sbox\qkvbox{$\displaystyle #1$}%
  \ifdim\wd\qkvbox>\linewidth\else\def\qkvdone{1}\[#1\]\fi\fi}
\providecommand\qkvlastdisplay[1]{\ifnum\qkvdone=0 \def\qkvdone{1}\[#1\]\fi}
\providecommand\qkvcell[3]{\ifdefined\cellcolor\cellcolor[rgb]{#1}\ifnum#2=1 \color{white}\fi\fi#3}
)tex";

// A table narrower than this (estimated) at \normalsize fits any line qkv
// expects, and is written as one plain tabular; a wider one gets layouts cut
// into enough blocks of columns that each fits it at \footnotesize. A column
// of a two-column paper is 229.5pt (article), 241pt (ACM) or 252pt (IEEEtran).
constexpr double k_narrowest_line = 220.0;
// A table of more rows is cut into blocks of this many, each under the
// header again, so that it can break across pages and columns (longtable
// would, but refuses two-column documents).
constexpr std::size_t k_block_rows = 20;

// "#rrggbb" as colortbl's rgb model wants it: "0.871,0.922,0.969".
std::string tex_rgb(const std::string& hex) {
    const Rgb colour = parse_hex(hex);
    return fixed(colour.r / 255.0, 3) + "," + fixed(colour.g / 255.0, 3) + "," + fixed(colour.b / 255.0, 3);
}

// The table with its cells in LaTeX: numbers in math, the gaps of a
// summarised matrix as \vdots down a left-out row, \cdots along a left-out
// column and \ddots where they cross, weights shaded, marks escaped.
Table tex_cells(const Table& table, const LatexTableStyle& style) {
    Table out = table;
    const bool placed = table.rows.size() == table.cells.size() && table.cols.size() == table.col_labels.size();
    for (std::size_t i = 0; i < table.cells.size(); ++i) {
        for (std::size_t j = 0; j < table.cells[i].size(); ++j) {
            std::string& cell = out.cells[i][j];
            const bool gap_row = placed && table.rows[i] == k_gap;
            const bool gap_col = placed && table.cols[j] == k_gap;
            if (gap_row || gap_col) {
                cell = gap_row && gap_col ? "$\\ddots$" : gap_row ? "$\\vdots$" : "$\\cdots$";
                continue;
            }
            cell = tex_number(table.cells[i][j]);
            const double value = table.values[i][j];
            const bool blocked = i < style.blocked.size() && j < style.blocked[i].size() && style.blocked[i][j];
            if (style.shade_weights && std::isfinite(value) && !blocked) {
                const std::string colour = ramp_colour(value);
                cell = "\\qkvcell{" + tex_rgb(colour) + "}{" + (text_colour_on(colour) == "#ffffff" ? "1" : "0") +
                       "}{" + cell + "}";
            }
        }
    }
    for (auto& row : out.marks) {
        for (auto& mark : row) {
            mark.symbol = tex_escape(mark.symbol);
            mark.detail = tex_escape(mark.detail);
            mark.color = nullptr;
        }
    }
    return out;
}

// The rows [from, to) of a table, with all its columns.
Table rows_of(const Table& table, std::size_t from, std::size_t to) {
    const auto cut = [from, to](const auto& all) {
        using Items = std::decay_t<decltype(all)>;
        return all.size() < to ? all : Items(all.begin() + static_cast<long>(from), all.begin() + static_cast<long>(to));
    };
    Table part = table;
    part.row_labels = cut(table.row_labels);
    part.cells = cut(table.cells);
    part.values = cut(table.values);
    part.rows = cut(table.rows);
    part.marks = cut(table.marks);
    if (table.row_maxima.size() == table.cells.size()) {
        part.row_maxima = cut(table.row_maxima);
    }
    return part;
}

// [from, to) of `count` items cut into `blocks` parts of near-equal size.
std::vector<std::pair<std::size_t, std::size_t>> even_blocks(std::size_t count, std::size_t blocks) {
    std::vector<std::pair<std::size_t, std::size_t>> result;
    for (std::size_t b = 0, from = 0; b < blocks; ++b) {
        const std::size_t to = from + count / blocks + (b < count % blocks ? 1 : 0);
        result.emplace_back(from, to);
        from = to;
    }
    return result;
}

// A tabular as the argument of \qkvblock: no space after it, which would widen the box.
std::string block(const std::string& tabular) {
    std::string body = tabular;
    while (!body.empty() && body.back() == '\n') {
        body.pop_back();
    }
    return "\\qkvblock{%\n" + body + "}%\n";
}

// The blocks of one layout: the columns cut into `column_blocks`, each
// column block's rows in blocks of k_block_rows.
std::string layout_blocks(const Table& prepared, std::size_t column_blocks) {
    std::string out;
    const std::size_t n_rows = prepared.cells.size();
    const std::size_t row_blocks = std::max<std::size_t>(1, (n_rows + k_block_rows - 1) / k_block_rows);
    for (const auto& [from, to] : even_blocks(prepared.col_labels.size(), column_blocks)) {
        const Table columns = column_blocks == 1 ? prepared : columns_of(prepared, from, to);
        for (const auto& [first, last] : even_blocks(n_rows, row_blocks)) {
            out += block(draw_table(row_blocks == 1 ? columns : rows_of(columns, first, last), PreparedSkin()));
        }
    }
    return out;
}

// The fewest blocks of columns that each fit a line of `width` at \footnotesize.
std::size_t column_blocks_needed(const ColumnWidths& widths, double width) {
    const std::size_t n = widths.columns.size();
    for (std::size_t count = 1; count < n; ++count) {
        bool fits = true;
        for (const auto& [from, to] : even_blocks(n, count)) {
            fits = fits && tabular_width(widths, from, to, k_sizes[k_block_size]) <= width;
        }
        if (fits) {
            return count;
        }
    }
    return std::max<std::size_t>(n, 1);
}

// The widest line qkv writes layouts for: a landscape page. A wider line
// gets the layout made for this one.
constexpr double k_widest_line = 700.0;

// The numbers of column blocks of a table's layouts: from what the widest
// line needs to what the narrowest needs, each a quarter more than the one
// before (so that --full on a wide matrix does not write it twenty times).
std::vector<std::size_t> layout_counts(const ColumnWidths& widths) {
    const std::size_t most = column_blocks_needed(widths, k_narrowest_line);
    std::vector<std::size_t> counts = {column_blocks_needed(widths, k_widest_line)};
    for (std::size_t count = counts.front() + 1; count <= most; ++count) {
        if (count == most || 4 * count >= 5 * counts.back()) {
            counts.push_back(count);
        }
    }
    return counts;
}

}  // namespace

std::string latex_packages() { return "amsmath, amssymb, booktabs"; }

std::string latex_begin(bool standalone, const std::string& what) {
    if (standalone) {
        return std::string(k_preamble) + k_layout_macros + "\n";
    }
    return "% qkv: " + what + "\n% needs \\usepackage{" + latex_packages() +
           "}; weights are shaded when colortbl (or xcolor with [table]) is loaded\n" + k_layout_macros + "\n";
}

std::string latex_end(bool standalone) { return standalone ? "\n\\end{document}\n" : ""; }

std::string latex_table(const Table& table, const LatexTableStyle& style) {
    const Table prepared = tex_cells(table, style);
    const ColumnWidths widths = column_widths(table);
    const std::size_t n = widths.columns.size();
    const bool tall = table.cells.size() > k_block_rows;
    const bool plain = !tall && tabular_width(widths, 0, n, k_sizes[0]) <= k_narrowest_line;
    std::string body;
    if (plain) {
        body = draw_table(prepared, PreparedSkin());
    } else {
        body = "\\qkvfresh\n";
        const std::vector<std::size_t> counts = layout_counts(widths);
        for (const std::size_t count : counts) {
            body += std::string(count == counts.back() ? "\\qkvlastlayout" : "\\qkvlayout") + "{%\n" +
                    layout_blocks(prepared, count) + "}\n";
        }
    }
    if (style.floating && !tall) {
        const std::string short_caption = style.short_caption.empty() ? "" : "[" + style.short_caption + "]";
        return "\\begin{table}[htbp]\n\\centering\n\\caption" + short_caption + "{" + style.caption + "}\\label{" + style.label +
               "}\n\\medskip\n" + body + "\\end{table}\n";
    }
    std::string caption;
    if (style.floating) {
        // too tall for a float, which cannot break: in place, numbered and captioned as a float would be
        caption = "\\refstepcounter{table}\\label{" + style.label + "}%\n\\tablename~\\thetable: " + style.caption +
                  "\\par\\medskip\n";
    }
    return "\\begin{center}\n" + caption + body + "\\end{center}\n";
}

std::string latex_display(const std::vector<std::string>& alternatives, bool optional) {
    if (alternatives.size() <= 1 && !optional) {
        return alternatives.empty() ? "" : "\\[ " + alternatives.front() + " \\]\n";
    }
    std::string out = "\\qkvfresh\n";
    for (std::size_t k = 0; k < alternatives.size(); ++k) {
        out += std::string(k + 1 == alternatives.size() && !optional ? "\\qkvlastdisplay" : "\\qkvdisplay") + "{" +
               alternatives[k] + "}%\n";
    }
    return out;
}

std::string latex_paragraphs(const std::string& text) { return joined_paragraphs(text); }

std::string latex_itemize(const std::vector<std::string>& items) { return itemize(items); }

std::string latex_given_table(const Table& table, bool standalone) {
    return fitted_table(table, LatexSkin(), {standalone ? k_standalone_width : k_fragment_width, 0, true, ""});
}

std::string latex_sheet_table(const Table& table, bool blank, bool standalone) {
    double widest = 0;
    for (const double column : column_widths(table).columns) {
        widest = std::max(widest, column);
    }
    // a digit is half an em; a little more for the column's rule
    const double digits = std::max(k_sheet_column_digits, std::ceil(widest) + 2);
    return fitted_table(table, SheetSkin(blank, digits / 2),
                        {standalone ? k_standalone_width : k_fragment_width, digits + 0.1, false, k_sheet_row_height});
}

bool latex_fits_page(const std::string& latex) {
    std::size_t lines = 0;
    for (std::size_t at = latex.find("\\\\\n"); at != std::string::npos; at = latex.find("\\\\\n", at + 1)) {
        ++lines;
    }
    return lines <= k_sheet_page_lines;
}


}  // namespace qkv
