// Lessons: every built-in lesson played straight through (golden files), the
// numbers their narration states, the lesson file format's errors, and the
// player's handling of answers.
#include "builtin/builtin.hpp"
#include "io/lesson_loader.hpp"
#include "lesson/player.hpp"
#include "render/table.hpp"
#include "support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using Catch::Matchers::WithinAbs;
using qkv::test::check_golden;
using qkv::test::require_input_error;
using qkv::test::run_qkv;

namespace {

qkv::Lesson builtin_lesson(const std::string& name) {
    const auto found = qkv::find_lesson(name);
    return qkv::prepare_lesson(qkv::read_lesson(found.source, found.name));
}

int model_index(const qkv::Lesson& lesson, const std::string& name) {
    for (std::size_t i = 0; i < lesson.models.size(); ++i) {
        if (lesson.models[i].name == name) {
            return static_cast<int>(i);
        }
    }
    FAIL("lesson " << lesson.name << " has no model " << name);
    return -1;
}

// A row of a step of one of the lesson's models.
std::vector<double> row_of(const qkv::Lesson& lesson, const std::string& model, const std::string& cell) {
    const auto& trace = lesson.models[static_cast<std::size_t>(model_index(lesson, model))].trace;
    return qkv::cell_values(trace, qkv::parse_cell(cell));
}

void require_row(const std::vector<double>& got, const std::vector<double>& expected, double eps) {
    REQUIRE(got.size() == expected.size());
    for (std::size_t j = 0; j < expected.size(); ++j) {
        CAPTURE(j);
        CHECK_THAT(got[j], WithinAbs(expected[j], eps));
    }
}

// A folder of its own for the lesson files a test writes.
std::string write_temp(const std::string& name, const std::string& text) {
    const auto folder = std::filesystem::temp_directory_path() / ("qkv-lesson-tests-" + std::to_string(getpid()));
    std::filesystem::create_directories(folder);
    const auto path = folder / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

// Every narration of a lesson: the say and then of each page and each question.
std::vector<const qkv::Narration*> narrations(const qkv::Lesson& lesson) {
    std::vector<const qkv::Narration*> all;
    for (const auto& page : lesson.pages) {
        all.push_back(&page.say);
        all.push_back(&page.then);
        if (page.ask) {
            all.push_back(&page.ask->prompt);
        }
    }
    return all;
}

// A learner who types the given lines, then reaches the end of the input.
class ScriptedLearner : public qkv::Learner {
public:
    explicit ScriptedLearner(std::vector<std::string> lines) : m_lines(std::move(lines)) {}
    std::optional<std::string> read_line() override {
        if (m_next == m_lines.size()) {
            return std::nullopt;
        }
        return m_lines[m_next++];
    }
    std::size_t used() const { return m_next; }

private:
    std::vector<std::string> m_lines;
    std::size_t m_next = 0;
};

const char* const k_small_lesson = R"(title: Four questions
summary: a small lesson for the tests
model: illustrated
try: Try it with qkv run illustrated.
script:
  - say: Query 1 is {queries[1]}.
    ask: What is the score of query 1 against key 2?
    answer: scores[1,2]
  - predict: What weight will query 1 give key 2?
    answer: weights[1,2]
    show: weights
  - predict: What shape will the scores have?
    shape: scores
  - ask: Which key does query 2 attend to most?
    choose: weights[2]
)";

}  // namespace

TEST_CASE("every built-in lesson plays straight through and matches its golden file", "[lesson][golden][cli]") {
    REQUIRE(qkv::builtin_lessons().size() >= 9);
    for (const auto& lesson : qkv::builtin_lessons()) {
        const std::string name(lesson.name);
        CAPTURE(name);
        // standard input and output are pipes here, so the lesson does not pause
        const auto result = run_qkv({"lesson", name});
        REQUIRE(result.status == 0);
        CHECK(result.err.empty());
        CHECK(result.out.find("Answer:") != std::string::npos);
        check_golden("lesson-" + name + ".txt", result.out);
    }
}

TEST_CASE("a lesson's steps wrap their explanations at the terminal's width, as its narration", "[lesson][cli]") {
    qkv::test::CliRun run;
    run.args = {"lesson", "1", "--page", "4", "--no-pause"};
    run.env = {{"COLUMNS", "60"}};
    const auto result = qkv::test::run_qkv(run);
    REQUIRE(result.status == 0);
    // the step's explanation wraps two columns short of 60, with the indent it began with
    CHECK(result.out.find("  This example does not scale (scale: none), so the scores\n  pass through unchanged.\n") !=
          std::string::npos);
    // narration and explanations alike: no line but a table's is wider than the terminal
    std::istringstream lines(result.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.find("│") == std::string::npos && line.find("─") == std::string::npos) {
            CAPTURE(line);
            CHECK(qkv::display_width(line) <= 60);
        }
    }
}

TEST_CASE("a lesson by number is the same as by name, and --no-pause plays it the same way", "[lesson][cli]") {
    const auto by_number = run_qkv({"lesson", "6", "--no-pause"});
    const auto by_name = run_qkv({"lesson", "masking"});
    REQUIRE(by_number.status == 0);
    CHECK(by_number.out == by_name.out);
    CHECK(by_number.out.rfind("Lesson 6 · Masking", 0) == 0);
}

TEST_CASE("a lesson written as Markdown matches its golden file", "[lesson][golden][cli]") {
    const auto result = run_qkv({"lesson", "1", "--format", "markdown"});
    REQUIRE(result.status == 0);
    CHECK(result.out.rfind("# Lesson 1: ", 0) == 0);
    CHECK(result.out.find("\x1b[") == std::string::npos);
    CHECK(result.out.find("**Question.**") != std::string::npos);
    check_golden("lesson-walkthrough.md", result.out);
}

TEST_CASE("qkv lesson lists every lesson with its number, name and summary", "[lesson][cli]") {
    const auto result = run_qkv({"lesson"});
    REQUIRE(result.status == 0);
    std::vector<std::string> lines;
    std::istringstream split(result.out);
    for (std::string line; std::getline(split, line);) {
        CHECK(line.size() <= 79 + 2 * 3);  // 79 columns; √ and ᵀ take 3 bytes for 1 column
        lines.push_back(line);
    }
    std::size_t at = 0;
    int number = 0;
    for (const auto& lesson : qkv::builtin_lessons()) {
        REQUIRE(at < lines.size());
        const std::string& line = lines[at++];
        ++number;
        CAPTURE(line);
        const std::regex shape("^ ?" + std::to_string(number) + "  " + std::string(lesson.name) + " +\\S.*$");
        CHECK(std::regex_match(line, shape));
        // a summary too long for the line goes on under itself, in the summaries' column
        const std::size_t column = line.find_first_not_of(' ', line.find(std::string(lesson.name)) + lesson.name.size());
        while (at < lines.size() && !lines[at].empty() && lines[at].find_first_not_of(' ') == column) {
            ++at;
        }
    }
    // then where to start
    REQUIRE(at + 1 < lines.size());
    CHECK(lines[at].empty());
    CHECK(lines[at + 1].rfind("Start with qkv lesson 1.", 0) == 0);
    check_golden("lesson-list.txt", result.out);
}

TEST_CASE("an unknown lesson is a usage error that lists the lessons", "[lesson][cli]") {
    SECTION("a number past the last lesson") {
        const auto result = run_qkv({"lesson", "42"});
        require_input_error(result, "there is no lesson 42; the lessons are numbered 1 to 17");
        CHECK(result.err.find("hint: lessons: 1 walkthrough, 2 scaling") != std::string::npos);
    }
    SECTION("a misspelt name") {
        const auto result = run_qkv({"lesson", "maskng"});
        require_input_error(result, "maskng: no such lesson file, and no built-in lesson by that name");
        CHECK(result.err.find("did you mean masking?") != std::string::npos);
    }
    SECTION("a format a lesson cannot be written in") {
        require_input_error(run_qkv({"lesson", "1", "--format", "csv"}), "a lesson is played as text or written as markdown, latex or html, not csv");
    }
    SECTION("an unknown step id in --steps") {
        require_input_error(run_qkv({"lesson", "1", "--steps", "scores,wieghts"}), "--steps: unknown step id \"wieghts\"");
    }
}

TEST_CASE("the --steps and --head options narrow the tables a lesson shows", "[lesson][cli]") {
    const auto result = run_qkv({"lesson", "multi-head", "--steps", "scores", "--head", "2"});
    REQUIRE(result.status == 0);
    CHECK(result.out.find("\nScores · head 2  [scores]") != std::string::npos);
    CHECK(result.out.find("Scores · head 1") == std::string::npos);
    CHECK(result.out.find("[weights]") == std::string::npos);
    // narration and questions stay
    CHECK(result.out.find("Question: In head 2") != std::string::npos);
}

