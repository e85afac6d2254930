// The attention of today's language models (EXAMPLE FILES in man/qkv.1.in), step by step, with
// values worked by hand: RoPE's pair rotations in both styles, ALiBi's slopes
// and bias, the sliding window, attention sinks, grouped-query heads and
// soft-capping.
#include "support.hpp"

#include "explain/explain.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace qkv;

namespace {

const char* const k_weights_4 = R"(
weights:
  query: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
  key:   [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
  value: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
)";

}  // namespace

TEST_CASE("RoPE turns each pair by p·θ_k: half pairs k with k + d/2, interleaved 2k with 2k + 1", "[steps][rope]") {
    // row 2 is at position 1; d = 4: θ_0 = 1, θ_1 = 10000^(−2/4) = 0.01
    const arma::mat X = test::rows({{1, 2, 3, 4}, {1, 2, 3, 4}});
    const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
    const arma::mat half = rotate(X, Rope{10000.0, RopeStyle::half});
    test::require_near(half.row(0), X.row(0), 0, "position 0 is not turned");
    test::require_near(half.row(1), test::rows({{1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2}}),
                       1e-15, "half");
    const arma::mat interleaved = rotate(X, Rope{10000.0, RopeStyle::interleaved});
    test::require_near(interleaved.row(1),
                       test::rows({{1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3 * c2 - 4 * s2, 4 * c2 + 3 * s2}}), 1e-15,
                       "interleaved");
    // another base: θ_1 = 100^(−1/2) = 0.1
    CHECK(rope_frequency(Rope{100.0, RopeStyle::half}, 1, 4, 0) == Approx(0.1).epsilon(1e-15));
    CHECK(rope_pair(Rope{10000.0, RopeStyle::half}, 1, 6) == std::pair<arma::uword, arma::uword>{1, 4});
    CHECK(rope_pair(Rope{10000.0, RopeStyle::interleaved}, 1, 6) == std::pair<arma::uword, arma::uword>{2, 3});
}

TEST_CASE("RoPE with partial_rotary_factor turns the first d_rot elements, with θ over d_rot", "[steps][rope]") {
    // d_k = 6, factor 2/3: d_rot = 4, pairs (0, 2) and (1, 3) in style half, θ_1 = 10000^(−2/4) = 0.01;
    // elements 5 and 6 pass unchanged
    const Rope half{10000.0, RopeStyle::half, 4.0 / 6.0};
    CHECK(half.rotated(6) == 4);
    CHECK(rope_pairs(half, 6) == 2);
    CHECK(rope_pair(half, 1, 6) == std::pair<arma::uword, arma::uword>{1, 3});
    CHECK(rope_frequency(half, 1, 6, 0) == Approx(0.01).epsilon(1e-15));
    const arma::mat X = test::rows({{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}});
    const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
    test::require_near(rotate(X, half).row(1),
                       test::rows({{1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2, 5, 6}}), 1e-15,
                       "half, partial");
    const Rope interleaved{10000.0, RopeStyle::interleaved, 0.5};
    test::require_near(rotate(test::rows({{1, 2, 3, 4}, {1, 2, 3, 4}}), interleaved).row(1),
                       test::rows({{1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3, 4}}), 1e-15, "interleaved, partial");
    // turning back undoes it, the passed elements included
    test::require_near(rotate_back(rotate(X, half), half), X, 1e-15, "rotate_back");
}

TEST_CASE("RoPE: a rotated query and key score by their distance, not their positions", "[steps][rope]") {
    // the same q and k at positions (2, 1) and (4, 3) give the same score
    arma::mat Q(5, 4), K(5, 4);
    for (arma::uword r = 0; r < 5; ++r) {
        Q.row(r) = arma::rowvec{0.3, -1.2, 0.7, 2.0};
        K.row(r) = arma::rowvec{1.1, 0.4, -0.5, 0.9};
    }
    for (const RopeStyle style : {RopeStyle::half, RopeStyle::interleaved}) {
        const arma::mat S = rotate(Q, Rope{10000.0, style}) * rotate(K, Rope{10000.0, style}).t();
        CHECK(S(2, 1) == Approx(S(4, 3)).epsilon(1e-13));
        CHECK(S(0, 3) == Approx(S(1, 4)).epsilon(1e-13));
        CHECK(S(3, 3) == Approx(arma::dot(Q.row(0), K.row(0))).epsilon(1e-13));
    }
}

