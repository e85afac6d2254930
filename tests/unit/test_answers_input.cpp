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

Answers answers_from(const std::string& yaml, const Trace& trace) {
    return read_answers({"answers.yaml", yaml, ""}, trace, AnswersIn::answer_file);
}

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
