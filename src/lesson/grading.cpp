// Grading a learner's reply to a lesson's question as `qkv check` grades a
// cell: the reply read as a number, a shape or a choice; a wrong number
// graded by check's grader of one cell (the named mistakes of its catalogue,
// the online softmax's on a page that reads the keys in blocks, inputs
// rounded too early, another cell's value, too few decimals) from the numbers
// on the screen; and, failing those, what was expected and from which
// numbers.
#include "lesson/player.hpp"
#include "base/expression.hpp"
#include "base/numbers.hpp"
#include "base/parse.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"
#include "check/catalogue.hpp"
#include "check/check.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <sstream>
#include <string_view>

namespace qkv {

namespace {

std::string lowered(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

// Words that say the same of a change or a comparison, the first of each
// row standing for the rest: "bigger" chooses "larger".
constexpr std::string_view k_synonyms[][5] = {
    {"larger", "bigger", "greater", "higher", ""},
    {"smaller", "less", "lower", "lesser", ""},
    {"grows", "increases", "rises", "climbs", ""},
    {"shrinks", "decreases", "falls", "drops", ""},
};

std::string synonym_of(const std::string& word) {
    for (const auto& row : k_synonyms) {
        if (std::find(std::begin(row), std::end(row), word) != std::end(row)) {
            return std::string(row[0]);
        }
    }
    return word;
}

// The words of a reply or an option, to match one against the other: lower
// case, apostrophes dropped ("model's" reads "models"), other punctuation a
// space, and synonyms as one word (k_synonyms).
std::vector<std::string> match_words(const std::string& text) {
    std::string plain;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\'') {
            continue;
        }
        if (text.compare(i, 3, "’") == 0) {
            i += 2;
            continue;
        }
        plain += c >= 0x80 || std::isalnum(c) != 0 ? static_cast<char>(std::tolower(c)) : ' ';
    }
    std::vector<std::string> words;
    std::istringstream split(plain);
    for (std::string word; split >> word;) {
        words.push_back(synonym_of(word));
    }
    return words;
}

std::string joined_words(const std::vector<std::string>& words) {
    std::string text;
    for (const auto& word : words) {
        text += (text.empty() ? "" : " ") + word;
    }
    return text;
}

// "1 cat, 2 sat or 3 mat" for the keys of a row; "grows or shrinks" for named options.
std::string option_list(const Question& question) {
    std::string list;
    for (std::size_t i = 0; i < question.options.size(); ++i) {
        const std::string number = std::to_string(i + 1);
        const Option& option = question.options[i];
        std::string item = question.row.is_cell && option.label != number ? number + " " + option.label : option.label;
        list += (i == 0 ? "" : i + 1 == question.options.size() ? " or " : ", ") + item;
    }
    return list;
}

// The option a reply names, by its label (when no other option has it, as
// "dog" in "dog bites dog" does) or its number.
std::optional<std::size_t> chosen_option(const Question& question, const std::string& reply) {
    const std::string text = lowered(trimmed(reply));
    // the one option `fits`, if exactly one does
    const auto only = [&](const auto& fits) -> std::optional<std::size_t> {
        std::vector<std::size_t> fitting;
        for (std::size_t i = 0; i < question.options.size(); ++i) {
            if (fits(question.options[i].label)) {
                fitting.push_back(i);
            }
        }
        return fitting.size() == 1 ? std::optional<std::size_t>(fitting.front()) : std::nullopt;
    };
    if (const auto named = only([&](const std::string& label) { return lowered(label) == text; })) {
        return named;
    }
    std::size_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error == std::errc() && end == text.data() + text.size() && number >= 1 && number <= question.options.size()) {
        return number - 1;
    }
    // without its punctuation ("the first models"), the start of one option ("it g"),
    // or its key words ("grows", "stays the same", "first")
    const std::vector<std::string> said = match_words(text);
    if (said.empty()) {
        return std::nullopt;
    }
    const std::string said_text = joined_words(said);
    if (const auto same = only([&](const std::string& label) { return match_words(label) == said; })) {
        return same;
    }
    if (const auto start = only([&](const std::string& label) {
            return joined_words(match_words(label)).rfind(said_text, 0) == 0;
        })) {
        return start;
    }
    return only([&](const std::string& label) {
        const std::vector<std::string> words = match_words(label);
        bool any = false;
        for (const auto& word : said) {
            if (word == "a" || word == "an" || word == "the" || word == "it" || word == "its") {
                continue;
            }
            any = true;
            const bool found = std::any_of(words.begin(), words.end(),
                                           [&](const std::string& w) { return w.rfind(word, 0) == 0; });
            if (!found) {
                return false;
            }
        }
        return any;
    });
}

