// `qkv check` as a user runs it: the homework examples against golden files,
// the JSON contract of the check command in man/qkv.1.in, exit statuses, and input errors.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using qkv::test::check_golden;
using qkv::test::CliRun;
using qkv::test::require_input_error;
using qkv::test::k_illustrated_answers;
using qkv::test::run_qkv;

namespace {

// Runs qkv from the repository's root, so that paths in reports read as a user types them.
qkv::test::CliResult run_in_repo(const std::vector<std::string>& args, const std::string& input = "") {
    CliRun run;
    run.args = args;
    run.input = input;
    run.cwd = qkv::test::source_dir();
    return run_qkv(run);
}

// Numbers within 1e-12 (BLAS may differ in the last bits), everything else exactly.
void compare_json(const nlohmann::json& got, const nlohmann::json& expected, const std::string& path) {
    if (expected.is_number() && got.is_number()) {
        const double e = expected.get<double>();
        const double g = got.get<double>();
        if (!(std::fabs(g - e) <= 1e-12 * std::max(1.0, std::fabs(e)))) {
            FAIL(path << " is " << g << "; expected " << e);
        }
        return;
    }
    if (expected.type() != got.type() || expected.size() != got.size()) {
        FAIL(path << " is " << got.dump() << "; expected " << expected.dump());
    }
    if (expected.is_object()) {
        for (auto it = expected.begin(); it != expected.end(); ++it) {
            if (!got.contains(it.key())) {
                FAIL(path << "." << it.key() << " is missing");
            }
            compare_json(got[it.key()], it.value(), path + "." + it.key());
        }
    } else if (expected.is_array()) {
        for (std::size_t i = 0; i < expected.size(); ++i) {
            compare_json(got[i], expected[i], path + "[" + std::to_string(i) + "]");
        }
    } else if (expected != got) {
        FAIL(path << " is " << got.dump() << "; expected " << expected.dump());
    }
}

void check_json_golden(const std::string& name, const std::string& actual) {
    const char* update = std::getenv("QKV_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1") {
        check_golden(name, actual);
        return;
    }
    compare_json(nlohmann::json::parse(actual), nlohmann::json::parse(qkv::test::read_repo_file("tests/golden/" + name)),
                 "$");
    SUCCEED(name << " agrees");
}

struct Homework {
    std::string name;     // golden name: check-FOLDER or check-FOLDER-FILE
    std::string model;    // relative to the repository
    std::string answers;  // relative to the repository; empty: the model's own answers
};

// Every answer file under examples/homework/FOLDER/ against that folder's model.yaml,
// and each model.yaml that holds answers of its own.
std::vector<Homework> homework() {
    namespace fs = std::filesystem;
    std::vector<Homework> all;
    const fs::path root = fs::path(qkv::test::source_dir()) / "examples" / "homework";
    for (const auto& folder : fs::directory_iterator(root)) {
        if (!folder.is_directory()) {
            continue;
        }
        const std::string name = folder.path().filename().string();
        const std::string model = "examples/homework/" + name + "/model.yaml";
        if (qkv::test::read_repo_file(model).find("\nanswers:") != std::string::npos) {
            all.push_back({"check-" + name, model, ""});
        }
        for (const auto& file : fs::directory_iterator(folder.path())) {
            const std::string file_name = file.path().filename().string();
            if (file_name == "model.yaml" || file.path().extension() != ".yaml") {
                continue;
            }
            all.push_back({"check-" + name + "-" + file.path().stem().string(), model,
                           "examples/homework/" + name + "/" + file_name});
        }
    }
    std::sort(all.begin(), all.end(), [](const Homework& a, const Homework& b) { return a.name < b.name; });
    return all;
}

std::vector<std::string> check_args(const Homework& h) {
    std::vector<std::string> args = {"check", h.model};
    if (!h.answers.empty()) {
        args.insert(args.end(), {"--answers", h.answers});
    }
    return args;
}

}  // namespace