TEST_CASE("the -o option writes a lesson as a Markdown document", "[lesson][cli]") {
    const std::string path = write_temp("lesson.md", "");
    std::filesystem::remove(path);
    const auto result = run_qkv({"lesson", "2", "-f", "markdown", "-o", path});
    REQUIRE(result.status == 0);
    CHECK(result.out.empty());
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str().rfind("# Lesson 2: Why the scores are scaled", 0) == 0);
}

TEST_CASE("the lessons' models reproduce the numbers of the reference articles", "[lesson]") {
    SECTION("lesson 1: the illustrated article's scores") {
        // from the illustrated article (seed 000): scores [[2,4,4],[4,16,12],[4,12,10]]
        const auto lesson = builtin_lesson("walkthrough");
        require_row(row_of(lesson, "main", "scores[1]"), {2, 4, 4}, 0);
        require_row(row_of(lesson, "main", "scores[2]"), {4, 16, 12}, 0);
        // worked by hand: round(softmax([2,4,4]), 1) = [0.1, 0.5, 0.5] (0.0634 rounds up);
        // then 0.1·[1,2,3] + 0.5·[2,8,0] + 0.5·[2,6,3] = [2.1, 7.2, 1.8]
        require_row(row_of(lesson, "rounded", "weights[1]"), {0.1, 0.5, 0.5}, 1e-12);
        require_row(row_of(lesson, "rounded", "output[1]"), {2.1, 7.2, 1.8}, 1e-12);
        // so the rounded weights of query 1 add up to 0.1 + 0.5 + 0.5 = 1.1 (every value of "sums" is 1)
        require_row(row_of(lesson, "sums", "head_output[1]"), {1.1}, 1e-12);
    }
    SECTION("lesson 2: softmax([1,2,3,4]) against softmax([10,20,30,40])") {
        // from NumPy: np.exp(s) / np.exp(s).sum() for s = [1,2,3,4] and s = [10,20,30,40]
        const auto lesson = builtin_lesson("scaling");
        require_row(row_of(lesson, "small", "scores[1]"), {1, 2, 3, 4}, 0);
        require_row(row_of(lesson, "large", "scores[1]"), {10, 20, 30, 40}, 0);
        require_row(row_of(lesson, "small", "weights[1]"), {0.0320586, 0.0871443, 0.2368828, 0.6439143}, 1e-7);
        require_row(row_of(lesson, "large", "weights[1]"), {9.3576e-14, 2.0611e-09, 4.5398e-05, 0.9999546}, 1e-7);
        // a weight's slope against its own score is w(1 − w): 0.6439143·0.3560857 and 0.9999546·4.5398e-05
        require_row(row_of(lesson, "small", "grad_scores[1,4]"), {0.2292887}, 1e-7);
        require_row(row_of(lesson, "large", "grad_scores[1,4]"), {4.53979e-05}, 1e-10);
        // worked by hand: ±1 vectors of width 4 score from −4 to 4; √4 = 2 halves them
        require_row(row_of(lesson, "unscaled", "scores[1]"), {4, 2, 0, -2}, 0);
        require_row(row_of(lesson, "scaled", "scaled_scores[1]"), {2, 1, 0, -1}, 0);
    }
    SECTION("lesson 3: the sky-is-blue notebook's weights") {
        // from the notebook (seed 003): attention weights of "sky", to 4 decimals
        const auto lesson = builtin_lesson("words");
        require_row(row_of(lesson, "main", "weights[1]"), {0.2809, 0.3595, 0.3595}, 0.00005);
    }
    SECTION("lesson 4: the essay's Q·K table and its softmax") {
        // from the essay (seed 002): its "QK^T" table row 1 is 47 55 63, its
        // softmax row 1 is 9.63506E-05 0.009767 0.990136; by hand, Q·Kᵀ row 1 is
        // [0·1+3·2+5·3, 0·4+3·5+5·6, 0·7+3·8+5·9] = [21, 45, 69]
        const auto lesson = builtin_lesson("transpose");
        require_row(row_of(lesson, "article", "scores[1]"), {47, 55, 63}, 0);
        require_row(row_of(lesson, "article", "scores[3]"), {68, 82, 96}, 0);
        require_row(row_of(lesson, "article", "weights[1]"), {9.63506e-05, 0.009767, 0.990136}, 5e-7);
        require_row(row_of(lesson, "right", "scores[1]"), {21, 45, 69}, 0);
    }
    SECTION("lesson 8: sinusoidal positions") {
        // by hand: with d_model = 2, P[p] = [sin p, cos p]
        const auto lesson = builtin_lesson("positions");
        require_row(row_of(lesson, "placed", "positional[2]"), {std::sin(1.0), std::cos(1.0)}, 1e-15);
        require_row(row_of(lesson, "placed", "positional[3]"), {std::sin(2.0), std::cos(2.0)}, 1e-15);
        // and without positions the two dogs' outputs are equal, with them they differ
        require_row(row_of(lesson, "plain", "output[1]"), row_of(lesson, "plain", "output[3]"), 0);
        CHECK(row_of(lesson, "placed", "output[1]") != row_of(lesson, "placed", "output[3]"));
    }
}

TEST_CASE("every number a lesson's narration states comes from its trace", "[lesson]") {
    // Computed numbers are written as placeholders ({scores[1,2]}) and filled
    // from the trace. A digit in the literal text is allowed only as an index
    // (query 1, key 2, scores[2,3]) or inside one of the phrases below, each a
    // fact of the mathematics or a convention rather than a computed value.
    const std::map<std::string, std::vector<std::string>> k_phrases = {
        {"walkthrough", {"sum to 1", "lesson 2", "to one decimal"}},
        {"scaling", {"1 or −1", "exactly 0 or 1", "about 1", "w(1 − w)"}},
        {"words", {"close to 0", "lesson 8"}},
        {"transpose", {}},
        {"multi-head", {}},
        {"masking", {"keys 1 to i", "exactly 0", "exp(0) is 1", "already 0"}},
        {"cross-attention", {}},
        {"positions", {"counted from 0", "10000^(2i/d_model)", "between −1 and 1", "1/√d_model"}},
        {"pytorch", {"holds 1", "and 0 where", "it is 1 on", "it holds 0", "but 0 and", "0 on and below", "writes 0"}},
        // ]@H is a head's index, after a cell
        {"rope", {"p = i − 1", "base^(−2k/d_k)", "10000", "d_k/2", "distance 0", "distance 1", "distance 3",
                  "j + d_k/2", "counted from 1", "1 with 3, then 2 with 4", "pairs 1 and 3, then 2 and 4",
                  "pairs 1 and 2, then 3 and 4", "to 1, 3, 2, 4", "elements 1 and 2", "elements 2 and 4", "θ_1",
                  "counted from 0", "key 1", "key 3", "elements 3 and 4", "element 3 of"}},
        {"grouped-query", {"Llama 2 70B and 3", "8 bytes", "·8", "float64", "]@1", "]@2", "]@3"}},
        {"online-softmax", {"Dao et al., 2022", "ℓ = 0", "o = 0", "blocks of 2", "blocks of 1", "exp(0)"}},
        {"long-context", {"Press et al., 2022", "2^(−8h/H)", "0 ≤ i − j", "W is 3", "(W − 1, 0)", "W + 1",
                          "less than 1", "sum to 1", "sink here is 3", "]@1", "]@2"}},
        {"backward", {"sum to 1", "weight is 1", "weight 0", "0 times anything is 0",
                      "1/√d_k", "gradient is 0"}},
        {"capping", {"Gemma 2", "c = 50", "c = 3", "1 − tanh²(s/c)", "close to 1", "near 0", "close to 0"}},
        {"qk-norm", {"Qwen3", "Gemma 3", "mean square of 1", "OLMo 2", "Gemma 2", "1 + γ (offset: 1)", "starts at 0",
                     "gain of 1", "here 2", "√2"}},
        {"latent", {"DeepSeek-V3", "]@1", "]@2"}},
    };
    const std::regex number("[0-9]+(\\.[0-9]+)?");
    const std::regex index_before(
        "(query|queries|key|keys|row|rows|column|columns|head|heads|token|tokens|input|inputs|output|step|lesson|"
        "position|word)\\s+([0-9]+\\s*(,|and|or|to|…)\\s*)*$|[a-z_]+\\[[0-9,]*$",
        std::regex::icase);
    for (const auto& file : qkv::builtin_lessons()) {
        const std::string name(file.name);
        CAPTURE(name);
        REQUIRE(k_phrases.count(name) == 1);
        const auto lesson = builtin_lesson(name);
        int placeholders = 0;
        for (const auto* narration : narrations(lesson)) {
            for (const auto& segment : *narration) {
                if (segment.value) {
                    ++placeholders;
                    // the filled text is the trace's value, at the lesson's precision
                    const auto values = qkv::resolve(lesson, *segment.value);
                    CHECK_FALSE(qkv::format_value(values, segment.style, 4, false).empty());
                    continue;
                }
                const std::string& text = segment.text;
                for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
                    const auto at = static_cast<std::size_t>(it->position());
                    const std::string before = text.substr(0, at);
                    if (std::regex_search(before, index_before)) {
                        continue;
                    }
                    bool in_phrase = false;
                    for (const auto& phrase : k_phrases.at(name)) {
                        for (auto p = text.find(phrase); p != std::string::npos; p = text.find(phrase, p + 1)) {
                            in_phrase = in_phrase || (p <= at && at < p + phrase.size());
                        }
                    }
                    const std::string context = text.substr(at < 30 ? 0 : at - 30, 60);
                    CAPTURE(context);
                    CHECK(in_phrase);
                }
            }
        }
        // a lesson built on numbers states some of them
        CHECK(placeholders >= 5);
    }
}