// The block size of the page that asks `question` (0: the page reads its keys whole).
int block_size_of(const Lesson& lesson, const Question& question) {
    const Page* page = page_of(lesson, question);
    return page == nullptr ? 0 : page->block_size;
}

// The steps whose tables the learner has in front of them when the question is
// asked (a question asked after the page's tables), as answers that are
// right in every cell: no mistake is looked for in a step the lesson gave.
void add_shown_steps(const Lesson& lesson, const Question& question, const LessonModel& entry, Answers& answers) {
    const Page* page = page_of(lesson, question);
    if (page == nullptr || question.predict || page->model != question.answer.model) {
        return;
    }
    for (const Step& step : entry.trace.steps) {
        const bool shown = std::find(page->show.begin(), page->show.end(), step.id) != page->show.end();
        const bool asked = step.id == question.answer.cell.step;
        if (!shown || asked || (page->head != 0 && step.head != 0 && step.head != page->head)) {
            continue;
        }
        StepAnswer given;
        given.id = step.id;
        given.head = step.head;
        given.n_rows = step.values.n_rows;
        given.n_cols = step.values.n_cols;
        given.where = "the lesson";
        for (const double value : arma::mat(step.values.t())) {  // row-major
            given.cells.push_back({true, value, 17, "shown"});
        }
        answers.steps.push_back(std::move(given));
    }
}
// The mistake, among `qkv check`'s, that a wrong number shows: the learner's
// number is the cell as that mistake makes it, and not the true value.
std::string diagnose_number(const Lesson& lesson, const Question& question, const Reply& reply,
                            const CheckOptions& options) {
    const LessonModel& entry = model_of(lesson, question.answer);
    const CellRef& cell = question.answer.cell;
    const Step& step = cell_step(entry.trace, cell);
    StepAnswer answer;
    answer.id = step.id;
    answer.head = step.head;
    answer.n_rows = step.values.n_rows;
    answer.n_cols = step.values.n_cols;
    answer.cells.resize(answer.n_rows * answer.n_cols);
    answer.where = "the lesson";
    AnswerCell& given = answer.cells[static_cast<std::size_t>(cell.row - 1) * answer.n_cols +
                                     static_cast<std::size_t>(cell.col - 1)];
    given.given = true;
    given.value = reply.value;
    given.decimals = reply.decimals;
    given.text = std::to_string(reply.value);
    given.expression = reply.expression;
    Answers answers;
    answers.source = "the lesson";
    answers.steps.push_back(answer);
    add_shown_steps(lesson, question, entry, answers);
    // the cell graded as qkv check grades one: its own diagnosis, a named
    // mistake before the online softmax's, another cell or too few decimals after
    const CheckReport report = check_answers(entry.model, entry.trace, answers, options);
    std::optional<Diagnosis> found;
    for (const StepCheck& checked : report.steps) {
        if (checked.answer->id == step.id && checked.answer->head == step.head && checked.cells.size() == 1) {
            found = checked.cells.front().diagnosis;
        }
    }
    if (!found) {
        return "";
    }
    // "That number is scores[3,3], …" says itself what the number is
    if (checking::row_of(found->key).one_cell) {
        return found->mistake + " Correct: " + found->correct + ".";
    }
    return "That is the number this mistake gives: " + found->mistake + " Correct: " + found->correct + ".";
}