TEST_CASE("ALiBi's slopes are Press et al.'s, and its bias is −m·|i − j|", "[steps][alibi]") {
    test::require_near(alibi_slopes(1), test::rows({{std::exp2(-8)}}), 0, "1 head");
    test::require_near(alibi_slopes(4), test::rows({{0.25, 0.0625, 0.015625, 0.00390625}}), 0, "4 heads");
    // not a power of two: the slopes of 4, then those of 8 at h = 1, 3
    test::require_near(alibi_slopes(6),
                       test::rows({{std::exp2(-2), std::exp2(-4), std::exp2(-6), std::exp2(-8), std::exp2(-1),
                                    std::exp2(-3)}}),
                       0, "6 heads");
    test::require_near(alibi_slopes(3), test::rows({{std::exp2(-4), std::exp2(-8), std::exp2(-2)}}), 0, "3 heads");
    test::require_near(position_bias(3, 4, 0.5),
                       test::rows({{0, -0.5, -1, -1.5}, {-0.5, 0, -0.5, -1}, {-1, -0.5, 0, -0.5}}), 0, "bias");
    // no −0 on the diagonal
    CHECK_FALSE(std::signbit(position_bias(2, 2, 0.5)(1, 1)));
}

TEST_CASE("a sink joins each row's softmax and is dropped, so rows sum to less than 1", "[steps][sinks]") {
    // [0, 0] with a sink of 0: three equal shares, two of them kept
    test::require_near(softmax_rows(test::rows({{0, 0}}), 0.0), test::rows({{1.0 / 3, 1.0 / 3}}), 1e-15, "equal");
    // ln 2 and 0 with a sink of ln 2: 2 / (2 + 1 + 2) and 1 / 5
    test::require_near(softmax_rows(test::rows({{std::log(2.0), 0}}), std::log(2.0)), test::rows({{0.4, 0.2}}), 1e-15,
                       "ln 2");
    // a sink far above the scores takes everything, without overflow
    test::require_near(softmax_rows(test::rows({{1, 2}}), 1000.0), test::rows({{0, 0}}), 0, "large sink");
    // −∞ (blocked) cells stay 0
    test::require_near(softmax_rows(test::rows({{-arma::datum::inf, 0}}), 0.0), test::rows({{0, 0.5}}), 1e-15,
                       "blocked");
}

