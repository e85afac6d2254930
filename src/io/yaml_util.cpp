#include "io/yaml_util.hpp"
#include "base/expression.hpp"
#include "base/parse.hpp"
#include "base/utf8.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

namespace qkv {

namespace {

// A control character (other than a newline or tab in running text) would
// reach the terminal when a label or title is printed.
bool has_control_character(const std::string& text, bool allow_newlines) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 || byte == 0x7F) && !(allow_newlines && (c == '\n' || c == '\t'))) {
            return true;
        }
    }
    return false;
}

constexpr std::size_t k_max_label_bytes = 200;
constexpr std::size_t k_max_text_bytes = 20000;

// Thrown by TreeLimits to stop the parse at the first node past a limit.
struct TreeLimitExceeded {
    YAML::Mark mark;
    std::string what;
    std::string hint;
};

// Walks the parser's events before the document is built, so that neither
// deep nesting nor aliases can exhaust the stack or memory later: the depth
// and the number of values are counted as if every alias were written out.
class TreeLimits : public YAML::EventHandler {
public:
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
        leaf(mark, anchor);
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        count(mark);
        const Shape shape = anchor < m_anchors.size() ? m_anchors[anchor] : Shape{1, 0};
        if (m_stack.size() + shape.depth > k_max_yaml_depth) {
            throw TreeLimitExceeded{mark, "this alias nests the document deeper than " +
                                              std::to_string(k_max_yaml_depth) + " levels",
                                    "an example file needs only a few levels; write the values out"};
        }
        m_aliased += shape.values;
        if (m_aliased > k_max_alias_values) {
            throw TreeLimitExceeded{mark, "aliases repeat more than " + std::to_string(k_max_alias_values) +
                                              " values",
                                    "aliases (*name) may repeat a matrix, not multiply a document; write the values out"};
        }
        add_to_parent(shape);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value) override {
        open(mark, anchor);
    }
    void OnSequenceEnd() override { close(); }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value) override {
        open(mark, anchor);
    }
    void OnMapEnd() override { close(); }

private:
    struct Shape {
        std::uint64_t values = 0;  // nodes, counting what aliases repeat
        std::size_t depth = 0;     // levels below the node
    };
    struct Open {
        Shape shape;
        YAML::anchor_t anchor = 0;
    };
    std::vector<Open> m_stack;
    std::vector<Shape> m_anchors;  // by anchor id (ids count from 1)
    std::uint64_t m_aliased = 0;
    std::uint64_t m_written = 0;  // values as written, aliases counted once

    void count(const YAML::Mark& mark) {
        if (++m_written > k_max_yaml_values) {
            throw TreeLimitExceeded{mark, "the document holds more than " + std::to_string(k_max_yaml_values) +
                                              " values",
                                    "write a large matrix as {file: m.csv} (a CSV file next to this one) or as "
                                    "{random: {rows: R, cols: C, seed: S}}"};
        }
    }
    void remember(YAML::anchor_t anchor, const Shape& shape) {
        if (anchor == YAML::NullAnchor) {
            return;
        }
        if (m_anchors.size() <= anchor) {
            m_anchors.resize(anchor + 1, Shape{1, 0});
        }
        m_anchors[anchor] = shape;
    }
    void add_to_parent(const Shape& shape) {
        if (!m_stack.empty()) {
            Shape& parent = m_stack.back().shape;
            parent.values = std::min(parent.values + shape.values, k_max_alias_values + 1);
            parent.depth = std::max(parent.depth, shape.depth + 1);
        }
    }
    void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
        count(mark);
        remember(anchor, Shape{1, 0});
        add_to_parent(Shape{1, 0});
    }
    void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
        count(mark);
        if (m_stack.size() >= k_max_yaml_depth) {
            throw TreeLimitExceeded{mark, "the document is nested deeper than " + std::to_string(k_max_yaml_depth) +
                                              " levels",
                                    "an example file needs only a few levels of lists and maps; check the brackets"};
        }
        m_stack.push_back({Shape{1, 0}, anchor});
    }
    void close() {
        if (m_stack.empty()) {
            return;
        }
        const Open done = m_stack.back();
        m_stack.pop_back();
        remember(done.anchor, done.shape);
        add_to_parent(done.shape);
    }
};

