// Multi-head latent attention (mla:), worked by hand on the built-in example:
// one latent per token normed by its root mean square, each head's keys and
// values made from it, the rope key every head shares, RoPE on the rope parts
// alone, the default scale with YaRN's mscale², and what explain, JSON, the
// worksheet and check say about it.
#include "support.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"
#include "explain/explain.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace qkv;

namespace {

Model builtin_mla() { return test::load_text(test::read_repo_file("examples/mla.yaml"), "mla.yaml"); }

std::string explained(const Model& model, const Trace& trace, const std::string& cell) {
    RenderOptions options;
    options.precision = 6;
    std::string text;
    for (const std::string& line : explain_cell(model, trace, parse_cell(cell), options).lines) {
        text += line + "\n";
    }
    return text;
}

}  // namespace

TEST_CASE("mla makes every head's keys and values from one normed latent and one shared rope key",
          "[steps][mla]") {
    const Model model = builtin_mla();
    REQUIRE(model.mla.has_value());
    CHECK(model.d_k() == 3);  // d_n 1 + d_r 2
    CHECK(model.d_v() == 2);
    const Trace trace = compute(model);
    // X·W_kva: its first r = 2 columns the latent, its last d_r = 2 the rope key
    // (x2 = [0, 2, 0, 1]: latent [0, 3], rope key [0 + 1, 2 + 0] = [1, 2])
    test::require_near(trace.find(StepId::kv_latent)->values, test::rows({{2, 0}, {0, 3}, {1, 2}}), 0, "kv_latent");
    test::require_near(trace.find(StepId::rope_keys)->values, test::rows({{1, 1}, {1, 2}, {2, 1}}), 0, "rope_keys");
    // RMSNorm with γ = [1, 0.5]: [0, 3] / √(4.5 + 1e-6) ∘ γ; [2, 0] / √(2 + 1e-6); [1, 2] / √(2.5 + 1e-6)
    const double r1 = 1 / std::sqrt(2 + 1e-6);
    const double r2 = 1 / std::sqrt(4.5 + 1e-6);
    const double r3 = 1 / std::sqrt(2.5 + 1e-6);
    const arma::mat C = test::rows({{2 * r1, 0}, {0, 3 * r2 * 0.5}, {r3, 2 * r3 * 0.5}});
    test::require_near(trace.find(StepId::normed_kv_latent)->values, C, 1e-15, "normed_kv_latent");
    // head h's key: c·W_UK (kv_b_proj's column 1, or 4 for head 2), then the rope key
    test::require_near(trace.find(StepId::keys, 1)->values,
                       arma::join_rows(C.col(0), trace.find(StepId::rope_keys)->values), 1e-15, "keys@1");
    test::require_near(trace.find(StepId::keys, 2)->values,
                       arma::join_rows(C.col(1), trace.find(StepId::rope_keys)->values), 1e-15, "keys@2");
    // head 2's values: columns 5 and 6 of kv_b_proj, [1, 0] and [1, 1]
    test::require_near(trace.find(StepId::values, 2)->values, arma::join_rows(C.col(0), C.col(0) + C.col(1)), 1e-15,
                       "values@2");
    // the queries: head 2's columns 4 … 6 of q_proj (x2 = [0, 2, 0, 1] → [3, 0, 3])
    test::require_near(trace.find(StepId::queries, 2)->values.row(1), test::rows({{3, 0, 3}}), 0, "queries@2");
    // RoPE turns the last d_r elements only, with d_r as the width: position 1 turns pair 0 by 1 radian
    for (int h = 1; h <= 2; ++h) {
        const arma::mat& Q = trace.find(StepId::queries, h)->values;
        const arma::mat& Q_rot = trace.find(StepId::rotated_queries, h)->values;
        test::require_near(Q_rot.col(0), Q.col(0), 0, "q_nope passes unchanged");
        Rope plain = *model.rope;
        plain.skip = 0;
        test::require_near(Q_rot.tail_cols(2), rotate(Q.tail_cols(2), plain), 0, "q_rope turned as a head of width d_r");
    }
    CHECK(trace.find(StepId::rotated_queries, 2)->values(1, 1) == std::cos(1.0) * 0 - std::sin(1.0) * 3);
    // the rope part of the rotated keys is one for every head
    test::require_near(trace.find(StepId::rotated_keys, 1)->values.tail_cols(2),
                       trace.find(StepId::rotated_keys, 2)->values.tail_cols(2), 0, "one rotated rope key");
    // the default scale is √(d_n + d_r) = √3
    CHECK(trace.scale == std::sqrt(3.0));
}

