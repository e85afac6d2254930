// CSV and JSON as data for scripts: the README's pandas recipe reads CSV back
// exactly, and JSON carries the example's parameters and each formula in LaTeX.
#include "support.hpp"
#include "attention/steps.hpp"

#include <nlohmann/json.hpp>

using qkv::test::run_ok;
using qkv::test::shell;
using qkv::test::TempDir;

namespace {

// Every line of the README's "```python" block that reads CSV with pandas.
std::string readme_pandas_recipe() {
    const std::string readme = qkv::test::read_repo_file("README.md");
    const std::size_t start = readme.find("```python\nimport pandas as pd\n");
    REQUIRE(start != std::string::npos);
    const std::size_t body = readme.find('\n', start) + 1;
    const std::size_t end = readme.find("```", body);
    REQUIRE(end != std::string::npos);
    return readme.substr(body, end - body);
}

// A matrix of numbers from JSON rows.
arma::mat json_matrix(const nlohmann::json& rows) {
    arma::mat M(rows.size(), rows.empty() ? 0 : rows[0].size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t j = 0; j < rows[i].size(); ++j) {
            M(i, j) = rows[i][j].get<double>();
        }
    }
    return M;
}

}  // namespace

TEST_CASE("the README's pandas recipe reads CSV back exactly, heads as integers and labels as text",
          "[formats][csv][cli][documents]") {
    TempDir dir;
    // tokens pandas would otherwise read as a number or as missing
    const std::string yaml = R"(tokens: ["1", "NA", "null"]
inputs: [[1, 0], [0, 1], [1, 1]]
weights:
  query: [[1.1, 0], [0, 0.3]]
  key: [[0.7, 1], [0, 1]]
  value: [[1, 0], [0, 1]]
mask: causal
)";
    dir.write("example.yaml", yaml);
    const std::string csv = run_ok({"run", dir.path() + "/example.yaml", "-f", "csv"});
    dir.write("steps.csv", csv);
    // the recipe reads steps.csv; the check prints what a script would rely on
    const std::string script = readme_pandas_recipe() +
                               "import math\n"
                               "print(cells['head'].dtype, cells['row_label'].dtype)\n"
                               "print(cells['head'].isna().sum(), cells['head'].max())\n"
                               "print(sorted(set(cells['row_label'])))\n"
                               "for v in cells['value']: print(repr(float(v)))\n";
    dir.write("read.py", script);
    const auto python = shell("cd " + dir.path() + " && /usr/bin/python3 read.py");
    INFO(python.out);
    REQUIRE(python.status == 0);

    // what qkv wrote, read by the test itself: the heads and the exact values
    std::vector<std::string> values;
    std::size_t without_head = 0;
    std::istringstream lines(csv);
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
        const std::size_t step_end = line.find(',');
        const std::size_t head_end = line.find(',', step_end + 1);
        without_head += head_end == step_end + 1 ? 1 : 0;
        values.push_back(line.substr(line.rfind(',') + 1));
    }
    REQUIRE(without_head > 0);
    std::istringstream printed(python.out);
    std::string dtypes;
    std::string counts;
    std::string labels;
    std::getline(printed, dtypes);
    std::getline(printed, counts);
    std::getline(printed, labels);
    CHECK(dtypes == "Int64 object");
    CHECK(counts == std::to_string(without_head) + " 1");
    CHECK(labels == "['1', 'NA', 'null']");
    // every value is the very double qkv computed: Python's repr is round-trip too
    for (const std::string& value : values) {
        std::string read;
        REQUIRE(std::getline(printed, read));
        const double expected = std::strtod(value.c_str(), nullptr);
        const double got = read == "-inf" ? -INFINITY : std::strtod(read.c_str(), nullptr);
        CAPTURE(value, read);
        CHECK(got == expected);
    }
    CHECK_FALSE(std::getline(printed, line));
}

