// Answers as people write them by hand or copy them from slides, and answer
// files that hold none: what is read as a number, and what is refused, with
// its position and a hint.
#include "check/check.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

using namespace qkv;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;

namespace {

using test::answers_from;

// Two tokens with negative keys and values, no scaling, worked by hand:
//   K = X·W_K = [[-1, 0], [0, 1]],  scores = X·Kᵀ = [[-1, 0], [0, 1]],
//   weights row 1 = softmax([-1, 0]) = [1/(1+e), e/(1+e)] = [0.268941, 0.731059],
//   V = X·W_V = [[1, -2], [0, -1]],  output row 1 = 0.268941·[1, -2] + 0.731059·[0, -1]
//                                                  = [0.268941, -1.268941].
const char* const k_negative_model = R"(
inputs: [[1, 0], [0, 1]]
weights:
  query: [[1, 0], [0, 1]]
  key:   [[-1, 0], [0, 1]]
  value: [[1, -2], [0, -1]]
scale: none
)";

// The first error's "FILE:LINE:COL: what" and its hint, for answers that must be refused.
std::pair<std::string, std::string> answer_error(const Trace& trace, const std::string& yaml) {
    try {
        answers_from(yaml, trace);
    } catch (const InputError& error) {
        const Diagnostic& first = error.diagnostics().front();
        return {format_where_what(first), first.hint};
    }
    FAIL("no error for: " << yaml);
    return {};
}

// Every verdict of one answered step, row by row.
std::vector<Verdict> verdicts(const Model& model, const Trace& trace, const std::string& yaml) {
    const Answers answers = answers_from(yaml, trace);
    const CheckReport report = check_answers(model, trace, answers, {});
    REQUIRE(report.steps.size() == 1);
    REQUIRE(report.steps[0].shape_ok);
    std::vector<Verdict> result;
    for (const auto& cell : report.steps[0].cells) {
        result.push_back(cell.verdict);
    }
    return result;
}

// An answers file in the temporary folder, removed with the object.
struct AnswerFile {
    std::filesystem::path path;
    explicit AnswerFile(const std::string& text) {
        static int count = 0;
        path = std::filesystem::temp_directory_path() /
               ("qkv-answers-input-" + std::to_string(::getpid()) + "-" + std::to_string(++count) + ".yaml");
        std::ofstream(path) << text;
    }
    ~AnswerFile() { std::filesystem::remove(path); }
};

}  // namespace

// ── one head ────────────────────────────────────────────────────────────────

TEST_CASE("answers for a second head of a one-head example say there is one head", "[check][errors]") {
    const Trace trace = test::compute_text(k_negative_model);
    const auto [error, hint] = answer_error(trace, "heads: [{scores: [[-1, 0], ~]}, {scores: [[-1, 0], ~]}]\n");
    CHECK(error == "answers.yaml:1:33: heads[2] does not exist: this example has one head");
    CHECK(hint == "write its steps without a head number, e.g. scores: [[...], ...] at the top level of the file");
    CHECK(hint.find("1 to 1") == std::string::npos);
}

// ── quoted numbers ──────────────────────────────────────────────────────────

TEST_CASE("a number in quotes is text, refused at its position", "[check][errors]") {
    const Trace trace = test::compute_text(k_negative_model);
    const auto [name, yaml, where_what, hint] = GENERATE(table<std::string, std::string, std::string, std::string>({
        {"double quotes", "scores: [[\"1\", 0], ~]\n", "answers.yaml:1:11: scores[1,1] is \"1\" in quotes",
         "write 1 without quotes: quoted, it is text"},
        {"single quotes", "output: [[0.27, '-1.27'], ~]\n", "answers.yaml:1:17: output[1,2] is \"-1.27\" in quotes",
         "write -1.27 without quotes"},
        {"a !!str tag", "scores: [[!!str 1, 0], ~]\n", "answers.yaml:1:11: scores[1,1] is \"1\" in quotes",
         "write 1 without quotes"},
        {"a quoted ~", "scores: [[-1, \"~\"], ~]\n", "answers.yaml:1:15: scores[1,2] is \"~\" in quotes",
         "write ~ without quotes"},
        {"a quoted -inf", "scores: [['-inf', 0], ~]\n", "answers.yaml:1:11: scores[1,1] is \"-inf\" in quotes",
         "write -inf without quotes"},
    }));
    CAPTURE(name, yaml);
    const auto [error, error_hint] = answer_error(trace, yaml);
    CHECK_THAT(error, Contains(where_what));
    CHECK_THAT(error_hint, Contains(hint));
}

// ── a typeset minus ─────────────────────────────────────────────────────────

