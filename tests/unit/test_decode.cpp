// Decoding with a key/value cache (EXAMPLE FILES in man/qkv.1.in, `qkv run --decode`): each row,
// computed from the new token's projections and the cache alone, against row
// t of the full computation (every built-in example and PyTorch reference
// case that is causal self-attention) and against PyTorch itself; the rolling
// cache of a window; the cache's bytes; the refusals; and the output formats.
#include "attention/decode.hpp"
#include "attention/steps.hpp"
#include "builtin/builtin.hpp"
#include "render/table.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>

using namespace qkv;
using test::require_near;
using test::run_qkv;

namespace {

const arma::mat& step_values(const Trace& trace, StepId id, int head) {
    const Step* step = trace.find(id, head);
    REQUIRE(step != nullptr);
    return step->values;
}

// Every decode row of `model` against row t of the full computation at
// 1e-12: the query, the cache (keys after RoPE, values), the products q·k,
// the row the softmax read, the weights and the head output. Outside the
// cache the full computation's weights are exactly 0, so the cache held
// every key the mask lets through. Returns how many rows it compared.
std::size_t require_rows_equal_full(const Model& model, const std::string& name) {
    const Trace trace = compute(model);
    const DecodeTrace decoded = decode(model);
    REQUIRE(decoded.rows.size() == model.n() * model.n_heads());
    for (const DecodeRow& row : decoded.rows) {
        const std::string where = name + ", t = " + std::to_string(row.t) + ", head " + std::to_string(row.head);
        INFO(where);
        REQUIRE(row.kv_head == model.kv_head_of(row.head));
        const arma::uword i = row.t - 1;
        const arma::uword first = row.first - 1;
        const arma::rowvec query = step_values(trace, scored_queries(model), row.head).row(i);
        if (model.mla) {
            // the absorbed query [q_nope·W_UKᵀ, q_rope], and the one cache: the normed latents and the rope keys
            const arma::uword d_n = model.mla->nope_dim;
            const arma::uword d_r = model.mla->rope_dim;
            require_near(row.query,
                         arma::join_rows(query.head_cols(d_n) * model.kv_weights(row.kv_head).W_K.t(),
                                         query.tail_cols(d_r)),
                         1e-12, where + ": the absorbed query");
            const arma::mat latents = step_values(trace, StepId::normed_kv_latent, 0).rows(first, i);
            require_near(decoded.cache_latent(row), latents, 1e-12, where + ": cache_latent");
            require_near(decoded.cache_rope_keys(row),
                         step_values(trace, StepId::rotated_keys, row.kv_head).submat(first, d_n, i, d_n + d_r - 1),
                         1e-12, where + ": cache_rope_keys");
            require_near(row.latent_output, arma::rowvec(row.weights * latents), 1e-12, where + ": latent_output");
        } else {
            require_near(row.query, query, 1e-12, where + ": query");
            require_near(decoded.cache_keys(row), step_values(trace, scored_keys(model), row.kv_head).rows(first, i),
                         1e-12, where + ": cache_keys");
            require_near(decoded.cache_values(row), step_values(trace, StepId::values, row.kv_head).rows(first, i),
                         1e-12, where + ": cache_values");
        }
        require_near(row.dots, step_values(trace, StepId::scores, row.head).row(i).cols(first, i), 1e-12,
                     where + ": q·k");
        require_near(row.scores, step_values(trace, StepId::masked_scores, row.head).row(i).cols(first, i), 1e-12,
                     where + ": scores");
        const arma::rowvec weights = step_values(trace, StepId::weights, row.head).row(i);
        require_near(row.weights, weights.cols(first, i), 1e-12, where + ": weights");
        CHECK(arma::accu(weights) - arma::accu(weights.cols(first, i)) == 0.0);
        require_near(row.head_output, step_values(trace, StepId::head_output, row.head).row(i), 1e-12,
                     where + ": head_output");
    }
    return decoded.rows.size();
}

// A row of numbers from JSON.
arma::rowvec json_row(const nlohmann::json& numbers) {
    arma::rowvec row(numbers.size());
    for (std::size_t j = 0; j < numbers.size(); ++j) {
        row(j) = numbers[j].get<double>();
    }
    return row;
}

// Compares a JSON document with tests/golden/NAME: the same keys and the same
// array lengths, strings equal, numbers within 1e-12 (the full computation's
// products go through BLAS, whose last bits may differ between machines).
// QKV_UPDATE_GOLDEN=1 rewrites the file instead.
void check_json_golden(const std::string& name, const std::string& actual) {
    const char* update = std::getenv("QKV_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1") {
        test::check_golden(name, actual);
        return;
    }
    const auto got = nlohmann::json::parse(actual).flatten();
    const auto expected = nlohmann::json::parse(test::read_repo_file("tests/golden/" + name)).flatten();
    for (auto it = expected.begin(); it != expected.end(); ++it) {
        if (!got.contains(it.key())) {
            FAIL(name << ": " << it.key() << " is missing");
        }
        const auto& value = got.at(it.key());
        if (it->is_number() && value.is_number()) {
            const double e = it->get<double>();
            const double difference = std::fabs(value.get<double>() - e);
            if (!(difference <= 1e-12 || difference <= 1e-12 * std::fabs(e))) {
                FAIL(name << ": " << it.key() << " is " << value.dump() << "; expected " << it->dump());
            }
        } else if (value != *it) {
            FAIL(name << ": " << it.key() << " is " << value.dump() << "; expected " << it->dump());
        }
    }
    if (got.size() != expected.size()) {
        FAIL(name << ": " << got.size() << " values; expected " << expected.size());
    }
    SUCCEED(name << " agrees");
}

// The built-in examples that allow decoding: causal self-attention.
std::vector<std::string> decodable_examples() {
    std::vector<std::string> names;
    for (const auto& example : builtin_examples()) {
        if (decode_obstacles(test::load_text(std::string(example.text), std::string(example.name) + ".yaml")).empty()) {
            names.emplace_back(example.name);
        }
    }
    return names;
}

}  // namespace