TEST_CASE("with a sink, a row whose keys are all blocked gives all its weight to the sink (gpt-oss)",
          "[steps][sinks][cli]") {
    // a row of −∞: the maximum is the sink's, every weight 0
    const double inf = arma::datum::inf;
    test::require_near(softmax_rows(test::rows({{-inf, -inf}}), 0.5), test::rows({{0, 0}}), 0, "blocked row");
    // the mask blocks query 1's every key, mask and padding together query 3's
    const std::string example = std::string("inputs: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]\n"
                                            "tokens: [a, b, c]\n"
                                            "mask: [[0, 0, 0], [1, 1, 0], [0, 1, 0]]\n"
                                            "padding: [1, 0, 1]\n") +
                                k_weights_4;
    const Model model = test::load_text(example + "sinks: [0.25]\n");
    const Trace trace = compute(model);
    // query 2 sees key 1 only (padding blocks key 2), with a score of 0: e^0 / (e^0 + e^0.25)
    const double share = 1.0 / (1.0 + std::exp(0.25));
    test::require_near(trace.find(StepId::weights, 1)->values,
                       test::rows({{0, 0, 0}, {share, 0, 0}, {0, 0, 0}}), 1e-15, "weights");
    test::require_near(trace.find(StepId::head_output, 1)->values,
                       test::rows({{0, 0, 0, 0}, {share, 0, 0, 0}, {0, 0, 0, 0}}), 1e-15, "head_output");
    // the fast path as the step functions
    ComputeOptions fast;
    fast.kernels = Kernels::fast;
    test::require_near(compute(model, fast).find(StepId::weights, 1)->values,
                       trace.find(StepId::weights, 1)->values, 1e-15, "fast path");
    // the run says which rows went to the sink
    const test::CliResult run = test::run_qkv({"run", "-", "-s", "weights"}, example + "sinks: [0.25]\n");
    CHECK(run.status == 0);
    CHECK(run.out.find("row 1 (a) may attend to no key: all of its weight went to the sink") != std::string::npos);
    CHECK(run.out.find("row 3 (c) may attend to no key") != std::string::npos);
    CHECK(run.out.find("row 2 (b) may attend") == std::string::npos);
    // without sinks the same rows are an input error, whose hint names sinks
    const test::CliResult refused = test::run_qkv({"run", "-"}, example);
    CHECK(refused.status == 2);
    CHECK(refused.err.find("query 1 (a) may attend to no key") != std::string::npos);
    CHECK(refused.err.find("sinks:") != std::string::npos);
}

TEST_CASE("a sliding window of W lets query i see keys i − W + 1 … i", "[steps][window]") {
    const Model model = test::load_text(std::string("inputs: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], "
                                                    "[1, 1, 1, 1]]\nmask: {window: 2}\n") +
                                        k_weights_4);
    CHECK(model.mask_kind == MaskKind::window);
    test::require_near(model.allowed(),
                       test::rows({{1, 0, 0, 0, 0},
                                   {1, 1, 0, 0, 0},
                                   {0, 1, 1, 0, 0},
                                   {0, 0, 1, 1, 0},
                                   {0, 0, 0, 1, 1}}),
                       0, "window 2");
    const Trace trace = compute(model);
    // X = I (and a last row of ones) with identity weights: query 3 sees keys 2 and 3, scaled scores 0 and
    // 1/√4 = 0.5, so its weights are 1/(1 + e^0.5) and e^0.5/(1 + e^0.5)
    const double share = 1.0 / (1.0 + std::exp(0.5));
    test::require_near(trace.find(StepId::weights, 1)->values.row(2), test::rows({{0, share, 1 - share, 0, 0}}), 1e-15,
                       "query 3");
    // a window at least n wide is the causal mask
    const Model wide = test::load_text(std::string("inputs: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]\nmask: "
                                                   "{window: 9}\n") +
                                       k_weights_4);
    test::require_near(wide.allowed(), test::rows({{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}), 0, "wide window");
}

TEST_CASE("grouped-query heads: query head h reads key/value head ⌈h·G/H⌉", "[steps][gqa]") {
    // H = 4 query heads of d_k = 1 over G = 2 key/value heads: W_K has 2 columns
    const Model model = test::load_text(R"(
inputs: [[1, 2], [3, 4]]
heads: 4
kv_heads: 2
weights:
  query: [[1, 0, 1, 0], [0, 1, 0, 1]]
  key:   [[1, 0], [0, 1]]
  value: [[2, 0], [0, 3]]
bias: {key: [10, 20]}
)");
    CHECK(model.n_heads() == 4);
    CHECK(model.n_kv_heads() == 2);
    CHECK(model.kv_head_of(1) == 1);
    CHECK(model.kv_head_of(2) == 1);
    CHECK(model.kv_head_of(3) == 2);
    CHECK(model.first_query_head(2) == 3);
    const Trace trace = compute(model);
    // key/value head 1 reads column 1 of W_K plus b_K[1]; head 2 column 2 plus b_K[2]
    test::require_near(trace.find(StepId::keys, 1)->values, test::rows({{11}, {13}}), 0, "keys 1");
    test::require_near(trace.find(StepId::keys, 2)->values, test::rows({{22}, {24}}), 0, "keys 2");
    test::require_near(trace.find(StepId::values, 2)->values, test::rows({{6}, {12}}), 0, "values 2");
    CHECK(trace.find(StepId::keys, 3) == nullptr);
    // query head 2 is column 2 of W_Q, X·[0, 1]ᵀ = [2, 4], against key/value head 1's keys [11, 13]
    test::require_near(trace.find(StepId::scores, 2)->values, test::rows({{22, 26}, {44, 52}}), 0, "scores 2");
    // query head 3 (column 3 = [1, 0]ᵀ: [1, 3]) against key/value head 2's keys [22, 24]
    test::require_near(trace.find(StepId::scores, 3)->values, test::rows({{22, 24}, {66, 72}}), 0, "scores 3");
}

TEST_CASE("a learner's mistakes in the new steps are named", "[check][variants][cli]") {
    const char* const example = R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]]