// Stops at the start of a second document: qkv reads one document per file.
class NoSecondDocument : public YAML::EventHandler {
public:
    void OnDocumentStart(const YAML::Mark& mark) override {
        throw TreeLimitExceeded{mark, "a second YAML document starts here; qkv reads one document per file",
                                "remove the `---` line, or split the file in two"};
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

}  // namespace

std::optional<double> parse_number(const std::string& raw) {
    std::string text = raw;
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
        text.pop_back();
    }
    std::size_t start = 0;
    while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) {
        ++start;
    }
    text = text.substr(start);
    if (text.empty()) {
        return std::nullopt;
    }
    bool negative = false;
    std::string body = text;
    if (body[0] == '+' || body[0] == '-') {
        negative = body[0] == '-';
        body = body.substr(1);
    }
    for (const char* inf : {".inf", ".Inf", ".INF", "inf", "Inf", "infinity"}) {
        if (body == inf) {
            return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
        }
    }
    for (const char* nan : {".nan", ".NaN", ".NAN", "nan", "NaN"}) {
        if (body == nan) {
            return std::numeric_limits<double>::quiet_NaN();
        }
    }
    if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.')) {
        return std::nullopt;
    }
    double value = 0.0;
    const auto [end, error] = parse_double(body.data(), body.data() + body.size(), value);
    if (end != body.data() + body.size()) {
        return std::nullopt;
    }
    if (error == std::errc::result_out_of_range) {
        // too large: report as infinite so the caller names it non-finite; too small rounds to 0
        const bool huge = body.find_first_of("eE") != std::string::npos &&
                          body.substr(body.find_first_of("eE") + 1).find('-') == std::string::npos;
        value = huge ? std::numeric_limits<double>::infinity() : 0.0;
    } else if (error != std::errc()) {
        return std::nullopt;
    }
    return negative ? -value : value;
}

std::string key_text(const YAML::Node& key) {
    if (key.IsScalar()) {
        return key.Scalar();
    }
    return "<a non-text key>";
}

namespace {

// Whether line `line` (0-based) of text, or the line before it, starts its indentation with a tab.
bool tab_indented(const std::string& text, int line) {
    int current = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        if (current == line || current + 1 == line) {
            for (std::size_t i = start; i < end && (text[i] == ' ' || text[i] == '\t'); ++i) {
                if (text[i] == '\t') {
                    return true;
                }
            }
        }
        if (current >= line) {
            break;
        }
        ++current;
        start = end + 1;
    }
    return false;
}

// A [ or { of a flow list or map that `text` leaves open before the point
// where the parser gave up (0-based line and column), when that point is past
// the line the bracket opened on and the file has gone on at the bracket's
// own indentation or ended: the bracket the learner forgot to close, not
// a list written across lines. Quotes, comments and block scalars (| and >)
// are skipped.
struct OpenBracket {
    int line = 0;
    int column = 0;
    char bracket = '[';
};

