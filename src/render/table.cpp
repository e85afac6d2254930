#include "render/table.hpp"
#include "base/numbers.hpp"

#include "render/palette.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string_view>

namespace qkv {

namespace {
constexpr std::size_t k_max_label_width = 16;
}

std::vector<arma::uword> kept_indices(arma::uword count, bool full) {
    std::vector<arma::uword> kept;
    if (full || count <= k_summary_limit) {
        for (arma::uword i = 0; i < count; ++i) {
            kept.push_back(i);
        }
        return kept;
    }
    for (arma::uword i = 0; i < 6; ++i) {
        kept.push_back(i);
    }
    kept.push_back(k_gap);
    for (arma::uword i = count - 5; i < count; ++i) {
        kept.push_back(i);
    }
    return kept;
}

bool is_whole_number(double value) {
    return std::isfinite(value) && std::floor(value) == value && std::fabs(value) <= k_whole_limit;
}

bool all_whole_numbers(const arma::mat& M) {
    for (const double value : M) {
        if (std::isfinite(value) && !is_whole_number(value)) {
            return false;
        }
    }
    return true;
}

std::string format_number(double value, int precision, bool whole_numbers, bool ascii) {
    if (std::isinf(value)) {
        if (ascii) {
            return value < 0 ? "-inf" : "inf";
        }
        return value < 0 ? "−∞" : "∞";
    }
    if (std::isnan(value)) {
        return "nan";
    }
    std::string text = fixed(value, whole_numbers ? 0 : precision);
    // "-0.0000" reads as a sign error to a learner: print it as zero
    if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) {
        text.erase(0, 1);
    }
    return text;
}

namespace {

// The longest start of `text` that fits in `width` columns (combining marks
// stay with their letter).
std::string fitting_start(const std::string& text, std::size_t width) {
    std::size_t columns = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto [code, length] = decode_code_point(text, i);
        const std::size_t w = code_point_width(code);
        if (columns + w > width) {
            break;
        }
        columns += w;
        i += length;
    }
    return text.substr(0, i);
}

// The longest end of `text` that fits in `width` columns.
std::string fitting_end(const std::string& text, std::size_t width) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < text.size(); i += decode_code_point(text, i).second) {
        starts.push_back(i);
    }
    std::size_t columns = 0;
    std::size_t from = text.size();
    for (auto it = starts.rbegin(); it != starts.rend(); ++it) {
        const std::size_t w = code_point_width(decode_code_point(text, *it).first);
        if (columns + w > width) {
            break;
        }
        columns += w;
        from = *it;
    }
    // a combining mark cannot start the kept end: drop marks whose letter was cut
    while (from < text.size() && code_point_width(decode_code_point(text, from).first) == 0) {
        from += decode_code_point(text, from).second;
    }
    return text.substr(from);
}

}  // namespace


std::string truncate_label(const std::string& text, std::size_t width, bool ascii) {
    if (display_width(text) <= width) {
        return text;
    }
    const std::string ellipsis = ascii ? "..." : "…";
    return fitting_start(text, width - display_width(ellipsis)) + ellipsis;
}

std::string truncate_label_middle(const std::string& text, std::size_t width, bool ascii) {
    if (display_width(text) <= width) {
        return text;
    }
    const std::string ellipsis = ascii ? "..." : "…";
    const std::size_t keep = width - display_width(ellipsis);
    const std::string start = fitting_start(text, (keep + 1) / 2);
    return start + ellipsis + fitting_end(text, keep - display_width(start));
}

std::vector<std::string> shown_labels(const std::vector<std::string>& labels, std::size_t width, bool full,
                                      bool ascii) {
    if (full) {
        return labels;
    }
    std::vector<std::string> shown;
    for (const auto& label : labels) {
        shown.push_back(truncate_label(label, width, ascii));
    }
    // labels that now read the same as a different one: first cut in the
    // middle (names often differ at their end: layer_1, layer_2), then whole
    const auto clash = [&](std::size_t i) {
        for (std::size_t k = 0; k < labels.size(); ++k) {
            if (shown[k] == shown[i] && labels[k] != labels[i]) {
                return true;
            }
        }
        return false;
    };
    for (int pass = 0; pass < 2; ++pass) {
        std::vector<std::size_t> clashing;
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (clash(i)) {
                clashing.push_back(i);
            }
        }
        for (const auto i : clashing) {
            shown[i] = pass == 0 ? truncate_label_middle(labels[i], width, ascii) : labels[i];
        }
    }
    // a whole label may still read like a cut one ("ab…" written out): show every label whole
    for (std::size_t i = 0; i < labels.size(); ++i) {
        if (clash(i)) {
            return labels;
        }
    }
    return shown;
}