TEST_CASE("every homework answer file's report matches its golden file", "[cli][check][golden]") {
    const auto files = homework();
    REQUIRE(files.size() >= 16);
    for (const auto& h : files) {
        CAPTURE(h.name);
        const auto result = run_in_repo(check_args(h));
        CHECK(result.err.empty());
        const bool all_right = h.name.find("-mistake-") == std::string::npos && h.name != "check-how-are-you";
        // exit 0 when every answer is right (following from earlier answers counts), 1 otherwise
        CHECK(result.status == (all_right ? 0 : 1));
        // every file of a classic mistake gets that mistake named
        CHECK((result.out.find("\n  Mistake: ") != std::string::npos) == !all_right);
        check_golden(h.name + ".txt", result.out);
    }
}

TEST_CASE("the JSON report of the homework matches its golden files", "[cli][check][golden][json]") {
    for (const auto& h : homework()) {
        if (h.name != "check-three-words-right" && h.name != "check-three-words-rounded" &&
            h.name != "check-three-words-mistake-no-transpose" && h.name != "check-two-heads-mistake-heads-averaged" &&
            h.name != "check-how-are-you") {
            continue;
        }
        CAPTURE(h.name);
        auto args = check_args(h);
        args.insert(args.end(), {"--format", "json"});
        const auto result = run_in_repo(args);
        CHECK(result.err.empty());
        check_json_golden(h.name + ".json", result.out);
    }
}

TEST_CASE("the Markdown report matches its golden file", "[cli][check][golden]") {
    const auto result = run_in_repo({"check", "examples/homework/three-words/model.yaml", "--answers",
                                     "examples/homework/three-words/mistake-mask-zero.yaml", "-f", "markdown"});
    CHECK(result.status == 1);
    check_golden("check-three-words-mistake-mask-zero.md", result.out);
}

TEST_CASE("the illustrated article's answers: a wrong weight, and an output that follows from it", "[cli][check]") {
    const auto text = run_qkv({"check", "illustrated", "--answers", "-"}, k_illustrated_answers);
    CHECK(text.status == 1);
    CHECK(text.err.empty());
    check_golden("check-illustrated.txt", text.out);

    const auto json = run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"}, k_illustrated_answers);
    CHECK(json.status == 1);
    check_json_golden("check-illustrated.json", json.out);
    const auto doc = nlohmann::json::parse(json.out);
    CHECK(doc["first_mistake"] == "weights");
    const auto& weights = doc["steps"][2];
    REQUIRE(weights["id"] == "weights");
    CHECK(weights["cells"][0]["verdict"] == "wrong");
    CHECK(weights["cells"][0]["given"] == 0.0);
    CHECK(weights["cells"][0]["given_text"] == "0.0");
    CHECK(weights["cells"][0]["expected_rounded"] == 0.1);
    // from the illustrated article, step 5 (PyTorch's printout): 6.3379e-02
    CHECK_THAT(weights["cells"][0]["expected"].get<double>(), Catch::Matchers::WithinAbs(0.063379, 5e-7));
    const auto& output = doc["steps"][3];
    REQUIRE(output["cells"].size() == 3);
    for (const auto& cell : output["cells"]) {
        CHECK(cell["verdict"] == "consistent");
        CHECK(cell["row"] == 1);
    }
}

