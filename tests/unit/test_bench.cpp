// qkv bench: the JSON contract of BENCHMARK in man/qkv.1.in, and results that make sense. Speed
// itself is measured by scripts/bench, never by a test.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

using qkv::test::run_qkv;

namespace {

// GFLOP/s is the products' flops, worked by hand, over the reported total.
void check_gflops(const nlohmann::ordered_json& json, double flops) {
    const double expected = flops / (json["total_ms"].get<double>() * 1e6);
    CHECK_THAT(json["gflops"].get<double>(),
               Catch::Matchers::WithinRel(expected, 0.01) || Catch::Matchers::WithinAbs(expected, 0.002));
}

}  // namespace

TEST_CASE("qkv bench --format json follows the contract", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--repeat", "3",
                                 "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());  // progress only for runs longer than a second
    const auto json = nlohmann::ordered_json::parse(result.out);
    // the keys of BENCHMARK in man/qkv.1.in, in its order
    std::vector<std::string> keys;
    for (const auto& item : json.items()) {
        keys.push_back(item.key());
    }
    CHECK(keys == std::vector<std::string>{"schema_version", "tokens", "d_model", "heads", "kv_heads", "window", "rope", "rope_dim", "rope_scaling", "qk_norm",
                                           "mla", "softcap", "norm_eps", "backward", "threads", "blas", "repeat", "total_ms", "gflops", "peak_rss_mb", "steps"});
    CHECK(json["schema_version"] == 1);
    CHECK(json["tokens"] == 64);
    CHECK(json["d_model"] == 32);
    CHECK(json["heads"] == 4);
    CHECK(json["kv_heads"] == 4);  // one per query head without --kv-heads
    CHECK(json["window"].is_null());
    CHECK(json["rope"] == false);
    CHECK(json["backward"] == false);
    CHECK(json["threads"] == 1);
    CHECK(json["repeat"] == 3);
    CHECK(!json["blas"].get<std::string>().empty());
    const double total_ms = json["total_ms"].get<double>();
    CHECK(total_ms > 0.0);
    CHECK(json["peak_rss_mb"].get<double>() > 1.0);
    // the flops for n = 64, d_model = 32, 4 heads of width 8: projections
    // 3·2·64·32·32 = 393216, scores and weighted sums 2·2·64·64·8·4 = 524288, output
    // 2·64·32·32 = 131072; 2^20 in all
    check_gflops(json, 1048576.0);
    // the steps that do work, in the order of the STEPS section of man/qkv.1.in (the scaling is part of scores,
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

TEST_CASE("qkv bench measures grouped-query heads, a sliding window and RoPE", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--kv-heads", "2",
                                 "--window", "16", "--rope", "--repeat", "3", "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["heads"] == 4);
    CHECK(json["kv_heads"] == 2);
    CHECK(json["window"] == 16);
    CHECK(json["rope"] == true);
    CHECK(json["rope_dim"] == nullptr);
    CHECK(json["softcap"] == nullptr);
    CHECK(json["qk_norm"] == false);
    CHECK(json["norm_eps"] == nullptr);
    CHECK(json["rope_scaling"] == nullptr);
    // the flops for n = 64, d_model = 32, 4 heads of width 8 sharing 2 key/value heads,
    // a window of 16: projections 2·64·32·(32 + 2·2·8) = 262144; query i (from 0) sees
    // min(i + 1, 16) keys, 16·17/2 + 48·16 = 904 pairs, so scores and weighted sums
    // 2·2·904·8·4 = 115712; output 2·64·32·32 = 131072; 508928 in all
    check_gflops(json, 508928.0);
    // RoPE's steps and the masking take their place in the order of the steps
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    CHECK(ids == std::vector<std::string>{"queries", "rotated_queries", "keys", "rotated_keys", "values", "scores",
                                          "masked_scores", "weights", "head_output", "output"});
    // and the text report says what was measured
    const auto text = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "4", "--kv-heads", "1",
                               "--window", "8", "--rope", "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("32 tokens, d_model 16, 4 heads (d_k 4), 1 key/value head, window 8, RoPE, float64") !=
          std::string::npos);
}

TEST_CASE("qkv bench --rope-dim turns the first D elements of each head, as partial_rotary_factor does",
          "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--rope-dim", "4",
                                 "--repeat", "2", "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["rope"] == true);
    CHECK(json["rope_dim"] == 4);
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    CHECK(ids == std::vector<std::string>{"queries", "rotated_queries", "keys", "rotated_keys", "values", "scores",
                                          "weights", "head_output", "output"});
    const auto text = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "2", "--rope-dim", "2",
                               "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("2 heads (d_k 8), RoPE on 2 of d_k, float64") != std::string::npos);
}

