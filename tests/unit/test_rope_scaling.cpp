// RoPE scaling (rope.scaling, a config.json's rope_scaling), worked by hand:
// the frequencies of each rope_type, YaRN's attention factor, and what
// explain, JSON and check say about them.
#include "support.hpp"

#include "attention/attention.hpp"
#include "explain/explain.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <numbers>

using namespace qkv;

namespace {

Rope scaled(RopeScalingType type, double factor) {
    Rope rope;
    RopeScaling scaling;
    scaling.type = type;
    scaling.factor = factor;
    rope.scaling = scaling;
    return rope;
}

// One head of width 8, so that llama3's and YaRN's pairs fall in different bands.
const char* const k_weights_8 = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
weights:
  query: [[1, 0, 2, 1, 0, 1, 1, 2], [0, 1, 1, 0, 2, 1, 0, 1], [1, 1, 0, 2, 1, 0, 2, 1]]
  key: [[0, 1, 1, 2, 1, 0, 1, 1], [1, 0, 2, 0, 1, 2, 0, 1], [1, 2, 0, 1, 0, 1, 1, 0]]
  value: [[1, 2], [2, 0], [0, 1]]
mask: causal
)";

std::string matrix_answer(const arma::mat& M) {
    std::string text = "[";
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        text += i == 0 ? "[" : ", [";
        for (arma::uword j = 0; j < M.n_cols; ++j) {
            text += (j == 0 ? "" : ", ") + fmt::format("{:.4f}", M(i, j));
        }
        text += "]";
    }
    return text + "]";
}

}  // namespace

TEST_CASE("rope.scaling: each rope_type's frequencies, as modeling_rope_utils computes inv_freq", "[steps][rope]") {
    // linear: θ_k / factor; d = 4, θ = [1, 0.01]
    const Rope linear = scaled(RopeScalingType::linear, 4.0);
    CHECK(rope_frequency(linear, 0, 4, 0) == 0.25);
    CHECK(rope_frequency(linear, 1, 4, 0) == Approx(0.0025).epsilon(1e-15));

    // llama3, d = 8: θ = [1, 0.1, 0.01, 0.001], wavelengths 2π/θ ≈ [6.3, 63, 628, 6283] against the bands
    // 64/4 = 16 and 64/1 = 64: pair 0 kept, pair 1 blended, pairs 2 and 3 divided by 8
    Rope llama3 = scaled(RopeScalingType::llama3, 8.0);
    llama3.scaling->original_max_position_embeddings = 64.0;
    CHECK(rope_frequency(llama3, 0, 8, 0) == 1.0);
    const double s = (64.0 / (2.0 * std::numbers::pi / 0.1) - 1.0) / (4.0 - 1.0);
    CHECK(rope_frequency(llama3, 1, 8, 0) == Approx((1.0 - s) * 0.1 / 8.0 + s * 0.1).epsilon(1e-14));
    CHECK(rope_frequency(llama3, 2, 8, 0) == Approx(0.01 / 8.0).epsilon(1e-14));
    CHECK(rope_frequency(llama3, 3, 8, 0) == Approx(0.001 / 8.0).epsilon(1e-14));

    // yarn, d = 8, factor 8, original 2048: the pair that turns 32 times over 2048 positions is
    // 8·ln(2048/(32·2π))/(2·ln 10000) = 1.008, floored to 1; once, 2.513, rounded up to 3; the ramp
    // (k − 1)/2 is [0, 0, 0.5, 1]
    Rope yarn = scaled(RopeScalingType::yarn, 8.0);
    yarn.scaling->original_max_position_embeddings = 2048.0;
    const YarnRamp ramp = yarn_ramp(yarn, 8);
    CHECK(ramp.low == 1.0);
    CHECK(ramp.high == 3.0);
    CHECK(rope_frequency(yarn, 1, 8, 0) == Approx(0.1).epsilon(1e-14));
    CHECK(rope_frequency(yarn, 2, 8, 0) == Approx(0.01 * 0.5 + 0.01 / 8.0 * 0.5).epsilon(1e-14));
    CHECK(rope_frequency(yarn, 3, 8, 0) == Approx(0.001 / 8.0).epsilon(1e-14));
    // its attention factor 0.1·ln 8 + 1 multiplies cos and sin: a turned pair grows by it
    CHECK(rope_attention_factor(yarn) == Approx(0.1 * std::log(8.0) + 1.0).epsilon(1e-15));
    const arma::mat X = test::rows({{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 8}});
    const arma::mat turned = rotate(X, yarn);
    CHECK(arma::norm(turned.row(1)) == Approx(rope_attention_factor(yarn) * arma::norm(X.row(1))).epsilon(1e-14));
    // without truncate the ramp's ends stay where they fall
    yarn.scaling->truncate = false;
    CHECK(yarn_ramp(yarn, 8).low == Approx(8.0 * std::log(2048.0 / (32.0 * 2.0 * std::numbers::pi)) /
                                          (2.0 * std::log(10000.0))).epsilon(1e-14));
    // DeepSeek-V3's mscale and mscale_all_dim of 1 make the factor 1
    yarn.scaling->mscale = 1.0;
    yarn.scaling->mscale_all_dim = 1.0;
    CHECK(rope_attention_factor(yarn) == 1.0);

    // dynamic, d = 6, factor 2 over 4 positions: at 6 positions the base becomes 10000·(2·6/4 − 1)^(6/4);
    // within 4 positions it stays
    Rope dynamic = scaled(RopeScalingType::dynamic, 2.0);
    dynamic.scaling->original_max_position_embeddings = 4.0;
    const double base = 10000.0 * std::pow(2.0, 1.5);
    CHECK(rope_frequency(dynamic, 1, 6, 6) == Approx(std::pow(base, -2.0 / 6.0)).epsilon(1e-14));
    CHECK(rope_frequency(dynamic, 1, 6, 3) == Approx(std::pow(10000.0, -2.0 / 6.0)).epsilon(1e-14));
}