TEST_CASE("the check JSON follows the contract of the man page", "[cli][check][json]") {
    const auto result = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers",
                                     "examples/homework/two-heads/mistake-heads-averaged.yaml", "--format", "json"});
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    std::vector<std::string> keys;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        keys.push_back(it.key());
    }
    std::sort(keys.begin(), keys.end());
    CHECK(keys == std::vector<std::string>{"correct", "counts", "first_mistake", "first_mistake_head", "max_score",
                                           "schema_version", "score", "steps"});
    CHECK(doc["schema_version"] == 1);
    CHECK(doc["correct"] == false);
    CHECK(doc["first_mistake"] == "concat");
    CHECK(doc["first_mistake_head"].is_null());  // concat is not per head
    // two heads' weights right (9 cells each), concat of the wrong shape (12 cells, none graded)
    CHECK(doc["counts"] == nlohmann::json({{"right", 12}, {"wrong", 0}, {"consistent", 0}, {"blank", 12}}));
    CHECK(doc["max_score"] == 3.0);  // no rubric: one point per answered step
    CHECK(doc["score"] == 2.0);
    REQUIRE(doc["steps"].size() == 3);
    for (const auto& step : doc["steps"]) {
        std::vector<std::string> step_keys;
        for (auto it = step.begin(); it != step.end(); ++it) {
            step_keys.push_back(it.key());
        }
        std::sort(step_keys.begin(), step_keys.end());
        CHECK(step_keys == std::vector<std::string>{"cells", "counts", "diagnosis", "diagnosis_id", "head", "id",
                                                    "max_score", "score", "shape_expected", "shape_given"});
        for (const auto& cell : step["cells"]) {
            CHECK(cell.size() == 9);
            for (const char* key : {"row", "col", "given", "given_text", "expected", "expected_rounded", "verdict",
                                    "diagnosis", "diagnosis_id"}) {
                CHECK(cell.contains(key));
            }
        }
    }
    CHECK(doc["steps"][0]["head"] == 1);
    CHECK(doc["steps"][1]["head"] == 2);
    // the wrong shape: no cells, both shapes in the diagnosis, and the mistake named
    const auto& concat = doc["steps"][2];
    CHECK(concat["head"].is_null());
    CHECK(concat["cells"].empty());
    CHECK(concat["shape_given"] == nlohmann::json({3, 2}));
    CHECK(concat["shape_expected"] == nlohmann::json({3, 4}));
    CHECK(concat["diagnosis_id"] == "heads_averaged");
    CHECK(concat["score"] == 0.0);
    const std::string diagnosis = concat["diagnosis"];
    CHECK(diagnosis.find("3 × 2") != std::string::npos);
    CHECK(diagnosis.find("3 × 4") != std::string::npos);
    CHECK(diagnosis.find("averaged instead of concatenated") != std::string::npos);

    const auto right = nlohmann::json::parse(run_in_repo({"check", "examples/homework/two-heads/model.yaml",
                                                          "--answers", "examples/homework/two-heads/right.yaml", "-f",
                                                          "json"})
                                                 .out);
    CHECK(right["correct"] == true);
    CHECK(right["first_mistake"].is_null());
    CHECK(right["steps"][0]["diagnosis"].is_null());
    CHECK(right["steps"][0]["diagnosis_id"].is_null());
    CHECK(right["score"] == right["max_score"]);
}

TEST_CASE("blocked cells are given and expected as -inf in the JSON", "[cli][check][json]") {
    const auto result = run_in_repo({"check", "examples/homework/three-words/model.yaml", "--answers",
                                     "examples/homework/three-words/right.yaml", "-f", "json", "-s", "masked_scores"});
    CHECK(result.status == 0);
    const auto doc = nlohmann::json::parse(result.out);
    REQUIRE(doc["steps"].size() == 1);
    CHECK(doc["steps"][0]["cells"][1]["given"] == "-inf");
    CHECK(doc["steps"][0]["cells"][1]["expected"] == "-inf");
    CHECK(doc["steps"][0]["cells"][1]["verdict"] == "right");
}

TEST_CASE("the --tolerance option: grades against an absolute tolerance", "[cli][check]") {
    // weights[1,1] = 0.0634 is within 0.07 of the article's 0.0; its output row still only follows from its weights
    const auto result = run_qkv({"check", "illustrated", "--answers", "-", "--tolerance", "0.07", "-f", "json"},
                                k_illustrated_answers);
    CHECK(result.status == 0);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["correct"] == true);
    CHECK(doc["steps"][2]["cells"][0]["verdict"] == "right");
    CHECK(doc["steps"][3]["cells"][1]["verdict"] == "consistent");
    const auto text = run_qkv({"check", "illustrated", "--answers", "-", "--tolerance", "0.07"}, k_illustrated_answers);
    CHECK(text.out.find("within 0.07") != std::string::npos);
    require_input_error(run_qkv({"check", "illustrated", "--tolerance", "-1"}), "--tolerance");
}

