// Grading as a marker does (the check command in man/qkv.1.in): the exercise's precision, error carried
// forward at the learner's precision, points, a class at once, a gradebook,
// Gradescope's results.json and short feedback. The model is the three-words
// homework (examples/homework/three-words/model.yaml): 3 tokens, d_k = 3, a
// causal mask; its true weights are [[1, 0, 0], [0.6405, 0.3595, 0],
// [0.1018, 0.3230, 0.5752]] (worked in its right.yaml).
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using qkv::test::CliResult;
using qkv::test::CliRun;
using qkv::test::run_qkv;
using Catch::Matchers::Contains;

namespace {

const std::string k_model = "examples/homework/three-words/model.yaml";

CliResult run_in_repo(const std::vector<std::string>& args, const std::string& input = "") {
    CliRun run;
    run.args = args;
    run.input = input;
    run.cwd = qkv::test::source_dir();
    return qkv::test::run_qkv(run);
}

// The no-exp mistake in the weights, written with two decimals (0.6667 → 0.67).
const std::string k_no_exp_weights = R"(answers:
  weights:
    - [1.00, 0.00, 0.00]
    - [0.67, 0.33, 0.00]
    - [0.21, 0.36, 0.43]
)";

const nlohmann::json* find_step(const nlohmann::json& report, const std::string& id) {
    for (const auto& step : report["steps"]) {
        if (step["id"] == id) {
            return &step;
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("whole numbers count only where the true value is whole", "[cli][check][grading]") {
    // every weight written as 0 or 1: only the exact zeros and ones are right
    const std::string answers = "answers:\n  weights: [[1, 0, 0], [1, 0, 0], [0, 0, 1]]\n";
    const auto result = run_in_repo({"check", k_model, "--answers", "-", "-f", "json"}, answers);
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["correct"] == false);
    const auto& cells = (*find_step(doc, "weights"))["cells"];
    REQUIRE(cells.size() == 9);
    // row 1 is [1, 0, 0] exactly (the causal mask); row 2 [0.6405, 0.3595, 0]
    CHECK(cells[0]["verdict"] == "right");
    CHECK(cells[1]["verdict"] == "right");
    CHECK(cells[3]["verdict"] == "wrong");
    CHECK(cells[3]["given_text"] == "1");
    CHECK(cells[3]["expected_rounded"] == 0.6);  // at the one decimal asked for
    CHECK(cells[5]["verdict"] == "right");       // a blocked weight is 0 exactly

    // the text says why
    const auto text = run_in_repo({"check", k_model, "--answers", "-"}, answers);
    CHECK_THAT(text.out, Contains("weights[2,1]: you wrote 1, but the exercise asks for at least 1 decimal; the true "
                                  "value 0.6405 rounds to 0.6."));
    CHECK_THAT(text.out, Contains("write at least 1 decimal unless the value is exact"));
    // a step named with nothing given counts each of its cells blank, as ~ in a row does
    const auto blank = nlohmann::json::parse(
        run_in_repo({"check", k_model, "--answers", "-", "-f", "json"},
                    "answers:\n  scores: ~\n  weights: [[1, 0, 0], [0.6, 0.4, 0], ~]\n")
            .out);
    CHECK(blank["counts"]["blank"] == 9 + 3);
    CHECK(blank["counts"]["right"] == 6);
    // a number that is wrong at its own decimals too is simply wrong: 3 for 0.6405
    const auto wrong = run_in_repo({"check", k_model, "--answers", "-"},
                                   "answers:\n  weights: [[1, 0, 0], [3, 0, 0], [0, 0, 1]]\n");
    CHECK_THAT(wrong.out, Contains("weights[2,1]: you wrote 3; the true value 0.6405 rounds to 0.6."));
    CHECK_THAT(wrong.out, !Contains("weights[2,1]: you wrote 3, but"));

    // --decimals 0 lets a whole number stand for the value rounded to it: 0.6405 rounds to 1, 0.3230 to 0
    const auto whole = run_in_repo({"check", k_model, "--answers", "-", "--decimals", "0", "-f", "json"}, answers);
    CHECK(whole.status == 0);
    const auto whole_doc = nlohmann::json::parse(whole.out);
    const auto& graded = (*find_step(whole_doc, "weights"))["cells"];
    CHECK(graded[3]["verdict"] == "right");
    CHECK(graded[7]["verdict"] == "right");
    CHECK(graded[7]["expected_rounded"] == 0.0);
}

TEST_CASE("decimals: in the model asks for that many decimals, and --decimals overrides it", "[cli][check][grading]") {
    std::string model = qkv::test::read_repo_file(k_model);
    model += "decimals: 2\n";
    const qkv::test::TempFolder folder("class");
    const std::string model_path = folder.add("model.yaml", model);
    const std::string answers = folder.add("one-decimal.yaml", "answers:\n  weights: [[1.0, 0.0, 0.0], [0.6, 0.4, 0.0], ~]\n");
    const auto two = run_qkv({"check", model_path, "--answers", answers, "-f", "json"});
    CHECK(two.status == 1);
    const auto two_doc = nlohmann::json::parse(two.out);
    const auto& cells = (*find_step(two_doc, "weights"))["cells"];
    CHECK(cells[0]["verdict"] == "right");  // 1.0 is exact
    CHECK(cells[3]["verdict"] == "wrong");  // 0.6 for 0.6405 needs two decimals here
    CHECK(cells[3]["expected_rounded"] == 0.64);
    const auto one = run_qkv({"check", model_path, "--answers", answers, "--decimals", "1"});
    CHECK(one.status == 0);
}

TEST_CASE("an output computed from the learner's own unrounded weights follows from them", "[cli][check][grading]") {
    // The weights without exp, written with two decimals; the output worked out
    // from the unrounded 2/3 and 1/3, also with two decimals: 2.33, where the
    // rounded weights give 0.67·3 + 0.33·1 = 2.34.
    const std::string answers = k_no_exp_weights + R"(  output:
    - [3.00, 0.00, 3.00]
    - [2.67, 0.33, 2.33]
    - [1.79, 1.64, 1.86]
)";
    const auto result = run_in_repo({"check", k_model, "--answers", "-", "-f", "json"}, answers);
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["first_mistake"] == "weights");
    const auto& output = *find_step(doc, "output");
    CHECK(output["counts"] == nlohmann::json({{"right", 3}, {"wrong", 0}, {"consistent", 6}, {"blank", 0}}));
    CHECK(output["diagnosis_id"].is_null());
    CHECK((*find_step(doc, "weights"))["diagnosis_id"] == "softmax_no_exp");
    const auto text = run_in_repo({"check", k_model, "--answers", "-"}, answers);
    CHECK_THAT(text.out, Contains("6 follow from your weights (error carried forward)"));
}

