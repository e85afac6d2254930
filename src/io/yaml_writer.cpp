// The layout of a YAML file written for people (yaml_writer.hpp).
#include "io/yaml_writer.hpp"

#include <algorithm>

namespace qkv {

std::string flow_row(const std::vector<int>& row) {
    std::string text = "[";
    for (std::size_t j = 0; j < row.size(); ++j) {
        text += (j == 0 ? "" : ", ") + std::to_string(row[j]);
    }
    return text + "]";
}

namespace {

// YAML's double-quoted form: the quote and the backslash escaped, control
// characters and YAML's three other line breaks written as escapes (\u,
// which every reader decodes to UTF-8).
std::string double_quoted(std::string_view text) {
    std::string quoted = "\"";
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::string_view rest = text.substr(i);
        if (byte == '"' || byte == '\\') {
            quoted += '\\';
            quoted += static_cast<char>(byte);
        } else if (byte < 0x20 || byte == 0x7f) {
            constexpr std::string_view k_hex = "0123456789abcdef";
            quoted += "\\x";
            quoted += k_hex[byte >> 4U];
            quoted += k_hex[byte & 0xfU];
        } else if (rest.starts_with("\xc2\x85")) {
            quoted += "\\u0085";
            i += 1;
        } else if (rest.starts_with("\xe2\x80\xa8") || rest.starts_with("\xe2\x80\xa9")) {
            quoted += rest[2] == '\xa8' ? "\\u2028" : "\\u2029";
            i += 2;
        } else {
            quoted += static_cast<char>(byte);
        }
    }
    return quoted + "\"";
}

}  // namespace

std::string YamlWriter::indent() const { return std::string(2 * m_open.size(), ' '); }

YamlWriter& YamlWriter::entry(std::string_view key, std::string value, std::string_view comment) {
    m_lines.push_back({indent() + std::string(key) + ":" + (value.empty() ? "" : " " + value), std::string(comment),
                       m_open.empty() ? -1 : m_open.back()});
    return *this;
}

YamlWriter& YamlWriter::comment(std::string_view text) {
    m_lines.push_back({indent() + (text.empty() ? "#" : "# " + std::string(text)), "", -1});
    return *this;
}

YamlWriter& YamlWriter::blank() {
    m_lines.push_back({"", "", -1});
    return *this;
}

YamlWriter& YamlWriter::number(std::string_view key, long long value, std::string_view comment) {
    return entry(key, std::to_string(value), comment);
}

YamlWriter& YamlWriter::word(std::string_view key, std::string_view value, std::string_view comment) {
    return entry(key, std::string(value), comment);
}

YamlWriter& YamlWriter::quoted(std::string_view key, std::string_view text) {
    return entry(key, double_quoted(text), {});
}

YamlWriter& YamlWriter::literal(std::string_view key, const std::vector<std::string>& lines) {
    entry(key, "|", {});
    for (const auto& line : lines) {
        m_lines.push_back({indent() + "  " + line, "", -1});
    }
    return *this;
}

YamlWriter& YamlWriter::words(std::string_view key, const std::vector<std::string>& items,
                              std::string_view comment) {
    std::string text = "[";
    for (std::size_t j = 0; j < items.size(); ++j) {
        text += (j == 0 ? "" : ", ") + items[j];
    }
    return entry(key, text + "]", comment);
}

YamlWriter& YamlWriter::row(std::string_view key, const std::vector<int>& row, std::string_view comment) {
    return entry(key, flow_row(row), comment);
}

YamlWriter& YamlWriter::matrix(std::string_view key, const std::vector<std::vector<int>>& rows,
                               std::string_view comment) {
    entry(key, "", comment);
    for (const auto& row : rows) {
        m_lines.push_back({indent() + "  - " + flow_row(row), "", -1});
    }
    return *this;
}

YamlWriter& YamlWriter::begin(std::string_view key, std::string_view comment, Align align) {
    entry(key, "", comment);
    m_groups.push_back(align);
    m_open.push_back(static_cast<int>(m_groups.size()) - 1);
    return *this;
}

YamlWriter& YamlWriter::end() {
    m_open.pop_back();
    return *this;
}

std::string YamlWriter::str() const {
    // the column each group's comments start at
    std::vector<std::size_t> column(m_groups.size(), 0);
    for (std::size_t g = 0; g < m_groups.size(); ++g) {
        const Align& align = m_groups[g];
        if (align.longest) {
            for (const Line& line : m_lines) {
                if (line.group == static_cast<int>(g) && !line.comment.empty()) {
                    column[g] = std::max(column[g], line.text.size() + static_cast<std::size_t>(align.gap));
                }
            }
        } else {
            column[g] = static_cast<std::size_t>(align.column);
        }
    }
    std::string text;
    for (const Line& line : m_lines) {
        text += line.text;
        if (!line.comment.empty()) {
            // `gap` spaces after the text, or up to its group's column (one space at the least)
            std::size_t gap = 4;
            if (line.group >= 0) {
                const auto g = static_cast<std::size_t>(line.group);
                gap = column[g] == 0 ? static_cast<std::size_t>(m_groups[g].gap)
                                     : column[g] > line.text.size() ? column[g] - line.text.size() : 1;
            }
            text += std::string(gap, ' ') + "# " + line.comment;
        }
        text += '\n';
    }
    return text;
}

}  // namespace qkv