TEST_CASE("placeholders are filled from the trace, rows in brackets and −∞ spelt out", "[lesson]") {
    const auto lesson = builtin_lesson("masking");
    // by hand: <s> = [1, 0] and we = [0, 1] with identity weights score 0; read = [1, 1] scores 2 with itself
    CHECK(qkv::format_value(row_of(lesson, "masked", "scores[3]"), {}, 4, false) == "[1, 1, 2, 0]");
    CHECK(qkv::format_value(row_of(lesson, "masked", "masked_scores[1]"), {}, 4, false) == "[1, −∞, −∞, −∞]");
    CHECK(qkv::format_value(row_of(lesson, "masked", "masked_scores[1]"), {}, 4, true) == "[1, -inf, -inf, -inf]");
    // e/(e + 1) = 0.7311 (by hand), at 2 decimals and in scientific form
    qkv::NumberStyle two;
    two.decimals = 2;
    CHECK(qkv::format_value(row_of(lesson, "masked", "weights[2,2]"), two, 4, false) == "0.73");
    qkv::NumberStyle scientific;
    scientific.scientific = true;
    CHECK(qkv::format_value(row_of(lesson, "masked", "weights[2,2]"), scientific, 4, false) == "7.31e-01");
}

TEST_CASE("a bad lesson file is refused with the position of every problem", "[lesson][errors][cli]") {
    SECTION("placeholders, steps, cells and keys of the script") {
        const std::string path = write_temp("bad-script.yaml", R"(title: Bad
summary: bad
model: illustrated
script:
  - say: |
      The score is {scores[4,1]} and {nosuch:scores[1,1]}.
    show: [scores, masked_scores, wieghts]
    explain: scores[1]@3
    ask: What?
    answer: scores[1]
  - sya: hello
)");
        const auto result = run_qkv({"lesson", path});
        require_input_error(result, path + ":6:20: script[1].say: {scores[4,1]} in model main: cell scores[4,1]: row 4 is out of range");
        CHECK(result.err.find(path + ":6:38: script[1].say: {nosuch:scores[1,1]} names the model \"nosuch\"") != std::string::npos);
        CHECK(result.err.find(path + ":7:20: script[1].show: model main has no masked_scores step") != std::string::npos);
        CHECK(result.err.find(path + ":7:35: script[1].show: unknown step id \"wieghts\"") != std::string::npos);
        CHECK(result.err.find("hint: did you mean weights?") != std::string::npos);
        CHECK(result.err.find(path + ":8:14: script[1].explain: cell scores[1]@3: head 3 does not exist") != std::string::npos);
        CHECK(result.err.find(path + ":10:13: script[1].answer is the whole row scores[1]; expected one cell") !=
              std::string::npos);
        CHECK(result.err.find(path + ":11:5: unknown key script[2].sya") != std::string::npos);
        CHECK(result.err.find("hint: did you mean script[2].say?") != std::string::npos);
    }
    SECTION("an inline model's own problems, positioned in the lesson file") {
        const std::string path = write_temp("bad-model.yaml", R"(title: Bad model
summary: bad
model:
  inputs: [[1, 0], [0, 1]]
  weights:
    query: [[1, 0, 0]]
    key: [[1, 0], [0, 1]]
    value: [[1, 0], [0, 1]]
models:
  other: ilustrated
script:
  - say: Hello.
)");
        const auto result = run_qkv({"lesson", path});
        require_input_error(result, path + ":6:12: weights.query is 1 × 3; expected 2 rows");
        CHECK(result.err.find(path + ":10:10: models.other is \"ilustrated\", which is not a built-in example") !=
              std::string::npos);
        CHECK(result.err.find("did you mean illustrated?") != std::string::npos);
    }
    SECTION("placeholder syntax") {
        const std::string path = write_temp("bad-placeholders.yaml", R"(title: Bad placeholders
summary: bad
model: illustrated
script:
  - say: "{d_kk} and {scores[1,1]|x} and {weights}"
  - say: "an open { brace"
)");
        const auto result = run_qkv({"lesson", path});
        require_input_error(result, path + ":5:11: script[1].say: {d_kk} is neither a cell nor a size");
        CHECK(result.err.find("did you mean d_k?") != std::string::npos);
        CHECK(result.err.find(path + ":5:22: script[1].say: {scores[1,1]|x} has the style \"x\"") != std::string::npos);
        CHECK(result.err.find(path + ":5:42: script[1].say: {weights} is neither a cell nor a size") != std::string::npos);
        CHECK(result.err.find(path + ":6:19: script[2].say: a { without its }") != std::string::npos);
    }
    SECTION("missing parts") {
        const std::string path = write_temp("bad-empty.yaml", "title: Nothing\n");
        const auto result = run_qkv({"lesson", path});
        require_input_error(result, path + ":1:1: summary is missing");
        CHECK(result.err.find(path + ":1:1: model is missing") != std::string::npos);
    }
    SECTION("invalid YAML") {
        const std::string path = write_temp("bad-yaml.yaml", "title: [unclosed\nsummary: x\n");
        require_input_error(run_qkv({"lesson", path}), path + ":");
    }
    SECTION("a question about a blocked cell") {
        const std::string path = write_temp("bad-question.yaml", R"(title: Bad question
summary: bad
model: masked
script:
  - ask: What is it?
    answer: masked_scores[1,2]
    tolerance: -1
)");
        const auto result = run_qkv({"lesson", path});
        require_input_error(result, path + ":6:13: script[1].answer masked_scores[1,2] is −∞");
    }
    SECTION("questions of every kind") {
        const std::string path = write_temp("bad-kinds.yaml", R"(title: Bad questions
summary: bad
model: illustrated
script:
  - ask: Both?
    predict: Both?
    answer: scores[1,1]
  - ask: No answer?
  - ask: Two answers?
    answer: scores[1,1]
    shape: scores
  - ask: A pick for a number?
    answer: scores[1,1]
    pick: smallest
  - ask: Too many decimals?
    answer: weights[1,1]
    decimals: 9
  - ask: A cell for a shape?
    shape: scores[1,1]
  - ask: A cell to choose from?
    choose: weights[1,2]
  - shape: scores
  - ask: One option?
    choose: {only: "weights[1,1]"}
  - ask: A shape of no step?
    shape: weights@3
)");
        const auto result = run_qkv({"lesson", path});
        require_input_error(result, path + ":6:14: script[1] has both ask and predict; expected one question");
        for (const std::string problem : {
                 ":8:10: script[2] asks a question without its answer",
                 ":11:12: script[3] has both answer and shape; expected one answer",
                 ":14:11: script[4].pick belongs to choose, not to answer",
                 ":17:15: script[5].decimals",
                 ":19:12: script[6].shape is the cell scores[1,1]; expected a step id",
                 ":21:13: script[7].choose is the cell weights[1,2]; expected a row",
                 ":22:12: script[8].shape is given without a question",
                 ":24:13: script[9].choose is a map",
                 ":26:12: script[10].shape: cell weights[1,1]@3: head 3 does not exist",
             }) {
            CAPTURE(problem);
            CHECK(result.err.find(path + problem) != std::string::npos);
        }
    }
    SECTION("a choice whose options tie") {
        const std::string path = write_temp("bad-tie.yaml", R"(title: A tie
summary: bad
model: illustrated
script:
  - ask: Which key does query 1 attend to most?
    choose: weights[1]
)");
        // query 1's scores are [2, 4, 4]: keys 2 and 3 tie
        require_input_error(run_qkv({"lesson", path}),
                            path + ":5:10: script[1].ask: the options Input 2 and Input 3 tie for the largest value");
    }
}