weights:
  query: [[1, 0], [0, 1], [1, 1], [0, 0]]
  key:   [[0, 1], [1, 0], [1, 1], [0, 0]]
  value: [[1, 0], [0, 1], [1, 1], [0, 0]]
rope: true
alibi: [0.5]
mask: {window: 2}
)";
    const Model model = test::load_text(example);
    const Trace trace = compute(model);
    // the keys not rotated, the bias with the wrong sign, and one key too many in the window
    const arma::mat keys = trace.find(StepId::keys, 1)->values;
    const arma::mat bias = trace.find(StepId::position_bias, 1)->values;
    struct Case {
        const char* step;
        arma::mat value;
        const char* named;
    };
    Model wider = model;
    wider.window = 3;
    const std::vector<Case> cases = {
        {"rotated_keys", keys, "RoPE was not applied"},
        {"position_bias", -bias, "+m·|i − j|"},
        {"masked_scores", apply_mask(trace.find(StepId::biased_scores, 1)->values, wider.allowed()),
         "instead of 2"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.step);
        std::string answers = "answers:\n  " + std::string(c.step) + ":\n";
        for (arma::uword i = 0; i < c.value.n_rows; ++i) {
            answers += "    - [";
            for (arma::uword j = 0; j < c.value.n_cols; ++j) {
                const double v = c.value(i, j);
                answers += (j == 0 ? "" : ", ") + (std::isinf(v) ? std::string("-inf") : fmt::format("{:.6f}", v));
            }
            answers += "]\n";
        }
        const test::CliResult result = test::run_qkv({"check", "-"}, std::string(example) + answers);
        INFO(result.out << result.err);
        CHECK(result.out.find(c.named) != std::string::npos);
    }
}

TEST_CASE("the Llama-style layer in examples/ loads at real size and runs", "[variants]") {
    const std::string folder = std::string(test::source_dir()) + "/examples";
    const Model model = load_model({"llama-layer.yaml", test::read_repo_file("examples/llama-layer.yaml"), folder});
    CHECK(model.n() == 256);
    CHECK(model.d_model() == 512);
    CHECK(model.n_heads() == 8);
    CHECK(model.n_kv_heads() == 2);
    CHECK(model.d_k() == 64);
    REQUIRE(model.rope.has_value());
    CHECK(model.rope->base == 500000.0);
    ComputeOptions options;
    options.steps = {StepId::weights, StepId::output};
    options.head = 8;
    const Trace trace = compute(model, options);
    const arma::mat& A = trace.find(StepId::weights, 8)->values;
    // causal: each row sums to 1 over the keys up to itself
    test::require_near(arma::sum(A, 1), arma::vec(256, arma::fill::ones), 1e-12, "row sums");
    CHECK(A(0, 1) == 0.0);
    CHECK(trace.find(StepId::output)->values.n_cols == 512);
}