std::optional<OpenBracket> unclosed_bracket(const std::string& text, int stop_line, int stop_column) {
    std::vector<OpenBracket> open;
    std::vector<int> open_indent;   // the indentation of each open bracket's line
    bool resumed = false;           // a line at the innermost bracket's indentation, or less, since it opened
    int block_indent = -1;          // inside a block scalar: lines indented more than this are its text
    bool at_end = true;             // nothing but blanks and comments from the stop on
    int line = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string_view row(text.data() + start, end - start);
        const std::size_t first = row.find_first_not_of(" \t");
        const bool blank = first == std::string_view::npos || row[first] == '#';
        const int indent = static_cast<int>(first == std::string_view::npos ? row.size() : first);
        const bool scalar_text = block_indent >= 0 && (blank || indent > block_indent);
        if (!scalar_text) {
            block_indent = -1;
        }
        if (!blank && !scalar_text) {
            if (line > stop_line || (line == stop_line && static_cast<int>(row.size()) > stop_column)) {
                at_end = false;
            }
            if (!open.empty() && line > open.back().line && line <= stop_line && indent <= open_indent.back()) {
                resumed = true;
            }
        }
        if (line > stop_line) {
            break;
        }
        if (!scalar_text) {
            char quote = 0;
            for (std::size_t i = 0; i < row.size(); ++i) {
                if (line == stop_line && static_cast<int>(i) >= stop_column) {
                    break;
                }
                const char c = row[i];
                if (quote != 0) {
                    if (c == quote) {
                        quote = 0;
                    }
                    continue;
                }
                if (c == '#' && (i == 0 || row[i - 1] == ' ' || row[i - 1] == '\t')) {
                    break;
                }
                if ((c == '\'' || c == '"') && (i == 0 || std::string_view(" \t[{,:").find(row[i - 1]) != std::string_view::npos)) {
                    quote = c;
                } else if (c == '[' || c == '{') {
                    open.push_back({line, static_cast<int>(i), c});
                    open_indent.push_back(indent);
                    resumed = false;
                } else if ((c == ']' || c == '}') && !open.empty()) {
                    open.pop_back();
                    open_indent.pop_back();
                    resumed = false;
                } else if ((c == '|' || c == '>') && open.empty()) {
                    // "key: |" or "- >-": the lines below, indented more, are text
                    const std::string_view before = row.substr(0, i);
                    const std::size_t last = before.find_last_not_of(" \t");
                    const std::string_view after = row.substr(i + 1);
                    const std::size_t rest = after.find_first_not_of("+-0123456789");
                    const std::size_t tail = rest == std::string_view::npos ? rest : after.find_first_not_of(" \t", rest);
                    if (last != std::string_view::npos && (before[last] == ':' || before[last] == '-') &&
                        (tail == std::string_view::npos || after[tail] == '#')) {
                        block_indent = indent;
                        break;
                    }
                }
            }
        }
        ++line;
        start = end + 1;
    }
    if (open.empty() || open.back().line >= stop_line || !(resumed || at_end)) {
        return std::nullopt;
    }
    return open.back();
}

}  // namespace

YAML::Node YamlReader::parse_document() {
    if (m_source.text.find('\0') != std::string::npos) {
        m_diagnostics.add({m_source.name, 0, 0, "holds a NUL byte; expected a YAML text file",
                           "is this a binary file? give the path of a .yaml file"});
        return YAML::Node();
    }
    try {
        // YAML breaks lines at CR as at LF; yaml-cpp only knows LF and CR LF
        std::string text = m_source.text;
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) {
                text[i] = '\n';
            }
        }
        // first only the parser's events, to check the limits and that there is one document
        std::istringstream stream(text);
        YAML::Parser parser(stream);
        TreeLimits limits;
        parser.HandleNextDocument(limits);
        NoSecondDocument second;
        parser.HandleNextDocument(second);
        return YAML::Load(text);
    } catch (const TreeLimitExceeded& e) {
        error_at(e.mark, e.what, e.hint);
    } catch (const YAML::Exception& e) {
        // an unclosed bracket is reported where it opened, with where the parser gave up
        if (const auto bracket = unclosed_bracket(m_source.text, e.mark.line, e.mark.column)) {
            const bool list = bracket->bracket == '[';
            YAML::Mark mark;
            mark.line = bracket->line;
            mark.column = bracket->column;
            error_at(mark,
                     std::string("this ") + bracket->bracket + " is never closed (the YAML parser gave up at line " +
                         std::to_string(e.mark.line + 1) + ": " + e.msg + "); expected a " + (list ? "]" : "}") +
                         " to end the " + (list ? "list" : "map"),
                     "close it on line " + std::to_string(bracket->line + 1) + " with " + (list ? "]" : "}"));
            return YAML::Node();
        }
        error_at(e.mark, "invalid YAML: " + e.msg, tab_indented(m_source.text, e.mark.line)
                                                       ? "YAML does not allow tabs for indentation; indent with spaces"
                                                       : "check the indentation and brackets near this position");
    }
    return YAML::Node();
}