TEST_CASE("JSON carries the example's parameters, as the computation used them", "[formats][json][cli]") {
    SECTION("weights in the x·W layout, a query head's keys and values from its key/value head") {
        const auto doc = nlohmann::json::parse(run_ok({"run", "gqa", "-f", "json"}));
        const qkv::Model model = qkv::test::load_text(qkv::test::read_repo_file("examples/gqa.yaml"));
        const auto& params = doc["params"];
        qkv::test::require_near(json_matrix(params["inputs"]), model.X, 0, "inputs");
        CHECK(params["positional"].is_null());
        CHECK(params["context"].is_null());
        REQUIRE(params["heads"].size() == 4);
        // query heads 1 and 2 read key/value head 1, heads 3 and 4 head 2 (examples/gqa.yaml)
        for (int h = 1; h <= 4; ++h) {
            CAPTURE(h);
            const auto& head = params["heads"][h - 1];
            CHECK(head["head"] == h);
            CHECK(head["kv_head"] == (h + 1) / 2);
            qkv::test::require_near(json_matrix(head["W_Q"]), model.heads[h - 1].W_Q, 0, "W_Q");
            qkv::test::require_near(json_matrix(head["W_K"]), model.kv_weights((h + 1) / 2).W_K, 0, "W_K");
            qkv::test::require_near(json_matrix(head["W_V"]), model.kv_weights((h + 1) / 2).W_V, 0, "W_V");
            CHECK(head["b_Q"].is_null());
        }
        CHECK(json_matrix(params["heads"][0]["W_K"]).n_cols == 2);
        qkv::test::require_near(json_matrix(params["W_O"]), *model.W_O, 0, "W_O");
        CHECK(params["mask"]["kind"] == "causal");
        CHECK(params["mask"]["window"].is_null());
        // causal over three tokens: the lower triangle
        CHECK(params["mask"]["allowed"] == nlohmann::json({{1.0, 0.0, 0.0}, {1.0, 1.0, 0.0}, {1.0, 1.0, 1.0}}));
        CHECK(params["rope"].is_null());
        CHECK(params["alibi"].is_null());
        CHECK(params["grad_output"].is_null());
    }
    SECTION("a window, ALiBi's slopes and RoPE's settings") {
        const auto alibi = nlohmann::json::parse(run_ok({"run", "alibi-window", "-f", "json"}))["params"];
        CHECK(alibi["mask"]["kind"] == "window");
        CHECK(alibi["mask"]["window"] == 3);
        // Press et al.'s slopes for two heads: 1/16 and 1/256 (the example's description)
        CHECK(alibi["alibi"] == nlohmann::json({1.0 / 16, 1.0 / 256}));
        // query 5 sees keys 3, 4 and 5
        CHECK(alibi["mask"]["allowed"][4] == nlohmann::json({0.0, 0.0, 1.0, 1.0, 1.0}));
        const auto rope = nlohmann::json::parse(run_ok({"run", "rope", "-f", "json"}))["params"];
        REQUIRE(rope["rope"].is_object());
        CHECK(rope["rope"]["base"].is_number());
        CHECK((rope["rope"]["style"] == "half" || rope["rope"]["style"] == "interleaved"));
    }
    SECTION("a file in PyTorch's layout is written as the computation used it, x·W") {
        const std::string yaml = R"(tokens: [a, b]
inputs: [[1, 2], [3, 4]]
layout: pytorch
weights:
  query: [[1, 2], [0, 0]]
  key: [[1, 0], [0, 1]]
  value: [[1, 0], [0, 1]]
  output: [[1, 2], [3, 4]]
bias:
  output: [0.5, -0.5]
)";
        const auto params = nlohmann::json::parse(run_ok({"run", "-", "-f", "json"}, yaml))["params"];
        // out × in [[1, 2], [0, 0]] is in × out [[1, 0], [2, 0]]
        CHECK(params["heads"][0]["W_Q"] == nlohmann::json({{1.0, 0.0}, {2.0, 0.0}}));
        CHECK(params["W_O"] == nlohmann::json({{1.0, 3.0}, {2.0, 4.0}}));
        CHECK(params["b_O"] == nlohmann::json({0.5, -0.5}));
        CHECK(params["mask"]["kind"] == "none");
        CHECK(params["mask"]["allowed"] == nlohmann::json({{1.0, 1.0}, {1.0, 1.0}}));
    }
    SECTION("the backward pass's dO") {
        const auto params = nlohmann::json::parse(run_ok({"run", "backward", "-f", "json"}))["params"];
        REQUIRE(params["grad_output"].is_array());
        CHECK_FALSE(params["grad_output"].empty());
    }
    SECTION("--decode's document carries them too") {
        const auto doc = nlohmann::json::parse(run_ok({"run", "rope", "--decode", "-f", "json"}));
        CHECK(doc["params"]["rope"].is_object());
        CHECK(doc.contains("decode"));
    }
}

TEST_CASE("JSON writes each formula in LaTeX beside its plain text", "[formats][json][cli]") {
    const auto doc = nlohmann::json::parse(run_ok({"run", "masked", "-f", "json"}));
    qkv::Trace trace = qkv::test::compute_text(qkv::test::read_repo_file("examples/masked.yaml"));
    // the example's weights are in "params"; as steps only when --steps names them
    std::erase_if(trace.steps, [](const qkv::Step& step) { return qkv::step_row(step.id).parameter; });
    REQUIRE(doc["steps"].size() == trace.steps.size());
    const auto asked = nlohmann::json::parse(run_ok({"run", "masked", "-f", "json", "-s", "w_query"}));
    REQUIRE(asked["steps"].size() == 1);
    CHECK(asked["steps"][0]["id"] == "w_query");
    CHECK(asked["steps"][0]["values"] == doc["params"]["heads"][0]["W_Q"]);
    for (std::size_t s = 0; s < trace.steps.size(); ++s) {
        CAPTURE(s);
        CHECK(doc["steps"][s]["latex"] == trace.steps[s].latex);
        CHECK_FALSE(trace.steps[s].latex.empty());
    }
    const auto& scores = doc["steps"][4];
    REQUIRE(scores["id"] == "scores");
    CHECK(scores["latex"] == "S = Q K^\\top");
}