TEST_CASE("rope.scaling in explain, JSON and check", "[rope][cli]") {
    const std::string yarn = std::string(k_weights_8) +
                             "rope: {scaling: {rope_type: yarn, factor: 8.0, original_max_position_embeddings: 2048}}\n";
    const Model model = test::load_text(yarn);
    const Trace trace = compute(model);
    RenderOptions options;
    options.precision = 4;
    std::string explained;
    for (const std::string& line : explain_cell(model, trace, parse_cell("rotated_queries[3,3]"), options).lines) {
        explained += line + "\n";
    }
    INFO(explained);
    CHECK(explained.find("YaRN's attention factor 1.2079 multiplies cos and sin") != std::string::npos);
    CHECK(explained.find("YaRN's ramp from pair 1 to pair 3 is 0.5000 here") != std::string::npos);

    const test::CliResult json = test::run_qkv({"run", "-", "-f", "json"}, yarn);
    REQUIRE(json.status == 0);
    const auto params = nlohmann::json::parse(json.out)["params"]["rope"];
    CHECK(params["scaling"]["rope_type"] == "yarn");
    CHECK(params["scaling"]["attention_factor"].get<double>() == Approx(0.1 * std::log(8.0) + 1.0));
    CHECK(params["max_position_embeddings"].is_null());

    // the rotated queries turned without the scaling
    Model plain = model;
    plain.rope->scaling.reset();
    const arma::mat unscaled = compute(plain).find(StepId::rotated_queries, 1)->values;
    const test::TempDir folder;
    const std::string file = folder.write("yarn.yaml", yarn);
    const test::CliResult checked =
        test::run_qkv({"check", file, "--answers", "-"}, "rotated_queries: " + matrix_answer(unscaled) + "\n");
    INFO(checked.out << checked.err);
    CHECK(checked.status == 1);
    CHECK(checked.out.find("The pairs were turned by the unscaled θ_k") != std::string::npos);

    // llama3 applied to every frequency, seen in one number: element 1 of row 3 (pair 0, kept by llama3)
    const std::string llama3 = std::string(k_weights_8) +
                               "rope: {scaling: {rope_type: llama3, factor: 8, low_freq_factor: 1, "
                               "high_freq_factor: 4, original_max_position_embeddings: 64}}\n";
    Model every = test::load_text(llama3);
    every.rope->scaling->type = RopeScalingType::linear;
    const double wrong = compute(every).find(StepId::rotated_queries, 1)->values(2, 0);
    const std::string llama3_file = folder.write("llama3.yaml", llama3);
    const test::CliResult cell = test::run_qkv({"check", llama3_file, "--answers", "-", "-f", "json"},
                                               "rotated_queries: [~, ~, [" + fmt::format("{:.4f}", wrong) +
                                                   ", ~, ~, ~, ~, ~, ~, ~]]\n");
    INFO(cell.out << cell.err);
    const auto report = nlohmann::json::parse(cell.out);
    CHECK(report["steps"][0]["cells"][0]["diagnosis_id"] == "rope_llama3_every_frequency");
}