TEST_CASE("a second mistake after a rounded first one is still named", "[cli][check][grading]") {
    // the same weights, then the output as Aᵀ·V from the unrounded weights
    const std::string answers = k_no_exp_weights + R"(  output:
    - [4.55, 1.31, 4.10]
    - [1.02, 1.40, 1.05]
    - [0.43, 1.29, 0.86]
)";
    const auto doc = nlohmann::json::parse(run_in_repo({"check", k_model, "--answers", "-", "-f", "json"}, answers).out);
    CHECK((*find_step(doc, "weights"))["diagnosis_id"] == "softmax_no_exp");
    CHECK((*find_step(doc, "output"))["diagnosis_id"] == "output_at_v");
    // the same numbers without any upstream rounding to allow for are a slip, not Aᵀ·V: none is named
    const std::string exact = R"(answers:
  output:
    - [4.55, 1.31, 4.10]
    - [1.02, 1.40, 1.05]
    - [0.43, 1.29, 0.86]
)";
    const auto alone = nlohmann::json::parse(run_in_repo({"check", k_model, "--answers", "-", "-f", "json"}, exact).out);
    CHECK((*find_step(alone, "output"))["counts"]["wrong"] == 9);
}

TEST_CASE("rounding alone carried forward is not called an error", "[cli][check][grading]") {
    const auto result = run_in_repo({"check", k_model, "--answers", "examples/homework/three-words/rounded.yaml"});
    CHECK(result.status == 0);
    CHECK_THAT(result.out, Contains("1 follows from the rounding in your scaled_scores."));
    CHECK_THAT(result.out, Contains("3 follow from the rounding in your weights."));
    CHECK_THAT(result.out, Contains("follow from the rounding in your earlier answers. No mistakes."));
    CHECK(result.out.find("error carried forward") == std::string::npos);
}

