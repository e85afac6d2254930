// The built-in lessons as a teacher would review them: most questions are
// predictions, every lesson ends with a command to try, every answer of the
// Markdown handout is folded away; and how a question states its precision
// and works out a choice.
#include "builtin/builtin.hpp"
#include "io/lesson_loader.hpp"
#include "lesson/player.hpp"
#include "support.hpp"

#include <regex>
#include <set>
#include <sstream>

using qkv::test::run_ok;

namespace {

qkv::Lesson builtin_lesson(const std::string& name) {
    const auto found = qkv::find_lesson(name);
    return qkv::prepare_lesson(qkv::read_lesson(found.source, found.name));
}

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) {
        ++count;
    }
    return count;
}

}  // namespace

TEST_CASE("most of the lessons' questions are predictions, of every kind, and every lesson ends with a command to try",
          "[lesson]") {
    std::size_t questions = 0;
    std::size_t predictions = 0;
    std::map<qkv::Question::Kind, std::size_t> kinds;
    for (const auto& entry : qkv::builtin_lessons()) {
        const auto lesson = builtin_lesson(std::string(entry.name));
        CAPTURE(lesson.name);
        std::size_t asked = 0;
        for (const auto& page : lesson.pages) {
            if (page.ask) {
                ++asked;
                predictions += page.ask->predict ? 1 : 0;
                ++kinds[page.ask->kind];
            }
        }
        CHECK(asked >= 2);
        questions += asked;
        CHECK(lesson.try_it.find("qkv ") != std::string::npos);
    }
    CHECK(2 * predictions > questions);
    CHECK(kinds[qkv::Question::Kind::number] > 0);
    CHECK(kinds[qkv::Question::Kind::shape] >= 3);
    CHECK(kinds[qkv::Question::Kind::choice] >= 3);
}

TEST_CASE("the Markdown handout of every lesson folds each answer away in a details block", "[lesson][cli]") {
    const auto& lessons = qkv::builtin_lessons();
    for (std::size_t n = 1; n <= lessons.size(); ++n) {
        CAPTURE(n);
        const std::string handout = run_ok({"lesson", std::to_string(n), "-f", "markdown"});
        const std::size_t questions = count_of(handout, "**Question.**");
        CHECK(questions >= 2);
        CHECK(count_of(handout, "<details>\n<summary>Answer</summary>\n") == questions);
        CHECK(count_of(handout, "</details>") == questions);
        // and the lesson's command to try comes at the end
        CHECK(handout.find("qkv ", handout.rfind("</details>")) != std::string::npos);
    }
}

TEST_CASE("a question states a tolerance in its shortest form, and a choice among models names them", "[lesson][player]") {
    const char* const text = R"(title: Two models
summary: a choice between two models' cells
model: illustrated
models:
  doubled:
    inputs: [[2, 0, 2, 0], [0, 4, 0, 4], [2, 2, 2, 2]]
    weights:
      query: [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]
      key:   [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]
      value: [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]
    scale: none
script:
  - ask: What weight does query 1 give key 2?
    answer: weights[1,2]
    tolerance: 0.01
  - predict: With every input doubled, does query 3's weight for key 2 grow or shrink?
    choose: {it grows: "doubled:weights[3,2]", it shrinks: "weights[3,2]"}
)";
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"two.yaml", text, ""}, "two"));
    CHECK(qkv::answer_form(lesson, *lesson.pages[0].ask) == "(within ±0.01)");
    // weights[1,2] = 0.4683: within 0.01
    CHECK(qkv::grade_reply(lesson, *lesson.pages[0].ask, "0.46").right);
    CHECK_FALSE(qkv::grade_reply(lesson, *lesson.pages[0].ask, "0.45").right);
    const qkv::Question& choice = *lesson.pages[1].ask;
    CHECK(qkv::answer_form(lesson, choice) == "(it grows or it shrinks)");
    // doubling X quadruples the scores [4, 12, 10]: key 2's lead grows, and so does its weight 0.8805
    CHECK(qkv::grade_reply(lesson, choice, "it grows").right);
    CHECK(qkv::grade_reply(lesson, choice, "1").right);
    CHECK_FALSE(qkv::grade_reply(lesson, choice, "IT SHRINKS").right);
    const auto working = qkv::question_working(lesson, choice, qkv::RenderOptions{});
    // a sentence, and each option's number with the model it comes from, by its title
    CHECK(working.heading == "It grows.");
    REQUIRE(working.lines.size() == 2);
    CHECK(working.lines[0].rfind("it grows: weights[3,2] = ", 0) == 0);
    CHECK(working.lines[0].find("(the model doubled)") != std::string::npos);
    CHECK(working.lines[1] == "it shrinks: weights[3,2] = 0.8805    (Three inputs, step by step)");
}

