// Every step of qkv against reference values computed independently with
// PyTorch (nn.MultiheadAttention where it applies, plain tensor ops otherwise),
// float64, at 1e-12. See tests/reference/README.md for how they were made.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace qkv;

namespace {

arma::mat to_matrix(const nlohmann::json& rows_json) {
    arma::mat result(rows_json.size(), rows_json.at(0).size());
    for (std::size_t i = 0; i < rows_json.size(); ++i) {
        for (std::size_t j = 0; j < rows_json[i].size(); ++j) {
            result(i, j) = rows_json[i][j].get<double>();
        }
    }
    return result;
}

}  // namespace

TEST_CASE("every step agrees with PyTorch's reference values to 1e-12", "[reference]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::path(test::source_dir()) / "tests/reference/cases";
    std::vector<fs::path> cases;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() == ".yaml") {
            cases.push_back(entry.path());
        }
    }
    std::sort(cases.begin(), cases.end());
    REQUIRE(cases.size() >= 16);
    for (const auto& yaml_path : cases) {
        const std::string name = yaml_path.stem().string();
        CAPTURE(name);
        const std::string relative = "tests/reference/cases/" + name;
        const Trace trace = compute(load_model({name + ".yaml", test::read_repo_file(relative + ".yaml"), folder.string()}));
        const auto expected = nlohmann::json::parse(test::read_repo_file(relative + ".expected.json"));
        const int heads = expected.at("heads").get<int>();
        REQUIRE(trace.dims.heads == static_cast<arma::uword>(heads));
        CHECK_THAT(trace.scale, Catch::Matchers::WithinRel(expected.at("scale").get<double>(), 1e-15));
        for (const char* id : {"queries", "keys", "values", "scores", "weights", "head_output"}) {
            const auto& per_head = expected.at("steps").at(id);
            REQUIRE(per_head.size() == static_cast<std::size_t>(heads));
            for (int h = 1; h <= heads; ++h) {
                const Step* step = trace.find(id, h);
                REQUIRE(step != nullptr);
                test::require_near(step->values, to_matrix(per_head[h - 1]), 1e-12,
                                   name + ": " + id + " head " + std::to_string(h));
            }
        }
        test::require_near(trace.find("output")->values, to_matrix(expected.at("steps").at("output")), 1e-12,
                           name + ": output");
    }
}