TEST_CASE("a transposed answer is not told to write ~ for a missing row", "[cli][check][grading]") {
    // the 3 × 4 inputs... keys are 3 × 3; values of two-heads are 3 × 2: give 2 × 3
    const auto result = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers", "-"},
                                    "answers:\n  heads:\n    - {values: [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]}\n");
    CHECK(result.status == 1);
    CHECK_THAT(result.out, Contains("Your answer is 2 × 3; values is 3 × 2. Rows are tokens: write one row per token."));
    CHECK(result.out.find("Write ~ for a row") == std::string::npos);
    CHECK_THAT(result.out, Contains("1 answer of the wrong shape (6 cells)"));
}

TEST_CASE("with --steps a mistake in an answer left out is said to be left out of the grading", "[cli][check][grading]") {
    // scaling forgotten in scaled_scores, graded only in the weights
    const auto all = run_in_repo({"check", k_model, "--answers", "examples/homework/three-words/mistake-no-scaling.yaml",
                                  "--steps", "weights"});
    CHECK(all.status == 1);
    CHECK_THAT(all.out, Contains("which --steps and --head leave out of the grading"));
    CHECK(all.out.find("which is not among your answers") == std::string::npos);
}

TEST_CASE("a rubric gives each step its points, in proportion to its right and consistent cells",
          "[cli][check][grading]") {
    const qkv::test::TempFolder folder("class");
    const std::string rubric = folder.add("rubric.yaml", "rubric: {weights: 3, output: 2, scores: 1}\n");
    // weights: 4 of 9 right (the no-exp mistake); output and scores not answered
    const auto result = run_in_repo({"check", k_model, "--answers", "-", "--rubric", rubric, "-f", "json"},
                                    k_no_exp_weights);
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    const auto& weights = *find_step(doc, "weights");
    CHECK(weights["max_score"] == 3.0);
    CHECK(weights["counts"]["right"] == 4);
    CHECK_THAT(weights["score"].get<double>(), Catch::Matchers::WithinAbs(3.0 * 4 / 9, 1e-12));
    CHECK(doc["max_score"] == 6.0);  // the unanswered output and scores count in the total
    CHECK_THAT(doc["score"].get<double>(), Catch::Matchers::WithinAbs(3.0 * 4 / 9, 1e-12));
    const auto text = run_in_repo({"check", k_model, "--answers", "-", "--rubric", rubric}, k_no_exp_weights);
    CHECK_THAT(text.out, Contains("Score: 1.33 of 6. Not answered: scores (1 point), output (2 points)."));

    // the same rubric in the model; a step it leaves out is graded but worth nothing
    const std::string model = folder.add("model.yaml", qkv::test::read_repo_file(k_model) + "rubric: {output: 2}\n");
    const auto in_model = run_qkv({"check", model, "--answers", "-", "-f", "json"}, k_no_exp_weights);
    const auto in_model_doc = nlohmann::json::parse(in_model.out);
    CHECK((*find_step(in_model_doc, "weights"))["max_score"] == 0.0);
    CHECK(in_model_doc["max_score"] == 2.0);
    CHECK(in_model_doc["score"] == 0.0);
}