TEST_CASE("the --steps and --head options choose which answers are graded", "[cli][check]") {
    const auto only_scores = run_qkv({"check", "illustrated", "--answers", "-", "-s", "scores"}, k_illustrated_answers);
    CHECK(only_scores.status == 0);
    CHECK(only_scores.out.find("[scores]") != std::string::npos);
    CHECK(only_scores.out.find("[weights]") == std::string::npos);
    const auto head_2 = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers",
                                     "examples/homework/two-heads/right.yaml", "--head", "2"});
    CHECK(head_2.status == 0);
    CHECK(head_2.out.find("head 1") == std::string::npos);
    CHECK(head_2.out.find("head 2") != std::string::npos);
    require_input_error(run_qkv({"check", "illustrated", "--answers", "-", "-s", "values"}, k_illustrated_answers),
                        "none of the answers is in the steps chosen");
}

TEST_CASE("the model file's own answers are checked when --answers is not given", "[cli][check]") {
    const auto result = run_in_repo({"check", "examples/homework/how-are-you/model.yaml"});
    CHECK(result.status == 1);
    CHECK(result.out.find("The scores were computed as Q·K, without transposing K.") != std::string::npos);
    // the same from standard input
    const auto piped = run_qkv({"check", "-"}, qkv::test::read_repo_file("examples/homework/how-are-you/model.yaml"));
    CHECK(piped.status == 1);
    CHECK(piped.out.find("Answers from <stdin>.") != std::string::npos);
}

TEST_CASE("check reports in ASCII and in colour when asked", "[cli][check]") {
    const auto ascii = run_qkv({"check", "illustrated", "--answers", "-", "--ascii"}, k_illustrated_answers);
    CHECK(ascii.status == 1);
    for (const char c : ascii.out) {
        if (static_cast<unsigned char>(c) >= 0x80) {
            FAIL("non-ASCII byte in --ascii output");
        }
    }
    CHECK(ascii.out.find("0.0 X [0.1]") != std::string::npos);
    const auto plain = run_qkv({"check", "illustrated", "--answers", "-"}, k_illustrated_answers);
    CHECK(plain.out.find('\x1b') == std::string::npos);
    const auto colour = run_qkv({"check", "illustrated", "--answers", "-", "--color", "always"}, k_illustrated_answers);
    CHECK(colour.out.find("\x1b[31m✗") != std::string::npos);
}

TEST_CASE("check writes its report to a file and still exits 1 on a mistake", "[cli][check]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / ("qkv-check-" + std::to_string(::getpid()));
    fs::create_directories(folder);
    const std::string out = (folder / "report.json").string();
    const auto result = run_qkv({"check", "illustrated", "--answers", "-", "-f", "json", "-o", out}, k_illustrated_answers);
    CHECK(result.status == 1);
    CHECK(result.out.empty());
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(nlohmann::json::parse(text)["first_mistake"] == "weights");
    fs::remove_all(folder);
}

TEST_CASE("bad input to check is exit 2 with the one-line error", "[cli][check][errors]") {
    // a number that is not one, with its position (line 2, column 19: after "  scores: [[2, 4, ")
    require_input_error(run_qkv({"check", "illustrated", "--answers", "-"}, "answers:\n  scores: [[2, 4, 4x], ~, ~]\n"),
                        "<stdin>:2:19: answers.scores[1,3] is \"4x\"; expected a number");
    require_input_error(run_qkv({"check", "illustrated", "--answers", "-"}, "answers:\n  weight: [[1]]\n"),
                        "<stdin>:2:3: unknown step id answers.weight");
    require_input_error(run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers", "-"},
                                    "heads: [~, ~, {scores: [[1]]}]\n"),
                        "heads[3] does not exist: this example has 2 heads");
    require_input_error(run_qkv({"check", "illustrated"}), "builtin:illustrated: has no answers to check");
    require_input_error(run_qkv({"check", "illustrated", "--answers", "no-such-file.yaml"}),
                        "no-such-file.yaml: no such answer file");
    require_input_error(run_qkv({"check", "-", "--answers", "-"}), "cannot both be read from standard input");
    require_input_error(run_qkv({"check", "illustrated", "--answers", "-", "-f", "svg"}, k_illustrated_answers),
                        "--format svg is not available for check");
    require_input_error(run_qkv({"check"}), "file is required");
    require_input_error(run_qkv({"check", "illustrated", "--answers", "-"}, "answers: [[1, 2]\n"), "<stdin>:");
}