TEST_CASE("check: key/value heads taken in turn are named, and later steps follow from a wrong answer",
          "[check][variants][gqa][cli]") {
    // H = 4, G = 2: query head 2 reads key/value head 1; taking the heads in turn would give it head 2
    const char* const example = R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
heads: 4
kv_heads: 2
weights:
  query: [[1, 0, 0, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 0, 1, 0], [1, 0, 0, 0, 0, 1, 0, 1], [0, 0, 1, 1, 1, 0, 1, 1]]
  key:   [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
  value: [[1, 0, 2, 0], [0, 1, 0, 2], [1, 1, 0, 0], [0, 0, 1, 1]]
rope: true
)";
    const Model model = test::load_text(example);
    const Trace trace = compute(model);
    const arma::mat wrong = trace.find(StepId::rotated_queries, 2)->values * trace.find(StepId::rotated_keys, 2)->values.t();
    const auto matrix_text = [](const arma::mat& M) {
        std::string text;
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            text += "      - [";
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                text += (j == 0 ? "" : ", ") + fmt::format("{:.6f}", M(i, j));
            }
            text += "]\n";
        }
        return text;
    };
    // the wrong scores, and the scaled scores that follow from them: consistent, not wrong
    const std::string answers = "answers:\n  heads:\n    - {}\n    - scores:\n" + matrix_text(wrong) +
                                "      scaled_scores:\n" + matrix_text(wrong / std::sqrt(2.0)) + "    - {}\n    - {}\n";
    const test::CliResult result = test::run_qkv({"check", "-", "-f", "json"}, std::string(example) + answers);
    INFO(result.out << result.err);
    REQUIRE(result.status == 1);
    const auto doc = nlohmann::json::parse(result.out);
    bool named = false;
    bool carried = false;
    for (const auto& step : doc.at("steps")) {
        if (step.at("id") == "scores") {
            named = step.at("diagnosis").get<std::string>().find("key/value head 2, taking the key/value heads in "
                                                                  "turn") != std::string::npos;
        }
        if (step.at("id") == "scaled_scores") {
            for (const auto& cell : step.at("cells")) {
                // every cell right or following from the wrong scores, and some only following
                CHECK(cell.at("verdict") != "wrong");
                carried = carried || cell.at("verdict") == "consistent";
            }
        }
    }
    CHECK(named);
    CHECK(carried);

    // the same mistake in the weighted sum: query head 3 weighs key/value head 1's values, with its
    // weights right (and, for head 2, with the weights that follow from the wrong scores)
    const auto diagnosis_of = [&](const std::string& head_answers, int head) {
        const test::CliResult graded = test::run_qkv({"check", "-", "-f", "json"}, std::string(example) + head_answers);
        INFO(graded.out << graded.err);
        REQUIRE(graded.status == 1);
        const auto doc = nlohmann::json::parse(graded.out);
        for (const auto& step : doc.at("steps")) {
            if (step.at("id") == "head_output" && step.at("head") == head && step.at("diagnosis").is_string()) {
                return step.at("diagnosis").get<std::string>();
            }
        }
        FAIL_CHECK("no diagnosis of head_output@" << head << " in " << graded.out);
        return std::string();
    };
    const arma::mat& A3 = trace.find(StepId::weights, 3)->values;
    const std::string third = "answers:\n  heads:\n    - {}\n    - {}\n    - head_output:\n" +
                              matrix_text(A3 * trace.find(StepId::values, 1)->values) + "    - {}\n";
    CHECK(diagnosis_of(third, 3).find("Query head 3 weighed the values of key/value head 1, taking the key/value "
                                      "heads in turn") != std::string::npos);
    // the softmax of the wrong scaled scores, row by row
    arma::mat A2(wrong.n_rows, wrong.n_cols);
    for (arma::uword i = 0; i < A2.n_rows; ++i) {
        A2.row(i) = arma::exp(wrong.row(i) / std::sqrt(2.0) - (wrong.row(i) / std::sqrt(2.0)).max());
        A2.row(i) /= arma::accu(A2.row(i));
    }
    const std::string second = "answers:\n  heads:\n    - {}\n    - scores:\n" + matrix_text(wrong) +
                               "      weights:\n" + matrix_text(A2) + "      head_output:\n" +
                               matrix_text(A2 * trace.find(StepId::values, 2)->values) + "    - {}\n    - {}\n";
    CHECK(diagnosis_of(second, 2).find("Query head 2 weighed the values of key/value head 2") != std::string::npos);
}