TEST_CASE("each decoded row equals row t of the full computation, for every built-in example that decodes",
          "[decode][slow]") {
    const std::vector<std::string> names = decodable_examples();
    // rope, gqa, alibi-window, sinks, backward and mla (examples/INDEX); the others have no causal mask, or padding
    CHECK(names == std::vector<std::string>{"rope", "gqa", "alibi-window", "sinks", "backward", "mla"});
    for (const auto& name : names) {
        CAPTURE(name);
        const BuiltinFile* example = find_builtin_example(name);
        REQUIRE(example != nullptr);
        CHECK(require_rows_equal_full(test::load_text(std::string(example->text), name + ".yaml"), name) > 0);
    }
    // and the Llama-sized layer of examples/: 256 tokens, 8 query heads on 2 key/value heads, RoPE
    const Model llama = test::load_text(test::read_repo_file("examples/llama-layer.yaml"), "llama-layer.yaml");
    CHECK(require_rows_equal_full(llama, "llama-layer") == 256 * 8);
}

TEST_CASE("each decoded row equals the full computation and PyTorch, for every causal reference case", "[decode]") {
    std::vector<std::string> decoded;
    for (const auto& name : test::reference_cases()) {
        const Model model = test::load_reference_case(name);
        if (!decode_obstacles(model).empty()) {
            continue;
        }
        CAPTURE(name);
        decoded.push_back(name);
        if (model.rope && model.rope->scaling && model.rope->scaling->type == RopeScalingType::dynamic) {
            continue;  // its frequencies follow the length decoded so far (the next test)
        }
        require_rows_equal_full(model, name);
        // the weights and head outputs of tests/reference/cases, from PyTorch (tests/reference/README.md)
        const auto expected = nlohmann::json::parse(
                                  test::read_repo_file("tests/reference/cases/" + name + ".expected.json"))
                                  .at("steps");
        for (const DecodeRow& row : decode(model).rows) {
            const auto h = static_cast<std::size_t>(row.head - 1);
            const arma::rowvec weights = json_row(expected.at("weights").at(h).at(row.t - 1));
            require_near(row.weights, weights.cols(row.first - 1, row.t - 1), 1e-12, name + ": PyTorch's weights");
            require_near(row.head_output, json_row(expected.at("head_output").at(h).at(row.t - 1)), 1e-12,
                         name + ": PyTorch's head_output");
        }
    }
    // every case with mask: causal or a window and neither padding nor context (tests/reference/cases);
    // decoding is the forward pass, so the backward cases decode as well
    CHECK(decoded == std::vector<std::string>{
                         "alibi_causal_pytorch_block", "backward_alibi_causal", "backward_heads_list_dv_differs",
                         "backward_positional_sinusoidal_causal", "backward_pytorch_block_causal", "backward_qk_norm_all_offset",
                         "backward_qk_norm_gqa_causal",
                         "backward_rope_partial_gqa_causal", "backward_rope_scaling_yarn", "backward_sinks_causal", "backward_sinks_window_gqa_gpt_oss", "backward_softcap_gqa_causal", "backward_window",
                         "gqa_rope_causal_llama", "heads_list_dv_differs_from_dk",
                         "large_scores_shared_offset", "mla_no_q_rank_causal", "mla_q_rank_interleaved_yarn",
                         "mla_window_q_rank", "pytorch_block_causal", "qk_norm_gemma3_offset_window",
                         "qk_norm_olmo2_all", "qk_norm_qwen3_gqa_rope_causal", "rope_causal", "rope_partial_half_causal", "rope_partial_interleaved_gqa", "rope_scaling_dynamic",
                         "rope_scaling_linear", "rope_scaling_llama3", "rope_scaling_yarn", "rope_scaling_yarn_deepseek",
                         "rope_scaling_yarn_gpt_oss", "sinks_causal",
                         "sinks_window_gqa_gpt_oss", "softcap_alibi_gqa_window_sinks", "softcap_causal", "three_heads_x_w_causal", "window_2_five_tokens",
                         "window_3_five_tokens", "window_alibi"});
}