Diagnostic YamlReader::at(const YAML::Mark& mark, const std::string& what, const std::string& hint) const {
    Diagnostic d;
    d.file = m_source.name;
    d.line = mark.line >= 0 ? mark.line + 1 : 0;
    d.column = mark.line >= 0 ? mark.column + 1 : 0;
    d.what = what;
    d.hint = hint;
    return d;
}

void YamlReader::error_at(const YAML::Mark& mark, const std::string& what, const std::string& hint) {
    m_diagnostics.add(at(mark, what, hint));
}

void YamlReader::error(const YAML::Node& node, const std::string& what, const std::string& hint) {
    error_at(node.IsDefined() ? node.Mark() : YAML::Mark::null_mark(), what, hint);
}

void YamlReader::check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& known,
                            const std::vector<ForeignKey>& foreign) {
    if (!map.IsMap()) {
        return;
    }
    std::vector<std::pair<std::string, YAML::Mark>> seen;
    for (const auto& entry : map) {
        const std::string key = key_text(entry.first);
        const auto first = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == key; });
        if (first != seen.end() && entry.first.IsScalar()) {
            const std::string full = path.empty() ? key : path + "." + key;
            error(entry.first,
                  "duplicate key " + full + " (first at line " + std::to_string(first->second.line + 1) + ", column " +
                      std::to_string(first->second.column + 1) + ")",
                  "a key may appear once in a map; keep one of the two");
        }
        seen.emplace_back(key, entry.first.Mark());
        bool found = false;
        for (const auto& candidate : known) {
            found = found || candidate == key;
        }
        if (found) {
            continue;
        }
        const std::string full = path.empty() ? key : path + "." + key;
        if (key == "<<" && entry.first.Tag() != "!") {  // "!": written in quotes, an ordinary key
            error(entry.first, "YAML merge keys (<<) are not supported",
                  "write the keys of the merged map out in this map; anchors and aliases (&name, *name) work "
                  "for whole values");
            continue;
        }
        const auto brought = std::find_if(foreign.begin(), foreign.end(),
                                          [&](const ForeignKey& other) { return other.name == key; });
        if (brought != foreign.end()) {
            error(entry.first, "unknown key " + full + ": " + brought->what, brought->hint);
            continue;
        }
        error(entry.first, "unknown key " + full,
              did_you_mean(key, known, path.empty() ? "" : path + ".") + "valid keys" +
                  (path.empty() ? "" : " of " + path) + ": " + comma_list(known));
    }
}

bool YamlReader::has_misspelling_of(const YAML::Node& map, const std::string& key,
                                    const std::vector<std::string>& known) const {
    if (!map.IsMap()) {
        return false;
    }
    for (const auto& entry : map) {
        const std::string other = key_text(entry.first);
        const bool unknown = std::find(known.begin(), known.end(), other) == known.end();
        if (unknown && closest_match(other, known) == key) {
            return true;
        }
    }
    return false;
}

std::string YamlReader::describe(const YAML::Node& node) const {
    if (!node.IsDefined() || node.IsNull()) {
        return "empty";
    }
    if (node.IsMap()) {
        return "a map";
    }
    if (node.IsSequence()) {
        return "a list of " + std::to_string(node.size()) + (node.size() == 1 ? " item" : " items");
    }
    std::string text = node.Scalar();
    if (text.size() > 40 || !valid_utf8(text)) {
        text = text.substr(0, 37);
        while (!text.empty() && !valid_utf8(text)) {
            text.pop_back();
        }
        text += "...";
    }
    return "\"" + text + "\"";
}