TEST_CASE("a key whose token another key shares is chosen by its number", "[lesson][player]") {
    const char* const text = R"(title: Dog bites dog
summary: two keys with one token
model:
  tokens: [dog, bites, dog]
  inputs: [[1, 0], [0, 1], [1, 1]]
  weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
  scale: none
script:
  - predict: Which key will the last dog attend to most?
    choose: weights[3]
)";
    const auto lesson = qkv::prepare_lesson(qkv::read_lesson({"dogs.yaml", text, ""}, "dogs"));
    const qkv::Question& question = *lesson.pages[0].ask;
    CHECK(qkv::answer_form(lesson, question) == "(1 dog, 2 bites or 3 dog)");
    // the last dog's scores are [1, 1, 2]: key 3, itself
    const auto dog = qkv::grade_reply(lesson, question, "dog");
    CHECK_FALSE(dog.valid);
    CHECK(dog.again.find("1 dog, 2 bites or 3 dog") != std::string::npos);
    CHECK(qkv::grade_reply(lesson, question, "3").right);
    CHECK_FALSE(qkv::grade_reply(lesson, question, "bites").right);
}

TEST_CASE("with --ascii every lesson is plain ASCII, as text and as a Markdown handout", "[lesson][cli]") {
    const auto& lessons = qkv::builtin_lessons();
    for (std::size_t n = 1; n <= lessons.size(); ++n) {
        for (const std::string format : {"text", "markdown"}) {
            CAPTURE(n, format);
            const std::string out = run_ok({"lesson", std::to_string(n), "--no-pause", "--ascii", "-f", format});
            const auto wide = std::find_if(out.begin(), out.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
            CHECK(wide == out.end());
            if (wide != out.end()) {
                const auto at = static_cast<std::size_t>(wide - out.begin());
                CAPTURE(out.substr(at < 60 ? 0 : at - 60, 120));
                FAIL_CHECK("a non-ASCII byte");
            }
        }
    }
    CHECK(run_ok({"lesson", "4", "--no-pause", "--ascii"}).rfind("Lesson 4 - ", 0) == 0);
}

TEST_CASE("a lesson shows each cell's working once, and numbers no step", "[lesson][cli]") {
    for (const auto& lesson : qkv::builtin_lessons()) {
        const std::string name(lesson.name);
        CAPTURE(name);
        const auto result = qkv::test::run_qkv({"lesson", name, "--no-pause"});
        REQUIRE(result.status == 0);
        // a working's heading: "  scores[1,2] = 4 (Scores, …)", or the same after "Answer:"
        std::set<std::string> headings;
        std::istringstream lines(result.out);
        for (std::string line; std::getline(lines, line);) {
            const std::string answer = "  Answer: ";
            if (line.rfind(answer, 0) == 0) {
                line = "  " + line.substr(answer.size());
            }
            // the cell and its value, up to the step's title: "  scores[1,2] = 4"
            static const std::regex heading(R"(^  ([a-z_]+:)?[a-z_]+\[[0-9,]+\](@[0-9]+)? = [^ ]+)");
            std::smatch found;
            if (std::regex_search(line, found, heading)) {
                CAPTURE(line);
                CHECK(headings.insert(found.str()).second);
            }
            // a lesson's tables are headed by their steps' names, with no number to skip
            CHECK(line.rfind("Step ", 0) == std::string::npos);
        }
    }
}