TEST_CASE("a typeset minus (U+2212) reads as a minus sign and keeps its text", "[check]") {
    const Model model = test::load_text(k_negative_model);
    const Trace trace = compute(model);
    // from the hand calculation above k_negative_model
    const Answers answers = answers_from("scores: [[−1, 0], ~]\noutput: [[0.27, −1.27], ~]\n", trace);
    REQUIRE(answers.steps.size() == 2);
    const AnswerCell& score = answers.steps[0].at(0, 0);
    CHECK(score.value == -1.0);
    CHECK(score.decimals == 0);
    CHECK(score.text == "−1");
    const AnswerCell& output = answers.steps[1].at(0, 1);
    CHECK_THAT(output.value, WithinAbs(-1.27, 1e-12));
    CHECK(output.decimals == 2);
    CHECK(output.text == "−1.27");
}

TEST_CASE("an answer with a typeset minus is graded as the same answer with '-'", "[check]") {
    const Model model = test::load_text(k_negative_model);
    const Trace trace = compute(model);
    // output row 1 is [0.268941, -1.268941] (see k_negative_model): -1.27 is right, -1.26 is wrong
    for (const std::string minus : {"-", "−"}) {
        CAPTURE(minus);
        CHECK(verdicts(model, trace, "output: [[0.27, " + minus + "1.27], ~]\n") ==
              std::vector<Verdict>{Verdict::right, Verdict::right});
        CHECK(verdicts(model, trace, "output: [[0.27, " + minus + "1.26], ~]\n") ==
              std::vector<Verdict>{Verdict::right, Verdict::wrong});
        CHECK(verdicts(model, trace, "scores: [[" + minus + "1, 0], [0, 1]]\n") ==
              std::vector<Verdict>(4, Verdict::right));
    }
}

TEST_CASE("a blocked score may be written −inf, −.inf or −∞ with a typeset minus", "[check]") {
    const Trace trace = test::compute_text(test::read_repo_file("examples/homework/three-words/model.yaml"));
    const Answers answers = answers_from("masked_scores: [[1.15, −inf, −∞], [~, ~, −.inf], ~]\n", trace);
    REQUIRE(answers.steps.size() == 1);
    const StepAnswer& masked = answers.steps[0];
    for (const auto& [row, col, text] : {std::tuple{0, 1, "−inf"}, {0, 2, "−∞"}, {1, 2, "−.inf"}}) {
        CAPTURE(text);
        CHECK(masked.at(row, col).value == -std::numeric_limits<double>::infinity());
        CHECK(masked.at(row, col).text == text);
    }
    // +∞ stays refused however its sign is written
    const auto [error, hint] = answer_error(trace, "masked_scores: [[1.15, ∞, −∞], ~, ~]\n");
    CHECK_THAT(error, Contains("answers.yaml:1:24: masked_scores[1,2] is \"∞\"; expected a finite number"));
    CHECK_THAT(hint, Contains("only -inf is allowed"));
}

TEST_CASE("check's JSON gives a typeset minus as a number", "[cli][check][json]") {
    // the illustrated article's scores are all positive: −2 is a wrong answer, given as the number -2
    const AnswerFile wrong("scores: [[−2, 4, 4], ~, ~]\n");
    const auto result = test::run_qkv({"check", "illustrated", "--answers", wrong.path.string(), "-f", "json"});
    INFO(result.err);
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    const auto& cell = doc["steps"][0]["cells"][0];
    REQUIRE(cell["given"].is_number());
    CHECK(cell["given"].get<double>() == -2.0);
    CHECK(cell["verdict"] == "wrong");

    // the backward example's grad_scaled_scores row 3 is [-0.2806, 0.2829, -0.0023] (`qkv run backward -p 4`)
    const AnswerFile right("grad_scaled_scores: [~, ~, [−0.28, 0.28, −0.00]]\n");
    const auto graded = test::run_qkv({"check", "backward", "--answers", right.path.string(), "-f", "json"});
    INFO(graded.err);
    CHECK(graded.status == 0);
    const auto cells = nlohmann::json::parse(graded.out)["steps"][0]["cells"];
    REQUIRE(cells.size() == 3);
    REQUIRE(cells[0]["given"].is_number());
    CHECK(cells[0]["given"].get<double>() == -0.28);
    for (const auto& each : cells) {
        CHECK(each["verdict"] == "right");
    }
}

// ── arithmetic ──────────────────────────────────────────────────────────────