std::optional<std::string> YamlReader::string(const YAML::Node& node, const std::string& path) {
    if (!node.IsDefined()) {
        return std::nullopt;
    }
    if (!node.IsScalar()) {
        error(node, path + " is " + describe(node) + "; expected text", "write it on one line, or as a | block");
        return std::nullopt;
    }
    const std::string& text = node.Scalar();
    if (!valid_utf8(text)) {
        error(node, path + " is not valid UTF-8", "save the file as UTF-8");
        return std::nullopt;
    }
    if (has_control_character(text, true)) {
        error(node, path + " holds a control character", "write plain text; newlines and tabs are fine");
        return std::nullopt;
    }
    if (text.size() > k_max_text_bytes) {
        error(node, path + " is " + std::to_string(text.size()) + " bytes long; the limit is " +
                        std::to_string(k_max_text_bytes),
              "shorten it");
        return std::nullopt;
    }
    return text;
}

std::string with_ascii_minus(std::string text) {
    for (auto at = text.find(k_unicode_minus); at != std::string::npos; at = text.find(k_unicode_minus, at + 1)) {
        text.replace(at, k_unicode_minus.size(), "-");
    }
    return text;
}

std::string YamlReader::flow_text(const YAML::Node& node) const {
    const std::string& text = m_source.text;
    const YAML::Mark mark = node.Mark();
    if (mark.pos < 0) {
        return "";
    }
    // yaml-cpp counts positions after a byte order mark
    const std::size_t bom = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    const std::size_t open = static_cast<std::size_t>(mark.pos) + bom;
    if (open >= text.size() || text[open] != '[') {
        return "";
    }
    const std::size_t close = text.find_first_of("[]", open + 1);
    if (close == std::string::npos || text[close] != ']') {
        return "";
    }
    return text.substr(open + 1, close - open - 1);
}

bool YamlReader::decimal_comma(const YAML::Node& list, const std::string& path) {
    const std::string inside = flow_text(list);
    const std::string written = decimal_comma_in(inside);
    if (written.empty()) {
        return false;
    }
    // a comma followed by a space somewhere: the numbers are separated that way
    bool spaced = false;
    for (std::size_t i = 0; i + 1 < inside.size(); ++i) {
        spaced = spaced || (inside[i] == ',' && (inside[i + 1] == ' ' || inside[i + 1] == '\t'));
    }
    if (!spaced) {
        return false;
    }
    const std::size_t comma = written.find(',');
    error(list,
          path + " holds \"" + written + "\", which YAML reads as two numbers, " + written.substr(0, comma) +
              " and " + written.substr(comma + 1) + "; expected decimals written with a point",
          "write " + with_point(written) + ", not " + written + " (or, for two numbers, a space after the comma)");
    return true;
}

std::optional<std::vector<std::string>> YamlReader::labels(const YAML::Node& node, const std::string& path) {
    if (!node.IsSequence()) {
        error(node, path + " is " + describe(node) + "; expected a list of labels", "write e.g. [sky, is, blue]");
        return std::nullopt;
    }
    if (node.size() > k_max_dimension) {
        error(node, path + " has " + std::to_string(node.size()) + " labels; the limit is 65536", "");
        return std::nullopt;
    }
    std::vector<std::string> result;
    bool ok = true;
    for (std::size_t i = 0; i < node.size(); ++i) {
        const YAML::Node item = node[i];
        const std::string item_path = path + "[" + std::to_string(i + 1) + "]";
        if (!item.IsScalar()) {
            error(item, item_path + " is " + describe(item) + "; expected a label", "labels are short text");
            ok = false;
            continue;
        }
        if (!valid_utf8(item.Scalar())) {
            error(item, item_path + " is not valid UTF-8", "save the file as UTF-8");
            ok = false;
            continue;
        }
        if (has_control_character(item.Scalar(), false)) {
            error(item, item_path + " holds a control character", "labels are printed in table headings; write plain text");
            ok = false;
            continue;
        }
        if (item.Scalar().size() > k_max_label_bytes) {
            error(item, item_path + " is " + std::to_string(item.Scalar().size()) + " bytes long; the limit is " +
                            std::to_string(k_max_label_bytes),
                  "labels name tokens in table headings; keep them short");
            ok = false;
            continue;
        }
        result.push_back(item.Scalar());
    }
    return ok ? std::optional(result) : std::nullopt;
}