TEST_CASE("mla decodes as DeepSeek's inference code decodes it, absorbed, entry by entry", "[decode][reference]") {
    // NAME.decode.json: DeepSeek-V3's MLA.forward called token by token with attn_impl "absorb"
    // (tests/reference/generate_mla.py); every mla case that decodes has one
    int cases = 0;
    for (const auto& name : test::reference_cases()) {
        const Model model = test::load_reference_case(name);
        if (!model.mla || !decode_obstacles(model).empty()) {
            continue;
        }
        CAPTURE(name);
        ++cases;
        const auto expected =
            nlohmann::json::parse(test::read_repo_file("tests/reference/cases/" + name + ".decode.json"));
        const DecodeTrace decoded = decode(model);
        CHECK(decoded.bytes_per_token == expected.at("cache").at("bytes_per_token").get<std::uint64_t>());
        CHECK(decoded.bytes_per_token_unabsorbed ==
              expected.at("cache").at("bytes_per_token_unabsorbed").get<std::uint64_t>());
        const auto& entries = expected.at("decode");
        REQUIRE(entries.size() == decoded.rows.size());
        for (std::size_t k = 0; k < entries.size(); ++k) {
            const DecodeRow& row = decoded.rows[k];
            const auto& entry = entries[k];
            const std::string where = name + ", t = " + std::to_string(row.t) + ", head " + std::to_string(row.head);
            REQUIRE(entry.at("t").get<arma::uword>() == row.t);
            REQUIRE(entry.at("head").get<int>() == row.head);
            CHECK(entry.at("positions").front().get<arma::uword>() == row.first);
            const auto matrix = [](const nlohmann::json& rows) {
                arma::mat values(rows.size(), rows.front().size());
                for (std::size_t i = 0; i < rows.size(); ++i) {
                    values.row(i) = json_row(rows[i]);
                }
                return values;
            };
            require_near(decoded.cache_latent(row), matrix(entry.at("cache_latent")), 1e-12, where + ": cache_latent");
            require_near(decoded.cache_rope_keys(row), matrix(entry.at("cache_rope_keys")), 1e-12,
                         where + ": cache_rope_keys");
            require_near(row.query, json_row(entry.at("query")), 1e-12, where + ": query");
            require_near(row.scores, json_row(entry.at("scores")), 1e-12, where + ": scores");
            require_near(row.weights, json_row(entry.at("weights")), 1e-12, where + ": weights");
            require_near(row.latent_output, json_row(entry.at("latent_output")), 1e-12, where + ": latent_output");
            require_near(row.head_output, json_row(entry.at("head_output")), 1e-12, where + ": head_output");
        }
    }
    // causal without and with q_rank, DeepSeek's YaRN with style interleaved, and a window
    CHECK(cases == 3);
}

