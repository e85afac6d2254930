// The input forms a learner has (EXAMPLE FILES in man/qkv.1.in): words looked up in an embedding
// table, positional encodings, hand rounding, matrices from CSV files and from
// a seeded random generator, and the errors each form reports.
// CSV and YAML files for these tests are under tests/data/inputs/.
#include "support.hpp"

#include <unistd.h>

#include <cmath>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace qkv;
using qkv::test::require_near;
using qkv::test::rows;
using qkv::test::run_qkv;
using qkv::test::run_qkv;

namespace {

std::string inputs_dir() { return test::source_dir() + "/tests/data/inputs"; }

Model load_file(const std::string& path, const LoadOptions& options = {}) {
    const std::string full = inputs_dir() + "/" + path;
    return load_model({full, test::read_repo_file("tests/data/inputs/" + path),
                       std::filesystem::path(full).parent_path().string()},
                      options);
}

// Runs `qkv run - ARGS` on YAML text given on standard input.
test::CliResult run_stdin(const std::string& yaml, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_qkv(args, yaml);
}

// Runs qkv from tests/data/inputs, as a user in that folder would.
test::CliResult run_in_inputs(const std::vector<std::string>& args) {
    test::CliRun run;
    run.args = args;
    run.cwd = inputs_dir();
    return run_qkv(run);
}

// Exit 2, nothing on stdout, and exactly one error line (plus its hint) that starts with `where_what`.
void require_one_error(const test::CliResult& result, const std::string& where_what) {
    test::require_input_error(result, where_what);
    INFO("stderr: " << result.err);
    CHECK(result.err.rfind("qkv: error: " + where_what, 0) == 0);
    std::size_t errors = 0;
    for (std::size_t at = result.err.find("qkv: error: "); at != std::string::npos;
         at = result.err.find("qkv: error: ", at + 1)) {
        ++errors;
    }
    CHECK(errors == 1);
}

// The weights of the illustrated article (4 × 3 each), for examples that vary the inputs.
const char* const k_illustrated_weights = R"(
weights:
  query: [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]
  key:   [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]
  value: [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]
)";

}  // namespace

// ── embeddings + sentence ────────────────────────────────────────────────

TEST_CASE("words looked up in embeddings give the notebook's inputs and printed values", "[inputs]") {
    // examples/sky-is-blue.yaml is the notebook written with embeddings: and sentence:
    const Model model = test::load_text(test::read_repo_file("examples/sky-is-blue.yaml"));
    CHECK(model.tokens == std::vector<std::string>{"sky", "is", "blue"});
    // from the notebook: embedded_tokens, the rows of its embeddings table in sentence order
    require_near(model.X, rows({{-1.0720, -0.5001}, {-0.0020, -0.4311}, {-0.0020, -0.4311}}), 0, "X");
    const Trace trace = compute(model);
    // from the notebook's printed tensors (4 decimals): Q, attention weights and output
    const double eps = 6e-5;
    require_near(trace.find("queries", 1)->values, rows({{0.2261, 0.7422}, {0.1699, 0.2857}, {0.1699, 0.2857}}), eps,
                 "Q");
    require_near(trace.find("scaled_scores", 1)->values,
                 rows({{-0.2017, 0.0451, 0.0451}, {-0.0484, 0.0204, 0.0204}, {-0.0484, 0.0204, 0.0204}}), eps, "S/√2");
    require_near(trace.find("weights", 1)->values,
                 rows({{0.2809, 0.3595, 0.3595}, {0.3182, 0.3409, 0.3409}, {0.3182, 0.3409, 0.3409}}), eps, "A");
    require_near(trace.find("output")->values, rows({{0.1390, 0.1644}, {0.1476, 0.1607}, {0.1476, 0.1607}}), eps,
                 "output");
}

TEST_CASE("a sentence picks embedding rows in its own order and may repeat a word", "[inputs]") {
    const Model model = test::load_text(R"(
embeddings:
  sky: [1, 0]
  is: [0, 2]
  blue: [3, 3]
sentence: "blue   sky is  sky"
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
)");
    // worked by hand: one row per word, runs of spaces separate words
    CHECK(model.tokens == std::vector<std::string>{"blue", "sky", "is", "sky"});
    require_near(model.X, rows({{3, 3}, {1, 0}, {0, 2}, {1, 0}}), 0, "X");
}