// ── QA fixes ────────────────────────────────────────────────────────────────

TEST_CASE("check names heads averaged from a concat answer alone", "[cli][check]") {
    // the two-heads head outputs at two decimals (right.yaml) averaged by hand: see test_check.cpp
    const auto result = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers", "-"},
                                    "concat: [[1.53, 1.60], [1.49, 1.63], [1.66, 1.80]]\n");
    CHECK(result.status == 1);
    CHECK(result.err.empty());
    CHECK(result.out.find("Your answer is 3 × 2; concat is 3 × 4.") != std::string::npos);
    CHECK(result.out.find("Mistake: The heads were averaged instead of concatenated.") != std::string::npos);
    // one notation for the heads: subscripts in the text report, as in `qkv run`
    CHECK(result.out.find("Correct: concat = [Z₁ Z₂]") != std::string::npos);
    const auto ascii = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers", "-", "--ascii"},
                                   "concat: [[1.53, 1.60], [1.49, 1.63], [1.66, 1.80]]\n");
    CHECK(ascii.out.find("Correct: concat = [Z_1 Z_2]") != std::string::npos);
}

TEST_CASE("the true value of a wrong cell has more decimals than the answer", "[cli][check]") {
    // weights[2,1] of the three-words homework is 0.64045748 (`qkv run -p 8`): 0.64049 is wrong at 5 decimals,
    // and the true value must not be shown as 0.6405, which would not round to 0.64046
    const auto result = run_in_repo({"check", "examples/homework/three-words/model.yaml", "--answers", "-"},
                                    "weights: [[1, 0, 0], [0.64049, 0.4, 0], ~]\n");
    CHECK(result.status == 1);
    CHECK(result.out.find("weights[2,1]: you wrote 0.64049; the true value 0.640457 rounds to 0.64046.") !=
          std::string::npos);
    CHECK(result.out.find("0.6405 rounds") == std::string::npos);
}

TEST_CASE("a true value exactly halfway at the answer's decimals is written whole, with both roundings", "[cli][check]") {
    // the backward example: grad_scaled_scores[2,1] = 0.5·(2 − 1.5) = 0.25 exactly, and [2,2] = −0.25;
    // at one decimal 0.2 and 0.3 both count, so "rounds to 0.2" would be wrong
    const auto result = run_in_repo({"check", "backward", "--answers", "-"},
                                    "grad_scaled_scores: [~, [1.0, 0.5, 0.0], ~]\n");
    CHECK(result.status == 1);
    CHECK(result.out.find("grad_scaled_scores[2,1]: you wrote 1.0; the true value is 0.25, exactly halfway between "
                          "0.2 and 0.3 (either counts).") != std::string::npos);
    CHECK(result.out.find("the true value is -0.25, exactly halfway between -0.3 and -0.2 (either counts).") !=
          std::string::npos);
    const auto right = run_in_repo({"check", "backward", "--answers", "-"},
                                   "grad_scaled_scores: [~, [0.3, -0.2, 0.0], ~]\n");
    CHECK(right.status == 0);
}

TEST_CASE("the legend says where the true value of a wrong cell is, as the cells show it", "[cli][check]") {
    const std::vector<std::string> args = {"check", "examples/homework/three-words/model.yaml", "--answers",
                                           "examples/homework/three-words/mistake-mask-zero.yaml"};
    const auto text = run_in_repo(args);
    CHECK(text.out.find("the true value in brackets") != std::string::npos);
    CHECK(text.out.find("0 ✗ [−∞]") != std::string::npos);
    auto markdown_args = args;
    markdown_args.insert(markdown_args.end(), {"-f", "markdown"});
    const auto markdown = run_in_repo(markdown_args);
    CHECK(markdown.out.find("the true value in parentheses") != std::string::npos);
    CHECK(markdown.out.find("0 ✗ (−∞)") != std::string::npos);
    CHECK(markdown.out.find("brackets") == std::string::npos);
}