TEST_CASE("with dynamic RoPE scaling, each token is turned by the frequencies of the length decoded so far",
          "[decode]") {
    // as transformers' dynamic_rope_update recomputes inv_freq for seq_len = t, while the cache keeps each key
    // as it was turned at its own step: the rows differ from the full computation's once t passes
    // max_position_embeddings (4 here, of 6 tokens)
    const Model model = test::load_reference_case("rope_scaling_dynamic");
    REQUIRE(model.rope->scaling->type == RopeScalingType::dynamic);
    const DecodeTrace decoded = decode(model);
    const Trace full = compute(model);
    for (const DecodeRow& row : decoded.rows) {
        CAPTURE(row.t, row.head);
        const arma::uword i = row.t - 1;
        const arma::rowvec query = step_values(full, StepId::queries, row.head).row(i);
        require_near(row.query, rotate(query, *model.rope, i, row.t), 1e-12, "query at length t");
        const arma::mat keys = step_values(full, StepId::keys, row.kv_head);
        const arma::mat cache = decoded.cache_keys(row);
        for (arma::uword j = row.first - 1; j <= i; ++j) {
            require_near(cache.row(j - (row.first - 1)), rotate(keys.row(j), *model.rope, j, j + 1), 1e-12,
                         "key turned at its own step");
        }
        if (row.t == model.n()) {
            // the last token sees all n positions, as the full computation does
            require_near(row.query, step_values(full, StepId::rotated_queries, row.head).row(i), 1e-12,
                         "the last query");
        }
    }
}

TEST_CASE("decoding computes each step before concat as its row of the step table says", "[decode]") {
    // every step an example can have before the heads are put together has a one-token form, but
    // the context, which decoding refuses (decode_obstacles); a row computed at positions names
    // its function, one computed by row uses compute() itself
    int at_positions = 0;
    for (const StepId id : all_steps()) {
        if (id == StepId::concat) {
            break;
        }
        const StepRow& row = step_row(id);
        CAPTURE(step_text(id));
        if (row.parameter) {
            continue;
        }
        CHECK((row.token == OneToken::none) == (id == StepId::context));
        CHECK((row.decode != nullptr) == (row.token == OneToken::at_positions));
        at_positions += row.token == OneToken::at_positions ? 1 : 0;
    }
    // the inputs and positions (the token's own rows), RoPE's two, ALiBi's bias and the mask
    CHECK(at_positions == 6);
    // an example with every step decoding takes: no obstacle, and rows equal to the full computation
    const Model model = test::load_text("tokens: [a, b, c, d, e]\n"
                                        "inputs: {random: {rows: 5, cols: 4, seed: 2}}\n"
                                        "positional: sinusoidal\n"
                                        "heads: 4\nkv_heads: 2\n"
                                        "weights: {query: {random: {rows: 4, cols: 8, seed: 3}},\n"
                                        "          key: {random: {rows: 4, cols: 4, seed: 4}},\n"
                                        "          value: {random: {rows: 4, cols: 4, seed: 5}}}\n"
                                        "rope: {style: interleaved}\nalibi: true\nsinks: [0.5, -1, 0, 2]\n"
                                        "softcap: 2\nmask: {window: 3}\n",
                                        "everything.yaml");
    CHECK(decode_obstacles(model).empty());
    CHECK(require_rows_equal_full(model, "everything") == 20);
}