std::optional<std::int64_t> YamlReader::integer(const YAML::Node& node, const std::string& path, std::int64_t min,
                                                std::int64_t max, const std::string& hint) {
    auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
    if (!value || !std::isfinite(*value) || std::floor(*value) != *value || *value < double(min) ||
        *value > double(max)) {
        error(node, path + " is " + describe(node) + "; expected a whole number from " + std::to_string(min) +
                        " to " + std::to_string(max),
              hint);
        return std::nullopt;
    }
    return static_cast<std::int64_t>(*value);
}

std::optional<double> YamlReader::number(const YAML::Node& node, const std::string& path) {
    if (!node.IsScalar()) {
        error(node, path + " is " + describe(node) + "; expected a number", "");
        return std::nullopt;
    }
    // a typeset minus (−2, as copied from slides and PDFs) is a minus sign
    auto value = parse_number(with_ascii_minus(node.Scalar()));
    // "3" and !!str 3 are text in YAML, whatever they spell
    const bool quoted = node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
    if (!value || quoted) {
        error(node, path + " is " + describe(node) + (quoted && value ? " in quotes, which YAML reads as text" : "") +
                        "; expected a number",
              quoted && value ? "remove the quotes (and any !!str tag)" : "write digits, e.g. 0.5 or -2");
        return std::nullopt;
    }
    if (!std::isfinite(*value)) {
        error(node, path + " is " + describe(node) + "; expected a finite number",
              "infinities and NaN cannot be used here (write a mask to block attention)");
        return std::nullopt;
    }
    if (std::fabs(*value) > k_max_magnitude) {
        error(node, path + " is " + describe(node) + "; numbers are limited to ±1e30",
              "larger values would overflow the products and the softmax; rescale the example");
        return std::nullopt;
    }
    return value;
}

std::optional<arma::rowvec> YamlReader::vector(const YAML::Node& node, const std::string& path) {
    if (node.IsMap() && node["file"] && m_file_reader) {
        const auto read = m_file_reader(node, path);
        if (!read) {
            return std::nullopt;
        }
        if (read->n_rows != 1 && read->n_cols != 1) {
            error(node, path + " is a " + std::to_string(read->n_rows) + " × " + std::to_string(read->n_cols) +
                            " matrix; expected a vector",
                  "take one row or one column of it with rows: [i, i] or cols: [j, j]");
            return std::nullopt;
        }
        return arma::rowvec(arma::vectorise(*read).t());
    }
    YAML::Node items = node;
    if (node.IsSequence() && node.size() == 1 && node[0].IsSequence()) {
        items = node[0];
    }
    if (!items.IsSequence() || items.size() == 0) {
        error(node, path + " is " + describe(node) + "; expected a list of numbers", "write e.g. [0.5, -1, 2]");
        return std::nullopt;
    }
    if (items.size() > k_max_dimension) {
        error(node, path + " has " + std::to_string(items.size()) + " numbers; the limit is 65536", "");
        return std::nullopt;
    }
    if (decimal_comma(items, path)) {
        return std::nullopt;
    }
    arma::rowvec result(items.size());
    bool ok = true;
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto value = number(items[i], path + "[" + std::to_string(i + 1) + "]");
        ok = ok && value.has_value();
        result(i) = value.value_or(0.0);
    }
    return ok ? std::optional(result) : std::nullopt;
}

}  // namespace qkv