TEST_CASE("qkv bench --softcap caps the scaled scores, as softcap: does, forward and backward", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--softcap", "50",
                                 "--backward", "--repeat", "2", "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["softcap"] == 50.0);
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    // the cap after the scores; its gradient is recomputed with the weights, under grad_scaled_scores
    CHECK(std::find(ids.begin(), ids.end(), "capped_scores") == ids.begin() + 4);
    CHECK(ids[3] == "scores");
    const auto text = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "2", "--softcap", "30",
                               "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("2 heads (d_k 8), softcap 30, float64") != std::string::npos);
    CHECK(text.out.find("capped_scores") != std::string::npos);
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--softcap", "0"}),
                                   "--softcap 0: 0 is not positive");
}

TEST_CASE("qkv bench --qk-norm normalises each head's queries and keys, as qk_norm: true does, forward and backward",
          "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--kv-heads", "2",
                                 "--qk-norm", "--norm-eps", "1e-5", "--rope", "--backward", "--repeat", "2",
                                 "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["qk_norm"] == true);
    CHECK(json["norm_eps"] == 1e-5);
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    // each norm between its projection and RoPE; the way back through it counts with grad_queries and grad_keys
    CHECK(std::vector<std::string>(ids.begin(), ids.begin() + 6) ==
          std::vector<std::string>{"queries", "normed_queries", "rotated_queries", "keys", "normed_keys",
                                   "rotated_keys"});
    CHECK(std::find(ids.begin(), ids.end(), "grad_queries") != ids.end());
    CHECK(std::count(ids.begin(), ids.end(), "grad_queries") == 1);
    const auto text = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "2", "--qk-norm",
                               "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("2 heads (d_k 8), QK-norm, float64") != std::string::npos);
    CHECK(text.out.find("normed_keys") != std::string::npos);
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--qk-norm", "--norm-eps", "0"}),
                                   "--norm-eps 0: 0 is not positive");
}

TEST_CASE("qkv bench --rope-scaling scales RoPE's frequencies as a checkpoint of that type does", "[bench][cli]") {
    for (const char* type : {"linear", "dynamic", "yarn", "llama3"}) {
        CAPTURE(type);
        const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--rope-scaling",
                                     type, "--backward", "--repeat", "1", "--threads", "1", "--format", "json"});
        REQUIRE(result.status == 0);
        const auto json = nlohmann::ordered_json::parse(result.out);
        CHECK(json["rope"] == true);  // implied
        CHECK(json["rope_scaling"] == type);
        std::vector<std::string> ids;
        for (const auto& step : json["steps"]) {
            ids.push_back(step["id"]);
        }
        CHECK(ids.at(1) == "rotated_queries");
    }
    const auto text = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "2", "--rope-scaling", "yarn",
                               "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("2 heads (d_k 8), RoPE (yarn scaling), float64") != std::string::npos);
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--rope-scaling", "longrope"}),
                                   "--rope-scaling: longrope not in {linear,dynamic,yarn,llama3}");
    qkv::test::require_input_error(
        run_qkv({"bench", "--tokens", "8", "--d-model", "8", "--heads", "4", "--rope-scaling", "dynamic"}),
        "--rope-scaling dynamic turns a width of 2");
}

TEST_CASE("qkv bench --mla times latent attention: the latents, then the engine's heads from them", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--mla", "--window",
                                 "16", "--repeat", "2", "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["mla"] == true);
    CHECK(json["rope"] == false);  // --rope was not given: RoPE on the rope parts is part of --mla
    // d_n = d_v = 32 / 4 = 8, d_r = 4, r = 32, r_q = 96, d_k = 12; a window of 16 lets 904 (query, key) pairs
    // through (16·17/2 + 48·16). The latents 2·64·32·(96 + 36) = 540672, the queries 2·64·96·(4·12) = 589824,
    // the keys and values from [C K_R] 2·64·36·(4·(12 + 8)) = 368640, scores and weighted sums
    // 2·904·(12 + 8)·4 = 144640, the output 2·64·(4·8)·32 = 131072: 1774848 in all
    check_gflops(json, 1774848.0);
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    CHECK(ids == std::vector<std::string>{"q_latent", "normed_q_latent", "kv_latent", "normed_kv_latent", "rope_keys",
                                          "queries", "rotated_queries", "keys", "rotated_keys", "values", "scores",
                                          "masked_scores", "weights", "head_output", "output"});
    const auto text = run_qkv({"bench", "--tokens", "32", "--d-model", "32", "--heads", "4", "--mla", "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("32 tokens, d_model 32, 4 heads (d_k 12), latent attention (d_n 8, d_r 4, d_v 8, r 32, r_q "
                        "96), float64") != std::string::npos);
    // its own sizes and the forward pass alone
    for (const char* flag : {"--kv-heads", "--rope-dim", "--qk-norm", "--backward"}) {
        CAPTURE(flag);
        std::vector<std::string> args = {"bench", "--tokens", "8", "--mla", flag};
        if (std::string(flag) == "--kv-heads" || std::string(flag) == "--rope-dim") {
            args.push_back("2");
        }
        qkv::test::require_input_error(run_qkv(args), "--mla is given with " + std::string(flag));
    }
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--d-model", "24", "--heads", "4", "--mla"}),
                                   "--mla needs d_model / heads divisible by 4; d_model 24 / 4 heads is 6");
}