TEST_CASE("a lesson file given by path plays like a built-in one", "[lesson][cli]") {
    const std::string path = write_temp("small.yaml", k_small_lesson);
    const auto result = run_qkv({"lesson", path});
    REQUIRE(result.status == 0);
    CHECK(result.out.rfind("Four questions\n==============\n", 0) == 0);
    // from the illustrated article: query 1 = [1, 0, 2], scores[1,2] = 4
    CHECK(result.out.find("Query 1 is [1, 0, 2].") != std::string::npos);
    CHECK(result.out.find("  Answer: scores[1,2] = 4") != std::string::npos);
    CHECK(result.out.find("End of the lesson.") != std::string::npos);
}

TEST_CASE("the player says right or wrong, allows a second try, shows the working, and lets the learner leave",
          "[lesson][player]") {
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"small.yaml", k_small_lesson, ""}, "small"));
    qkv::PlayOptions options;
    auto play = [&](std::vector<std::string> lines, qkv::PlayEnd& end, std::size_t& used) {
        std::ostringstream out;
        auto writer = qkv::make_lesson_writer(options.render, out);
        ScriptedLearner learner(std::move(lines));
        end = qkv::play_lesson(lesson, options, *writer, &learner);
        used = learner.used();
        return out.str();
    };
    qkv::PlayEnd end{};
    std::size_t used = 0;
    SECTION("right, wrong then right, wrong twice, and text that is not an answer asked for again") {
        // scores[1,2] = 4 and weights[1,2] = 0.4683 (the illustrated article); S is 3 × 3;
        // query 2's scores [4, 16, 12] make key 2 its largest weight
        const std::string out =
            play({"4", "", "half", "0.5", "0.47", "", "2x3", "3 by 2", "", "sky", "3", "2"}, end, used);
        CHECK(end == qkv::PlayEnd::finished);
        CHECK(used == 12);
        CHECK(out.find("  Right. scores[1,2] = 4") != std::string::npos);
        CHECK(out.find("    scores[1,2] = q·k = 1·4 + 0·4 + 2·0 = 4") != std::string::npos);
        CHECK(out.find("Press Enter for page 2 of 4, or q to leave: ") != std::string::npos);
        // the precision is stated, and 0.5 has fewer decimals than it asks for
        CHECK(out.find("Question: What weight will query 1 give key 2? (at least 2 decimals)") != std::string::npos);
        CHECK(out.find("Please type a number, Enter to see the answer, or q to leave: ") != std::string::npos);
        // too few decimals named
        // (the lines as wrapped, joined again)
        std::string flat;
        std::istringstream words(out);
        for (std::string word; words >> word;) {
            flat += word + " ";
        }
        CHECK(flat.find("Not quite: you wrote 0.5. That is the true value rounded to 1 decimal. Correct: write it "
                        "with at least 2 decimals. Try once more.") != std::string::npos);
        CHECK(out.find("Your second try (Enter shows the answer, q leaves): ") != std::string::npos);
        CHECK(out.find("  Right. weights[1,2] = 0.4683") != std::string::npos);
        // predicted before the table that answers it
        CHECK(out.find("What weight will query 1 give key 2?") < out.find("\nAttention weights  [weights]"));
        CHECK(out.find("\nAttention weights  [weights]") != std::string::npos);
        CHECK(out.find("Question: What shape will the scores have? (rows × columns)") != std::string::npos);
        CHECK(flat.find("Not quite: you wrote 2x3. Work it out from the shapes: queries is 3 × 3; keys is 3 × 3. "
                        "Try once more.") != std::string::npos);
        CHECK(out.find("That is the shape turned round") == std::string::npos);
        CHECK(flat.find("Not quite: you wrote 3 by 2. Work it out from the shapes: queries is 3 × 3; keys is 3 × 3. "
                        "Answer: scores is 3 × 3") != std::string::npos);
        CHECK(out.find("Please type 1 Input 1, 2 Input 2 or 3 Input 3") != std::string::npos);
        CHECK(out.find("  Not quite: you wrote 3.\n    It is decided by scaled_scores[2] = [4, 16, 12].\n"
                       "    Try once more.") != std::string::npos);
        CHECK(out.find("  Right. Input 2 (2)\n") != std::string::npos);
        CHECK(out.find("Input 2 has the largest value") != std::string::npos);
        CHECK(out.find("Score: 3 of 4 questions right, 1 of them at the first try.") != std::string::npos);
        CHECK(out.find("Try it with qkv run illustrated.") != std::string::npos);
        CHECK(out.find("End of the lesson.") != std::string::npos);
    }
    SECTION("typing at a page's end is not dropped in silence") {
        const std::string out = play({"4", "next", "", ""}, end, used);
        CHECK(out.find("There is no question on this page. Press Enter for page 2, or q to leave: ") != std::string::npos);
        CHECK(out.find("What weight will query 1 give key 2?") != std::string::npos);
    }
    SECTION("Enter at a question shows the answer") {
        const std::string out = play({"", "", "", "", "", "", ""}, end, used);
        CHECK(out.find("  Answer: scores[1,2] = 4") != std::string::npos);
        CHECK(out.find("  Answer: scores is 3 × 3") != std::string::npos);
        CHECK(out.find("Score: 0 of 4 questions right.") != std::string::npos);
        CHECK(end == qkv::PlayEnd::finished);
    }
    SECTION("--page starts later, and the score counts the questions asked") {
        options.first_page = 4;
        const std::string out = play({"2"}, end, used);
        CHECK(out.find("Query 1 is") == std::string::npos);
        CHECK(out.find("Score: 1 of 1 question right.") != std::string::npos);
    }
    SECTION("q at a question leaves at once") {
        const std::string out = play({"q", "4"}, end, used);
        CHECK(end == qkv::PlayEnd::left);
        CHECK(used == 1);
        CHECK(out.find("Right.") == std::string::npos);
        CHECK(out.find("End of") == std::string::npos);
    }
    SECTION("q between pages leaves") {
        const std::string out = play({"4", "q"}, end, used);
        CHECK(end == qkv::PlayEnd::left);
        CHECK(out.find("weight will query 1 give") == std::string::npos);
    }
    SECTION("the end of the input leaves") {
        play({"4"}, end, used);
        CHECK(end == qkv::PlayEnd::left);
    }
}

TEST_CASE("a small screen pauses when it is full and never shows a line wider than itself", "[lesson][player]") {
    const auto lesson = builtin_lesson("walkthrough");
    qkv::PlayOptions options;
    std::ostringstream out;
    std::vector<std::string> typed;
    qkv::Screen screen;
    screen.width = 40;
    screen.height = 12;
    screen.read_line = [&typed, &out]() -> std::optional<std::string> {
        typed.push_back("");
        out << '\n';
        return std::string();
    };
    auto writer = qkv::make_lesson_writer(options.render, out, screen);
    // a terminal echoes the learner's Enter
    class Echo : public qkv::Learner {
    public:
        explicit Echo(std::ostream& out) : m_out(out) {}
        std::optional<std::string> read_line() override {
            m_out << '\n';
            return std::string();
        }

    private:
        std::ostream& m_out;
    } learner(out);
    REQUIRE(qkv::play_lesson(lesson, options, *writer, &learner) == qkv::PlayEnd::finished);
    CHECK(typed.size() > 5);
    // between two pauses (a prompt, or "more"), no more rows than the screen has
    std::istringstream lines(out.str());
    std::string line;
    int rows = 0;
    bool after_table_row = false;
    bool cut = false;  // a pause came right after a table's row
    std::string before;
    while (std::getline(lines, line)) {
        CAPTURE(line);
        const bool table = line.find("│") != std::string::npos || line.find("─") != std::string::npos;
        if (!table) {
            CHECK(qkv::display_width(line) <= 40);
        }
        const bool pause = line.find("more: Enter") != std::string::npos || line.find("Your answer") != std::string::npos ||
                           line.find("Press Enter") != std::string::npos;
        rows = pause ? 1 : rows + 1;
        CHECK(rows <= 12);
        // the walk-through's tables are 5 lines: none is cut in two by a pause
        const bool table_row = line.find("│") != std::string::npos || line.find("┼") != std::string::npos;
        CAPTURE(before);
        CHECK_FALSE((cut && table_row));
        cut = pause && after_table_row;
        after_table_row = table_row;
        before = line;
    }
}

