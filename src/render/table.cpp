#include "render/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

bool all_whole_numbers(const arma::mat& M) {
    for (const double value : M) {
        if (std::isfinite(value) && (std::floor(value) != value || std::fabs(value) >= 1e15)) {
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
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", whole_numbers ? 0 : precision, value);
    std::string text = buffer;
    // "-0.0000" reads as a sign error to a learner: print it as zero
    if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) {
        text.erase(0, 1);
    }
    return text;
}

std::size_t display_width(const std::string& text) {
    std::size_t width = 0;
    for (const char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            ++width;
        }
    }
    return width;
}

std::string truncate_label(const std::string& text, std::size_t width, bool ascii) {
    if (display_width(text) <= width) {
        return text;
    }
    const std::string ellipsis = ascii ? "..." : "…";
    const std::size_t keep = width - display_width(ellipsis);
    std::string result;
    std::size_t columns = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool starts = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
        if (starts && columns == keep) {
            break;
        }
        columns += starts ? 1 : 0;
        result += text[i];
    }
    return result + ellipsis;
}

std::string to_ascii(const std::string& text) {
    static const std::pair<const char*, const char*> k_replacements[] = {
        {"·", "*"}, {"ᵀ", "^T"}, {"√", "sqrt "}, {"−∞", "-inf"}, {"−", "-"}, {"∞", "inf"}, {"…", "..."},
        {"×", "x"}, {"≤", "<="}, {"≥", ">="}, {"Σ", "sum"}, {"₁", "1"}, {"₂", "2"}, {"₃", "3"}, {"′", "'"},
        {"─", "-"}, {"│", "|"}, {"→", "->"}, {"↓", "v"}, {"←", "<-"}, {"═", "="}, {"“", "\""}, {"”", "\""}, {"’", "'"}, {"—", "-"}, {"–", "-"},
    };
    std::string result = text;
    for (const auto& [from, to] : k_replacements) {
        std::string::size_type at = 0;
        while ((at = result.find(from, at)) != std::string::npos) {
            result.replace(at, std::string(from).size(), to);
            at += std::string(to).size();
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

Table build_table(const Step& step, const RenderOptions& options) {
    Table table;
    const arma::mat& M = step.values;
    table.shape = std::to_string(M.n_rows) + (options.ascii ? " x " : " × ") + std::to_string(M.n_cols);
    const bool whole = all_whole_numbers(M);
    const std::string gap = options.ascii ? "..." : "…";
    const auto rows = kept_indices(M.n_rows, options.full);
    const auto cols = kept_indices(M.n_cols, options.full);
    const auto label = [&](const std::string& text) {
        return truncate_label(options.ascii ? to_ascii(text) : text, k_max_label_width, options.ascii);
    };
    for (const auto j : cols) {
        table.col_labels.push_back(j == k_gap ? gap : label(step.col_labels[j]));
    }
    for (const auto i : rows) {
        table.row_labels.push_back(i == k_gap ? gap : label(step.row_labels[i]));
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
    const auto pad_left = [](const std::string& text, std::size_t width) {
        const std::size_t used = display_width(text);
        return std::string(width > used ? width - used : 0, ' ') + text;
    };
    const auto pad_right = [](const std::string& text, std::size_t width) {
        const std::size_t used = display_width(text);
        return text + std::string(width > used ? width - used : 0, ' ');
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
        col_labels.push_back(skin.label(text));
        widths.push_back(display_width(col_labels.back()));
    }
    std::vector<std::vector<std::string>> cells;
    for (const auto& table_row : table.cells) {
        std::vector<std::string> written;
        for (std::size_t j = 0; j < table_row.size(); ++j) {
            written.push_back(skin.number(table_row[j]));
            widths[j] = std::max(widths[j], display_width(written.back()));
        }
        cells.push_back(std::move(written));
    }

    std::string out = skin.begin(widths.size());
    std::vector<std::string> header;
    for (std::size_t j = 0; j < widths.size(); ++j) {
        header.push_back(pad_left(col_labels[j], widths[j]));
    }
    out += skin.row(pad_right(corner, label_width), header, -1);
    out += skin.divider(label_width, widths);
    for (std::size_t i = 0; i < cells.size(); ++i) {
        for (std::size_t j = 0; j < widths.size(); ++j) {
            cells[i][j] = pad_left(cells[i][j], widths[j]);
        }
        out += skin.row(pad_right(row_labels[i], label_width), cells[i], static_cast<int>(i));
    }
    return out + skin.end();
}

}  // namespace qkv