std::string to_ascii(const std::string& text) {
    static const std::pair<const char*, const char*> k_replacements[] = {
        {"·", "*"}, {"ᵀ", "^T"}, {"∂", "d"}, {"θ", "theta"}, {"γ", "gamma"}, {"∘", "o"}, {"√", "sqrt "}, {"−∞", "-inf"}, {"−", "-"}, {"∞", "inf"}, {"…", "..."},
        {"×", "x"}, {"≤", "<="}, {"≥", ">="}, {"Σ", "sum"}, {"′", "'"},
        {"─", "-"}, {"│", "|"}, {"→", "->"}, {"↓", "v"}, {"←", "<-"}, {"═", "="}, {"“", "\""}, {"”", "\""}, {"’", "'"}, {"—", "-"}, {"–", "-"},
        {"≈", "~"}, {"ℓ", "l"}, {"⌈", "ceil("}, {"⌉", ")"},
    };
    // superscript digits, a run of them after "^" (e¹⁰ → e^10)
    static const char* const k_superscripts[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
    const auto superscript_at = [&](std::size_t at) -> int {
        for (int digit = 0; digit < 10; ++digit) {
            if (text.compare(at, std::string_view(k_superscripts[digit]).size(), k_superscripts[digit]) == 0) {
                return digit;
            }
        }
        return -1;
    };
    std::string raised;
    for (std::size_t i = 0; i < text.size();) {
        if (superscript_at(i) < 0) {
            raised += text[i++];
            continue;
        }
        raised += '^';
        for (int digit = superscript_at(i); digit >= 0; digit = superscript_at(i)) {
            raised += static_cast<char>('0' + digit);
            i += std::string_view(k_superscripts[digit]).size();
        }
    }
    std::string result = formula_text(raised, true);
    for (const auto& [from, to] : k_replacements) {
        const std::string_view source = from;
        std::string::size_type at = 0;
        while ((at = result.find(source, at)) != std::string::npos) {
            std::string with = to;
            if (source == "∘") {
                // the product sign as a word of its own: "x∘γ" is "x o gamma", not "xogamma"
                const std::size_t after = at + source.size();
                with = (at == 0 || result[at - 1] == ' ' ? "" : " ") + with +
                       (after == result.size() || result[after] == ' ' ? "" : " ");
            }
            result.replace(at, source.size(), with);
            at += with.size();
        }
    }
    // anything else outside ASCII becomes '?'
    std::string plain;
    for (std::size_t i = 0; i < result.size(); ++i) {
        const auto byte = static_cast<unsigned char>(result[i]);
        if (byte < 0x80) {
            plain += result[i];
        } else if ((byte & 0xC0) != 0x80) {
            plain += '?';
        }
    }
    return plain;
}

std::string formula_text(const std::string& formula, bool ascii) {
    // the subscript digits ₀ … ₉ are U+2080 … U+2089: E2 82 80 … E2 82 89 in UTF-8
    const auto subscript_at = [&](std::size_t i) {
        return formula.compare(i, 2, "\xE2\x82") == 0 && i + 2 < formula.size() &&
               static_cast<unsigned char>(formula[i + 2]) >= 0x80 && static_cast<unsigned char>(formula[i + 2]) <= 0x89;
    };
    const auto is_letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
    std::string out;
    std::size_t i = 0;
    while (i < formula.size()) {
        if (ascii && subscript_at(i)) {
            // a run of subscript digits: "_" then the digits
            out += '_';
            while (i < formula.size() && subscript_at(i)) {
                out += static_cast<char>('0' + (static_cast<unsigned char>(formula[i + 2]) - 0x80));
                i += 3;
            }
            continue;
        }
        // after a letter or a primed letter: Z_2, S'_2
        const bool after_symbol =
            i > 0 && (is_letter(formula[i - 1]) || (formula[i - 1] == '\'' && i > 1 && is_letter(formula[i - 2])));
        if (!ascii && formula[i] == '_' && after_symbol && i + 1 < formula.size() &&
            std::isdigit(static_cast<unsigned char>(formula[i + 1])) != 0) {
            std::size_t end = i + 1;
            while (end < formula.size() && std::isdigit(static_cast<unsigned char>(formula[end])) != 0) {
                ++end;
            }
            // "x_12" but not "x_1b": a subscript is the whole run of digits
            if (end == formula.size() || (!is_letter(formula[end]) && formula[end] != '_')) {
                for (std::size_t k = i + 1; k < end; ++k) {
                    out += "\xE2\x82";
                    out += static_cast<char>(0x80 + (formula[k] - '0'));
                }
                i = end;
                continue;
            }
        }
        out += formula[i];
        ++i;
    }
    return out;
}

std::string one_line(const std::string& text) {
    std::string out = text;
    for (char& c : out) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
            c = ' ';
        }
    }
    return out;
}