TEST_CASE("a learner's reply is read as a number, a skip or leaving", "[lesson][player]") {
    using Kind = qkv::Reply::Kind;
    const auto row = GENERATE(table<std::string, Kind, double>({
        {"4", Kind::number, 4.0},
        {"  -1.5 ", Kind::number, -1.5},
        {"−2", Kind::number, -2.0},
        {"+0.25", Kind::number, 0.25},
        {"1e-3", Kind::number, 0.001},
        {"", Kind::skip, 0.0},
        {"   ", Kind::skip, 0.0},
        {"q", Kind::leave, 0.0},
        {"quit", Kind::leave, 0.0},
        {"2/10", Kind::number, 0.2},
        {"0.6439*(1-0.6439)", Kind::number, 0.6439 * (1 - 0.6439)},
        {"exp(2)/(exp(2)+2*exp(4))", Kind::number, std::exp(2.0) / (std::exp(2.0) + 2 * std::exp(4.0))},
        {"four", Kind::not_a_number, 0.0},
        {"0,5", Kind::not_a_number, 0.0},
        {"2*0,5", Kind::not_a_number, 0.0},
        {"inf", Kind::not_a_number, 0.0},
        {"4 5", Kind::not_a_number, 0.0},
    }));
    const std::string line = std::get<0>(row);
    CAPTURE(line);
    const auto reply = qkv::read_reply(line);
    CHECK(reply.kind == std::get<1>(row));
    if (reply.kind == Kind::number) {
        CHECK_THAT(reply.value, WithinAbs(std::get<2>(row), 1e-10));
    }
    // a decimal comma is kept for the hint, never read as a number
    CHECK(reply.comma == (line.find(",5") != std::string::npos ? "0,5" : ""));
}

TEST_CASE("a lesson grades an expression as its value and answers a decimal comma with a hint",
          "[lesson][player]") {
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"small.yaml", k_small_lesson, ""}, "small"));
    const qkv::Question& weight = *lesson.pages[1].ask;  // weights[1,2] = 0.4683, from scaled scores [2, 4, 4]
    const auto exact = qkv::grade_reply(lesson, weight, "exp(4)/(exp(2)+2*exp(4))");
    CHECK(exact.valid);
    CHECK(exact.right);
    CHECK(qkv::grade_reply(lesson, weight, "0.4683 * 1").right);
    // 4/10 is the row divided by its sum without exp, graded and named as the number 0.4 would be
    const auto no_exp = qkv::grade_reply(lesson, weight, "4/10");
    CHECK(no_exp.valid);
    CHECK_FALSE(no_exp.right);
    CHECK(no_exp.why.find("exponentiat") != std::string::npos);
    const auto comma = qkv::grade_reply(lesson, weight, "0,47");
    CHECK_FALSE(comma.valid);
    CHECK(comma.hint == "Write 0.47, not 0,47.");
    CHECK(comma.again.rfind("Write 0.47, not 0,47. Please type a number", 0) == 0);
}

TEST_CASE("a lesson grades a number as qkv check does, at the precision its question states", "[lesson][player]") {
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"small.yaml", k_small_lesson, ""}, "small"));
    const qkv::Question& weight = *lesson.pages[1].ask;  // weights[1,2] = 0.4683
    CHECK(qkv::answer_form(lesson, weight) == "(at least 2 decimals)");
    auto right = [&](const std::string& reply) {
        const auto graded = qkv::grade_reply(lesson, weight, reply);
        REQUIRE(graded.valid);
        return graded.right;
    };
    CHECK(right("0.47"));
    CHECK(right("0.468"));
    CHECK(right("0.4683"));
    CHECK(right("4.683e-1"));
    CHECK_FALSE(right("0.46"));    // cut off, not rounded
    CHECK_FALSE(right("0.5"));     // fewer decimals than the question asks for
    CHECK_FALSE(right("0.4684"));
    CHECK_FALSE(qkv::grade_reply(lesson, weight, "about half").valid);
    const qkv::Question& score = *lesson.pages[0].ask;  // scores[1,2] = 4
    CHECK(qkv::answer_form(lesson, score) == "(a whole number)");
    CHECK(qkv::grade_reply(lesson, score, "4").right);
    CHECK(qkv::grade_reply(lesson, score, "4.0").right);
    CHECK_FALSE(qkv::grade_reply(lesson, score, "5").right);
}

TEST_CASE("a wrong number in a lesson is named with qkv check's diagnosis", "[lesson][player]") {
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"small.yaml", k_small_lesson, ""}, "small"));
    const qkv::Question& weight = *lesson.pages[1].ask;
    // query 1's scores are [2, 4, 4]: divided by their sum without exp, 4 / 10 = 0.40
    const auto no_exp = qkv::grade_reply(lesson, weight, "0.40");
    CHECK_FALSE(no_exp.right);
    CHECK(no_exp.why.find("exponentiat") != std::string::npos);
    // a slip names no mistake, but says what was expected and from which numbers
    const auto slip = qkv::grade_reply(lesson, weight, "0.52");
    CHECK(slip.why.empty());
    CHECK(slip.expected == "It is worked as A = softmax(S') along each row, from scaled_scores[1] = [2, 4, 4].");
    // the numbers a question is worked from, as its "Given:" line shows them
    CHECK(qkv::question_given(lesson, *lesson.pages[0].ask, qkv::RenderOptions{}) ==
          std::vector<qkv::Given>{{"queries[1] = [1, 0, 2]", ""}, {"keys[2] = [4, 4, 0]", ""}});
    CHECK(qkv::question_given(lesson, *lesson.pages[2].ask, qkv::RenderOptions{}) ==
          std::vector<qkv::Given>{{"queries is 3 × 3", ""}, {"keys is 3 × 3", ""}});
}

TEST_CASE("shapes and choices are read the ways a learner writes them", "[lesson][player]") {
    for (const std::string text : {"3 × 2", "3x2", "3 X 2", " 3 by 2 ", "3*2", "3,2"}) {
        CAPTURE(text);
        const auto shape = qkv::read_shape(text);
        REQUIRE(shape);
        CHECK(shape->first == 3);
        CHECK(shape->second == 2);
    }
    for (const std::string text : {"3", "3 x", "x 2", "0x2", "three by two", "3x2x1", "-3x2"}) {
        CAPTURE(text);
        CHECK_FALSE(qkv::read_shape(text));
    }
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"small.yaml", k_small_lesson, ""}, "small"));
    const qkv::Question& key = *lesson.pages[3].ask;
    CHECK(qkv::answer_form(lesson, key) == "(1 Input 1, 2 Input 2 or 3 Input 3)");
    CHECK(qkv::grade_reply(lesson, key, "2").right);
    CHECK(qkv::grade_reply(lesson, key, "input 2").right);
    CHECK_FALSE(qkv::grade_reply(lesson, key, "1").right);
    CHECK_FALSE(qkv::grade_reply(lesson, key, "4").valid);
}