TEST_CASE("mla's default scale divides √(d_n + d_r) by YaRN's mscale² when rope.scaling has mscale_all_dim",
          "[steps][mla]") {
    // DeepSeek-V3's rope_scaling: factor 40, mscale_all_dim 1 → mscale = 0.1·ln 40 + 1
    const Model model = test::load_reference_case("mla_q_rank_interleaved_yarn");
    const double mscale = 0.1 * std::log(40.0) + 1.0;
    CHECK(model.mscale() == mscale);
    CHECK_THAT(model.scale(), Catch::Matchers::WithinRel(std::sqrt(6.0) / (mscale * mscale), 1e-15));
    // and only with mla: the same rope_scaling leaves plain attention's √d_k as it is
    Model plain = model;
    plain.mla.reset();
    CHECK(plain.mscale() == 1.0);
}

TEST_CASE("mla's steps through explain, the fast path, JSON, the worksheet and check", "[mla][cli]") {
    const Model model = builtin_mla();
    const Trace trace = compute(model);
    // a score cell both as q·k and from the latent, with W_UK absorbed into the query
    const std::string score = explained(model, trace, "scores[3,1]@1");
    INFO(score);
    const std::string value = fmt::format(" = {:.6f}\n", trace.find(StepId::scores, 1)->values(2, 0));
    CHECK(score.find("scores[3,1]@1 = q·k = ") != std::string::npos);
    CHECK(score.find("(q_nope·W_UKᵀ)·c + q_rope·k_rope") != std::string::npos);
    CHECK(score.find("c = normed_kv_latent[1] = [1.414213, 0]") != std::string::npos);
    // both forms end in the score's value
    CHECK(test::count_of(score, "scores[3,1]@1 = ") == 2);
    CHECK(test::count_of(score, value) == 2);
    // a key's rope part is the shared rope key; its first d_n from the latent
    const std::string key = explained(model, trace, "keys[2]@1");
    INFO(key);
    CHECK(key.find("keys[2,3]@1 = rope_keys[2,2] = 2\n") != std::string::npos);
    CHECK(key.find("keys[2,1]@1 = c·w = 0·1 + 0.707107·0 = 0\n") != std::string::npos);
    const std::string normed = explained(model, trace, "normed_kv_latent[2,2]");
    INFO(normed);
    CHECK(normed.find("mean(c²) = (0² + 3²) / 2 = 4.500000\n") != std::string::npos);
    CHECK(normed.find("normed_kv_latent[2,2] = c[2]·r·γ[2] = 3 · 0.471404 · 0.500000 = 0.707107\n") !=
          std::string::npos);
    // a row of the normed latent is a cache entry of run --decode
    CHECK(normed.find("run --decode caches row 2 with rope_keys[2], turned at position 1\n") != std::string::npos);

    // the engine, asked for, takes over after the latents: every head's keys and values from [C K_R]
    ComputeOptions options;
    options.kernels = Kernels::fast;
    CHECK(use_fast_path(model, options));
    const Trace fast = compute(model, options);
    for (const Step& step : trace.steps) {
        CAPTURE(step_text(step.id), step.head);
        test::require_near(fast.find(step.id, step.head)->values, step.values, 1e-12, step_text(step.id));
    }

    const test::CliResult json = test::run_qkv({"run", "mla", "-f", "json"});
    REQUIRE(json.status == 0);
    const auto params = nlohmann::json::parse(json.out)["params"];
    CHECK(params["mla"]["kv_rank"] == 2);
    CHECK(params["mla"]["rope_dim"] == 2);
    CHECK(params["mla"]["q_rank"].is_null());
    CHECK(params["mla"]["kv_a_layernorm"] == std::vector<double>{1, 0.5});
    CHECK(params["mla"]["eps"] == 1e-6);
    CHECK(nlohmann::json::parse(test::run_ok({"run", "rope", "-f", "json"}))["params"]["mla"].is_null());

    const test::CliResult sheet = test::run_qkv({"worksheet", "mla"});
    REQUIRE(sheet.status == 0);
    CHECK(sheet.out.find("Latent attention (mla): r = 2, d_r = 2, d_n = 1, d_v = 2.") != std::string::npos);

    // the true values, written to 4 decimals, are graded right
    std::string answers = "answers:\n";
    for (const StepId id : {StepId::kv_latent, StepId::normed_kv_latent, StepId::rope_keys}) {
        answers += "  " + step_text(id) + ": " + test::yaml_matrix(trace.find(id)->values, 4) + "\n";
    }
    answers += "  " + test::answer_yaml("keys", 2, 2, trace.find(StepId::keys, 2)->values);
    const test::CliResult checked =
        test::run_qkv({"check", "-"}, test::read_repo_file("examples/mla.yaml") + answers);
    INFO(checked.out << checked.err);
    CHECK(checked.status == 0);
}