std::string shape_text(arma::uword rows, arma::uword cols, bool ascii) {
    return std::to_string(rows) + (ascii ? " x " : " × ") + std::to_string(cols);
}

Table build_table(const Step& step, const RenderOptions& options) {
    Table table;
    const arma::mat& M = step.values;
    table.shape = shape_text(M.n_rows, M.n_cols, options.ascii);
    const bool whole = all_whole_numbers(M);
    const std::string gap = options.ascii ? "..." : "…";
    const auto rows = kept_indices(M.n_rows, options.full);
    const auto cols = kept_indices(M.n_cols, options.full);
    // the kept labels of one dimension, cut so that no two different ones look alike
    const auto labels = [&](const std::vector<std::string>& all, const std::vector<arma::uword>& kept) {
        std::vector<std::string> texts;
        for (const auto k : kept) {
            if (k != k_gap) {
                texts.push_back(one_line(options.ascii ? to_ascii(all[k]) : all[k]));
            }
        }
        texts = shown_labels(texts, k_max_label_width, options.full, options.ascii);
        std::vector<std::string> result;
        std::size_t next = 0;
        for (const auto k : kept) {
            result.push_back(k == k_gap ? gap : texts[next++]);
        }
        return result;
    };
    table.col_labels = labels(step.col_labels, cols);
    table.row_labels = labels(step.row_labels, rows);
    table.rows = rows;
    table.cols = cols;
    for (const auto i : rows) {
        table.row_maxima.push_back(i == k_gap || M.n_cols == 0 ? arma::datum::nan : M.row(i).max());
        std::vector<std::string> cells;
        std::vector<double> values;
        for (const auto j : cols) {
            if (i == k_gap || j == k_gap) {
                cells.push_back(gap);
                values.push_back(arma::datum::nan);
            } else {
                cells.push_back(format_number(M(i, j), options.precision, whole, options.ascii));
                values.push_back(M(i, j));
            }
        }
        table.cells.push_back(std::move(cells));
        table.values.push_back(std::move(values));
    }
    return table;
}

std::string TableSkin::begin(std::size_t) const { return ""; }
std::string TableSkin::end() const { return ""; }