TEST_CASE("with --steps no answer gets credit for following from an answer left out", "[cli][check][json]") {
    // mistake-w-x: the scores follow from head 1's wrong projections; graded alone they are wrong
    const auto result = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers",
                                     "examples/homework/two-heads/mistake-w-x.yaml", "-s", "scores", "-f", "json"});
    CHECK(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["correct"] == false);
    CHECK(doc["first_mistake"] == "scores");
    REQUIRE(doc["steps"].size() == 1);
    for (const auto& cell : doc["steps"][0]["cells"]) {
        CHECK(cell["verdict"] != "consistent");
    }
    // every step of the same file: the scores follow from the projections, and the projections are the mistake
    const auto all = nlohmann::json::parse(run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers",
                                                        "examples/homework/two-heads/mistake-w-x.yaml", "-f", "json"})
                                               .out);
    CHECK(all["first_mistake"] == "queries");
    const auto text = run_in_repo({"check", "examples/homework/two-heads/model.yaml", "--answers",
                                   "examples/homework/two-heads/mistake-w-x.yaml", "-s", "scores"});
    CHECK(text.status == 1);
    CHECK(text.out.find("First mistake: scores (head 1).") != std::string::npos);
}

TEST_CASE("bad answer numbers and ragged rows are exit 2 with their position", "[cli][check][errors]") {
    const std::string model = "examples/homework/three-words/model.yaml";
    // "scores: [" is 9 characters: row 1 starts at column 10, its first number at 11
    const auto ragged = run_in_repo({"check", model, "--answers", "-"}, "scores: [[2, 4], [2, 1, 6], [3, 5, 6]]\n");
    require_input_error(ragged, "qkv: error: <stdin>:1:10: scores row 1 has 2 numbers; expected 3 (scores is 3 × 3)");
    CHECK(ragged.err.find("row 2") == std::string::npos);
    CHECK(ragged.err.find("row 3") == std::string::npos);
    for (const std::string number : {"1e400", "inf", ".inf"}) {
        CAPTURE(number);
        const auto result = run_in_repo({"check", model, "--answers", "-"}, "scores: [[" + number + ", 4, 7], ~, ~]\n");
        require_input_error(result, "qkv: error: <stdin>:1:11: scores[1,1] is \"" + number +
                                        "\"; expected a finite number");
        CHECK(result.err.find("\n  hint: ") != std::string::npos);
    }
    // a blocked score is still -inf
    const auto blocked = run_in_repo({"check", model, "--answers", "-"}, "masked_scores: [[1.15, -inf, -inf], ~, ~]\n");
    CHECK(blocked.status == 0);
}

