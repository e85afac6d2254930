// qkv bench: the JSON contract of BENCHMARK in man/qkv.1, and results that make sense. Speed
// itself is measured by scripts/bench, never by a test.
#include "support.hpp"

#include <nlohmann/json.hpp>

using qkv::test::run_qkv;

TEST_CASE("qkv bench --format json follows the contract", "[bench]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--repeat", "3",
                                 "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());  // progress only for runs longer than a second
    const auto json = nlohmann::ordered_json::parse(result.out);
    // the keys of BENCHMARK in man/qkv.1, in its order
    std::vector<std::string> keys;
    for (const auto& item : json.items()) {
        keys.push_back(item.key());
    }
    CHECK(keys == std::vector<std::string>{"schema_version", "tokens", "d_model", "heads", "threads", "blas", "repeat",
                                           "total_ms", "gflops", "peak_rss_mb", "steps"});
    CHECK(json["schema_version"] == 1);
    CHECK(json["tokens"] == 64);
    CHECK(json["d_model"] == 32);
    CHECK(json["heads"] == 4);
    CHECK(json["threads"] == 1);
    CHECK(json["repeat"] == 3);
    CHECK(!json["blas"].get<std::string>().empty());
    const double total_ms = json["total_ms"].get<double>();
    CHECK(total_ms > 0.0);
    CHECK(json["peak_rss_mb"].get<double>() > 1.0);
    // GFLOP/s is the products' flops over the total: worked by hand for n = 64,
    // d_model = 32, 4 heads of width 8: projections 3·2·64·32·32 = 393216, scores and
    // weighted sums 2·2·64·64·8·4 = 524288, output 2·64·32·32 = 131072; 2^20 in all
    CHECK_THAT(json["gflops"].get<double>(),
               Catch::Matchers::WithinRel(1048576.0 / (total_ms * 1e6), 0.01) ||
                   Catch::Matchers::WithinAbs(1048576.0 / (total_ms * 1e6), 0.002));
    // the steps that do work, in the order of the STEPS section of man/qkv.1 (the scaling is part of scores,
    // and the heads write their columns of concat in place)
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
        CHECK(step.size() == 2);
        CHECK(step["median_ms"].get<double>() > 0.0);
        CHECK(step["median_ms"].get<double>() < 100.0 * total_ms);
    }
    CHECK(ids == std::vector<std::string>{"queries", "keys", "values", "scores", "weights", "head_output", "output"});
}

TEST_CASE("qkv bench prints a table of the steps by default", "[bench]") {
    const auto result = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "2", "--repeat", "1"});
    REQUIRE(result.status == 0);
    for (const char* text : {"32 tokens, d_model 16, 2 heads (d_k 8)", "BLAS: ", "per-head products: ", "softmax exp: ", "median of 1 run", "queries",
                             "scores", "weights", "head_output", "output", "total", "GFLOP/s", "peak memory"}) {
        CAPTURE(text);
        CHECK(result.out.find(text) != std::string::npos);
    }
}

TEST_CASE("qkv bench refuses a width that the heads do not divide", "[bench]") {
    const auto result = run_qkv({"bench", "--tokens", "8", "--d-model", "10", "--heads", "4"});
    qkv::test::require_input_error(result, "--d-model 10 is not divisible by --heads 4");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "0"}), "--tokens");
    qkv::test::require_input_error(run_qkv({"bench", "--format", "csv"}), "--format");
}