TEST_CASE("a folder of answers grades a class, and a bad file does not stop the others", "[cli][check][grading]") {
    const qkv::test::TempFolder folder("class");
    folder.add("a-right.yaml", qkv::test::read_repo_file("examples/homework/three-words/right.yaml"));
    folder.add("b-no-exp.yaml", qkv::test::read_repo_file("examples/homework/three-words/mistake-no-exp.yaml"));
    folder.add("c-no-scaling.yml", qkv::test::read_repo_file("examples/homework/three-words/mistake-no-scaling.yaml"));
    folder.add("notes.txt", "not an answer file");

    // exit 1: a wrong answer, every file readable
    const auto json = run_in_repo({"check", k_model, "--answers", folder.path().string(), "-f", "json"});
    CHECK(json.status == 1);
    CHECK(json.err.empty());
    const auto doc = nlohmann::json::parse(json.out);
    CHECK(doc["schema_version"] == 1);
    REQUIRE(doc["reports"].size() == 3);
    CHECK(doc["reports"][0]["file"] == folder.path().string() + "/a-right.yaml");
    CHECK(doc["reports"][0]["correct"] == true);
    CHECK(doc["reports"][1]["first_mistake"] == "weights");
    CHECK(doc["reports"][2]["file"] == folder.path().string() + "/c-no-scaling.yml");
    CHECK(doc["summary"]["files"] == 3);
    CHECK(doc["summary"]["correct"] == 1);
    CHECK(doc["summary"]["mistakes"] == nlohmann::json({{"scaling_forgotten", 1}, {"softmax_no_exp", 1}}));

    // the gradebook
    const auto csv = run_in_repo({"check", k_model, "--answers", folder.path().string(), "-f", "csv"});
    CHECK(csv.status == 1);
    std::istringstream lines(csv.out);
    std::string line;
    std::getline(lines, line);
    CHECK(line == "file,score,max_score,correct,first_mistake,first_mistake_head,diagnoses");
    std::getline(lines, line);
    CHECK(line == folder.path().string() + "/a-right.yaml,8.0,8.0,true,,,");
    std::getline(lines, line);
    CHECK(line.ends_with(",false,weights,1,softmax_no_exp"));

    // text: the reports, then the class summary
    const auto text = run_in_repo({"check", k_model, "--answers", folder.path().string()});
    CHECK_THAT(text.out, Contains("Class summary\n3 files: 1 all right, 2 with mistakes."));
    CHECK_THAT(text.out, Contains("Commonest mistakes: scaling_forgotten (1 file), softmax_no_exp (1 file)."));
    // each step's tally, as a table: two of the three have weights without a mistake (one follows from a wrong scaling)
    CHECK_THAT(text.out, Contains("\n                │ without a mistake answered\n"));
    CHECK_THAT(text.out, Contains("\n  weights       │                 2        3\n"));

    // Markdown: the same, a rule between two reports, the tally a pipe table
    const auto markdown = run_in_repo({"check", k_model, "--answers", folder.path().string(), "-f", "markdown"});
    CHECK(markdown.status == 1);
    CHECK_THAT(markdown.out, Contains("\n---\n\n# Checking answers"));
    CHECK_THAT(markdown.out, Contains("\n# Class summary\n\n3 files: 1 all right, 2 with mistakes.\n\n"
                                      "|               | without a mistake | answered |\n"));
    CHECK_THAT(markdown.out, Contains("| weights       |                 2 |        3 |\n"));
    CHECK_THAT(markdown.out, Contains("Commonest mistakes: `scaling_forgotten` (1 file), `softmax_no_exp` (1 file).\n"));

    // exit 2 once a file cannot be read; the others are still graded
    folder.add("d-broken.yaml", "answers:\n  weights: [[1.0, 0.0\n");
    const auto broken = run_in_repo({"check", k_model, "--answers", folder.path().string(), "-f", "json"});
    CHECK(broken.status == 2);
    CHECK_THAT(broken.err, Contains("qkv: error: " + folder.path().string() + "/d-broken.yaml:"));
    const auto with_error = nlohmann::json::parse(broken.out);
    REQUIRE(with_error["reports"].size() == 4);
    CHECK(with_error["reports"][3]["error"].get<std::string>().starts_with("qkv: error: " + folder.path().string()));
    CHECK(with_error["summary"]["errors"] == 1);
    const auto gradebook = run_in_repo({"check", k_model, "--answers", folder.path().string(), "-f", "csv"});
    CHECK(gradebook.status == 2);
    CHECK_THAT(gradebook.out, Contains(folder.path().string() + "/d-broken.yaml,,,,,,\n"));
    // in a report, the file that could not be read under its name, and the summary counting it
    const auto unread = run_in_repo({"check", k_model, "--answers", folder.path().string(), "-f", "markdown"});
    CHECK(unread.status == 2);
    CHECK_THAT(unread.out, Contains("\n---\n\n# " + folder.path().string() + "/d-broken.yaml\n\n`qkv: error: " +
                                    folder.path().string() + "/d-broken.yaml:"));
    CHECK_THAT(unread.out, Contains("4 files: 1 all right, 2 with mistakes, 1 could not be read.\n"));

    // several --answers, and exit 0 when all are right
    const auto right = run_in_repo({"check", k_model, "--answers", "examples/homework/three-words/right.yaml",
                                    "--answers", "examples/homework/three-words/rounded.yaml", "-f", "csv"});
    CHECK(right.status == 0);
    CHECK(std::count(right.out.begin(), right.out.end(), '\n') == 3);
}