TEST_CASE("check names mla's mistakes, from a whole step or from one number", "[mla][check][cli]") {
    const std::string example = test::read_repo_file("examples/mla.yaml");
    const Model model = builtin_mla();
    const Trace trace = compute(model);
    const test::TempDir folder;
    const std::string file = folder.write("mla.yaml", example);
    const auto diagnosis = [&](const std::string& answers) {
        const test::CliResult graded = test::run_qkv({"check", file, "--answers", "-", "-f", "json"}, answers);
        INFO(answers << graded.out << graded.err);
        REQUIRE(graded.status == 1);
        return test::first_diagnosis(graded.out);
    };
    // the latent passed on without its norm: the whole step, and one number of it
    const arma::mat& latent = trace.find(StepId::kv_latent)->values;
    CHECK(diagnosis("normed_kv_latent: " + test::yaml_matrix(latent, 4) + "\n") == "mla_latent_norm_forgotten");
    CHECK(diagnosis("normed_kv_latent: [[~, ~], [~, 3], [~, ~]]\n") == "mla_latent_norm_forgotten");
    // the values made from the latent before its norm: c_KV·W_UV of head 1 (kv_b_proj's columns 2 and 3)
    const arma::mat unnormed = latent * model.heads[0].W_V;
    CHECK(diagnosis("heads: [{values: " + test::yaml_matrix(unnormed, 4) + "}]\n") == "mla_latent_norm_forgotten");
    // RoPE on the first d_r elements, as partial_rotary_factor would turn them
    Rope first = *model.rope;
    first.skip = 0;
    first.partial_rotary_factor = 2.0 / 3.0;
    const arma::mat turned = rotate(trace.find(StepId::keys, 1)->values, first);
    CHECK(diagnosis("heads: [{rotated_keys: " + test::yaml_matrix(turned, 4) + "}]\n") == "mla_rope_first_elements");

    // the scale: DeepSeek-V3's YaRN makes it √(d_n + d_r) / mscale² = √6 / mscale²
    const std::string yarn = test::source_dir() + "/tests/reference/cases/mla_q_rank_interleaved_yarn.yaml";
    const Model scaled = test::load_reference_case("mla_q_rank_interleaved_yarn");
    const arma::mat S = compute(scaled).find(StepId::scores, 1)->values;
    const double mscale = scaled.mscale();
    const auto scale_diagnosis = [&](const arma::mat& answer) {
        const test::CliResult graded = test::run_qkv(
            {"check", yarn, "--answers", "-", "-f", "json"},
            "heads: [{scaled_scores: " + test::yaml_matrix(answer, 4) + "}]\n");
        INFO(graded.out << graded.err);
        REQUIRE(graded.status == 1);
        return test::first_diagnosis(graded.out);
    };
    CHECK(scale_diagnosis(S / (std::sqrt(2.0) / (mscale * mscale))) == "mla_scaled_by_nope");
    CHECK(scale_diagnosis(S / std::sqrt(6.0)) == "mla_mscale_forgotten");

    // the other pairing is named in the rope part's own width, d_r
    const Model half = test::load_reference_case("mla_no_q_rank_causal");
    Rope interleaved = *half.rope;
    interleaved.style = RopeStyle::interleaved;
    const arma::mat paired = rotate(compute(half).find(StepId::keys, 1)->values, interleaved, 0, half.n());
    const test::CliResult graded =
        test::run_qkv({"check", test::source_dir() + "/tests/reference/cases/mla_no_q_rank_causal.yaml", "--answers",
                       "-", "-f", "json"},
                      "heads: [{rotated_keys: " + test::yaml_matrix(paired, 4) + "}]\n");
    INFO(graded.out << graded.err);
    const auto report = nlohmann::json::parse(graded.out);
    CHECK(test::first_diagnosis(graded.out) == "rope_other_style");
    CHECK(report["steps"][0]["diagnosis"].get<std::string>().find(
              "this example pairs k with k + d_r/2 within the rope part (style half)") != std::string::npos);
}