TEST_CASE("an unknown word is an error at the word, listing the known words", "[inputs][cli]") {
    const auto result = run_stdin(std::string(R"(embeddings:
  sky: [1, 0, 1, 0]
  is: [0, 2, 0, 2]
  blue: [1, 1, 1, 1]
sentence: sky is bleu
)") + k_illustrated_weights);
    // "bleu" starts at line 5, column 18
    require_one_error(result, "<stdin>:5:18: word 3 of sentence, \"bleu\", is not in embeddings");
    CHECK(result.err.find("hint: did you mean \"blue\"? known words: sky, is, blue") != std::string::npos);
}

TEST_CASE("embeddings of different widths are an error at the odd one", "[inputs][cli]") {
    const auto result = run_stdin(std::string(R"(embeddings:
  sky: [1, 0, 1, 0]
  is: [0, 2, 0]
  blue: [1, 1, 1, 1]
sentence: sky is blue
)") + k_illustrated_weights);
    require_one_error(result, "<stdin>:3:7: embeddings.is has 3 numbers; the first embedding has 4");
}

TEST_CASE("every problem of an embedding table is reported together", "[inputs][cli]") {
    const auto result = run_stdin(std::string(R"(embeddings:
  sky: [1, 0, 1, 0]
  is: [0, 2, 0]
  sky: [1, 1, 1, 1]
sentence: "sky is blue"
)") + k_illustrated_weights);
    test::require_input_error(result, "<stdin>:3:7: embeddings.is has 3 numbers");
    CHECK(result.err.find("<stdin>:4:3: embeddings.sky is given twice") != std::string::npos);
    // in quotes, "blue" starts one column later than the sentence's first word would suggest
    CHECK(result.err.find("<stdin>:5:19: word 3 of sentence, \"blue\", is not in embeddings") != std::string::npos);
}

TEST_CASE("a multi-line sentence points at the sentence when a word cannot be placed", "[inputs][cli]") {
    const auto result = run_stdin(std::string(R"(embeddings:
  sky: [1, 0, 1, 0]
  is: [0, 2, 0, 2]
sentence: |
  sky is
  grey
)") + k_illustrated_weights);
    require_one_error(result, "<stdin>:4:11: word 3 of sentence, \"grey\", is not in embeddings");
}

// ── positional encodings ─────────────────────────────────────────────────

TEST_CASE("sinusoidal positions with an odd d_model follow the formula and are added before the projections",
          "[inputs]") {
    const Trace trace = test::compute_text(R"(
inputs: [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]
positional: sinusoidal
weights:
  query: [[1], [1], [1], [1], [1]]
  key:   [[1], [0], [0], [0], [0]]
  value: [[1, 0], [0, 1], [0, 0], [0, 0], [0, 0]]
)");
    const arma::mat& P = trace.find("positional")->values;
    REQUIRE(P.n_rows == 3);
    REQUIRE(P.n_cols == 5);
    // P[p,2i] = sin(p / 10000^(2i/5)), P[p,2i+1] = cos(p / 10000^(2i/5)); the last column (2i = 4) has no cos partner
    for (arma::uword p = 0; p < 3; ++p) {
        for (arma::uword c = 0; c < 5; ++c) {
            CAPTURE(p, c);
            const double angle = double(p) / std::pow(10000.0, double(c - c % 2) / 5.0);
            const double expected = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
            CHECK_THAT(P(p, c), Catch::Matchers::WithinAbs(expected, 1e-15));
        }
    }
    // the same rows written out, from Python's math module
    require_near(P, rows({{0, 1, 0, 1, 0},
                          {0.8414709848078965, 0.5403023058681398, 0.025116222909773774, 0.9996845379152098,
                           0.0006309573026154199},
                          {0.9092974268256817, -0.4161468365471424, 0.050216599387465206, 0.9987383506934931,
                           0.0012619143540422218}}),
                 1e-15, "P");
    // encoded = X + P, and the projections read it: K = (X + P)·W_K is its first column
    const arma::mat& encoded = trace.find("encoded")->values;
    require_near(encoded, trace.find("inputs")->values + P, 0, "X + P");
    require_near(trace.find("keys", 1)->values, encoded.col(0), 0, "K");
    CHECK(trace.find("queries", 1)->formula == "Q = (X + P)·W_Q");
}

TEST_CASE("an explicit positional matrix is added as written", "[inputs]") {
    const Trace trace = test::compute_text(std::string(R"(
inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
positional: [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]]
scale: none
)") + k_illustrated_weights);
    // worked by hand: X + P
    require_near(trace.find("encoded")->values, rows({{1, 0, 1, 0}, {1, 3, 1, 3}, {3, 3, 3, 3}}), 0, "X + P");
    // K = (X + P)·W_K; row 2 = [1,3,1,3]·W_K = [0+3+0+3, 3+1+3, 1] = [6, 7, 1]
    require_near(trace.find("keys", 1)->values.row(1), rows({{6, 7, 1}}), 0, "K row 2");
}

TEST_CASE("a bad positional spec is an error with its position", "[inputs][cli]") {
    SECTION("a word other than sinusoidal") {
        const auto result = run_stdin("inputs: [[1, 0], [0, 1]]\npositional: sinusoid\n"
                                      "weights: {query: [[1], [1]], key: [[1], [1]], value: [[1], [1]]}\n");
        require_one_error(result, "<stdin>:2:13: positional is \"sinusoid\"; expected sinusoidal or a matrix");
        CHECK(result.err.find("did you mean sinusoidal?") != std::string::npos);
    }
    SECTION("a matrix of the wrong shape") {
        const auto result = run_stdin("inputs: [[1, 0], [0, 1]]\npositional: [[0, 0, 0], [1, 1, 1]]\n"
                                      "weights: {query: [[1], [1]], key: [[1], [1]], value: [[1], [1]]}\n");
        require_one_error(result, "<stdin>:2:13: positional is 2 × 3; expected 2 × 2 (the shape of inputs)");
    }
}

// ── hand rounding ────────────────────────────────────────────────────────

TEST_CASE("round: {weights: 1} on the illustrated example gives Output 1 = [2.1, 7.2, 1.8]", "[inputs][cli]") {
    const Trace trace = test::compute_text(test::read_repo_file("examples/illustrated.yaml") + "round: {weights: 1}\n");
    // worked by hand: row 1 of the weights, [0.0634, 0.4683, 0.4683], rounds to [0.1, 0.5, 0.5];
    // 0.1·[1,2,3] + 0.5·[2,8,0] + 0.5·[2,6,3] = [2.1, 7.2, 1.8]
    require_near(trace.find("weights", 1)->values.row(0), rows({{0.1, 0.5, 0.5}}), 0, "rounded A row 1");
    require_near(trace.find("output")->values.row(0), rows({{2.1, 7.2, 1.8}}), 1e-15, "Output 1");
    const auto& notes = trace.find("weights", 1)->notes;
    CHECK(std::find(notes.begin(), notes.end(), "each row summed to 1 before rounding") != notes.end());
    CHECK(std::find(notes.begin(), notes.end(),
                    "rounded to 1 decimal by hand (round); later steps use the rounded values") != notes.end());
    // the steps before the weights are not rounded and carry no note
    CHECK(trace.find("scores", 1)->notes.empty());

    // the same from the command line: the note and the rounded output row
    const auto result = run_qkv({"run", "-", "-s", "weights,output", "-p", "1", "--color", "never"},
                                test::read_repo_file("examples/illustrated.yaml") + "round: {weights: 1}\n");
    REQUIRE(result.status == 0);
    CHECK(result.out.find("rounded to 1 decimal by hand") != std::string::npos);
    CHECK(result.out.find("Input 1 │ 2.1 7.2 1.8\n") != std::string::npos);
}

TEST_CASE("hand rounding rounds numbers as they are written, half away from zero", "[inputs]") {
    // 1.005 is stored as 1.00499999999999989…, yet on paper it rounds to 1.01
    const arma::mat written = rows({{1.005, -1.005, 2.675, 0.125, 0.0634}, {9.995, 0.5, 1.5, -0.5, 123.456}});
    require_near(round_to(written, 2), rows({{1.01, -1.01, 2.68, 0.13, 0.06}, {10.0, 0.5, 1.5, -0.5, 123.46}}), 0,
                 "2 decimals");
    require_near(round_to(written, 0), rows({{1, -1, 3, 0, 0}, {10, 1, 2, -1, 123}}), 0, "0 decimals");
    require_near(round_to(written, 1), rows({{1.0, -1.0, 2.7, 0.1, 0.1}, {10.0, 0.5, 1.5, -0.5, 123.5}}), 0,
                 "1 decimal");
    // numbers with fewer decimals, huge and tiny numbers, and infinities stay as they are
    const double inf = std::numeric_limits<double>::infinity();
    const arma::mat others = rows({{0.1, 1e300, -inf, 4.9e-324, 99.99}});
    require_near(round_to(others, 3), rows({{0.1, 1e300, -inf, 0.0, 99.99}}), 0, "others");
    CHECK(round_to(rows({{0.999}}), 2)(0, 0) == 1.0);
    CHECK(round_to(rows({{-0.004}}), 2)(0, 0) == 0.0);
}

TEST_CASE("round: N rounds every step and carries each rounded value forward", "[inputs]") {
    const Trace trace = test::compute_text(test::read_repo_file("examples/illustrated.yaml") + "round: 1\n");
    for (const auto& step : trace.steps) {
        CAPTURE(step.id);
        if (step_row(step.id).parameter) {
            // the example's weights are used as written
            CHECK(std::find_if(step.notes.begin(), step.notes.end(), [](const std::string& note) {
                      return note.find("rounded") != std::string::npos;
                  }) == step.notes.end());
            continue;
        }
        REQUIRE_FALSE(step.notes.empty());
        CHECK(step.notes.back() == "rounded to 1 decimal by hand (round); later steps use the rounded values");
    }
    // the integer steps are unchanged and the weights round as above, so Output 1 is again
    // [2.1, 7.2, 1.8], now itself rounded to one decimal
    require_near(trace.find("output")->values.row(0), rows({{2.1, 7.2, 1.8}}), 1e-15, "Output 1");
    // row 3: weights [0.0003, 0.8805, 0.1192] → [0.0, 0.9, 0.1]; 0.9·[2,8,0] + 0.1·[2,6,3] = [2.0, 7.8, 0.3]
    require_near(trace.find("output")->values.row(2), rows({{2.0, 7.8, 0.3}}), 1e-15, "Output 3");
}

TEST_CASE("a bad round spec is an error with its position", "[inputs][cli]") {
    const std::string illustrated = test::read_repo_file("examples/illustrated.yaml");
    const int last_line = static_cast<int>(std::count(illustrated.begin(), illustrated.end(), '\n')) + 1;
    const std::string at = "<stdin>:" + std::to_string(last_line) + ":";
    SECTION("an unknown step id") {
        const auto result = run_stdin(illustrated + "round: {wieghts: 1}\n");
        require_one_error(result, at + "9: round.wieghts is not a step id");
        CHECK(result.err.find("did you mean weights?") != std::string::npos);
    }
    SECTION("one of the example's weights") {
        const auto result = run_stdin(illustrated + "round: {w_query: 1}\n");
        require_one_error(result, at + "9: round.w_query is one of the example's weights, given and not worked out; "
                                  "expected a step that is computed");
    }
    SECTION("decimals out of range") {
        require_one_error(run_stdin(illustrated + "round: 16\n"),
                          at + "8: round is \"16\"; expected a whole number from 0 to 15");
    }
    SECTION("decimals that are not whole") {
        require_one_error(run_stdin(illustrated + "round: {weights: 1.5}\n"),
                          at + "18: round.weights is \"1.5\"; expected a whole number from 0 to 15");
    }
    SECTION("a list") {
        require_one_error(run_stdin(illustrated + "round: [1]\n"),
                          at + "8: round is a list of 1 item; expected a number of decimals or a map");
    }
}

// ── matrices from CSV files ──────────────────────────────────────────────

TEST_CASE("matrices read from CSV files give the illustrated article's steps", "[inputs][cli]") {
    // illustrated-csv.yaml reads every matrix from csv/, one file saved as a spreadsheet would
    const Model model = load_file("illustrated-csv.yaml");
    require_near(model.X, rows({{1, 0, 1, 0}, {0, 2, 0, 2}, {1, 1, 1, 1}}), 0, "X");
    const Trace trace = compute(model);
    // from the illustrated article, steps 3 and 4
    require_near(trace.find("keys", 1)->values, rows({{0, 1, 1}, {4, 4, 0}, {2, 3, 1}}), 0, "K");
    require_near(trace.find("values", 1)->values, rows({{1, 2, 3}, {2, 8, 0}, {2, 6, 3}}), 0, "V");
    require_near(trace.find("scores", 1)->values, rows({{2, 4, 4}, {4, 16, 12}, {4, 12, 10}}), 0, "S");

    // from the command line, run from another folder: paths resolve against the YAML file's folder
    const auto result = run_qkv({"run", inputs_dir() + "/illustrated-csv.yaml", "-s", "scores"});
    CHECK(result.status == 0);
    CHECK(result.err.empty());
}

TEST_CASE("a missing CSV file is an error at its file: key", "[inputs][cli]") {
    require_one_error(run_in_inputs({"run", "csv-missing.yaml"}),
                      "csv-missing.yaml:5:17: weights.value.file \"csv/missing.csv\" does not exist");
    // from another folder, the message also says where it looked
    test::CliRun run;
    run.args = {"run", "data/inputs/csv-missing.yaml"};
    run.cwd = test::source_dir() + "/tests";
    require_one_error(run_qkv(run), "data/inputs/csv-missing.yaml:5:17: weights.value.file \"csv/missing.csv\" does not "
                                    "exist (looked for data/inputs/csv/missing.csv)");
}

TEST_CASE("a bad CSV cell is an error at its line and column in the CSV file", "[inputs][cli]") {
    // csv/bad-cell.csv line 3 is "1, zero ,3": the word starts at column 4; it would be entry [3,2]
    require_one_error(run_in_inputs({"run", "csv-bad-cell.yaml"}),
                      "csv/bad-cell.csv:3:4: weights.value[3,2] is \"zero\"; expected a finite number");
    // csv/ragged.csv line 2 is "0,3"
    require_one_error(run_in_inputs({"run", "csv-ragged.yaml"}),
                      "csv/ragged.csv:2:1: weights.value: this row has 2 numbers; the first has 3");
}

TEST_CASE("a CSV path leaving the example's folder is refused unless --allow-any-path", "[inputs][cli]") {
    // refused before looking whether the file exists
    require_one_error(run_in_inputs({"run", "csv-escaping.yaml"}),
                      "csv-escaping.yaml:5:17: weights.value.file \"csv/../../value.csv\" is outside the example's "
                      "folder");
    const auto refused = run_in_inputs({"run", "sub/parent-folder.yaml"});
    test::require_input_error(refused, "sub/parent-folder.yaml:4:17: weights.query.file \"../csv/query.csv\" is "
                                       "outside the example's folder");
    CHECK(refused.err.find("hint: keep data files in the YAML file's folder or below it, or pass --allow-any-path") !=
          std::string::npos);
    const auto allowed = run_in_inputs({"run", "sub/parent-folder.yaml", "--allow-any-path", "-s", "keys"});
    CHECK(allowed.status == 0);
    CHECK(allowed.err.empty());

    SECTION("an absolute path") {
        const std::string csv = inputs_dir() + "/csv/value.csv";
        const std::string yaml = "inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"
                                 "weights:\n  query: {file: " + csv + "}\n  key: [[0,0,1],[1,1,0],[0,1,0],[1,1,0]]\n"
                                 "  value: [[0,2,0],[0,3,0],[1,0,3],[1,1,0]]\n";
        require_one_error(run_stdin(yaml), "<stdin>:3:17: weights.query.file \"" + csv + "\" is outside the example's folder");
        CHECK(run_stdin(yaml, {"--allow-any-path"}).status == 0);
    }
    SECTION("a symbolic link inside the folder that points outside it") {
        char folder_template[] = "/tmp/qkv-inputs-XXXXXX";
        REQUIRE(mkdtemp(folder_template) != nullptr);
        const std::filesystem::path folder(folder_template);
        std::filesystem::create_directory(folder / "example");
        std::ofstream(folder / "outside.csv") << "1,0,1\n1,0,0\n0,0,1\n0,1,1\n";
        std::filesystem::create_symlink(folder / "outside.csv", folder / "example" / "link.csv");
        std::ofstream(folder / "example" / "m.yaml")
            << "inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"
            << "weights:\n  query: {file: link.csv}\n  key: [[0,0,1],[1,1,0],[0,1,0],[1,1,0]]\n"
            << "  value: [[0,2,0],[0,3,0],[1,0,3],[1,1,0]]\n";
        test::CliRun run;
        run.args = {"run", "m.yaml"};
        run.cwd = (folder / "example").string();
        const auto refused_link = run_qkv(run);
        run.args.push_back("--allow-any-path");
        const auto allowed_link = run_qkv(run);
        std::filesystem::remove_all(folder);
        require_one_error(refused_link, "m.yaml:3:17: weights.query.file \"link.csv\" is outside the example's folder");
        CHECK(allowed_link.status == 0);
    }
}

TEST_CASE("a folder or an empty file given as a CSV matrix is an error at its file: key", "[inputs][cli]") {
    const std::string rest = "\n  key: [[1], [1]]\n  value: [[1], [1]]\n";
    test::CliRun run;
    run.cwd = inputs_dir();
    run.args = {"run", "-"};
    // errors about the file point at its path, which starts at column 17 of "  query: {file: csv}";
    // an unknown key points at the key, and its matrix is not read (no second error about its shape)
    run.input = "inputs: [[1, 0], [0, 1]]\nweights:\n  query: {file: csv}" + rest;
    require_one_error(run_qkv(run), "<stdin>:3:17: weights.query.file \"csv\" is not a regular file");
    run.input = "inputs: [[1, 0], [0, 1]]\nweights:\n  query: {file: csv/empty.csv}" + rest;
    require_one_error(run_qkv(run), "<stdin>:3:17: weights.query.file \"csv/empty.csv\" holds no numbers");
    run.input = "inputs: [[1, 0], [0, 1]]\nweights:\n  query: {file: csv/query.csv, rows: 4}" + rest;
    require_one_error(run_qkv(run), "<stdin>:3:32: unknown key weights.query.rows");
}

// ── random matrices ──────────────────────────────────────────────────────

TEST_CASE("random matrices are the same for a seed on every machine", "[inputs]") {
    const std::string yaml = R"(
inputs: {random: {rows: 2, cols: 3, seed: 7, low: -2, high: 3}}
weights: {query: [[1], [1], [1]], key: [[1], [1], [1]], value: [[1], [1], [1]]}
)";
    const Model model = test::load_text(yaml);
    // splitmix64 from seed 7, each draw's top 53 bits scaled to [low, high), filled row by row;
    // computed independently in Python from the splitmix64 reference code
    require_near(model.X,
                 rows({{-0.050851258043642655, -1.9160585273592194, 2.503803403034417},
                       {0.9146514651403903, 0.2622094750573418, -0.7528423885862834}}),
                 1e-15, "X from seed 7");
    // the same seed gives the same matrix; another seed another one
    require_near(test::load_text(yaml).X, model.X, 0, "again");
    std::string other = yaml;
    other.replace(other.find("seed: 7"), 7, "seed: 8");
    CHECK(arma::accu(arma::abs(test::load_text(other).X - model.X)) > 0.1);
}

TEST_CASE("random matrices stay within low and high, with defaults -1 and 1", "[inputs]") {
    const Model model = test::load_text(R"(
inputs: {random: {rows: 50, cols: 40}}
weights: {query: {random: {rows: 40, cols: 2, seed: 3, low: 10, high: 11}}, key: {random: {rows: 40, cols: 2}},
          value: {random: {rows: 40, cols: 1}}}
)");
    CHECK(model.X.n_rows == 50);
    CHECK(model.X.min() >= -1.0);
    CHECK(model.X.max() < 1.0);
    // 2000 uniform draws from [-1, 1) reach below -0.9 and above 0.9
    CHECK(model.X.min() < -0.9);
    CHECK(model.X.max() > 0.9);
    CHECK(model.heads[0].W_Q.min() >= 10.0);
    CHECK(model.heads[0].W_Q.max() < 11.0);
}

TEST_CASE("bad random specs are errors with their positions", "[inputs][cli]") {
    const std::string rest = "\nweights: {query: [[1], [1]], key: [[1], [1]], value: [[1], [1]]}\n";
    // columns counted on each line: the spec's "{" is at 18, "sed" at 37, the value of cols at 34;
    // a misspelt key is an error of its own and the matrix is not drawn with the default it would fall back to
    require_one_error(run_stdin("inputs: {random: {rows: 2, cols: 2, low: 1, high: -1}}" + rest),
                      "<stdin>:1:18: inputs.random has low 1 ≥ high -1");
    require_one_error(run_stdin("inputs: {random: {rows: 2}}" + rest), "<stdin>:1:18: inputs.random needs rows and cols");
    // (3 columns against the weights' 2 rows would be a second error, were the matrix drawn)
    require_one_error(run_stdin("inputs: {random: {rows: 2, cols: 3, sed: 1}}" + rest),
                      "<stdin>:1:37: unknown key inputs.random.sed");
    require_one_error(run_stdin("inputs: {random: {rows: 2, cols: 0}}" + rest),
                      "<stdin>:1:34: inputs.random.cols is \"0\"; expected a whole number from 1 to");
}

// ── numbers as people type them ──────────────────────────────────────────

TEST_CASE("a typeset minus (U+2212) in an example file is a minus sign, as in answer files", "[inputs]") {
    const Model typed = test::load_text(
        "inputs: [[1, \u22120.5], [\u22122, 3]]\n"
        "weights: {query: [[1, 0], [0, \u22121]], key: [[1, 0], [0, 1]], value: [[\u22121e\u22121, 0], [0, 1]]}\n");
    const Model ascii = test::load_text(
        "inputs: [[1, -0.5], [-2, 3]]\n"
        "weights: {query: [[1, 0], [0, -1]], key: [[1, 0], [0, 1]], value: [[-1e-1, 0], [0, 1]]}\n");
    require_near(typed.X, ascii.X, 0, "X");
    require_near(typed.X, rows({{1, -0.5}, {-2, 3}}), 0, "X as written");
    require_near(typed.heads[0].W_Q, ascii.heads[0].W_Q, 0, "W_Q");
    require_near(typed.heads[0].W_V, rows({{-0.1, 0}, {0, 1}}), 0, "W_V");
}

TEST_CASE("commas between digits are separators in a row written without spaces, and an error beside spaced ones",
          "[inputs][cli]") {
    // [0,1,1] is three numbers: nothing says otherwise
    const Model model = test::load_text(
        "inputs: [[0,1,1], [1,0,2]]\n"
        "weights: {query: [[1,0],[0,1],[1,1]], key: [[1, 0], [0, 1], [1, 1]], value: [[1, 0], [0, 1], [1, 1]]}\n");
    require_near(model.X, rows({{0, 1, 1}, {1, 0, 2}}), 0, "X");
    // [0,5, 2] mixes both: "0,5" is a decimal written with a comma
    const auto result = run_qkv({"run", "-"}, "inputs: [[1, 0], [0, 1]]\n"
                                              "weights:\n"
                                              "  query: [[1, 0], [0, 1]]\n"
                                              "  key: [[1, 0], [0, 1]]\n"
                                              "  value: [[0,5, 2], [3, 0,5]]\n");
    CHECK(result.status == 2);
    CHECK(result.out.empty());
    CHECK(result.err.find("<stdin>:5:11: weights.value row 1 holds \"0,5\", which YAML reads as two numbers, 0 and 5; "
                          "expected decimals written with a point") != std::string::npos);
    CHECK(result.err.find("<stdin>:5:21: weights.value row 2 holds \"0,5\"") != std::string::npos);
    CHECK(result.err.find("hint: write 0.5, not 0,5") != std::string::npos);
}
