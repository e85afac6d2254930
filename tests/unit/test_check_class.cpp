// The class folder, examples/homework/class/: a teacher's model, the answer
// files of a class of learners (answers/) and the marker's key (key.yml). Each
// file is graded with `qkv check -f json` and its report held against the key:
// the exit status, the first mistake and its head, and the mistake each wrong
// step shows. The files and the key come from make_answers.py, which works the
// numbers out on its own, without qkv.
#include "support.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

using qkv::test::CliRun;
using qkv::test::run_qkv;

namespace {

const std::string k_folder = "examples/homework/class";

// What the marker decided for one answer file.
struct Verdict {
    int exit = 0;
    std::optional<std::string> first_mistake;
    std::optional<int> first_mistake_head;
    // "STEP@HEAD" or "STEP" → the mistake's id, or nullopt for a wrong step that is no classic mistake
    std::map<std::string, std::optional<std::string>> diagnoses;
};

std::optional<std::string> optional_text(const YAML::Node& node) {
    return node.IsNull() ? std::nullopt : std::optional<std::string>(node.as<std::string>());
}

std::map<std::string, Verdict> read_key() {
    const YAML::Node key = YAML::LoadFile(qkv::test::source_dir() + "/" + k_folder + "/key.yml");
    std::map<std::string, Verdict> verdicts;
    for (const auto& entry : key) {
        const YAML::Node& v = entry.second;
        Verdict verdict;
        verdict.exit = v["exit"].as<int>();
        verdict.first_mistake = optional_text(v["first_mistake"]);
        if (!v["first_mistake_head"].IsNull()) {
            verdict.first_mistake_head = v["first_mistake_head"].as<int>();
        }
        for (const auto& diagnosis : v["diagnoses"]) {
            verdict.diagnoses[diagnosis.first.as<std::string>()] = optional_text(diagnosis.second);
        }
        verdicts[entry.first.as<std::string>()] = verdict;
    }
    return verdicts;
}

std::vector<std::string> answer_files() {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (const auto& file : fs::directory_iterator(fs::path(qkv::test::source_dir()) / k_folder / "answers")) {
        if (file.path().extension() == ".yaml" || file.path().extension() == ".yml") {
            files.push_back(file.path().filename().string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

// "scores@2" for a per-head step, "output" for the others.
std::string step_name(const nlohmann::json& step) {
    const std::string id = step.at("id");
    return step.at("head").is_null() ? id : id + "@" + std::to_string(step.at("head").get<int>());
}

std::string text_of(const std::optional<std::string>& id) { return id ? *id : "null"; }

qkv::test::CliResult run_in_repo(const std::vector<std::string>& args) {
    CliRun run;
    run.args = args;
    run.cwd = qkv::test::source_dir();
    return run_qkv(run);
}

}  // namespace

TEST_CASE("the class folder's key has a verdict for every answer file, and no other", "[check][class]") {
    const auto key = read_key();
    std::vector<std::string> in_key;
    for (const auto& [file, verdict] : key) {
        in_key.push_back(file);
        CAPTURE(file);
        CHECK((verdict.exit == 0 || verdict.exit == 1));
        // a mistake has a step; everything right has none
        CHECK(verdict.first_mistake.has_value() == (verdict.exit == 1));
        CHECK(verdict.diagnoses.empty() == (verdict.exit == 0));
        if (verdict.first_mistake) {
            CHECK(verdict.diagnoses.count(*verdict.first_mistake +
                                          (verdict.first_mistake_head
                                               ? "@" + std::to_string(*verdict.first_mistake_head)
                                               : std::string())) == 1);
        }
    }
    CHECK(in_key == answer_files());
    // a class with the right answers, the classic mistakes and the wrong shapes in it
    CHECK(key.size() >= 30);
}

TEST_CASE("the class exercise shows every classic mistake", "[cli][check][class]") {
    // d_k ≠ √d_model (dividing by d_k, by √d_k and by √d_model all give other numbers), a query bias, W_O
    const auto result = run_in_repo({"run", k_folder + "/model.yaml", "-f", "json"});
    REQUIRE(result.status == 0);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["dims"]["n"] == 4);
    CHECK(doc["dims"]["d_model"] == 6);
    CHECK(doc["dims"]["heads"] == 2);
    CHECK(doc["dims"]["d_k"] == 3);
    CHECK(doc["dims"]["d_out"] == 6);
    CHECK(std::fabs(doc["scale"].get<double>() - std::sqrt(3.0)) < 1e-12);
    int weights = 0;
    for (const auto& step : doc["steps"]) {
        if (step["id"] != "weights") {
            continue;
        }
        ++weights;
        // causal: row i sees keys 1 … i; no weight it sees rounds to 0 or 1 at two decimals (but row 1's, which is 1)
        const auto& rows = step["values"];
        for (std::size_t i = 1; i < rows.size(); ++i) {
            for (std::size_t j = 0; j < rows[i].size(); ++j) {
                const double a = rows[i][j];
                CAPTURE(step["head"], i + 1, j + 1, a);
                CHECK((j <= i ? (a >= 0.005 && a < 0.995) : a == 0.0));
            }
        }
    }
    CHECK(weights == 2);
}

TEST_CASE("every learner of the class folder gets the marker's verdict", "[cli][check][class]") {
    const auto key = read_key();
    REQUIRE_FALSE(key.empty());
    for (const auto& [file, verdict] : key) {
        CAPTURE(file);
        const auto result = run_in_repo(
            {"check", k_folder + "/model.yaml", "--answers", k_folder + "/answers/" + file, "-f", "json"});
        CHECK(result.err.empty());
        CHECK(result.status == verdict.exit);
        if (result.status != 0 && result.status != 1) {
            continue;
        }
        const auto doc = nlohmann::json::parse(result.out);
        CHECK(doc["correct"] == (verdict.exit == 0));

        const auto& first = doc["first_mistake"];
        CHECK(text_of(first.is_null() ? std::nullopt : std::optional<std::string>(first.get<std::string>())) ==
              text_of(verdict.first_mistake));
        REQUIRE(doc.contains("first_mistake_head"));
        const auto& head = doc["first_mistake_head"];
        CHECK((head.is_null() ? -1 : head.get<int>()) == verdict.first_mistake_head.value_or(-1));

        std::map<std::string, std::optional<std::string>> diagnosed;
        for (const auto& step : doc["steps"]) {
            REQUIRE(step.contains("diagnosis_id"));
            const auto& id = step["diagnosis_id"];
            diagnosed[step_name(step)] = id.is_null() ? std::nullopt : std::optional<std::string>(id.get<std::string>());
        }
        // the mistake each step of the key shows (none for a slip) ...
        for (const auto& [step, id] : verdict.diagnoses) {
            CAPTURE(step);
            REQUIRE(diagnosed.count(step) == 1);
            CHECK(text_of(diagnosed[step]) == text_of(id));
        }
        // ... and no mistake named that the marker did not see
        for (const auto& [step, id] : diagnosed) {
            if (id && verdict.diagnoses.count(step) == 0) {
                FAIL_CHECK(step << " is diagnosed " << *id << ", which the key does not list");
            }
        }
    }
}
