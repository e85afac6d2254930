// The autograder recipes of the README, run as they are written there: the
// Gradescope run_autograder script and the PrairieLearn entrypoint, each in a
// scratch folder that stands for the grader's own (/autograder, /grade), with
// an answers file from the class folder as the learner's upload.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// The shell code block of the README whose text holds `marker`.
std::string readme_script(const std::string& marker) {
    const std::string readme = qkv::test::read_repo_file("README.md");
    const auto at = readme.find(marker);
    REQUIRE(at != std::string::npos);
    const auto start = readme.rfind("```sh\n", at);
    const auto end = readme.find("```\n", at);
    REQUIRE(start != std::string::npos);
    REQUIRE(end != std::string::npos);
    return readme.substr(start + 6, end - start - 6);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Runs `script` with sh, qkv first on the PATH; its exit status.
int run_sh(const std::string& script, const fs::path& folder) {
    const fs::path file = folder / "script.sh";
    std::ofstream(file) << script;
    const std::string bin = fs::path(qkv::test::qkv_binary()).parent_path().string();
    const std::string command = "PATH='" + bin + "':\"$PATH\" sh '" + file.string() + "' > '" +
                                (folder / "script.out").string() + "' 2>&1";
    const int status = std::system(command.c_str());
    INFO("script output:\n" << read_text(folder / "script.out"));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const std::string k_class = "examples/homework/class/";

}  // namespace

TEST_CASE("the README's Gradescope run_autograder writes results.json", "[cli][check]") {
    const std::string upload = GENERATE(std::string("answers/mistake-no-exp.yaml"), std::string("answers/right.yaml"),
                                        std::string("unreadable"));
    CAPTURE(upload);
    const qkv::test::TempFolder scratch("autograder");
    const fs::path root = scratch.path() / "autograder";
    fs::create_directories(root / "source");
    fs::create_directories(root / "submission");
    fs::create_directories(root / "results");
    fs::copy_file(qkv::test::source_dir() + "/" + k_class + "model.yaml", root / "source/model.yaml");
    if (upload == "unreadable") {
        std::ofstream(root / "submission/answers.yaml") << "answers:\n  weights: [[1.0, 0.0\n";
    } else {
        fs::copy_file(qkv::test::source_dir() + "/" + k_class + upload, root / "submission/answers.yaml");
    }
    const std::string script = replace_all(readme_script("# run_autograder"), "/autograder", root.string());
    CHECK(run_sh(script, scratch.path()) == 0);

    const auto results = nlohmann::json::parse(read_text(root / "results/results.json"));
    CHECK(results["score"].is_number());
    CHECK(results["output"].is_string());
    REQUIRE(results["tests"].is_array());
    if (upload == "unreadable") {
        CHECK(results["score"] == 0);
        CHECK_THAT(results["output"].get<std::string>(), Contains("Your answers could not be read"));
        CHECK(results["tests"].empty());
        return;
    }
    REQUIRE_FALSE(results["tests"].empty());
    bool failed = false;
    for (const auto& test : results["tests"]) {
        failed = failed || test["status"] == "failed";
        CHECK(test["max_score"].get<double>() > 0);
    }
    CHECK(failed == (upload != "answers/right.yaml"));
}

TEST_CASE("the README's PrairieLearn entrypoint writes a score from 0 to 1", "[cli][check]") {
    if (std::system("python3 -c 'import json' > /dev/null 2>&1") != 0) {
        FAIL("python3 is needed to run the PrairieLearn recipe");
    }
    const qkv::test::TempFolder scratch("autograder");
    const fs::path root = scratch.path() / "grade";
    for (const char* folder : {"tests", "student", "results"}) {
        fs::create_directories(root / folder);
    }
    fs::copy_file(qkv::test::source_dir() + "/" + k_class + "model.yaml", root / "tests/model.yaml");
    fs::copy_file(qkv::test::source_dir() + "/" + k_class + "answers/mistake-no-exp.yaml", root / "student/answers.yaml");
    const std::string script = replace_all(readme_script("# PrairieLearn entrypoint"), "/grade", root.string());
    CHECK(run_sh(script, scratch.path()) == 0);

    const auto results = nlohmann::json::parse(read_text(root / "results/results.json"));
    CHECK(results["gradable"] == true);
    const double score = results["score"];
    CHECK(score > 0.0);
    CHECK(score < 1.0);
    REQUIRE_FALSE(results["tests"].empty());
    for (const auto& test : results["tests"]) {
        CHECK(test["points"].get<double>() <= test["max_points"].get<double>());
    }
    CHECK(results["message"].is_string());
}