TEST_CASE("a choice is read by its number, its start or its key words, without its punctuation",
          "[lesson][player]") {
    const auto lesson = builtin_lesson("scaling");
    // the questions of lesson 2 whose options are "it grows towards 1" / "it stays the same", and
    // "the first model's" / "the ten-times model's"
    const qkv::Question* grows = nullptr;
    const qkv::Question* first = nullptr;
    for (const auto& page : lesson.pages) {
        if (page.ask && page.ask->kind == qkv::Question::Kind::choice) {
            const std::string label = page.ask->options.front().label;
            grows = label == "it grows towards 1" ? &*page.ask : grows;
            first = label == "the first model's" ? &*page.ask : first;
        }
    }
    REQUIRE(grows != nullptr);
    REQUIRE(first != nullptr);
    // the right option of each, by the numbers of its models
    const std::size_t grows_right = qkv::right_option(lesson, *grows);
    for (const std::string reply : {"it grows towards 1", "1", "grows", "it grows", "GROWS", "it g", "towards"}) {
        CAPTURE(reply);
        const auto graded = qkv::grade_reply(lesson, *grows, reply);
        CHECK(graded.valid);
        CHECK(graded.right == (grows_right == 0));
    }
    for (const std::string reply : {"it increases", "rises", "it climbs towards 1"}) {  // the same word, said otherwise
        CAPTURE(reply);
        const auto graded = qkv::grade_reply(lesson, *grows, reply);
        CHECK(graded.valid);
        CHECK(graded.right == (grows_right == 0));
    }
    for (const std::string reply : {"stays the same", "it stays", "same", "2", "  It Stays The Same. "}) {
        CAPTURE(reply);
        const auto graded = qkv::grade_reply(lesson, *grows, reply);
        CHECK(graded.valid);
        CHECK(graded.right == (grows_right == 1));
    }
    const std::size_t first_right = qkv::right_option(lesson, *first);
    for (const std::string reply : {"the first model's", "the first models", "the first model’s", "first", "the f"}) {
        CAPTURE(reply);
        const auto graded = qkv::grade_reply(lesson, *first, reply);
        CHECK(graded.valid);
        CHECK(graded.right == (first_right == 0));
    }
    CHECK(qkv::grade_reply(lesson, *first, "ten-times").valid);
    // what fits both options, or neither, is no answer: the learner is asked again
    for (const std::string reply : {"it", "model", "the", "3", "shrinks", "?"}) {
        CAPTURE(reply);
        CHECK_FALSE(qkv::grade_reply(lesson, *first, reply).valid);
    }
    CHECK_FALSE(qkv::grade_reply(lesson, *grows, "it").valid);
}

TEST_CASE("a lesson's question allows for the rounding of the numbers on the screen", "[lesson][player]") {
    // lesson 2's last question: a's weight for itself after scaling, 0.6439. Forgetting the scaling
    // gives softmax([4, 2, 0, -2])[1] = 0.864955, shown as 0.8650 a page before: 0.87 from the screen
    const auto lesson = builtin_lesson("scaling");
    const qkv::Question& last = *lesson.pages.back().ask;
    REQUIRE(last.answer.cell.text == "weights[1,1]");
    const auto from_screen = qkv::grade_reply(lesson, last, "0.87");
    CHECK(from_screen.valid);
    CHECK_FALSE(from_screen.right);
    CHECK(from_screen.why.find("not divided by √d_k") != std::string::npos);
    CHECK(from_screen.why.find("(√4 = 2)") != std::string::npos);
    CHECK(qkv::grade_reply(lesson, last, "0.86").why.find("not divided by √d_k") != std::string::npos);
    CHECK(qkv::grade_reply(lesson, last, "0.64").right);
    // only an answer rounded to fewer decimals than the screen shows: 0.6440 is no rounding of 0.6439
    CHECK_FALSE(qkv::grade_reply(lesson, last, "0.6440").right);
    CHECK(qkv::grade_reply(lesson, last, "0.644", 4).right);
}

TEST_CASE("a lesson names an answer worked from inputs rounded too early", "[lesson][player]") {
    // lesson 1, output 1's third number: 0.0634·3 + 0.4683·0 + 0.4683·3 = 1.5951, or 1.60; from
    // the weights rounded to 2 decimals, 0.06·3 + 0.47·3 = 1.59. (To 1 decimal, 0.1·3 + 0.5·3 = 1.8, which
    // is also what dividing the scores by their sum gives: check's mistake is named first.)
    const auto lesson = builtin_lesson("walkthrough");
    const qkv::Question* output = nullptr;
    for (const auto& page : lesson.pages) {
        if (page.ask && page.ask->kind == qkv::Question::Kind::number &&
            page.ask->answer.cell.text == "head_output[1,3]") {
            output = &*page.ask;
        }
    }
    REQUIRE(output != nullptr);
    CHECK(qkv::grade_reply(lesson, *output, "1.60").right);
    const auto graded = qkv::grade_reply(lesson, *output, "1.59");
    CHECK_FALSE(graded.right);
    CHECK(graded.why == "That is the number this mistake gives: Worked from the weights rounded to 2 decimals, not "
                        "from their full values. Correct: keep every decimal of the numbers you work from, and round "
                        "only the answer.");
    CHECK(qkv::grade_reply(lesson, *output, "1.80").why.find("without exponentiating") != std::string::npos);
    // a slip is not put down to rounding
    CHECK(qkv::grade_reply(lesson, *output, "1.52").why.empty());
}

TEST_CASE("the online softmax's own mistakes are named in its lesson", "[lesson][player]") {
    // lesson 12. Query 3's scores [2, 1, 5, 3] in blocks of 2: m = 2, ℓ = 1 + e^−1; then m = 5 and
    // ℓ = (1 + e^−1)·e^−3 + 1 + e^−2 = 1.2034, weights[3,1] = e^−3 / 1.2034 = 0.0414. Without the
    // rescaling ℓ = 1 + e^−1 + 1 + e^−2 = 2.5032, and e^−3 / 2.5032 = 0.0199
    const auto lesson = builtin_lesson("online-softmax");
    const auto question = [&](const std::string& cell) -> const qkv::Question& {
        for (const auto& page : lesson.pages) {
            if (page.ask && page.ask->answer.cell.text == cell) {
                return *page.ask;
            }
        }
        FAIL("no question on " << cell);
        throw std::logic_error("unreachable");
    };
    const qkv::Question& weight = question("weights[3,1]");
    CHECK(qkv::grade_reply(lesson, weight, "0.04").right);
    const auto kept = qkv::grade_reply(lesson, weight, "0.02");
    CHECK_FALSE(kept.right);
    CHECK(kept.why == "That is the number this mistake gives: ℓ was not rescaled when a block raised the maximum m. "
                      "Correct: when a block raises m, multiply ℓ and o by exp(m_old − m_new) before adding the "
                      "block's own terms.");
    // query 4's output: scores [1, 1, 3, 2], values' first column [1, 0, 2, 1]: o = 2.5032,
    // ℓ = 1.6386, o / ℓ = 1.5277; 2.50 is o itself
    const qkv::Question& output = question("head_output[4,1]");
    CHECK(qkv::grade_reply(lesson, output, "1.53").right);
    const auto undivided = qkv::grade_reply(lesson, output, "2.50");
    CHECK_FALSE(undivided.right);
    CHECK(undivided.why == "That is the number this mistake gives: o was not divided by ℓ at the end. Correct: the "
                           "output is o / ℓ, with the last block's ℓ.");
    // neither rescaled: o = 1 + 2 + e^−1 = 3.3679 over ℓ = 2 + 1 + e^−1 = 3.3679: 1
    CHECK(qkv::grade_reply(lesson, output, "1.00").why.find("ℓ and o were not rescaled") != std::string::npos);
    CHECK(qkv::grade_reply(lesson, output, "1.31").why.empty());
}

TEST_CASE("a lesson does not blame a step whose numbers it gave", "[lesson][player]") {
    // lesson 14's first question: grad_weights[3,2] = dZ[3]·V[2], with V on the screen. The wrong
    // value row, dZ[3]·V[3], is no mistake in computing V
    const auto lesson = builtin_lesson("backward");
    const qkv::Question* question = nullptr;
    for (const auto& page : lesson.pages) {
        if (page.ask && page.ask->answer.cell.text == "grad_weights[3,2]") {
            question = &*page.ask;
        }
    }
    REQUIRE(question != nullptr);
    const auto& trace = lesson.models.front().trace;
    const arma::rowvec dZ = trace.find(qkv::StepId::grad_head_output, 1)->values.row(2);
    const arma::mat& V = trace.find(qkv::StepId::values, 1)->values;
    CHECK(qkv::grade_reply(lesson, *question, fmt::format("{:.4f}", arma::dot(dZ, V.row(1)))).right);
    const double wrong_row = arma::dot(dZ, V.row(2));
    REQUIRE(std::fabs(wrong_row - arma::dot(dZ, V.row(1))) > 0.01);
    const auto graded = qkv::grade_reply(lesson, *question, fmt::format("{:.4f}", wrong_row));
    CHECK_FALSE(graded.right);
    CHECK(graded.why.find("values were computed") == std::string::npos);
}