TEST_CASE("qkv bench prints a table of the steps by default", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "32", "--d-model", "16", "--heads", "2", "--repeat", "1"});
    REQUIRE(result.status == 0);
    for (const char* text : {"32 tokens, d_model 16, 2 heads (d_k 8)", "BLAS: ", "per-head products: ", "qkv's loops: ", "median of 1 run", "queries",
                             "scores", "weights", "head_output", "output", "total", "GFLOP/s", "peak memory"}) {
        CAPTURE(text);
        CHECK(result.out.find(text) != std::string::npos);
    }
}

TEST_CASE("qkv bench refuses sizes that do not fit together", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "8", "--d-model", "10", "--heads", "4"});
    qkv::test::require_input_error(result, "--d-model 10 is not divisible by --heads 4");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "0"}), "--tokens");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--heads", "12", "--kv-heads", "5"}),
                                   "--heads 12 is not divisible by --kv-heads 5");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--d-model", "12", "--heads", "4", "--rope"}),
                                   "--rope needs an even d_k; d_model 12 / 4 heads is 3");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--d-model", "16", "--heads", "4", "--rope-dim", "3"}),
                                   "--rope-dim 3 is not an even number of at most d_k = 4");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--d-model", "16", "--heads", "4", "--rope-dim", "6"}),
                                   "--rope-dim 6 is not an even number of at most d_k = 4");
    qkv::test::require_input_error(run_qkv({"bench", "--window", "0"}), "--window");
    qkv::test::require_input_error(run_qkv({"bench", "--format", "csv"}), "--format");
}

TEST_CASE("qkv bench --backward times the backward pass's steps too", "[bench][cli]") {
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--repeat", "3",
                                 "--threads", "1", "--backward", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["backward"] == true);
    // the forward's 2^20 (above), then dConcat and dW_O 2·131072, per head the weights again, dA, dQ, dK
    // and dV 5·524288/2, and [dW_Q dW_K dW_V] and dX 2·393216: 3407872 in all
    check_gflops(json, 3407872.0);
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    CHECK(ids == std::vector<std::string>{"queries", "keys", "values", "scores", "weights", "head_output", "output",
                                          "grad_concat", "grad_weights", "grad_scaled_scores", "grad_queries",
                                          "grad_keys", "grad_values", "grad_w_query", "grad_w_key", "grad_w_value",
                                          "grad_w_output", "grad_inputs"});
}