std::string draw_table(const Table& table, const TableSkin& skin) {
    const Align align = skin.align();
    const auto pad_left = [](const std::string& text, std::size_t width) {
        const std::size_t used = display_width(text);
        return std::string(width > used ? width - used : 0, ' ') + text;
    };
    const auto pad_right = [](const std::string& text, std::size_t width) {
        const std::size_t used = display_width(text);
        return text + std::string(width > used ? width - used : 0, ' ');
    };
    // the mark after cell (i, j) as written, and the columns it takes (its colour takes none)
    const auto mark_of = [&table](std::size_t i, std::size_t j) -> std::pair<std::string, std::size_t> {
        if (table.marks.empty() || table.marks[i][j].symbol.empty()) {
            return {"", 0};
        }
        const CellMark& mark = table.marks[i][j];
        const std::string symbol = mark.color == nullptr ? mark.symbol : styled(mark.symbol, mark.color, true);
        return {" " + symbol + mark.detail, 1 + display_width(mark.symbol) + display_width(mark.detail)};
    };
    // everything in the format's own spelling first, then the widths
    const std::string corner = skin.corner();
    std::vector<std::string> row_labels;
    std::size_t label_width = display_width(corner);
    for (const auto& text : table.row_labels) {
        row_labels.push_back(skin.label(text));
        label_width = std::max(label_width, display_width(row_labels.back()));
    }
    std::vector<std::string> col_labels;
    std::vector<std::size_t> widths;
    for (const auto& text : table.col_labels) {
        col_labels.push_back(skin.col_label(text));
        widths.push_back(display_width(col_labels.back()));
    }
    std::vector<std::vector<std::string>> cells;
    std::vector<std::size_t> number_widths(widths.size(), 0);
    for (const auto& table_row : table.cells) {
        std::vector<std::string> written;
        for (std::size_t j = 0; j < table_row.size(); ++j) {
            written.push_back(skin.number(table_row[j]));
            number_widths[j] = std::max(number_widths[j], display_width(written.back()));
        }
        cells.push_back(std::move(written));
    }
    for (std::size_t i = 0; i < cells.size(); ++i) {
        for (std::size_t j = 0; j < widths.size(); ++j) {
            widths[j] = std::max(widths[j], number_widths[j] + mark_of(i, j).second);
        }
    }
    // text that takes `used` columns, placed in column j
    const auto place = [&](const std::string& text, std::size_t used, std::size_t j) {
        const std::string room(widths[j] > used ? widths[j] - used : 0, ' ');
        switch (align) {
            case Align::right:
                return room + text;
            case Align::left:
                return j + 1 == widths.size() ? text : text + room;
            case Align::none:
                break;
        }
        return text;
    };

    std::string out = skin.begin(widths.size());
    std::vector<std::string> header;
    for (std::size_t j = 0; j < widths.size(); ++j) {
        header.push_back(place(col_labels[j], display_width(col_labels[j]), j));
    }
    out += skin.row(align == Align::none ? corner : pad_right(corner, label_width), header, -1);
    out += skin.divider(label_width, widths);
    for (std::size_t i = 0; i < cells.size(); ++i) {
        for (std::size_t j = 0; j < widths.size(); ++j) {
            const auto [mark, mark_width] = mark_of(i, j);
            if (align == Align::none) {
                cells[i][j] += mark;
            } else {
                cells[i][j] = place(pad_left(cells[i][j], number_widths[j]) + mark, number_widths[j] + mark_width, j);
            }
        }
        out += skin.row(align == Align::none ? row_labels[i] : pad_right(row_labels[i], label_width), cells[i],
                        static_cast<int>(i));
    }
    return out + skin.end();
}

std::string MarkdownTableSkin::label(const std::string& text) const { return markdown_escape(text); }

std::string MarkdownTableSkin::row(const std::string& label, const std::vector<std::string>& cells, int) const {
    std::string line = "| " + label + " |";
    for (const auto& cell : cells) {
        line += " " + cell + " |";
    }
    return line + "\n";
}

std::string MarkdownTableSkin::divider(std::size_t label_width, const std::vector<std::size_t>& widths) const {
    std::string line = "| :" + std::string(label_width > 1 ? label_width - 1 : 1, '-') + " |";
    for (const auto width : widths) {
        line += " " + std::string(width > 1 ? width - 1 : 1, '-') + ": |";
    }
    return line + "\n";
}

}  // namespace qkv

namespace qkv {

std::string mark_symbol(Mark mark, bool ascii) {
    switch (mark) {
        case Mark::none:
            return "";
        case Mark::right:
            return ascii ? "ok" : "✓";
        case Mark::wrong:
            return ascii ? "X" : "✗";
        case Mark::carried:
            return ascii ? "->" : "→";
    }
    return "";
}

const char* mark_color(Mark mark) {
    switch (mark) {
        case Mark::none:
            return nullptr;
        case Mark::right:
            return k_green;
        case Mark::wrong:
            return k_red;
        case Mark::carried:
            return k_yellow;
    }
    return nullptr;
}

std::string mark_name(Mark mark) {
    switch (mark) {
        case Mark::none:
            return "";
        case Mark::right:
            return "right";
        case Mark::wrong:
            return "wrong";
        case Mark::carried:
            return "carried";
    }
    return "";
}

Table drawn_marks(Table table, bool ascii, bool color, std::string_view open, std::string_view close) {
    for (auto& row : table.marks) {
        for (auto& mark : row) {
            mark.symbol = mark_symbol(mark.verdict, ascii);
            mark.color = color ? mark_color(mark.verdict) : nullptr;
            mark.detail = mark.verdict == Mark::wrong
                              ? " " + std::string(open) + (ascii ? to_ascii(mark.true_value) : mark.true_value) +
                                    std::string(close)
                              : "";
        }
    }
    return table;
}

}  // namespace qkv