TEST_CASE("decoding rounds as the full computation does, with positions, biases and a divisor", "[decode]") {
    // sinusoidal positions, biases in PyTorch's layout, scale 3, round: every step to 2 decimals
    const std::string yaml = R"(
inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0], [1, 1, 1]]
positional: sinusoidal
layout: pytorch
weights:
  query: [[1, 0, 1], [0, 2, 1]]
  key:   [[0, 1, 1], [1, 1, 0]]
  value: [[1, 1, 0], [0, 1, 2]]
bias: {query: [0.5, -0.25], key: [0.1, 0.2], value: [1, 0]}
scale: 3
mask: causal
)";
    SECTION("exact") { CHECK(require_rows_equal_full(test::load_text(yaml), "positions and biases") == 4); }
    SECTION("rounded") { CHECK(require_rows_equal_full(test::load_text(yaml + "round: 2\n"), "rounded") == 4); }
    SECTION("RoPE rounded") {
        const std::string rope = test::read_repo_file("examples/rope.yaml") + "round: 3\n";
        CHECK(require_rows_equal_full(test::load_text(rope), "rope, rounded") == 4);
    }
}

TEST_CASE("a rolling cache of W slots holds the last W positions, oldest first", "[decode]") {
    KeyValueCache cache(3, 2, 1);
    CHECK(cache.size() == 0);
    CHECK(cache.first() == 0);
    CHECK(cache.keys().n_rows == 0);
    for (arma::uword p = 1; p <= 5; ++p) {
        cache.append(arma::rowvec{static_cast<double>(p), 10.0 * static_cast<double>(p)},
                     arma::rowvec{100.0 * static_cast<double>(p)});
        CHECK(cache.size() == std::min<arma::uword>(p, 3));
        CHECK(cache.last() == p);
    }
    // positions 4 and 5 overwrote 1 and 2 in their slots; keys() reads them back in order
    CHECK(cache.first() == 3);
    require_near(cache.keys(), test::rows({{3, 30}, {4, 40}, {5, 50}}), 0, "keys");
    require_near(cache.values(), test::rows({{300}, {400}, {500}}), 0, "values");
    CHECK(cache.bytes() == 3 * (2 + 1) * 8);
}