TEST_CASE("qkv bench --set times any key of an example, as the loader reads it", "[bench][cli]") {
    // a causal mask, ALiBi and sinks have no flags of their own: --set gives them as a file would
    const auto result = run_qkv({"bench", "--tokens", "64", "--d-model", "32", "--heads", "4", "--set", "mask=causal",
                                 "--set", "alibi=true", "--set", "sinks=[0.5, 1, -1, 0]", "--repeat", "2",
                                 "--threads", "1", "--format", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    std::vector<std::string> ids;
    for (const auto& step : json["steps"]) {
        ids.push_back(step["id"]);
    }
    CHECK(ids == std::vector<std::string>{"queries", "keys", "values", "scores", "biased_scores", "masked_scores",
                                          "weights", "head_output", "output"});
    // a causal mask lets query i (from 0) see i + 1 keys: 64·65/2 = 2080 pairs, so scores and weighted sums
    // 2·2·2080·8·4 = 266240, with the projections 393216 and the output 131072 of the first case: 790528
    check_gflops(json, 790528.0);
    const auto text = run_qkv({"bench", "--tokens", "16", "--d-model", "16", "--heads", "2", "--set", "mask=causal",
                               "--set", "alibi=true", "--repeat", "1"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("16 tokens, d_model 16, 2 heads (d_k 8), causal, ALiBi, float64, random data") !=
          std::string::npos);
    // a key a flag sets is set again by --set, the later one winning
    const auto again = run_qkv({"bench", "--tokens", "16", "--d-model", "16", "--heads", "2", "--window", "4",
                                "--set", "mask={window: 8}", "--set", "mask={window: 2}", "--repeat", "1", "-f", "json"});
    REQUIRE(again.status == 0);
    CHECK(nlohmann::ordered_json::parse(again.out)["window"] == 2);
}

TEST_CASE("qkv bench reports a problem of a --set at the --set, and of its flags at the flag", "[bench][cli]") {
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--set", "softcap=-1"}),
                                   "qkv: error: --set softcap=-1: softcap is \"-1\"; expected a positive number");
    const auto unknown = run_qkv({"bench", "--tokens", "8", "--set", "ropes=true"});
    qkv::test::require_input_error(unknown, "qkv: error: --set ropes=true: unknown key ropes");
    CHECK(unknown.err.find("did you mean rope?") != std::string::npos);
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--set", "mask"}),
                                   "--set is \"mask\"; expected KEY=VALUE");
    qkv::test::require_input_error(run_qkv({"bench", "--tokens", "8", "--set", "=causal"}),
                                   "--set is \"=causal\"; expected KEY=VALUE");
    // a key that does not fit what the flags made is the key's problem, at its --set
    qkv::test::require_input_error(
        run_qkv({"bench", "--tokens", "8", "--d-model", "16", "--heads", "2", "--set", "sinks=[1, 2, 3]"}),
        "--set sinks=[1, 2, 3]: sinks has 3 numbers; expected 2 (one per query head)");
}

TEST_CASE("qkv bench FILE times an example as it is, on its own data", "[bench][cli]") {
    qkv::test::TempDir dir;
    const std::string file =
        dir.write("cross.yaml", "inputs: {random: {rows: 24, cols: 8, seed: 3}}\n"
                                "context: {random: {rows: 40, cols: 8, seed: 4}}\n"
                                "heads: 2\n"
                                "weights: {query: {random: {rows: 8, cols: 8}}, key: {random: {rows: 8, cols: 8}},\n"
                                "          value: {random: {rows: 8, cols: 6}}}\n"
                                "rope: true\n");
    const auto result = run_qkv({"bench", file, "--repeat", "2", "--threads", "1", "-f", "json"});
    REQUIRE(result.status == 0);
    const auto json = nlohmann::ordered_json::parse(result.out);
    CHECK(json["tokens"] == 24);
    CHECK(json["d_model"] == 8);
    CHECK(json["heads"] == 2);
    CHECK(json["rope"] == true);
    // 24 queries and 40 context rows, 2 heads with d_k 4 and d_v 3, no W_O (d_out 6): the queries
    // 2·24·8·8 = 3072, the keys and values 2·40·8·(8 + 6) = 8960, scores and weighted sums
    // 2·24·40·(4 + 3)·2 = 26880, the output is the concat itself (0 flops): 38912 in all
    check_gflops(json, 38912.0);
    const auto text = run_qkv({"bench", file, "--repeat", "1", "--set", "mask={window: 4}", "--backward"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("qkv bench: 24 tokens, d_model 8, 2 heads (d_k 4), 40 context rows, window 4, RoPE, "
                        "forward and backward, float64, the example's data") != std::string::npos);
    // the flags that make bench's own example have no place with a file
    for (const char* flag : {"--tokens", "--heads", "--rope", "--softcap"}) {
        CAPTURE(flag);
        std::vector<std::string> args = {"bench", file, flag};
        if (std::string(flag) != "--rope") {
            args.push_back("2");
        }
        qkv::test::require_input_error(run_qkv(args), std::string(flag) + " is given with an example");
    }
    // a --set replaces the file's key in place: a problem on a later line of the file keeps its position
    const std::string broken = dir.write("broken.yaml", "inputs: [[1, 0], [0, 1]]\n"
                                                        "heads: 1\n"
                                                        "weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]],\n"
                                                        "          value: [[1, 0], [0, 1]]}\n"
                                                        "scale: -3\n");
    const auto replaced = run_qkv({"bench", broken, "--set", "weights={query: [[1], [0]], key: [[1], [0]], "
                                                             "value: [[1], [0]]}"});
    qkv::test::require_input_error(replaced, broken + ":5:8: scale is \"-3\"");
    CHECK(qkv::test::count_of(replaced.err, "qkv: error:") == 1);
    // lines ended by CR LF, and a document's end marker, count as YAML counts them
    const std::string crlf = dir.write("crlf.yaml", "inputs: [[1, 0], [0, 1]]\r\nheads: 1\r\n"
                                                    "weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]],\r\n"
                                                    "          value: [[1, 0], [0, 1]]}\r\nscale: -3\r\n...\r\n");
    qkv::test::require_input_error(run_qkv({"bench", crlf, "--set", "heads=2"}), crlf + ":5:8: scale is \"-3\"");
    CHECK(run_qkv({"bench", crlf, "--set", "scale=2", "--repeat", "1"}).status == 0);
    // what the large-input path does not compute is refused, naming the example
    qkv::test::require_input_error(run_qkv({"bench", "masked", "--set", "round=2"}),
                                   "builtin:masked: the large-input path does not compute every step of this example");
}
