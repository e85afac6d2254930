// One table builder for every tabular format: it formats the numbers, picks
// the labels and summarises large matrices; each format only draws the result.
#pragma once

#include "attention/trace.hpp"
#include "render/render.hpp"

#include <string>
#include <vector>

namespace qkv {

inline constexpr arma::uword k_summary_limit = 12;  // larger matrices are summarised unless --full

struct Table {
    std::vector<std::string> col_labels;             // "…" where columns were left out
    std::vector<std::string> row_labels;             // "…" where rows were left out
    std::vector<std::vector<std::string>> cells;     // formatted numbers ("…" in left-out places)
    std::vector<std::vector<double>> values;         // the numbers behind the cells (NaN for "…")
    std::vector<double> row_maxima;                  // each kept row's largest value, over the whole row
    std::string shape;                               // "3 × 4" (of the whole matrix)
};

// What one format supplies to draw a Table: how a label and a number are
// written (escaping), and how a row and the divider under the header look.
// draw_table() does the rest (column widths, padding, order), so that text,
// Markdown and LaTeX tables share one layout.
class TableSkin {
public:
    virtual ~TableSkin() = default;
    virtual std::string label(const std::string& text) const { return text; }
    virtual std::string number(const std::string& text) const { return text; }
    // The corner above the row labels.
    virtual std::string corner() const { return ""; }
    virtual std::string begin(std::size_t n_cols) const;
    // One row, label and cells already written and padded to their column
    // widths; row is the table row, or -1 for the header.
    virtual std::string row(const std::string& label, const std::vector<std::string>& cells, int row) const = 0;
    virtual std::string divider(std::size_t label_width, const std::vector<std::size_t>& widths) const = 0;
    virtual std::string end() const;
};

std::string draw_table(const Table& table, const TableSkin& skin);

// The kept indices of one dimension: all of them, or the first 6 and the last 5
// with a gap marked by k_gap between them.
inline constexpr arma::uword k_gap = static_cast<arma::uword>(-1);
std::vector<arma::uword> kept_indices(arma::uword count, bool full);

// Formats one number: whole-number matrices without decimals, −∞ as "−∞"
// (or "-inf" with ascii), no "-0".
std::string format_number(double value, int precision, bool whole_numbers, bool ascii);
bool all_whole_numbers(const arma::mat& M);

// Replaces the symbols qkv uses (·, ᵀ, √, −∞, …, ×) by ASCII spellings.
std::string to_ascii(const std::string& text);

Table build_table(const Step& step, const RenderOptions& options);

// Display width in terminal columns (code points; every code point counts 1).
std::size_t display_width(const std::string& text);
// Cut to at most `width` columns, ending in "…" (or "..." with ascii) when cut.
std::string truncate_label(const std::string& text, std::size_t width, bool ascii);

}  // namespace qkv