TEST_CASE("with a window of W the cache never holds more than W positions, and its rows are still exact",
          "[decode]") {
    SECTION("alibi-window: W = 3 over 5 tokens") {
        const Model model = test::load_text(test::read_repo_file("examples/alibi-window.yaml"));
        const DecodeTrace decoded = decode(model);
        CHECK(decoded.window == 3);
        for (const DecodeRow& row : decoded.rows) {
            CAPTURE(row.t, row.head);
            CHECK(row.first == (row.t > 3 ? row.t - 2 : 1));
            CHECK(decoded.cache_keys(row).n_rows == std::min<arma::uword>(row.t, 3));
            CHECK(row.weights.n_elem == std::min<arma::uword>(row.t, 3));
        }
        // 3 positions of (2 + 2)·2·8 = 64 bytes after the last token, not 5
        CHECK(decoded.bytes() == 192);
        CHECK(decoded.bytes_after(2) == 128);
    }
    // three tokens of width 2 whose values are 2·x_1 and 3·x_2, under a window of W
    const auto three_tokens = [](int W) {
        return test::load_text("inputs: [[1, 0], [0, 1], [1, 1]]\n"
                               "weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[2, 0], [0, 3]]}\n"
                               "mask: {window: " + std::to_string(W) + "}\n");
    };
    SECTION("W = 1: each token sees only itself, and its output is its own value") {
        const Model model = three_tokens(1);
        CHECK(require_rows_equal_full(model, "window 1") == 3);
        const DecodeTrace decoded = decode(model);
        CHECK(decoded.rows.back().first == 3);
        require_near(decoded.rows.back().head_output, test::rows({{2, 3}}), 1e-15, "own value");
        CHECK(decoded.bytes() == (2 + 2) * 8);
    }
    SECTION("W larger than the example: the cache keeps every position") {
        const Model model = three_tokens(10);
        CHECK(require_rows_equal_full(model, "window 10") == 3);
        CHECK(decode(model).rows.back().first == 1);
        CHECK(decode(model).bytes() == 3 * (2 + 2) * 8);
    }
}

TEST_CASE("the cache holds (d_k + d_v)·G·8 bytes per position: grouped-query heads make it smaller", "[decode]") {
    // rope: d_k = 4, d_v = 2, one head: (4 + 2)·1·8 = 48 bytes a position, 4 positions
    const DecodeTrace rope = decode(test::load_text(test::read_repo_file("examples/rope.yaml")));
    CHECK(rope.kv_heads == 1);
    CHECK(rope.bytes_per_token == 48);
    CHECK(rope.bytes() == 4 * 48);
    CHECK(rope.bytes_after(1) == 48);

    // gqa: 4 query heads on 2 key/value heads of d_k = d_v = 2: (2 + 2)·2·8 = 64, where 4 caches would hold 128
    const std::string gqa_yaml = test::read_repo_file("examples/gqa.yaml");
    const DecodeTrace gqa = decode(test::load_text(gqa_yaml));
    CHECK(gqa.heads == 4);
    CHECK(gqa.kv_heads == 2);
    CHECK(gqa.bytes_per_token == 64);
    CHECK(gqa.bytes() == 3 * 64);
    // query heads 1 and 2 read cache 1, heads 3 and 4 cache 2
    for (const DecodeRow& row : gqa.rows) {
        CHECK(row.kv_head == (row.head <= 2 ? 1 : 2));
    }

    // 4 query heads of d_k = d_v = 2 on G key/value heads: (2 + 2)·G·8 bytes a position
    const auto four_heads = [](int G) {
        const std::string kv_columns = std::to_string(2 * G);
        return test::load_text("inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]\n"
                               "heads: 4\n"
                               "kv_heads: " + std::to_string(G) + "\n"
                               "weights:\n"
                               "  query: {random: {rows: 4, cols: 8, seed: 1}}\n"
                               "  key: {random: {rows: 4, cols: " + kv_columns + ", seed: 2}}\n"
                               "  value: {random: {rows: 4, cols: " + kv_columns + ", seed: 3}}\n"
                               "mask: causal\n");
    };
    CHECK(decode(four_heads(4)).bytes_per_token == 128);  // a key/value head per query head: twice gqa's
    CHECK(decode(four_heads(2)).bytes_per_token == 64);   // as gqa
    CHECK(decode(four_heads(1)).bytes_per_token == 32);   // multi-query attention: half of gqa's
    CHECK(require_rows_equal_full(four_heads(1), "multi-query") == 3 * 4);
}

