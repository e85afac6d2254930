#include "base/diagnostics.hpp"
#include "base/utf8.hpp"

#include <algorithm>

namespace qkv {

namespace {

std::string summary_of(const std::vector<Diagnostic>& diagnostics) {
    return diagnostics.empty() ? std::string("invalid input") : format_where_what(diagnostics.front());
}

// Every field of an error is printed on one line, whatever the input held.
const std::vector<Diagnostic>& make_printable(std::vector<Diagnostic>& diagnostics) {
    for (auto& d : diagnostics) {
        d.file = printable_line(d.file);
        d.what = printable_line(d.what);
        d.hint = printable_line(d.hint);
    }
    return diagnostics;
}

}  // namespace

InputError::InputError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(summary_of(make_printable(diagnostics))), m_diagnostics(std::move(diagnostics)) {}

InputError::InputError(Diagnostic diagnostic) : InputError(std::vector<Diagnostic>{std::move(diagnostic)}) {}

void Diagnostics::add(Diagnostic diagnostic) {
    if (m_items.size() < k_max_reported) {
        m_items.push_back(std::move(diagnostic));
    } else {
        ++m_dropped;
    }
}

void Diagnostics::throw_if_any() const {
    if (m_items.empty()) {
        return;
    }
    std::vector<Diagnostic> all = m_items;
    // report in reading order: by file, then line, then column
    std::stable_sort(all.begin(), all.end(), [](const Diagnostic& a, const Diagnostic& b) {
        if (a.file != b.file) {
            return false;
        }
        return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    if (m_dropped > 0 || m_stopped) {
        const std::string more = std::to_string(m_dropped) + " more problem(s) not shown";
        all.push_back({"", 0, 0,
                       !m_stopped ? more
                       : m_dropped > 0 ? more + ", and more may follow"
                                       : "more problems may follow; only the first " +
                                             std::to_string(k_max_reported) + " are shown",
                       "fix the ones above and run again"});
    }
    throw InputError(std::move(all));
}

std::string format_where_what(const Diagnostic& d) {
    std::string out;
    if (!d.file.empty()) {
        out += d.file;
        if (d.line > 0) {
            out += ":" + std::to_string(d.line);
            if (d.column > 0) {
                out += ":" + std::to_string(d.column);
            }
        }
        out += ": ";
    }
    out += d.what;
    return out;
}

std::string printable_line(const std::string& text, std::size_t max_bytes) {
    static const char k_hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        if (out.size() >= max_bytes) {
            out += "…";
            break;
        }
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::size_t length = utf8_sequence_length(text, i);
        if (byte == '\n') {
            out += "\\n";
        } else if (byte == '\t') {
            out += "\\t";
        } else if (byte == '\r') {
            out += "\\r";
        } else if (length == 0 || byte < 0x20 || byte == 0x7F) {
            out += "\\x";
            out += k_hex[byte >> 4];
            out += k_hex[byte & 0xF];
        } else {
            out.append(text, i, length);
            i += length;
            continue;
        }
        ++i;
    }
    return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> previous(b.size() + 1);
    std::vector<std::size_t> current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        previous[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::string comma_list(const std::vector<std::string>& items) {
    std::string list;
    for (const auto& item : items) {
        list += (list.empty() ? "" : ", ") + item;
    }
    return list;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates,
                         const std::string& before, const std::string& after) {
    const std::string near = closest_match(word, candidates);
    return near.empty() ? "" : "did you mean " + before + near + after + "? ";
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_distance = word.size() / 2 + 2;
    for (const auto& candidate : candidates) {
        const std::size_t distance = edit_distance(word, candidate);
        if (distance < best_distance) {
            best_distance = distance;
            best = candidate;
        }
    }
    return best;
}

}  // namespace qkv