TEST_CASE("a shape that counts the key/value heads instead of the query heads is named", "[lesson][player]") {
    // lesson 11: 4 query heads over 2 key/value heads of d_v 2, no W_O: the output is 3 × 8
    const auto lesson = builtin_lesson("grouped-query");
    const qkv::Question* output = nullptr;
    for (const auto& page : lesson.pages) {
        if (page.ask && page.ask->kind == qkv::Question::Kind::shape && page.ask->answer.cell.step == qkv::StepId::output) {
            output = &*page.ask;
        }
    }
    REQUIRE(output != nullptr);
    const auto& step = qkv::shape_step(lesson, *output);
    REQUIRE(step.values.n_rows == 3);
    REQUIRE(step.values.n_cols == 8);
    CHECK(qkv::grade_reply(lesson, *output, "3 x 8").right);
    const auto counted = qkv::grade_reply(lesson, *output, "3 x 4");
    CHECK(counted.valid);
    CHECK_FALSE(counted.right);
    CHECK(counted.why == "That counts the 2 key/value heads. Correct: each of the 4 query heads writes its own 2 "
                         "columns, so there are 4 · 2 = 8.");
    CHECK(qkv::grade_reply(lesson, *output, "8 x 3").why == "That is the shape turned round: rows come first.");
    CHECK(qkv::grade_reply(lesson, *output, "3 x 6").why.empty());
}

TEST_CASE("a lesson names the key/value heads and the bytes a key/value cache holds per token", "[lesson]") {
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson(
        {"cache.yaml", "title: Cache\nsummary: sizes\nmodel: gqa\nscript:\n  - say: \"{kv_heads} {bytes_per_token}\"\n", ""},
        "cache"));
    const auto& trace = lesson.models[0].trace;
    CHECK(qkv::dimension_value(trace, "heads") == 4);
    CHECK(qkv::dimension_value(trace, "kv_heads") == 2);
    // (d_k + d_v)·G·8 = (2 + 2)·2·8 = 64, as `qkv run gqa --decode` says (EXAMPLE FILES in man/qkv.1.in)
    CHECK(qkv::dimension_value(trace, "bytes_per_token") == 64);
}

TEST_CASE("a page's block_size shows the online softmax of its explain cells, as qkv explain --block-size does",
          "[lesson][cli]") {
    const char* const text = R"(title: Block by block
summary: the online softmax in a lesson
model: gqa
script:
  - explain: head_output[2]@3
    block_size: 2
  - explain: weights[3,2]@3
)";
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"blocks.yaml", text, ""}, "blocks"));
    REQUIRE(lesson.pages.size() == 2);
    CHECK(lesson.pages[0].block_size == 2);
    CHECK(lesson.pages[1].block_size == 0);

    const auto played = run_qkv({"lesson", write_temp("blocks.yaml", text), "--no-pause"});
    REQUIRE(played.status == 0);
    const auto explained = run_qkv({"explain", "gqa", "head_output[2]@3", "--block-size", "2"});
    REQUIRE(explained.status == 0);
    // every line of `qkv explain --block-size 2`, the running m, ℓ and o among
    // them, under the page (wrapped to its width: spaces are compared as one)
    REQUIRE(explained.out.find("keys in blocks of 2") != std::string::npos);
    auto words = [](const std::string& text) {
        std::istringstream split(text);
        std::string joined;
        for (std::string word; split >> word;) {
            joined += word + " ";
        }
        return joined;
    };
    const std::string played_words = words(played.out);
    std::istringstream lines(explained.out);
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty()) {
            CAPTURE(line);
            CHECK(played_words.find(words(line)) != std::string::npos);
        }
    }
    // the page without block_size explains its cell the ordinary way only
    const auto second_page = played.out.find("page 2 of 2");
    REQUIRE(second_page != std::string::npos);
    CHECK(played.out.find("online softmax", second_page) == std::string::npos);
}

TEST_CASE("each lesson on today's attention plays through and asks what its page does not show", "[lesson][cli]") {
    // The question's answer must be worked out or predicted, not read off the
    // screen: the step it asks about is not shown as a table on its page before
    // the question, and a fractional answer does not appear there at all.
    const std::vector<std::string> names = {"rope", "grouped-query", "online-softmax", "long-context", "backward",
                                            "capping", "qk-norm", "latent"};
    const std::regex answer_line("Answer: ([a-z_]+)\\[[0-9,]+\\](@[0-9]+)? = (\\S+)");
    // a shape question's answer, and a choice's
    const std::regex shape_line("Answer: [a-z_]+ (\\(head [0-9]+\\) )?is ([0-9]+ × [0-9]+)");
    // (a named option as a sentence, "It grows."; a key of a row by token and number, "sky (1)")
    const std::regex choice_line("Answer: ([A-Z][^\n=]*\\.|[^\n=]+ \\([0-9]+\\))\n");
    for (const auto& name : names) {
        CAPTURE(name);
        const auto found = qkv::find_lesson(name);
        const auto result = run_qkv({"lesson", name, "--no-pause"});
        REQUIRE(result.status == 0);
        CHECK(result.err.empty());
        CHECK(result.out.find("End of lesson " + std::to_string(found.number) + ".") != std::string::npos);

        std::vector<std::string> pages;
        for (std::size_t from = 0;;) {
            const auto next = result.out.find("─── page ", from + 1);
            pages.push_back(result.out.substr(from, next == std::string::npos ? next : next - from));
            if (next == std::string::npos) {
                break;
            }
            from = next;
        }
        CHECK(pages.size() >= 4);
        CHECK(pages.size() <= 7);
        // the last page points at a command to try on one's own numbers
        CHECK(pages.back().find("qkv ") != std::string::npos);

        int questions = 0;
        for (std::size_t p = 0; p < pages.size(); ++p) {
            const auto asked = pages[p].find("Question:");
            if (asked == std::string::npos) {
                continue;
            }
            ++questions;
            CAPTURE(p + 1);
            std::smatch match;
            const std::string screen = pages[p].substr(0, asked);
            if (std::regex_search(pages[p], match, shape_line)) {
                // the shape is not written on the page before it is asked
                CHECK(screen.find(match[2].str()) == std::string::npos);
                continue;
            }
            if (std::regex_search(pages[p], match, choice_line)) {
                continue;
            }
            REQUIRE(std::regex_search(pages[p], match, answer_line));
            const std::string step = match[1];
            const std::string value = match[3];
            CAPTURE(step, value);
            CHECK(screen.find("  [" + step + "]") == std::string::npos);
            if (value.find('.') != std::string::npos) {
                CHECK(screen.find(value) == std::string::npos);
            }
        }
        CHECK(questions >= 2);
    }
}

namespace {

// What the screen holds when a page's question is asked: the page up to the
// question (a prediction comes before the page's tables, workings and `then`).
std::string screen_at_question(const qkv::Lesson& lesson, std::size_t index) {
    qkv::Lesson alone = lesson;
    qkv::Page page = lesson.pages[index];
    if (page.ask->predict) {
        page.show.clear();
        page.explain.clear();
        page.then.clear();
    }
    page.ask.reset();
    alone.pages = {page};
    alone.title.clear();
    alone.summary.clear();
    alone.try_it.clear();
    std::ostringstream out;
    const qkv::PlayOptions options;
    auto writer = qkv::make_lesson_writer(options.render, out);
    qkv::play_lesson(alone, options, *writer, nullptr);
    return out.str();
}

// Every number written on a screen with its decimals, cell names such as
// scores[1,2]@2 and step numbers left out.
std::vector<std::pair<double, int>> numbers_on(std::string screen) {
    screen = std::regex_replace(screen, std::regex(R"([A-Za-z_]+\[[0-9, ]+\](@[0-9]+)?|Step [0-9]+|End of the lesson\.)"), " ");
    screen = std::regex_replace(screen, std::regex("−"), "-");
    std::vector<std::pair<double, int>> numbers;
    const std::regex number(R"(-?[0-9]+(\.[0-9]+)?)");
    for (auto it = std::sregex_iterator(screen.begin(), screen.end(), number); it != std::sregex_iterator(); ++it) {
        const std::string text = it->str();
        const auto point = text.find('.');
        numbers.emplace_back(std::stod(text), point == std::string::npos ? 0 : static_cast<int>(text.size() - point - 1));
    }
    return numbers;
}

}  // namespace