// Where no mistake is recognised: what was expected and from which numbers.
// "scores[2,3] is worked as S = Q·Kᵀ, from queries[2] = [2, 2, 2] and keys[3] = [2, 3, 1]."
std::string expected_from(const Lesson& lesson, const Question& question, int shown_decimals) {
    RenderOptions options;
    options.precision = shown_decimals;
    std::vector<std::string> given;
    for (const Given& item : question_given(lesson, question, options)) {
        given.push_back(item.text());
    }
    const std::string from = join_list(given, " and ");
    if (question.kind == Question::Kind::choice) {
        return from.empty() ? "" : "It is decided by " + from + ".";
    }
    const Step& step = question.kind == Question::Kind::shape ? shape_step(lesson, question)
                                                               : cell_step(model_of(lesson, question.answer).trace,
                                                                           question.answer.cell);
    if (question.kind == Question::Kind::shape) {
        std::string shapes;
        for (const auto& line : given) {
            shapes += (shapes.empty() ? "" : "; ") + line;
        }
        return shapes.empty() ? "" : "Work it out from the shapes: " + shapes + ".";
    }
    return "It is worked as " + step.formula + (from.empty() ? "" : ", from " + from) + ".";
}

CheckOptions grading_options(const Lesson& lesson, const Question& question, int shown_decimals) {
    CheckOptions options;
    options.tolerance = question.tolerance;
    options.decimals = question_decimals(lesson, question);
    // the tables show numbers rounded: 0.8650 on the screen is 0.864955, and rounds to 0.87
    options.shown_decimals = shown_decimals;
    options.block_size = block_size_of(lesson, question);
    return options;
}
}  // namespace

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
        return "";
    }
    const auto last = text.find_last_not_of(" \t\r");
    return text.substr(first, last - first + 1);
}

Reply read_reply(const std::string& line) {
    std::string text = trimmed(line);
    Reply reply;
    if (text.empty()) {
        reply.kind = Reply::skip;
        return reply;
    }
    if (text == "q" || text == "Q" || text == "quit") {
        reply.kind = Reply::leave;
        return reply;
    }
    const std::string minus = "−";
    if (text.rfind(minus, 0) == 0) {
        text = "-" + text.substr(minus.size());
    }
    const char* begin = text.data();
    if (*begin == '+') {
        ++begin;
    }
    double value = 0.0;
    const auto [end, error] = parse_double(begin, text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
        reply.comma = decimal_comma_in(text);
        if (const auto expression = read_expression(text); expression && reply.comma.empty()) {
            reply.kind = Reply::number;
            reply.value = expression->value;
            reply.decimals = expression->decimals;
            reply.expression = true;
            return reply;
        }
        reply.kind = Reply::not_a_number;
        return reply;
    }
    reply.kind = Reply::number;
    reply.value = value;
    // the decimals as written: after the point, less the exponent
    const std::string number(begin, end);
    const auto exponent_at = number.find_first_of("eE");
    const std::string mantissa = number.substr(0, exponent_at);
    const auto point = mantissa.find('.');
    int decimals = point == std::string::npos ? 0 : static_cast<int>(mantissa.size() - point - 1);
    if (exponent_at != std::string::npos) {
        int exponent = 0;
        const char* first = number.data() + exponent_at + 1;
        if (*first == '+') {
            ++first;
        }
        std::from_chars(first, number.data() + number.size(), exponent);
        decimals = std::max(0, decimals - exponent);
    }
    reply.decimals = decimals;
    return reply;
}

