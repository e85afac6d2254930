// Reads a learner's answers (`answers:`) into plain matrices of cells, keeping
// each number's text so that its decimals are known, and reporting every
// problem with its FILE:LINE:COL.
#include "io/answers.hpp"

#include "attention/steps.hpp"
#include "base/expression.hpp"

#include "io/loader_parts.hpp"
#include "io/yaml_util.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>

namespace qkv {

namespace {

// More numbers than anyone writes by hand; keeps a runaway file from filling the memory.
constexpr std::size_t k_max_answer_cells = 1000000;

const char* const k_number_hint = "write a number such as 0.25, -1 or 2/10, ~ for a cell you leave out, or -inf for a blocked score";

// "answers.scores", or "scores" in an answer file that is the map of answers itself.
std::string joined(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

std::string where_of(const Source& source, const YAML::Node& node) {
    std::string where = source.name;
    const YAML::Mark mark = node.Mark();
    if (mark.line >= 0) {
        where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
    return where;
}

// "0.5", "~" or 'inf' in quotes: text in YAML, whatever it spells (as is !!str 0.5).
bool is_quoted(const YAML::Node& node) { return node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str"; }

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The numbers of a row written as [0,33, 0,67], read with each comma between
// two digits as a decimal point: {"0.33", "0.67"}; empty when the row does not
// read as numbers that way. `inside` is the text between the brackets.
std::vector<std::string> numbers_with_decimal_commas(const std::string& inside) {
    std::vector<std::string> items;
    std::string item;
    auto finish = [&items, &item]() {
        const auto first = item.find_first_not_of(" \t\n");
        const auto last = item.find_last_not_of(" \t\n");
        items.push_back(first == std::string::npos ? "" : with_point(item.substr(first, last - first + 1)));
        item.clear();
    };
    for (std::size_t i = 0; i < inside.size(); ++i) {
        const bool separator =
            inside[i] == ',' && !(i > 0 && is_digit(inside[i - 1]) && i + 1 < inside.size() && is_digit(inside[i + 1]));
        if (separator) {
            finish();
        } else {
            item += inside[i];
        }
    }
    finish();
    for (const auto& number : items) {
        if (number != "~" && !parse_number(with_ascii_minus(number))) {
            return {};
        }
    }
    return items;
}

// "-inf", "-.inf", "−∞", ...: an infinity written as one, not a number that overflowed (1e400).
bool spells_infinity(const std::string& text) {
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find("inf") != std::string::npos || lower.find("∞") != std::string::npos;
}

// Whether every line of text is blank or a comment (or a document marker).
bool only_comments(const std::string& text) {
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        const auto first = line.find_first_not_of(" \t\r");
        if (first != std::string::npos && line[first] != '#' && line.rfind("---", 0) != 0 &&
            line.rfind("...", 0) != 0) {
            return false;
        }
        start = end + 1;
    }
    return true;
}

// The first key at the top of an answer file that only an example file has
// (title:, weights: {query: ...}, heads: 2, ...): the file given for the
// answers is then the example itself, without answers:. Undefined when none.
YAML::Node example_key(const YAML::Node& root) {
    const auto& model_keys = loading::k_top_keys;
    for (const auto& entry : root) {
        const std::string key = key_text(entry.first);
        if (key == "answers" || std::find(model_keys.begin(), model_keys.end(), key) == model_keys.end()) {
            continue;
        }
        const YAML::Node& value = entry.second;
        // an answer is a list of rows; an example writes inputs: {random: ...},
        // weights: {query: ...}, positional: sinusoidal or grad_output: ones
        const bool answer = find_step(key).has_value() && (value.IsSequence() || value.IsNull());
        // heads: [{scores: ...}, ...] in answers; heads: 2 or heads: [{query: ...}, ...] in an example
        bool heads_answer = key == "heads" && (value.IsSequence() || value.IsNull());
        if (heads_answer) {
            for (const auto& item : value) {
                heads_answer = heads_answer && !(item.IsMap() && (item["query"] || item["key"] || item["value"]));
            }
        }
        if (!answer && !heads_answer) {
            return entry.first;
        }
    }
    return YAML::Node(YAML::NodeType::Undefined);
}

class AnswerReader {
public:
    AnswerReader(YamlReader& yaml, const Source& source, const Trace& trace)
        : m_yaml(yaml), m_source(source), m_trace(trace) {}

    void read(const YAML::Node& answers, const std::string& path) {
        if (!answers || answers.IsNull()) {
            m_yaml.error(answers, path + " is empty; expected a map from step ids to your values",
                         "write e.g. answers: {scores: [[2, 4, 4], ~, ~]}");
            return;
        }
        if (!answers.IsMap()) {
            m_yaml.error(answers, path + " is " + m_yaml.describe(answers) + "; expected a map from step ids to your values",
                         "write e.g. answers: {scores: [[2, 4, 4], ~, ~]}");
            return;
        }
        if (answers.size() == 0) {
            m_yaml.error(answers,
                         (path.empty() ? "the answer file" : path) + " is an empty map; expected your values under step ids",
                         path.empty() ? "write e.g. scores: [[2, 4, 4], ~, ~]"
                                      : "write e.g. answers: {scores: [[2, 4, 4], ~, ~]}");
            return;
        }
        read_map(answers, path, 0);
        const YAML::Node heads = answers["heads"];
        if (heads) {
            read_heads(heads, joined(path, "heads"));
        }
    }

    std::vector<StepAnswer> take() { return std::move(m_steps); }
    std::vector<BlankStep> take_blank() { return std::move(m_blank); }

private:
    YamlReader& m_yaml;
    const Source& m_source;
    const Trace& m_trace;
    std::vector<StepAnswer> m_steps;
    std::vector<BlankStep> m_blank;
    std::size_t m_cells = 0;

    int n_heads() const { return static_cast<int>(m_trace.dims.heads); }

    void read_heads(const YAML::Node& heads, const std::string& path) {
        if (heads.IsNull()) {
            return;
        }
        if (!heads.IsSequence()) {
            m_yaml.error(heads, path + " is " + m_yaml.describe(heads) + "; expected a list with one map per head",
                         "write heads: [{scores: ...}, {scores: ...}], head 1 first");
            return;
        }
        int h = 0;
        for (const auto& item : heads) {
            ++h;
            const std::string item_path = path + "[" + std::to_string(h) + "]";
            if (h > n_heads() && n_heads() == 1) {
                m_yaml.error(item, item_path + " does not exist: this example has one head",
                             std::string("write its steps without a head number, e.g. scores: [[...], ...] ") +
                                 (path == "heads" ? "at the top level of the file" : "directly under answers:"));
                return;
            }
            if (h > n_heads()) {
                m_yaml.error(item,
                             item_path + " does not exist: this example has " + std::to_string(n_heads()) + " heads",
                             "heads are numbered from 1 to " + std::to_string(n_heads()) + "; " + path +
                                 " holds one map per head, in order");
                return;
            }
            if (item.IsNull()) {
                continue;
            }
            if (!item.IsMap()) {
                m_yaml.error(item, item_path + " is " + m_yaml.describe(item) + "; expected a map from step ids to values",
                             "write e.g. {scores: [[...], ...], weights: [[...], ...]} for one head");
                continue;
            }
            read_map(item, item_path, h);
        }
    }

    // Top level (head 0) or one item of answers.heads (head h).
    void read_map(const YAML::Node& map, const std::string& path, int head) {
        for (const auto& entry : map) {
            const std::string id = key_text(entry.first);
            const std::string entry_path = joined(path, id);
            if (head == 0 && id == "heads") {
                continue;
            }
            const auto step = find_step(id);
            if (!step) {
                m_yaml.error(entry.first, "unknown step id " + entry_path,
                             did_you_mean(id, step_names()) + "valid step ids: " + step_name_list() +
                                 (head == 0 ? "; per-head answers go under heads" : ""));
                continue;
            }
            const bool per_head = is_per_head(*step, m_trace.dims);
            int step_head = head;
            if (head == 0 && per_head) {
                if (n_heads() > 1) {
                    m_yaml.error(entry.first,
                                 entry_path + " is a per-head step, and this example has " + std::to_string(n_heads()) +
                                     " heads",
                                 "write it under answers.heads, one map per head: heads: [{" + id + ": ...}, {" + id +
                                     ": ...}]");
                    continue;
                }
                step_head = 1;
            }
            if (head != 0 && !per_head) {
                m_yaml.error(entry.first, entry_path + " is not a per-head step",
                             "write " + id + " directly under answers:, next to heads");
                continue;
            }
            if (is_per_kv_head(*step) && step_head > static_cast<int>(m_trace.dims.kv_heads) &&
                m_trace.find(*step, 1) != nullptr) {
                // grouped-query attention: fewer key/value heads than query heads
                m_yaml.error(entry.first,
                             entry_path + ": this example has " + std::to_string(m_trace.dims.kv_heads) +
                                 " key/value heads, so " + id + " has no head " + std::to_string(step_head),
                             "answers for " + id + " go under heads[1] … heads[" +
                                 std::to_string(m_trace.dims.kv_heads) + "], one per key/value head");
                continue;
            }
            if (m_trace.find(*step, step_head) == nullptr) {
                m_yaml.error(entry.first, entry_path + ": this example has no step " + id, step_absence(*step));
                continue;
            }
            const bool twice = std::any_of(m_steps.begin(), m_steps.end(), [&](const StepAnswer& other) {
                return other.id == *step && other.head == step_head;
            });
            if (twice) {
                m_yaml.error(entry.first, entry_path + " is answered twice",
                             "keep one answer for " + id + (step_head != 0 ? " of head " + std::to_string(step_head) : ""));
                continue;
            }
            read_matrix(entry.second, *step, step_head, entry_path);
        }
    }

    // A list of rows; each row a list of numbers or ~, or ~ for a whole row.
    // A flat list of numbers is read as one row.
    void read_matrix(const YAML::Node& node, StepId id, int head, const std::string& path) {
        if (node.IsNull()) {
            m_blank.push_back({id, head});  // `scores: ~`: not answered
            return;
        }
        if (!node.IsSequence()) {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a list of rows",
                         "write one row per token, e.g. [[2, 4, 4], [4, 16, 12], ~], with ~ for what you leave out");
            return;
        }
        if (node.size() == 0) {
            m_yaml.error(node, path + " is an empty list; expected a list of rows",
                         "write one row per token, or ~ to leave the whole step out");
            return;
        }
        bool any_row = false;
        bool any_number = false;
        for (const auto& item : node) {
            any_row = any_row || item.IsSequence();
            any_number = any_number || item.IsScalar();
        }
        StepAnswer answer;
        answer.id = id;
        answer.head = head;
        answer.where = where_of(m_source, node);
        bool ok = true;
        const bool read = any_number && !any_row ? read_flat_row(node, path, answer, ok)
                                                 : read_rows(node, path, answer, ok);
        if (!read) {
            return;
        }
        if (ok && answer.answered() > 0) {
            m_steps.push_back(std::move(answer));
        } else if (ok) {
            m_blank.push_back({id, head});  // rows of ~ alone
        }
    }

    // A flat list of numbers: one row. False when it is too large to read.
    bool read_flat_row(const YAML::Node& node, const std::string& path, StepAnswer& answer, bool& ok) {
        answer.n_rows = 1;
        answer.n_cols = node.size();
        if (decimal_commas(node, answer.id, answer.head, path)) {
            ok = false;
            return false;
        }
        if (!room_for(node, path, answer.n_cols)) {
            return false;
        }
        arma::uword col = 0;
        for (const auto& item : node) {
            ++col;
            answer.cells.push_back(cell(item, path + "[1," + std::to_string(col) + "]", ok));
        }
        return true;
    }

    // A list of rows, each a list of numbers or ~ (a row left out). False when
    // the rows cannot be read as a matrix (reported).
    bool read_rows(const YAML::Node& node, const std::string& path, StepAnswer& answer, bool& ok) {
        const YAML::Node* first_row = nullptr;
        bool ragged = false;
        bool commas = false;
        arma::uword row = 0;
        for (const auto& item : node) {
            ++row;
            const std::string row_path = path + " row " + std::to_string(row);
            if (item.IsNull()) {
                continue;
            }
            if (!item.IsSequence()) {
                m_yaml.error(item, row_path + " is " + m_yaml.describe(item) + "; expected a list of numbers or ~",
                             "write each row in brackets, e.g. [0.1, 0.5, 0.4], or ~ for a row you leave out");
                ok = false;
                continue;
            }
            if (item.size() == 0) {
                m_yaml.error(item, row_path + " is empty; expected numbers", "write ~ for a row you leave out");
                ok = false;
                continue;
            }
            if (decimal_commas(item, answer.id, answer.head, row_path)) {
                commas = true;
                ok = false;
                continue;
            }
            if (first_row == nullptr) {
                first_row = &item;
                answer.n_cols = item.size();
            } else if (item.size() != answer.n_cols) {
                ragged = true;
            }
        }
        if (commas) {
            return false;  // the other rows are read again once the decimals are written with points
        }
        if (ragged) {
            report_ragged_rows(node, answer.id, answer.head, path);
            return false;
        }
        if (!ok) {
            return false;
        }
        answer.n_rows = node.size();
        if (!room_for(node, path, answer.n_rows * answer.n_cols)) {
            return false;
        }
        row = 0;
        for (const auto& item : node) {
            ++row;
            if (item.IsNull()) {
                answer.cells.insert(answer.cells.end(), answer.n_cols, AnswerCell{});
                continue;
            }
            arma::uword col = 0;
            for (const auto& value : item) {
                ++col;
                answer.cells.push_back(cell(value, path + "[" + std::to_string(row) + "," + std::to_string(col) + "]", ok));
            }
        }
        return true;
    }

    // A row with more numbers than the step has columns that reads as decimals
    // written with commas: YAML reads [0,33, 0,67] as the four numbers 0, 33, 0
    // and 67. Reported (true) when the row, read with decimal commas, has no
    // more numbers than the step has columns; [0,1,1] of the right length stays
    // three numbers, and [1,2,3,4] for three columns stays a wrong shape.
    bool decimal_commas(const YAML::Node& row, StepId id, int head, const std::string& row_path) {
        const Step* step = m_trace.find(id, head);
        if (step == nullptr || row.size() <= step->values.n_cols) {
            return false;
        }
        const std::string inside = m_yaml.flow_text(row);
        const std::string written = decimal_comma_in(inside);
        if (written.empty()) {
            return false;
        }
        const auto read_as_decimals = numbers_with_decimal_commas(inside);
        const arma::uword n_cols = step->values.n_cols;
        if (read_as_decimals.empty() || read_as_decimals.size() > n_cols) {
            return false;
        }
        m_yaml.error(row,
                     row_path + " has " + numbers(row.size()) + " where " + step_text(id) + " has " +
                         std::to_string(n_cols) + (n_cols == 1 ? " column" : " columns") + ": \"" + written +
                         "\" reads as two numbers; expected decimals written with a point",
                     "write " + with_point(written) + ", not " + written);
        return true;
    }

    // Rows of different lengths. A list of rows that all have the same wrong
    // length is a wrong answer (graded as the wrong shape); rows that disagree
    // with each other are an input error, and the rows to blame are those that
    // differ from the step's own column count, not those that differ from the
    // first row: in [[2, 4], [2, 1, 6], [3, 5, 6]] for a 3 × 3 step it is row 1.
    void report_ragged_rows(const YAML::Node& node, StepId id, int head, const std::string& path) {
        std::size_t first = 0;
        for (const auto& item : node) {
            if (item.IsSequence() && item.size() > 0) {
                first = item.size();
                break;
            }
        }
        const Step* step = m_trace.find(id, head);
        const std::size_t expected = step != nullptr ? step->values.n_cols : first;
        const std::string shape =
            step != nullptr ? " (" + step_text(id) + " is " + std::to_string(step->values.n_rows) + " × " +
                                  std::to_string(step->values.n_cols) + ")"
                            : "";
        // compared with the first row when that one is right, else with the step
        const std::string reason = (first == expected ? "the first row has " : "expected ") +
                                   std::to_string(expected) + shape;
        arma::uword row = 0;
        for (const auto& item : node) {
            ++row;
            if (!item.IsSequence() || item.size() == 0 || item.size() == expected) {
                continue;
            }
            m_yaml.error(item,
                         path + " row " + std::to_string(row) + " has " + numbers(item.size()) + "; " + reason,
                         "give every row the same length, with ~ for a number you leave out");
        }
    }

    bool room_for(const YAML::Node& node, const std::string& path, std::size_t cells) {
        m_cells += cells;
        if (m_cells > k_max_answer_cells) {
            m_yaml.error(node, path + " takes the answers past " + std::to_string(k_max_answer_cells) + " numbers",
                         "answer a few cells of each step; qkv computes the rest");
            return false;
        }
        return true;
    }

    AnswerCell cell(const YAML::Node& node, const std::string& path, bool& ok) {
        AnswerCell result;
        if (node.IsNull()) {
            return result;
        }
        if (!node.IsScalar()) {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a number", k_number_hint);
            ok = false;
            return result;
        }
        std::string text = node.Scalar();
        text.erase(0, text.find_first_not_of(" \t\r\n"));
        text.erase(text.find_last_not_of(" \t\r\n") + 1);
        if (is_quoted(node) && text == "~") {
            m_yaml.error(node, path + " is \"~\" in quotes, which YAML reads as text; expected a number or ~",
                         "write ~ without quotes for a cell you leave out");
            ok = false;
            return result;
        }
        // read as written, but with a typeset minus (−0.71) as a minus sign
        const std::string ascii = with_ascii_minus(text);
        std::optional<double> value;
        if (ascii == "-∞") {
            value = -std::numeric_limits<double>::infinity();
        } else if (ascii == "∞" || ascii == "+∞") {
            value = std::numeric_limits<double>::infinity();
        } else {
            value = parse_number(ascii);
        }
        // a fraction or an arithmetic expression, as its value (2/10, 0.6439*(1-0.6439))
        std::optional<WrittenValue> expression;
        if (!value && decimal_comma_in(text).empty()) {
            expression = read_expression(ascii);
            if (expression) {
                value = expression->value;
            }
        }
        if (!value || std::isnan(*value)) {
            const std::string comma = decimal_comma_in(text);
            if (!value && !comma.empty()) {
                m_yaml.error(node,
                             path + " is " + m_yaml.describe(node) + "; expected a number" +
                                 (comma.size() == text.size() ? " written with a point" : ""),
                             "write " + with_point(comma) + ", not " + comma);
            } else {
                m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a number", k_number_hint);
            }
            ok = false;
            return result;
        }
        // −∞ is a blocked score, written as such; +∞, and a number too large for
        // a double (1e400, -1e400), are not values anyone works out by hand
        if (std::isinf(*value) && (*value > 0 || !spells_infinity(ascii))) {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a finite number",
                         std::string(*value > 0 && spells_infinity(ascii) ? "only -inf is allowed, for a blocked score; "
                                                                         : "it is beyond the range of a double (about ±1.8e308); ") +
                             "write the value you worked out, e.g. 0.25 or -1");
            ok = false;
            return result;
        }
        if (is_quoted(node)) {
            m_yaml.error(node,
                         path + " is " + m_yaml.describe(node) + " in quotes, which YAML reads as text; expected a number",
                         "write " + text + " without quotes: quoted, it is text");
            ok = false;
            return result;
        }
        result.given = true;
        result.value = *value;
        result.decimals = expression ? expression->decimals : std::isfinite(*value) ? count_decimals(ascii) : 0;
        result.text = text;
        result.expression = expression.has_value();
        return result;
    }
};

}  // namespace

int count_decimals(const std::string& text) {
    const auto exponent_at = text.find_first_of("eE");
    const std::string mantissa = text.substr(0, exponent_at);
    int decimals = 0;
    if (const auto point = mantissa.find('.'); point != std::string::npos) {
        decimals = static_cast<int>(mantissa.size() - point - 1);
    }
    if (exponent_at != std::string::npos) {
        std::string exponent = text.substr(exponent_at + 1);
        if (!exponent.empty() && exponent[0] == '+') {
            exponent.erase(0, 1);
        }
        long value = 0;
        const auto [end, error] = std::from_chars(exponent.data(), exponent.data() + exponent.size(), value);
        if (error == std::errc() && end == exponent.data() + exponent.size()) {
            decimals -= static_cast<int>(std::clamp(value, -400L, 400L));
        }
    }
    return std::clamp(decimals, 0, 300);
}

Answers read_answers(const Source& source, const Trace& trace, AnswersIn where) {
    Diagnostics diagnostics;
    YamlReader yaml(source, diagnostics);
    const YAML::Node root = yaml.parse_document();
    diagnostics.throw_if_any();

    // (yaml-cpp nodes are bound once: assigning to one writes into what it refers to)
    const char* const values_hint = "write your values under step ids, e.g. scores: [[2, 4, 4], ~, ~]";
    if (where == AnswersIn::answer_file && root.IsNull()) {
        // nothing to point at but the start of the file
        const bool blank = source.text.find_first_not_of(" \t\r\n") == std::string::npos;
        throw InputError(Diagnostic{source.name, 1, 1,
                                    blank                      ? "the answer file is empty"
                                    : only_comments(source.text) ? "the answer file holds only comments, no answers"
                                                                 : "the answer file holds no answers",
                                    values_hint});
    }
    if (where == AnswersIn::answer_file && !root.IsMap()) {
        yaml.error(root, "the top level of the answer file is not a map", values_hint);
        diagnostics.throw_if_any();
    }
    const YAML::Node wrapped = root.IsMap() ? root["answers"] : YAML::Node(YAML::NodeType::Undefined);
    if (where == AnswersIn::example_file && !wrapped) {
        throw InputError(Diagnostic{source.name, 0, 0, "has no answers to check",
                                    "add answers: with your values under step ids (e.g. answers: {scores: [[...], "
                                    "...]}), or give them in a separate file with --answers FILE"});
    }
    // an answer file holds `answers: {...}`, or is the map of answers itself
    const YAML::Node answers = wrapped ? wrapped : root;
    if (!wrapped) {
        if (const YAML::Node key = example_key(root); key) {
            yaml.error(key, "this looks like an example file (it has " + key_text(key) + ":), not answers",
                       "add answers: with your values under step ids to it, or give --answers a separate file of "
                       "step ids, e.g. scores: [[2, 4, 4], ~, ~]");
            diagnostics.throw_if_any();
        }
    }
    if (wrapped && wrapped.IsNull()) {
        // `answers:` with nothing after it: point at the key, not at the next line
        for (const auto& entry : root) {
            if (key_text(entry.first) == "answers") {
                yaml.error(entry.first, "answers is empty; expected a map from step ids to your values",
                           "write e.g. answers: {scores: [[2, 4, 4], ~, ~]}");
            }
        }
        diagnostics.throw_if_any();
    }
    const std::string path = wrapped ? "answers" : "";

    AnswerReader reader(yaml, source, trace);
    reader.read(answers, path);
    diagnostics.throw_if_any();

    Answers result;
    result.source = source.name;
    result.steps = reader.take();  // a template of ~ (qkv worksheet -f yaml) leaves it empty: nothing answered yet
    result.blank = reader.take_blank();
    // in the order of the trace
    auto position = [&trace](const StepAnswer& answer) {
        const Step* step = trace.find(answer.id, answer.head);
        return step - trace.steps.data();
    };
    std::stable_sort(result.steps.begin(), result.steps.end(),
                     [&](const StepAnswer& a, const StepAnswer& b) { return position(a) < position(b); });
    return result;
}

Source read_answer_source(const std::string& path) {
    if (path != "-") {
        std::error_code error;
        if (!std::filesystem::exists(path, error)) {
            throw InputError(Diagnostic{path, 0, 0, "no such answer file", "give the path of a YAML file with your answers"});
        }
    }
    return read_source(path);
}

}  // namespace qkv