TEST_CASE("an answer written as a fraction or an expression is graded as its value", "[check]") {
    const Model model = test::load_text(k_negative_model);
    const Trace trace = compute(model);
    // weights row 1 is [1/(1+e), e/(1+e)] = [0.268941, 0.731059] (see k_negative_model)
    const Answers answers = answers_from("weights: [[1/(1+e), exp(1)/(1+exp(1))], [0.2689*1, 1 - 0.2689]]\n", trace);
    REQUIRE(answers.steps.size() == 1);
    const AnswerCell& exact = answers.steps[0].at(0, 0);
    CHECK(exact.expression);
    CHECK(exact.text == "1/(1+e)");
    CHECK_THAT(exact.value, WithinAbs(0.2689414213699951, 1e-15));
    CHECK(exact.decimals == 0);  // runs on: only its exact value counts
    CHECK(answers.steps[0].at(1, 1).decimals == 4);
    // row 2, softmax([0, 1]), is row 1 again: the first row exact, the second from 4 decimals
    CHECK(verdicts(model, trace, "weights: [[1/(1+e), exp(1)/(1+exp(1))], [0.2689*1, 1 - 0.2689]]\n") ==
          std::vector<Verdict>(4, Verdict::right));
    CHECK(verdicts(model, trace, "weights: [[1/(1+e), 1/2], [1 - 0.2689, 0.2689*1]]\n") ==
          std::vector<Verdict>{Verdict::right, Verdict::wrong, Verdict::wrong, Verdict::wrong});
    // a plain number stays a number
    CHECK_FALSE(answers_from("weights: [[0.27, 0.73], ~]\n", trace).steps[0].at(0, 0).expression);
}

TEST_CASE("check's report shows an expression with its value", "[cli][check]") {
    // weights[1,1] of the illustrated article is 0.0634: 2/10 is row 1's scores divided by their sum
    const auto result = test::run_qkv({"check", "illustrated", "--answers", "-"}, "weights: [[2/10, 4/10, 4/10], ~, ~]\n");
    INFO(result.err);
    CHECK(result.status == 1);
    CHECK_THAT(result.out, Contains("weights[1,1]: you wrote 2/10 = 0.2;"));
    CHECK_THAT(result.out, Contains("exponentiat"));
    const auto json = test::run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"},
                                    "weights: [[2/10, ~, ~], ~, ~]\n");
    const auto cell = nlohmann::json::parse(json.out)["steps"][0]["cells"][0];
    CHECK(cell["given"].get<double>() == 0.2);
    CHECK(cell["given_text"] == "2/10");
}

TEST_CASE("what is neither a number nor arithmetic is refused with a hint that names both", "[check][errors]") {
    const Trace trace = test::compute_text(k_negative_model);
    const auto [error, hint] = answer_error(trace, "weights: [[1/(1+, 0.73], ~]\n");
    CHECK(error == "answers.yaml:1:12: weights[1,1] is \"1/(1+\"; expected a number");
    CHECK_THAT(hint, Contains("2/10"));
    const auto [comma, comma_hint] = answer_error(trace, "weights:\n  - - 0,27*1\n    - 0.73\n  - ~\n");
    CHECK_THAT(comma, Contains("weights[1,1] is \"0,27*1\"; expected a number"));
    CHECK(comma_hint == "write 0.27, not 0,27");
}

// ── decimal commas ──────────────────────────────────────────────────────────

TEST_CASE("decimals written with commas are an input error at their row", "[check][errors]") {
    const Trace trace = test::compute_text(k_negative_model);
    SECTION("a row of the brief's example: two columns, four numbers") {
        const auto [error, hint] = answer_error(trace, "weights: [[0,27, 0,73], ~]\n");
        CHECK(error == "answers.yaml:1:11: weights row 1 has 4 numbers where weights has 2 columns: \"0,27\" reads "
                       "as two numbers; expected decimals written with a point");
        CHECK(hint == "write 0.27, not 0,27");
    }
    SECTION("with a sign, a typeset minus and a left-out cell") {
        const auto [error, hint] = answer_error(trace, "output: [[~, −1,27], ~]\n");
        CHECK_THAT(error, Contains("answers.yaml:1:10: output row 1 has 3 numbers where output has 2 columns: "
                                   "\"−1,27\" reads as two numbers"));
        CHECK(hint == "write −1.27, not −1,27");
    }
    SECTION("a flat list read as one row") {
        const auto [error, hint] = answer_error(trace, "output: [0,27, -1,27]\n");
        CHECK_THAT(error, Contains("answers.yaml:1:9: output has 4 numbers where output has 2 columns"));
        CHECK(hint == "write 0.27, not 0,27");
    }
    SECTION("a row written as lines: the comma stays in one word") {
        const auto [error, hint] = answer_error(trace, "weights:\n  - - 0,27\n    - 0.73\n  - ~\n");
        CHECK(error == "answers.yaml:2:7: weights[1,1] is \"0,27\"; expected a number written with a point");
        CHECK(hint == "write 0.27, not 0,27");
    }
}