namespace {

// One head of width 1, so that every number can be worked by hand: Q = [2; 1],
// K = [1; 2], S = Q·Kᵀ = [[2, 4], [1, 2]], divided by scale 2: S' = [[1, 2], [0.5, 1]].
const char* const k_capped = R"(
inputs: [[1, 0], [0, 1]]
weights:
  query: [[2], [1]]
  key: [[1], [2]]
  value: [[1], [0]]
scale: 2
softcap: 1.5
grad_output: ones
)";

}  // namespace

TEST_CASE("softcap: the scaled scores become c·tanh(s/c), and the gradient passes back times 1 − tanh²",
          "[steps][softcap]") {
    const Model model = test::load_text(k_capped);
    REQUIRE(model.softcap == 1.5);
    const Trace trace = compute(model);
    const double c = 1.5;
    const auto cap = [c](double s) { return c * std::tanh(s / c); };
    const arma::mat capped = test::rows({{cap(1.0), cap(2.0)}, {cap(0.5), cap(1.0)}});
    test::require_near(trace.find(StepId::capped_scores, 1)->values, capped, 1e-15, "capped_scores");
    // near 0 the cap changes little, and nothing reaches c
    CHECK(capped(1, 0) == Approx(0.5).epsilon(0.04));
    CHECK(capped(0, 1) < c);
    // the softmax reads the capped scores: A = [a, 1 − a] in each row, a = 1 / (1 + exp(S_c[i,2] − S_c[i,1]))
    arma::mat A(2, 2);
    for (arma::uword i = 0; i < 2; ++i) {
        A(i, 0) = 1.0 / (1.0 + std::exp(capped(i, 1) - capped(i, 0)));
        A(i, 1) = 1.0 - A(i, 0);
    }
    test::require_near(trace.find(StepId::weights, 1)->values, A, 1e-15, "weights");
    // V = [1; 0] and dO = 1: dA = [[1, 0], [1, 0]], so the softmax's gradient is a(1 − a)·[1, −1] in each row
    arma::mat grad_capped(2, 2);
    for (arma::uword i = 0; i < 2; ++i) {
        grad_capped(i, 0) = A(i, 0) * (1.0 - A(i, 0));
        grad_capped(i, 1) = -grad_capped(i, 0);
    }
    test::require_near(trace.find(StepId::grad_capped_scores, 1)->values, grad_capped, 1e-15, "grad_capped_scores");
    const arma::mat scaled = test::rows({{1.0, 2.0}, {0.5, 1.0}});
    const arma::mat slope = 1.0 - arma::square(arma::tanh(scaled / c));
    test::require_near(trace.find(StepId::grad_scaled_scores, 1)->values, grad_capped % slope, 1e-15,
                       "grad_scaled_scores");
    test::require_near(trace.find(StepId::grad_scores, 1)->values, grad_capped % slope / 2.0, 1e-15, "grad_scores");
    // the step's words, and its gradient's title
    const Step& step = *trace.find(StepId::capped_scores, 1);
    CHECK(step.formula == "S_c = c·tanh(S'/c)");
    CHECK(trace.find(StepId::grad_scaled_scores, 1)->title == "Gradient through the cap");
    CHECK(trace.find(StepId::grad_scaled_scores, 1)->formula == "dS' = dS_c ∘ (1 − tanh²(S'/c))");
    CHECK(trace.find(StepId::grad_capped_scores, 1)->formula == "dS_c = A ∘ (dA − rowsum(dA ∘ A))");
}

