// One table builder for every tabular format: it formats the numbers, picks
// the labels and summarises large matrices; each format only draws the result.
#pragma once

#include "attention/trace.hpp"
#include "base/utf8.hpp"
#include "render/render.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qkv {

inline constexpr arma::uword k_summary_limit = 12;  // larger matrices are summarised unless --full

// A verdict on a learner's number: right (✓), wrong (✗) or following from
// their earlier answers (→); none is no mark.
enum class Mark { none, right, wrong, carried };

// "✓", "✗" or "→" (with ascii "ok", "X" or "->"); "" for none.
std::string mark_symbol(Mark mark, bool ascii);
// The mark's colour, a code of render/palette.hpp (nullptr for none).
const char* mark_color(Mark mark);
// "right", "wrong" or "carried": the mark's class on a page ("" for none).
std::string mark_name(Mark mark);

// What may follow a cell's number, after a space: a verdict, and for a wrong
// number the true value. A document's table holds the verdict and the true
// value; a format draws them (drawn_marks) as the symbol and the detail.
struct CellMark {
    Mark verdict = Mark::none;
    std::string true_value;       // a wrong number's true value, as it should have been written: "0.1"
    std::string symbol;           // drawn: "✓"; coloured with `color`; empty for no mark
    std::string detail;           // drawn: after the symbol, never coloured: " [0.1]"
    const char* color = nullptr;  // drawn: a code of render/palette.hpp, or nullptr for none
};

struct Table {
    std::vector<std::string> col_labels;             // "…" where columns were left out
    std::vector<std::string> row_labels;             // "…" where rows were left out
    std::vector<std::vector<std::string>> cells;     // formatted numbers ("…" in left-out places)
    std::vector<std::vector<double>> values;         // the numbers behind the cells (NaN for "…")
    std::vector<double> row_maxima;                  // each kept row's largest value, over the whole row
    std::string shape;                               // "3 × 4" (of the whole matrix)
    // The matrix row and column of each table row and column (k_gap for
    // "…"), so that a caller can put other numbers in the same layout.
    std::vector<arma::uword> rows;
    std::vector<arma::uword> cols;
    std::vector<std::vector<CellMark>> marks;        // none, or one per cell
};

// `table` with its marks drawn: each verdict's symbol (ASCII where asked), its
// colour where asked, and a wrong number's true value between `open` and `close`.
Table drawn_marks(Table table, bool ascii, bool color, std::string_view open, std::string_view close);

// How the cells sit in their columns. right: numbers and column labels
// right-aligned. left: each column's numbers right-aligned among themselves
// with their marks after them, the whole and the column label left-aligned,
// nothing after the last column. none: no padding at all.
enum class Align { right, left, none };

// What one format supplies to draw a Table: how a label and a number are
// written (escaping), and how a row and the divider under the header look.
// draw_table() does the rest (column widths, padding, order), so that text,
// Markdown and LaTeX tables share one layout.
class TableSkin {
public:
    virtual ~TableSkin() = default;
    virtual Align align() const { return Align::right; }
    virtual std::string label(const std::string& text) const { return text; }
    // A column label in the header; by default written like a row label.
    virtual std::string col_label(const std::string& text) const { return label(text); }
    virtual std::string number(const std::string& text) const { return text; }
    // The corner above the row labels.
    virtual std::string corner() const { return ""; }
    virtual std::string begin(std::size_t n_cols) const;
    // One row, label and cells already written (with their marks) and padded
    // to their column widths; row is the table row, or -1 for the header.
    virtual std::string row(const std::string& label, const std::vector<std::string>& cells, int row) const = 0;
    virtual std::string divider(std::size_t label_width, const std::vector<std::size_t>& widths) const = 0;
    virtual std::string end() const;
};

std::string draw_table(const Table& table, const TableSkin& skin);