TEST_CASE("run --decode refuses what is not causal self-attention, naming each problem with a hint", "[decode][cli]") {
    const auto require_refused = [](const test::CliResult& result, const std::vector<std::string>& fragments) {
        for (const auto& fragment : fragments) {
            test::require_input_error(result, fragment);
        }
        // one hint per error line
        std::istringstream lines(result.err);
        std::string line;
        int errors = 0;
        int hints = 0;
        while (std::getline(lines, line)) {
            errors += line.rfind("qkv: error: ", 0) == 0 ? 1 : 0;
            hints += line.rfind("  hint: ", 0) == 0 ? 1 : 0;
        }
        CHECK(errors == static_cast<int>(fragments.size()));
        CHECK(hints == errors);
        CHECK(result.err.find("without --decode") != std::string::npos);
    };
    SECTION("no mask") {
        require_refused(run_qkv({"run", "illustrated", "--decode"}),
                        {"--decode: the example has no mask; expected mask: causal or mask: {window: W}"});
    }
    SECTION("padding") {
        require_refused(run_qkv({"run", "masked", "--decode"}),
                        {"--decode: the example has padding; expected no padding"});
    }
    SECTION("cross-attention without a mask: both problems") {
        require_refused(run_qkv({"run", "cross", "--decode"}),
                        {"--decode: the example is cross-attention (context:); expected self-attention",
                         "--decode: the example has no mask"});
    }
    SECTION("a mask matrix, even a causal one") {
        const std::string yaml = R"(
inputs: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
mask: [[1, 0], [1, 1]]
)";
        require_refused(run_qkv({"run", "-", "--decode"}, yaml),
                        {"--decode: the example's mask is a matrix; expected mask: causal or mask: {window: W}"});
    }
    SECTION("csv and svg") {
        for (const std::string format : {"csv", "svg"}) {
            CAPTURE(format);
            require_refused(run_qkv({"run", "rope", "--decode", "-f", format}),
                            {"--decode cannot be written as " + format +
                             "; expected -f text, markdown, latex, json or html"});
        }
    }
    SECTION("--steps") {
        require_refused(run_qkv({"run", "rope", "--decode", "--steps", "weights"}),
                        {"--decode cannot be combined with --steps; expected one of the two"});
    }
    SECTION("the options are checked before the file: a csv request on a file without a mask names the format only") {
        require_refused(run_qkv({"run", "illustrated", "--decode", "-f", "csv"}), {"cannot be written as csv"});
    }
    SECTION("--head past the heads") {
        test::require_input_error(run_qkv({"run", "rope", "--decode", "--head", "2"}), "--head 2 does not exist");
    }
}

TEST_CASE("run --decode writes the run JSON document with two more keys, decode and cache", "[decode][cli][json]") {
    const auto plain = run_qkv({"run", "gqa", "-f", "json"});
    const auto decoding = run_qkv({"run", "gqa", "--decode", "-f", "json"});
    REQUIRE(plain.status == 0);
    REQUIRE(decoding.status == 0);
    CHECK(decoding.err.empty());
    const auto run = nlohmann::json::parse(plain.out);
    auto document = nlohmann::json::parse(decoding.out);
    // one entry per position t and query head h, with the keys of EXAMPLE FILES in man/qkv.1.in and no others
    const auto& decode = document.at("decode");
    REQUIRE(decode.size() == 3 * 4);
    for (std::size_t k = 0; k < decode.size(); ++k) {
        const auto& entry = decode[k];
        CAPTURE(k);
        std::vector<std::string> keys;
        for (const auto& item : entry.items()) {
            keys.push_back(item.key());
        }
        std::sort(keys.begin(), keys.end());
        CHECK(keys == std::vector<std::string>{"cache_keys", "cache_values", "head", "head_output", "kv_head",
                                               "positions", "query", "scores", "t", "weights"});
        CHECK(entry.at("t") == k / 4 + 1);
        CHECK(entry.at("head") == k % 4 + 1);
        CHECK(entry.at("kv_head") == (k % 4 < 2 ? 1 : 2));
        CHECK(entry.at("positions").size() == k / 4 + 1);
        CHECK(entry.at("cache_keys").size() == k / 4 + 1);
        CHECK(entry.at("scores").size() == k / 4 + 1);
    }
    CHECK(document.at("cache") == nlohmann::json{{"kv_heads", 2}, {"bytes_per_token", 64}, {"bytes", 192}});
    // without the two keys it is the run document, number for number
    document.erase("decode");
    document.erase("cache");
    CHECK(document == run);
}