TEST_CASE("softcap in explain, JSON, the worksheet and check", "[softcap][cli]") {
    const Model model = test::load_text(k_capped);
    const Trace trace = compute(model);
    RenderOptions options;
    options.precision = 6;
    const auto lines = [&](const std::string& cell) {
        std::string text;
        for (const std::string& line : explain_cell(model, trace, parse_cell(cell), options).lines) {
            text += line + "\n";
        }
        return text;
    };
    const std::string capped = lines("capped_scores[1,2]");
    INFO(capped);
    CHECK(capped.find("capped_scores[1,2] = c·tanh(scaled_scores[1,2]/c) = 1.5·tanh(2/1.5) = 1.5·tanh(1.333333) = "
                      "1.305092\n") != std::string::npos);
    CHECK(capped.find("soft cap c = 1.5 (softcap:)") != std::string::npos);
    const std::string gradient = lines("grad_scaled_scores[2,1]");
    INFO(gradient);
    CHECK(gradient.find("grad_scaled_scores[2,1] = grad_capped_scores[2,1] · (1 − tanh²(scaled_scores[2,1]/c)) = ") !=
          std::string::npos);
    CHECK(gradient.find("(1 − tanh²(0.333333))") != std::string::npos);

    const test::CliResult json = test::run_qkv({"run", "-", "-f", "json"}, k_capped);
    REQUIRE(json.status == 0);
    CHECK(nlohmann::json::parse(json.out)["params"]["softcap"] == 1.5);
    const test::CliResult plain = test::run_qkv({"run", "two-heads", "-f", "json"});
    CHECK(nlohmann::json::parse(plain.out)["params"]["softcap"].is_null());

    const test::CliResult sheet = test::run_qkv({"worksheet", "-"}, k_capped);
    REQUIRE(sheet.status == 0);
    CHECK(sheet.out.find("Soft cap: c = 1.5; each scaled score s becomes c·tanh(s/c).") != std::string::npos);

    // the cap put before the scaling: c·tanh(S/c)/2
    const double c = 1.5;
    const auto before = [c](double s) { return fmt::format("{:.6f}", c * std::tanh(s / c) / 2.0); };
    const std::string answers = "answers:\n  capped_scores: [[" + before(2) + ", " + before(4) + "], [" + before(1) +
                                ", " + before(2) + "]]\n";
    const test::CliResult checked = test::run_qkv({"check", "-"}, std::string(k_capped) + answers);
    INFO(checked.out << checked.err);
    CHECK(checked.status == 1);
    CHECK(checked.out.find("The cap was applied before scaling") != std::string::npos);
}

TEST_CASE("with a soft cap and ALiBi, the bias left out is named from the capped scores", "[softcap][check][cli]") {
    const std::string example = "inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]\n"
                                "weights: {query: [[1, 0], [0, 1], [1, 1]], key: [[0, 1], [1, 0], [1, 1]],\n"
                                "          value: [[1, 2], [2, 0], [0, 1]]}\n"
                                "softcap: 2\nalibi: [0.5]\n";
    const Trace trace = compute(test::load_text(example));
    // biased_scores written as the capped scores: the bias was not added to them
    const arma::mat& capped = trace.find(StepId::capped_scores, 1)->values;
    std::string answers = "answers:\n  biased_scores: [";
    for (arma::uword i = 0; i < capped.n_rows; ++i) {
        answers += i == 0 ? "[" : ", [";
        for (arma::uword j = 0; j < capped.n_cols; ++j) {
            answers += (j == 0 ? "" : ", ") + fmt::format("{:.6f}", capped(i, j));
        }
        answers += "]";
    }
    const test::CliResult checked = test::run_qkv({"check", "-"}, example + answers + "]\n");
    INFO(checked.out << checked.err);
    CHECK(checked.status == 1);
    CHECK(checked.out.find("Mistake: The position bias was not added.") != std::string::npos);
}