TEST_CASE("the model kept beside its answers is not graded as one of them", "[cli][check][grading]") {
    const auto result = run_in_repo({"check", k_model, "--answers", "examples/homework/three-words", "-f", "csv"});
    CHECK(result.status == 1);
    CHECK(result.err.empty());
    CHECK(result.out.find("/model.yaml,") == std::string::npos);
    CHECK_THAT(result.out, Contains("three-words/right.yaml,8.0,8.0,true,,,"));
}

TEST_CASE("the gradescope format is Gradescope's results.json, a test per step", "[cli][check][grading]") {
    const auto result = run_in_repo({"check", k_model, "--answers",
                                     "examples/homework/three-words/mistake-no-scaling.yaml", "-f", "gradescope"});
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["score"].is_number());
    CHECK(doc["output"].is_string());
    REQUIRE(doc["tests"].size() == 4);  // scores, scaled_scores, weights, output
    double total = 0;
    for (const auto& test : doc["tests"]) {
        for (const char* key : {"name", "score", "max_score", "status", "output"}) {
            CHECK(test.contains(key));
        }
        CHECK((test["status"] == "passed" || test["status"] == "failed"));
        total += test["score"].get<double>();
    }
    CHECK_THAT(doc["score"].get<double>(), Catch::Matchers::WithinAbs(total, 1e-12));
    const auto& scaled = doc["tests"][1];
    CHECK(scaled["name"] == "scaled_scores");
    CHECK(scaled["status"] == "failed");
    CHECK(scaled["score"] == 0.0);
    CHECK_THAT(scaled["output"].get<std::string>(), Contains("Mistake: Scaling forgotten"));
    CHECK(doc["tests"][0]["status"] == "passed");

    // with a rubric, its unanswered steps are tests worth nothing yet
    const qkv::test::TempFolder folder("class");
    const std::string rubric = folder.add("rubric.yaml", "queries: 2\nscores: 1\n");
    const auto graded = nlohmann::json::parse(
        run_in_repo({"check", k_model, "--answers", "examples/homework/three-words/mistake-no-scaling.yaml", "--rubric",
                     rubric, "-f", "gradescope"})
            .out);
    CHECK(graded["tests"][0]["name"] == "queries");
    CHECK(graded["tests"][0]["output"] == "Not answered.");
    CHECK(graded["tests"][0]["max_score"] == 2.0);
}

TEST_CASE("brief feedback shows only the steps with a mistake", "[cli][check][grading]") {
    const auto brief = run_in_repo({"check", k_model, "--answers",
                                    "examples/homework/three-words/mistake-no-scaling.yaml", "--brief"});
    CHECK(brief.status == 1);
    CHECK_THAT(brief.out, Contains("[scaled_scores]"));
    CHECK_THAT(brief.out, Contains("Mistake: Scaling forgotten"));
    CHECK(brief.out.find("[scores]") == std::string::npos);   // right
    CHECK(brief.out.find("[output]") == std::string::npos);   // follows from the weights
    CHECK_THAT(brief.out, Contains("Summary:"));
    const auto right = run_in_repo({"check", k_model, "--answers", "examples/homework/three-words/right.yaml", "--brief"});
    CHECK(right.status == 0);
    CHECK(right.out.find("Step ") == std::string::npos);
}

TEST_CASE("check --help lists the formats check writes", "[cli][check][grading]") {
    const auto help = qkv::test::run_qkv({"check", "--help"});
    CHECK_THAT(help.out, Contains("{text,markdown,latex,csv,json,html,gradescope}"));
    CHECK(help.out.find("svg") == std::string::npos);
    const auto lesson = qkv::test::run_qkv({"lesson", "--help"});
    CHECK_THAT(lesson.out, Contains("{text,markdown,latex,html}"));
}

TEST_CASE("the Markdown report says how many more wrong cells there are, as the text does", "[cli][check][grading]") {
    for (const std::string format : {"text", "markdown"}) {
        CAPTURE(format);
        const auto result = run_in_repo({"check", k_model, "--answers",
                                         "examples/homework/three-words/mistake-no-scaling.yaml", "-f", format});
        CHECK_THAT(result.out, Contains("… and 6 more wrong cells."));
    }
}