TEST_CASE("run --decode --head shows one query head and the cache it reads, and the bytes of the whole cache",
          "[decode][cli]") {
    const auto json = run_qkv({"run", "gqa", "--decode", "--head", "3", "-f", "json"});
    REQUIRE(json.status == 0);
    const auto document = nlohmann::json::parse(json.out);
    REQUIRE(document.at("decode").size() == 3);
    for (const auto& entry : document.at("decode")) {
        CHECK(entry.at("head") == 3);
        CHECK(entry.at("kv_head") == 2);
    }
    CHECK(document.at("cache").at("bytes") == 192);
    // the steps as run --head 3 shows them
    const auto run = nlohmann::json::parse(run_qkv({"run", "gqa", "--head", "3", "-f", "json"}).out);
    CHECK(document.at("steps") == run.at("steps"));

    const auto text = run_qkv({"run", "gqa", "--decode", "--head", "3"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("head 3 · q = x₁·W_Q") != std::string::npos);
    CHECK(text.out.find("key/value head 2 · cache") != std::string::npos);
    CHECK(text.out.find("head 1 ·") == std::string::npos);
    CHECK(text.out.find("head 4 ·") == std::string::npos);
    CHECK(text.out.find("key/value head 1 ·") == std::string::npos);
}

TEST_CASE("run --decode writes text that fits 80 columns, and --brief drops only the prose", "[decode][cli]") {
    for (const auto& name : decodable_examples()) {
        CAPTURE(name);
        const auto result = run_qkv({"run", name, "--decode"});
        REQUIRE(result.status == 0);
        std::istringstream lines(result.out);
        std::string line;
        while (std::getline(lines, line)) {
            CAPTURE(line);
            CHECK(display_width(line) <= 80);
        }
        const auto brief = run_qkv({"run", name, "--decode", "--brief"});
        REQUIRE(brief.status == 0);
        CHECK(result.out.find("A language model writes one token at a time.") != std::string::npos);
        CHECK(brief.out.find("A language model writes one token at a time.") == std::string::npos);
        CHECK(brief.out.find(name == "mla" ? "each position adds (r + d_r)·8" : "each position adds (d_k + d_v)·G·8") !=
              std::string::npos);
    }
}

TEST_CASE("run --decode matches its golden files in text, JSON and Markdown", "[decode][cli][golden]") {
    for (const std::string name : {"rope", "alibi-window", "mla"}) {
        CAPTURE(name);
        const auto text = run_qkv({"run", name, "--decode"});
        REQUIRE(text.status == 0);
        CHECK(text.err.empty());
        test::check_golden(name + ".decode.txt", text.out);
        const auto json = run_qkv({"run", name, "--decode", "-f", "json"});
        REQUIRE(json.status == 0);
        check_json_golden(name + ".decode.json", json.out);
    }
    // the ratio of the caches, when every head's keys and values would take fewer bytes than the latent's
    const auto one_head =
        run_qkv({"run", test::source_dir() + "/tests/reference/cases/mla_window_q_rank.yaml", "--decode", "-f",
                 "markdown"});
    REQUIRE(one_head.status == 0);
    CHECK(one_head.out.find("= 56 bytes a position: with so few heads the latent cache is not the smaller") !=
          std::string::npos);
    const auto markdown = run_qkv({"run", "alibi-window", "--decode", "-f", "markdown"});
    REQUIRE(markdown.status == 0);
    test::check_golden("alibi-window.decode.md", markdown.out);
}