TEST_CASE("one wrong number gets its own diagnosis, in the text and in each cell of the JSON", "[cli][check][json]") {
    // the illustrated article: scores row 1 [2, 4, 4], weights row 1 [0.0634, 0.4683, 0.4683]
    SECTION("0.2 is row 1 of the scores divided by its sum without exp") {
        const std::string answers = "weights: [[0.2, ~, ~], ~, ~]\n";
        const auto text = run_qkv({"check", "illustrated", "--answers", "-"}, answers);
        CHECK(text.status == 1);
        CHECK(text.out.find("weights[1,1]: you wrote 0.2; the true value 0.0634 rounds to 0.1. Each row was "
                            "divided by its sum without exponentiating first.") != std::string::npos);
        const auto json = nlohmann::json::parse(run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"},
                                                        answers).out);
        const auto& step = json["steps"][0];
        CHECK(step["diagnosis_id"].is_null());  // one wrong cell is not evidence enough for the step
        const auto& cell = step["cells"][0];
        CHECK(cell["diagnosis_id"] == "softmax_no_exp");
        CHECK(cell["diagnosis"].get<std::string>().rfind("Each row was divided by its sum without exponentiating "
                                                         "first. Correct: ", 0) == 0);
    }
    SECTION("16 is the score of the next cell") {
        const auto json = nlohmann::json::parse(
            run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"}, "scores: [~, [~, ~, 16], ~]\n").out);
        const auto& cell = json["steps"][0]["cells"][0];
        CHECK(cell["diagnosis_id"] == "another_cell");
        CHECK(cell["diagnosis"] == "That number is scores[2,2], not scores[2,3]. Correct: scores[2,3] is worked as "
                                   "S = Q·Kᵀ, in row 2 and column 3.");
    }
    SECTION("0.5 is 0.4683 to one decimal where two are asked") {
        const auto json = nlohmann::json::parse(run_qkv(
            {"check", "illustrated", "--answers", "-", "--decimals", "2", "-f", "json"}, "weights: [[~, 0.5, ~], ~, ~]\n")
                                                    .out);
        const auto& cell = json["steps"][0]["cells"][0];
        CHECK(cell["verdict"] == "wrong");
        CHECK(cell["diagnosis_id"] == "too_few_decimals");
    }
    SECTION("a right cell and a slip have none") {
        const auto json = nlohmann::json::parse(run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"},
                                                        "weights: [[0.1, 0.37, ~], ~, ~]\n")
                                                    .out);
        const auto& cells = json["steps"][0]["cells"];
        REQUIRE(cells.size() == 2);
        CHECK(cells[0]["verdict"] == "right");
        CHECK(cells[0]["diagnosis"].is_null());
        CHECK(cells[0]["diagnosis_id"].is_null());
        CHECK(cells[1]["verdict"] == "wrong");
        CHECK(cells[1]["diagnosis_id"].is_null());
    }
}

TEST_CASE("an output worked from weights rounded too early is named, in one cell and in the whole row",
          "[cli][check][json]") {
    // the illustrated article: weights row 1 [0.0634, 0.4683, 0.4683], values [1, 2, 3], [2, 8, 0],
    // [2, 6, 3]; output row 1 is [1.9366, 6.6831, 1.5951]. From the weights rounded to 2 decimals,
    // 0.06·2 + 0.47·8 + 0.47·6 = 6.70 and 0.06·3 + 0.47·0 + 0.47·3 = 1.59
    const std::string sentence = "Worked from the weights rounded to 2 decimals, not from their full values.";
    SECTION("one cell") {
        const std::string answers = "output: [[~, 6.70, ~], ~, ~]\n";
        const auto text = run_qkv({"check", "illustrated", "--answers", "-"}, answers);
        CHECK(text.status == 1);
        CHECK(text.out.find("output[1,2]: you wrote 6.70; the true value 6.6831 rounds to 6.68. " + sentence) !=
              std::string::npos);
        const auto json = nlohmann::json::parse(
            run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"}, answers).out);
        const auto& cell = json["steps"][0]["cells"][0];
        CHECK(cell["diagnosis_id"] == "rounded_too_early");
        // the output of one head without W_O is its weighted sum, head_output, where the rounding was done
        CHECK(cell["diagnosis"] == sentence + " This was in head_output. Correct: keep every decimal of the numbers "
                                              "you work from, and round only the answer.");
    }
    SECTION("the whole row, whose 1.94 is right") {
        const auto json = nlohmann::json::parse(run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"},
                                                        "output: [[1.94, 6.70, 1.59], ~, ~]\n")
                                                    .out);
        const auto& step = json["steps"][0];
        CHECK(step["diagnosis_id"] == "rounded_too_early");
        CHECK(step["cells"][0]["verdict"] == "right");
        CHECK(step["cells"][2]["diagnosis_id"] == "rounded_too_early");
    }
    SECTION("a mistake of method comes first: 1.8 is the output of the weights without exp") {
        // [2, 4, 4] / 10 = [0.2, 0.4, 0.4]: 0.2·3 + 0.4·0 + 0.4·3 = 1.8, which the weights rounded to
        // 1 decimal, [0.1, 0.5, 0.5], give too
        const auto json = nlohmann::json::parse(
            run_qkv({"check", "illustrated", "--answers", "-", "-f", "json"}, "output: [[~, ~, 1.80], ~, ~]\n").out);
        CHECK(json["steps"][0]["cells"][0]["diagnosis_id"] == "softmax_no_exp");
    }
}