TEST_CASE("no question's answer is on the screen where it is asked, unless it says it is a reading exercise",
          "[lesson]") {
    const auto& lessons = qkv::builtin_lessons();
    for (const auto& entry : lessons) {
        const auto lesson = builtin_lesson(std::string(entry.name));
        for (std::size_t p = 0; p < lesson.pages.size(); ++p) {
            const auto& page = lesson.pages[p];
            if (!page.ask || page.ask->reading) {
                continue;
            }
            const qkv::Question& question = *page.ask;
            CAPTURE(lesson.name, p + 1);
            const std::string screen = screen_at_question(lesson, p);
            switch (question.kind) {
                case qkv::Question::Kind::number: {
                    const qkv::CellRef& cell = question.answer.cell;
                    const bool same_model = question.answer.model == page.model;
                    // its step is not among the tables shown before it, nor its cell worked out
                    if (!question.predict) {
                        CHECK_FALSE((same_model && std::find(page.show.begin(), page.show.end(), cell.step) != page.show.end()));
                        for (const auto& worked : page.explain) {
                            CHECK_FALSE((worked.model == question.answer.model && worked.cell.step == cell.step &&
                                         worked.cell.row == cell.row && worked.cell.head == cell.head));
                        }
                    }
                    // the narration does not fill in the cell, or its row
                    std::vector<const qkv::Narration*> told{&page.say};
                    if (!question.predict) {
                        told.push_back(&page.then);
                    }
                    for (const auto* narration : told) {
                        for (const auto& segment : *narration) {
                            if (segment.value && segment.value->is_cell) {
                                const qkv::ValueRef& ref = *segment.value;
                                CAPTURE(segment.source);
                                CHECK_FALSE((ref.model == question.answer.model && ref.cell.step == cell.step &&
                                             ref.cell.row == cell.row && ref.cell.head == cell.head &&
                                             (ref.cell.col == 0 || ref.cell.col == cell.col)));
                            }
                        }
                    }
                    // and no right answer is written anywhere on the screen: the
                    // true value rounded to as many decimals as asked for, or more
                    // (a whole number shows up by chance too often to be looked for)
                    const double value = qkv::resolve(lesson, question.answer).front();
                    const int decimals = qkv::question_decimals(lesson, question);
                    if (value == std::round(value)) {
                        break;
                    }
                    for (const auto& [shown, written] : numbers_on(screen)) {
                        if (written >= decimals) {
                            CAPTURE(shown, written, value);
                            CHECK(std::fabs(shown - value) > 0.5 * std::pow(10.0, -written) + 1e-12);
                        }
                    }
                    break;
                }
                case qkv::Question::Kind::shape: {
                    const auto& step = qkv::shape_step(lesson, question);
                    CHECK(screen.find(qkv::shape_text(step.values.n_rows, step.values.n_cols)) == std::string::npos);
                    break;
                }
                case qkv::Question::Kind::choice: {
                    // the step holding the options is not among the tables shown before it
                    for (const auto& option : question.options) {
                        if (!question.predict && option.value.model == page.model) {
                            CHECK(std::find(page.show.begin(), page.show.end(), option.value.cell.step) == page.show.end());
                        }
                    }
                    break;
                }
            }
        }
    }
}

TEST_CASE("a lesson's --answer grades the questions in order as a terminal does, and the lesson ends with the score",
          "[lesson][cli]") {
    // lesson 1's page 4 asks first for query 1's weight for key 1: exp(2) / (exp(2) + 2·exp(4)) = 0.0634
    // the text wraps: compared word by word
    const auto words = [](const std::string& text) {
        std::string out;
        for (const char c : text) {
            const char d = c == '\n' ? ' ' : c;
            if (!(d == ' ' && !out.empty() && out.back() == ' ')) {
                out += d;
            }
        }
        return out;
    };
    const std::string wrong = words(qkv::test::run_ok({"lesson", "1", "--page", "4", "--answer", "0.20"}));
    // the scores over their sum, without exp: check's diagnosis, then the working
    CHECK(wrong.find("Not quite: you wrote 0.20. That is the number this mistake gives") != std::string::npos);
    CHECK(wrong.find("exp(") != std::string::npos);
    CHECK(wrong.find("Score: 0 of 1 question right.") != std::string::npos);
    const std::string right = qkv::test::run_ok({"lesson", "1", "--page", "4", "--answer", "0.06"});
    CHECK(right.find("Right.") != std::string::npos);
    CHECK(right.find("Score: 1 of 1 question right.") != std::string::npos);
    // an empty one leaves its question to show its answer, as does having none
    const std::string none = qkv::test::run_ok({"lesson", "1", "--page", "4"});
    CHECK(qkv::test::run_ok({"lesson", "1", "--page", "4", "--answer", ""}) == none);
    CHECK(none.find("Score:") == std::string::npos);
    // a reply that is not a number is said to be so
    const std::string shape = words(qkv::test::run_ok({"lesson", "1", "--page", "4", "--answer", "3x2"}));
    CHECK(shape.find("That is not an answer of this question's kind (at least 2 decimals).") != std::string::npos);
    // and in a handout
    const std::string html = qkv::test::run_ok({"lesson", "1", "--page", "4", "--answer", "0.20", "-f", "html"});
    CHECK(html.find("<p><strong class=\"verdict-wrong\">Not quite:</strong> you wrote 0.20.") != std::string::npos);
}

TEST_CASE("a choice of larger or smaller takes the words people use for them", "[lesson][player]") {
    const auto lesson = builtin_lesson("walkthrough");
    const qkv::Question* larger = nullptr;
    for (const auto& page : lesson.pages) {
        if (page.ask && page.ask->kind == qkv::Question::Kind::choice && page.ask->options.front().label == "larger") {
            larger = &*page.ask;
        }
    }
    REQUIRE(larger != nullptr);
    const std::size_t right = qkv::right_option(lesson, *larger);
    for (const std::string reply : {"larger", "bigger", "it's bigger", "greater", "higher"}) {
        CAPTURE(reply);
        const auto graded = qkv::grade_reply(lesson, *larger, reply);
        CHECK(graded.valid);
        CHECK(graded.right == (right == 0));
    }
    for (const std::string reply : {"smaller", "less", "lower", "it's lower"}) {
        CAPTURE(reply);
        const auto graded = qkv::grade_reply(lesson, *larger, reply);
        CHECK(graded.valid);
        CHECK(graded.right == (right == 1));
    }
}

TEST_CASE("a lesson grades one number with check's grader: another cell's value and too few decimals are named",
          "[lesson][player][cli]") {
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"small.yaml", k_small_lesson, ""}, "small"));
    const qkv::Question& score = *lesson.pages[0].ask;   // scores[1,2] = 4; scores[2,2] = 16
    const auto other = qkv::grade_reply(lesson, score, "16");
    CHECK_FALSE(other.right);
    CHECK(other.why == "That number is scores[2,2], not scores[1,2]. Correct: scores[1,2] is worked as S = Q·Kᵀ, in "
                       "row 1 and column 2.");
    const qkv::Question& weight = *lesson.pages[1].ask;  // weights[1,2] = 0.4683, asked to 2 decimals
    const auto short_of = qkv::grade_reply(lesson, weight, "0.5");
    CHECK_FALSE(short_of.right);
    CHECK(short_of.why == "That is the true value rounded to 1 decimal. Correct: write it with at least 2 decimals.");
    // check says the same of the same number
    const auto checked = run_qkv({"check", "illustrated", "--answers", "-", "--decimals", "2"},
                                 "weights: [[~, 0.5, ~], ~, ~]\nscores: [[~, 16, ~], ~, ~]\n");
    CHECK(checked.out.find("That number is scores[2,2], not scores[1,2].") != std::string::npos);
}

TEST_CASE("no Given line holds its question's answer, and one name for two vectors says each one's model",
          "[lesson][player]") {
    qkv::RenderOptions options;
    options.precision = 4;
    for (const auto& listed : qkv::builtin_lessons()) {
        const auto lesson = builtin_lesson(std::string(listed.name));
        for (std::size_t p = 0; p < lesson.pages.size(); ++p) {
            if (!lesson.pages[p].ask) {
                continue;
            }
            const qkv::Question& question = *lesson.pages[p].ask;
            const auto given = qkv::question_given(lesson, question, options);
            CAPTURE(listed.name, p + 1);
            std::map<std::string, std::vector<const qkv::Given*>> by_name;
            for (const auto& line : given) {
                by_name[line.numbers.substr(0, line.numbers.find(" = "))].push_back(&line);
            }
            for (const auto& [name, lines] : by_name) {
                CAPTURE(name);
                for (const auto* line : lines) {
                    CHECK((lines.size() == 1 || !line->model.empty()));
                }
            }
            if (question.kind != qkv::Question::Kind::number || question.reading) {
                continue;  // a reading question's answer is on the screen by design
            }
            // a single cell given, "name[r,c] = v", never holds the answer's value
            const double answer = qkv::resolve(lesson, question.answer).front();
            for (const auto& line : given) {
                const auto equals = line.numbers.find(" = ");
                const std::string value = line.numbers.substr(equals + 3);
                if (line.numbers.find(',') < equals && value.find('[') == std::string::npos) {
                    CAPTURE(line.numbers);
                    CHECK(std::fabs(std::stod(value) - answer) > 1e-4);
                }
            }
        }
    }
}
