// LaTeX pieces shared by every command that writes LaTeX (run, explain,
// check, lessons, worksheets): pure-ASCII escaping, the start and end of a
// fragment or a whole document, and tables and displays that fit whatever
// \linewidth the document has (one column, two columns, a minipage).
//
// A wide table cannot know the width it will be set in, so it is written in
// a few layouts (all its columns; the columns cut into 2, 3, … blocks) and
// TeX sets the first one that fits the line at \normalsize, \small or
// \footnotesize: the macros that choose come with latex_begin().
#pragma once

#include "render/table.hpp"

#include <string>
#include <vector>

namespace qkv {

struct Model;  // model/model.hpp

// Text-mode LaTeX for labels, pure ASCII: special characters escaped,
// accented letters as accent macros, Greek and symbols as math (check's ✓
// and ✗ as amssymb's \checkmark and \boxtimes), a run of superscript or
// subscript digits as one exponent or index.
std::string tex_escape(const std::string& text);

// Prose (explanations, notes, lesson text) as tex_escape writes it, except
// that the names qkv's prose uses are set as math: d_k and W_Q as $d_k$ and
// $W_Q$, d_model as $d_{\mathrm{model}}$, √d_k as $\sqrt{d_k}$, Kᵀ as $K^\top$.
std::string tex_prose(const std::string& text);

// LaTeX with a break allowed after each escaped underscore, so that an id
// such as grad\_scaled\_scores can end a line of a narrow column.
std::string tex_break_underscores(const std::string& latex);

// A number as a table writes it, in math: "−0.5" → "$-0.5$", "−∞" → "$-\infty$".
std::string tex_number(const std::string& text);

// The packages a fragment needs, for its first line: "amsmath, amssymb, booktabs".
std::string latex_packages();

// The start of the output: with `standalone` a whole article's preamble and
// \begin{document}; otherwise a comment naming the packages the fragment
// needs (and what it is: `what`, e.g. "self-attention step by step").
// Either way followed by the macros that choose a table's layout, written so
// that \input-ing several fragments into one document is fine.
std::string latex_begin(bool standalone, const std::string& what);
// \end{document} with `standalone`, nothing otherwise.
std::string latex_end(bool standalone);

// How latex_table() sets a table.
struct LatexTableStyle {
    bool shade_weights = false;  // cells shaded on the SVG's blue ramp (0 … 1), with \cellcolor when colortbl is loaded
    std::vector<std::vector<bool>> blocked = {};  // by the table's row and column: cells the mask blocks, left white
    bool floating = false;       // in a table float with caption and label
    std::string caption = "";        // the float's caption, already LaTeX
    std::string short_caption = "";  // the list of tables' entry, plain text (no math); empty: the caption
    std::string label = "";          // the float's \label
};

// A matrix as booktabs tabulars in a center environment (or a table float),
// the first layout that fits \linewidth; a tall table is cut into row blocks
// that each repeat the header, so that it breaks across pages and columns.
std::string latex_table(const Table& table, const LatexTableStyle& style = {});

// Display math: the first of `alternatives` (each the content of a display,
// e.g. "Q = XW_Q = \begin{bmatrix}…\end{bmatrix}") whose width fits
// \linewidth, or the last one when none does. One alternative is a plain \[ … \].
// With `optional`, nothing is set when none fits (a working that the table
// beside it shows anyway).
std::string latex_display(const std::vector<std::string>& alternatives, bool optional = false);

// A step's working as equations, the way a textbook writes it: the formula,
// then the same with the operands as bmatrix, then the result, e.g.
// "Q = XW_Q = \begin{bmatrix}…\end{bmatrix}\begin{bmatrix}…\end{bmatrix} =
// \begin{bmatrix}…\end{bmatrix}", as latex_display() alternatives that fit
// the line, and nothing when none fits. Empty for a step whose operands are too large to write out (or
// that has no working worth writing: the inputs). render/latex_working.cpp.
std::string latex_working(const Model& model, const Trace& trace, const Step& step, const RenderOptions& options);

// ── a cell's working (latex_cell.cpp), as `qkv explain` writes it ─────────────
// The heading as text: the cell and its value, then smaller where it is:
// "scores[1,2] = 4\quad{\normalfont\small (Scores, row 1 ``we'', …)}".
std::string latex_cell_heading(const std::string& heading);
// The working: each line a paragraph that breaks at its spaces and hangs
// indented, its symbols as math, the text format's indentation kept (in a
// group, \small and ragged right).
std::string latex_cell_lines(const std::vector<std::string>& lines);
// One cell: the heading as \HEADING_COMMAND{…}, the formula (LaTeX, when
// there is one) in display math, the working.
std::string latex_cell_working(const std::string& heading, const std::string& formula,
                               const std::vector<std::string>& lines, const std::string& heading_command);

// A given matrix, every entry as it is, fitted to the line (a whole page's
// with `standalone`, else a fragment's).
std::string latex_given_table(const Table& table, bool standalone);
// A worksheet's table: every cell boxed, a column wide enough and a row tall
// enough to write a number in by hand, empty (`blank`) or with the key's numbers.
std::string latex_sheet_table(const Table& table, bool blank, bool standalone);
// Whether LaTeX holding worksheet tables fits one page at a sheet's row height.
bool latex_fits_page(const std::string& latex);

// Paragraphs of prose (blank lines between them), each line through tex_prose.
std::string latex_paragraphs(const std::string& text);
// A bulleted list of prose items; nothing for none.
std::string latex_itemize(const std::vector<std::string>& items);

}  // namespace qkv