TEST_CASE("check --block-size names the online softmax's own mistakes", "[cli][check][json]") {
    // lesson 12's model: query 3's scores [2, 1, 5, 3] in blocks of 2 reach m = 5 with
    // ℓ = (1 + e^−1)·e^−3 + 1 + e^−2 = 1.2034, so weights[3] = [0.0414, 0.0152, 0.8310, 0.1125].
    // Without rescaling ℓ = 2.5032 and the row is [e^−3, e^−4, 1, e^−2] / 2.5032 = [0.02, 0.01, 0.40, 0.05].
    // Query 4: scores [1, 1, 3, 2], values' first column [1, 0, 2, 1]: o = 2.5032 and o / ℓ = 1.5277
    const qkv::test::TempDir dir;
    const std::string model = dir.write("blocks.yaml", R"(inputs: [[1, 0], [0, 1], [2, 1], [1, 1]]
weights:
  query: [[1, 0], [0, 1]]
  key: [[1, 0], [0, 1]]
  value: [[1, 0], [0, 1]]
scale: none
)");
    const auto checked = [&](const std::string& answers, bool blocks) {
        std::vector<std::string> args{"check", model, "--answers", "-", "-f", "json"};
        if (blocks) {
            args.insert(args.end(), {"--block-size", "2"});
        }
        const auto run = run_qkv(args, answers);
        CHECK(run.status == 1);
        return nlohmann::json::parse(run.out)["steps"][0];
    };
    SECTION("ℓ not rescaled, in the whole row and in one weight") {
        const auto step = checked("weights: [~, ~, [0.02, 0.01, 0.40, 0.05], ~]\n", true);
        CHECK(step["diagnosis_id"] == "online_not_rescaled");
        CHECK(step["diagnosis"].get<std::string>().rfind("ℓ was not rescaled when a block raised the maximum m.", 0) ==
              0);
        CHECK(checked("weights: [~, ~, [0.02, ~, ~, ~], ~]\n", true)["cells"][0]["diagnosis_id"] ==
              "online_not_rescaled");
        // the keys read whole: no such mistake can be made
        CHECK(checked("weights: [~, ~, [0.02, 0.01, 0.40, 0.05], ~]\n", false)["diagnosis_id"] !=
              "online_not_rescaled");
    }
    SECTION("o not divided by ℓ") {
        const auto cell = checked("head_output: [~, ~, ~, [2.50, ~]]\n", true)["cells"][0];
        CHECK(cell["diagnosis_id"] == "online_not_divided");
        CHECK(cell["diagnosis"] == "o was not divided by ℓ at the end. Correct: the output is o / ℓ, with the last "
                                   "block's ℓ.");
    }
}

TEST_CASE("a concat as wide as the key/value heads side by side is named, as a lesson names that shape",
          "[cli][check][json]") {
    // gqa: 4 query heads share 2 key/value heads, d_v = 2; concat is 3 × 8, and 3 × 4 counts the 2 key/value heads
    const std::string answers = "concat: [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]]\n";
    const auto text = run_qkv({"check", "gqa", "--answers", "-"}, answers);
    CHECK(text.status == 1);
    CHECK(text.out.find("Your answer is 3 × 4; concat is 3 × 8.") != std::string::npos);
    CHECK(text.out.find("Mistake: That counts the 2 key/value heads.") != std::string::npos);
    CHECK(text.out.find("Correct: each of the 4 query heads writes its own 2 columns, so there are 4 · 2 = 8.") !=
          std::string::npos);
    const auto json = nlohmann::json::parse(run_qkv({"check", "gqa", "--answers", "-", "-f", "json"}, answers).out);
    CHECK(json["steps"][0]["diagnosis_id"] == "kv_heads_counted");
    // another wrong shape is named nothing
    const auto other = nlohmann::json::parse(
        run_qkv({"check", "gqa", "--answers", "-", "-f", "json"}, "concat: [[1, 2, 3], [1, 2, 3], [1, 2, 3]]\n").out);
    CHECK(other["steps"][0]["diagnosis_id"].is_null());
}