TEST_CASE("numbers separated by commas without spaces are still numbers when the row has the right length", "[check]") {
    const Model model = test::load_text(k_negative_model);
    const Trace trace = compute(model);
    // scores are [[-1, 0], [0, 1]] (see k_negative_model)
    CHECK(verdicts(model, trace, "scores: [[-1,0], [0,1]]\n") == std::vector<Verdict>(4, Verdict::right));
    // a row too long that does not read as decimals ([1,0,1] for two columns) is a wrong shape, not an input error
    const Answers answers = answers_from("scores: [[-1,0,1], [0,1,1]]\n", trace);
    const CheckReport report = check_answers(model, trace, answers, {});
    REQUIRE(report.steps.size() == 1);
    CHECK_FALSE(report.steps[0].shape_ok);
}

TEST_CASE("the illustrated article's keys written [0,1,1] are graded, not refused", "[cli][check]") {
    // keys row 1 of the illustrated article is [0, 1, 1] (its step 3)
    const auto right = test::run_qkv({"check", "illustrated", "--answers", "-"}, "keys: [[0,1,1], ~, ~]\n");
    INFO(right.err);
    CHECK(right.status == 0);
    CHECK(right.out.find("3 answered: 3 right.") != std::string::npos);
    // four numbers for three columns, not decimals: the wrong shape (exit 1), as before
    const auto long_row = test::run_qkv({"check", "illustrated", "--answers", "-"}, "keys: [[0,1,1,1], ~, ~]\n");
    CHECK(long_row.status == 1);
    CHECK(long_row.err.empty());
    CHECK(long_row.out.find("Your answer is 3 × 4; keys is 3 × 3.") != std::string::npos);
}

// ── files that hold no answers ──────────────────────────────────────────────

TEST_CASE("answer files without answers say where, and why", "[check][errors]") {
    const Trace trace = test::compute_text(k_negative_model);
    const auto [name, yaml, where_what, hint] = GENERATE(table<std::string, std::string, std::string, std::string>({
        {"empty", "", "answers.yaml:1:1: the answer file is empty", "write your values under step ids"},
        {"blank lines", "\n  \n", "answers.yaml:1:1: the answer file is empty", "write your values under step ids"},
        {"only comments", "# my answers\n\n# to come\n", "answers.yaml:1:1: the answer file holds only comments",
         "write your values under step ids"},
        {"an empty map", "answers: {}\n", "answers.yaml:1:10: answers is an empty map", "answers: {scores:"},
        {"an empty top level", "{}\n", "answers.yaml:1:1: the answer file is an empty map", "scores: [[2, 4, 4]"},
        {"answers: and nothing", "# mine\nanswers:\n", "answers.yaml:2:1: answers is empty", "answers: {scores:"},
        {"the example file", k_negative_model, "answers.yaml:3:1: this looks like an example file (it has weights:)",
         "add answers: with your values"},
        {"an example's heads", "inputs: [[1, 0], [0, 1]]\nheads:\n  - {query: [[1]], key: [[1]], value: [[1]]}\n",
         "answers.yaml:2:1: this looks like an example file (it has heads:)", "or give --answers a separate file"},
        {"an example's settings", "scores: [[-1, 0], ~]\nscale: none\n",
         "answers.yaml:2:1: this looks like an example file (it has scale:)", "step ids"},
    }));
    CAPTURE(name, yaml);
    const auto [error, error_hint] = answer_error(trace, yaml);
    CHECK_THAT(error, Contains(where_what));
    CHECK_THAT(error_hint, Contains(hint));
}

TEST_CASE("answers to the inputs step are answers, not a sign of an example file", "[check]") {
    const Model model = test::load_text(k_negative_model);
    const Trace trace = compute(model);
    CHECK(verdicts(model, trace, "inputs: [[1, 0], ~]\n") == std::vector<Verdict>{Verdict::right, Verdict::right});
}

TEST_CASE("the example file given with --answers is refused with its position", "[cli][check][errors]") {
    // the example's own file, as `qkv check model.yaml --answers model.yaml` reads it
    const AnswerFile example(k_negative_model);
    const std::string path = example.path.string();
    const auto result = test::run_qkv({"check", path, "--answers", path});
    test::require_input_error(result, path + ":3:1: this looks like an example file (it has weights:), not answers");
    CHECK(result.err.find("hint: add answers: with your values under step ids to it, or give --answers a separate "
                          "file of step ids") != std::string::npos);
}