// Text tables (run's and check's, drawn in text.cpp): a bar after the row
// labels, a rule under the header, cells `spacing` spaces apart and a blank
// line after the table.
class TextTableSkin : public TableSkin {
public:
    explicit TextTableSkin(bool ascii, std::size_t spacing = 1, Align align = Align::right)
        : m_ascii(ascii), m_spacing(spacing), m_align(align) {}

    Align align() const override { return m_align; }
    std::string row(const std::string& label, const std::vector<std::string>& cells, int row) const override;
    std::string divider(std::size_t label_width, const std::vector<std::size_t>& widths) const override;
    std::string end() const override;

protected:
    // One cell as drawn, already padded (run's heatmap colours it); row is
    // the table row, or -1 for the header.
    virtual std::string cell(const std::string& text, int row, std::size_t col) const;

private:
    bool m_ascii;
    std::size_t m_spacing;
    Align m_align;
};

// Markdown pipe tables (run's and run --decode's): labels escaped, the label
// column left-aligned and the numbers right-aligned.
class MarkdownTableSkin : public TableSkin {
public:
    std::string label(const std::string& text) const override;
    std::string row(const std::string& label, const std::vector<std::string>& cells, int row) const override;
    std::string divider(std::size_t label_width, const std::vector<std::size_t>& widths) const override;
};

// The kept indices of one dimension: all of them, or the first 6 and the last 5
// with a gap marked by k_gap between them.
inline constexpr arma::uword k_gap = static_cast<arma::uword>(-1);
std::vector<arma::uword> kept_indices(arma::uword count, bool full);

// Whole numbers print without decimals up to 2^53: every integer of that
// magnitude is exact in a double, so 1e15 prints as 1000000000000000; above it
// a double cannot tell neighbouring integers apart, and the matrix prints with
// decimals like any other.
inline constexpr double k_whole_limit = 9007199254740992.0;  // 2^53
bool is_whole_number(double value);  // finite, integral and |value| <= k_whole_limit
// Every finite entry a whole number (−∞ does not count against it).
bool all_whole_numbers(const arma::mat& M);

// "3 × 4" (or "3 x 4" with ascii): a matrix's rows and columns.
std::string shape_text(arma::uword rows, arma::uword cols, bool ascii = false);

// Formats one number: whole-number matrices without decimals, −∞ as "−∞"
// (or "-inf" with ascii), no "-0".
std::string format_number(double value, int precision, bool whole_numbers, bool ascii);

// Replaces the symbols qkv uses (·, ᵀ, √, −∞, …, ×) by ASCII spellings;
// subscript digits become "_" and the digits (Z₁ → Z_1), superscript digits
// "^" and the digits (e¹⁰ → e^10); anything else outside ASCII is "?".
std::string to_ascii(const std::string& text);

// A formula for the text format: "Z_2" written with subscript digits (Z₂),
// so that "[Z₁ … Z_2]" reads [Z₁ … Z₂]; with ascii every subscript is "_N".
std::string formula_text(const std::string& formula, bool ascii);

// Line breaks, tabs and other control characters as spaces, for text that
// must stay on one line (headings, table labels).
std::string one_line(const std::string& text);

Table build_table(const Step& step, const RenderOptions& options);

// Cut to at most `width` columns, ending in "…" (or "..." with ascii) when cut.
std::string truncate_label(const std::string& text, std::size_t width, bool ascii);
// Cut to at most `width` columns keeping the start and the end, "…" between
// them: "transformer_layer_1" → "transfor…layer_1".
std::string truncate_label_middle(const std::string& text, std::size_t width, bool ascii);

// The labels of one dimension of a table as shown: whole with --full;
// otherwise cut to `width` columns, from the end, or in the middle where two
// different labels would otherwise look the same, or left whole when even
// that does not tell them apart. Distinct labels never become identical.
std::vector<std::string> shown_labels(const std::vector<std::string>& labels, std::size_t width, bool full,
                                      bool ascii);

}  // namespace qkv