std::optional<std::pair<arma::uword, arma::uword>> read_shape(const std::string& line) {
    std::string text = lowered(trimmed(line));
    for (const std::string separator : {"×", "by", "*", "x", ","}) {
        const auto at = text.find(separator);
        if (at == std::string::npos) {
            continue;
        }
        const std::string rows = trimmed(text.substr(0, at));
        const std::string cols = trimmed(text.substr(at + separator.size()));
        arma::uword r = 0;
        arma::uword c = 0;
        const auto [rows_end, rows_error] = std::from_chars(rows.data(), rows.data() + rows.size(), r);
        const auto [cols_end, cols_error] = std::from_chars(cols.data(), cols.data() + cols.size(), c);
        if (rows.empty() || cols.empty() || rows_error != std::errc() || cols_error != std::errc() ||
            rows_end != rows.data() + rows.size() || cols_end != cols.data() + cols.size() || r == 0 || c == 0) {
            return std::nullopt;
        }
        return std::pair{r, c};
    }
    return std::nullopt;
}

std::string answer_form(const Lesson& lesson, const Question& question) {
    switch (question.kind) {
        case Question::Kind::number: {
            if (question.tolerance) {
                return "(within ±" + readable(*question.tolerance) + ")";
            }
            const int decimals = question_decimals(lesson, question);
            if (decimals == 0) {
                const double value = resolve(lesson, question.answer).front();
                return value == std::round(value) ? "(a whole number)" : "(rounded to a whole number, or closer)";
            }
            return "(at least " + std::to_string(decimals) + (decimals == 1 ? " decimal)" : " decimals)");
        }
        case Question::Kind::shape:
            return "(rows × columns)";
        case Question::Kind::choice:
            return "(" + option_list(question) + ")";
    }
    return "";
}

Graded grade_reply(const Lesson& lesson, const Question& question, const std::string& text, int shown_decimals) {
    Graded graded;
    switch (question.kind) {
        case Question::Kind::number: {
            const Reply reply = read_reply(text);
            if (reply.kind != Reply::number) {
                if (!reply.comma.empty()) {
                    graded.hint = "Write " + with_point(reply.comma) + ", not " + reply.comma + ".";
                }
                graded.again = (graded.hint.empty() ? "" : graded.hint + " ") +
                               "Please type a number, Enter to see the answer, or q to leave: ";
                return graded;
            }
            graded.valid = true;
            graded.written = trimmed(text);
            if (reply.expression) {
                graded.written += " = " + qkv::trimmed(reply.value, std::max(shown_decimals, 4));
            }
            const double expected = resolve(lesson, question.answer).front();
            const CheckOptions options = grading_options(lesson, question, shown_decimals);
            graded.right = matches(reply.value, reply.decimals, expected, options, shown_slack(options, reply.decimals));
            if (!graded.right) {
                graded.why = diagnose_number(lesson, question, reply, options);
            }
            if (!graded.right) {
                graded.expected = expected_from(lesson, question, shown_decimals);
            }
            return graded;
        }
        case Question::Kind::shape: {
            const auto shape = read_shape(text);
            if (!shape) {
                graded.again = "Please type rows × columns (3x2 will do), Enter to see the answer, or q to leave: ";
                return graded;
            }
            graded.valid = true;
            const Step& step = shape_step(lesson, question);
            graded.right = shape->first == step.values.n_rows && shape->second == step.values.n_cols;
            if (!graded.right && shape->first == step.values.n_cols && shape->second == step.values.n_rows) {
                graded.why = "That is the shape turned round: rows come first.";
            }
            // the heads side by side, counted as key/value heads: as check names it
            if (!graded.right) {
                if (const auto counted = shape_mistake(model_of(lesson, question.answer).model, step, shape->first,
                                                       shape->second)) {
                    graded.why = counted->mistake + " Correct: " + counted->correct + ".";
                }
            }
            if (!graded.right) {
                graded.expected = expected_from(lesson, question, shown_decimals);
            }
            return graded;
        }
        case Question::Kind::choice: {
            const auto chosen = chosen_option(question, text);
            if (!chosen) {
                graded.again = "Please type " + option_list(question) + ", Enter to see the answer, or q to leave: ";
                return graded;
            }
            graded.valid = true;
            graded.right = *chosen == right_option(lesson, question);
            if (!graded.right) {
                graded.expected = expected_from(lesson, question, shown_decimals);
            }
            return graded;
        }
    }
    return graded;
}

}  // namespace qkv
