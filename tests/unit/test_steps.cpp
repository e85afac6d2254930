// Unit tests for each attention step, with values worked by hand or taken from
// two published worked examples: "the illustrated article" (an illustrated
// walk through self-attention: 3 inputs of width 4, W_Q, W_K, W_V of 4 × 3, no
// scaling) and "the sky-is-blue notebook" (2-dimensional embeddings of "sky
// is blue", W of 2 × 2, scaled by √2, every intermediate to 4 decimals).
#include "support.hpp"

using namespace qkv;
using qkv::test::require_near;
using qkv::test::rows;

namespace {

const char* const k_illustrated = R"(
inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
weights:
  query: [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]
  key:   [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]
  value: [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]
scale: none
)";

}  // namespace

TEST_CASE("projections give the illustrated article's keys, queries and values", "[attention]") {
    const Trace trace = test::compute_text(k_illustrated);
    // from the illustrated article, step 3
    require_near(trace.find("keys", 1)->values, rows({{0, 1, 1}, {4, 4, 0}, {2, 3, 1}}), 0, "K");
    require_near(trace.find("queries", 1)->values, rows({{1, 0, 2}, {2, 2, 2}, {2, 1, 3}}), 0, "Q");
    require_near(trace.find("values", 1)->values, rows({{1, 2, 3}, {2, 8, 0}, {2, 6, 3}}), 0, "V");
}

TEST_CASE("scores are Q times K transposed, as in the illustrated article", "[attention]") {
    const Trace trace = test::compute_text(k_illustrated);
    // from the illustrated article, step 4 (attn_scores = querys @ keys.T)
    require_near(trace.find("scores", 1)->values, rows({{2, 4, 4}, {4, 16, 12}, {4, 12, 10}}), 0, "S");
    // scale: none leaves them unchanged
    require_near(trace.find("scaled_scores", 1)->values, trace.find("scores", 1)->values, 0, "S'");
    CHECK(trace.scale == 1.0);
    CHECK(trace.find("masked_scores", 1) == nullptr);
}

TEST_CASE("softmax matches the illustrated article's weights", "[attention]") {
    const Trace trace = test::compute_text(k_illustrated);
    // from the illustrated article, step 5 (PyTorch's printout, 5 significant digits)
    const arma::mat expected = rows({{6.3379e-02, 4.6831e-01, 4.6831e-01},
                                     {6.0337e-06, 9.8201e-01, 1.7986e-02},
                                     {2.9539e-04, 8.8054e-01, 1.1917e-01}});
    require_near(trace.find("weights", 1)->values, expected, 5e-5, "A");
    // worked by hand: softmax([2,4,4]) = [1, e², e²] / (1 + 2e²)
    const double e2 = std::exp(2.0);
    require_near(trace.find("weights", 1)->values.row(0), rows({{1 / (1 + 2 * e2), e2 / (1 + 2 * e2), e2 / (1 + 2 * e2)}}),
                 1e-15, "A row 1");
}

TEST_CASE("the weighted sum of values is A times V", "[attention]") {
    const Trace trace = test::compute_text(k_illustrated);
    // worked by hand from the exact weights of row 1: a1·[1,2,3] + a2·([2,8,0] + [2,6,3])
    const double e2 = std::exp(2.0);
    const double a1 = 1 / (1 + 2 * e2);
    const double a2 = e2 / (1 + 2 * e2);
    require_near(trace.find("head_output", 1)->values.row(0),
                 rows({{a1 * 1 + a2 * 4, a1 * 2 + a2 * 14, a1 * 3 + a2 * 3}}), 1e-14, "Z row 1");
    // with one head and no W_O the output is the head output
    require_near(trace.find("output")->values, trace.find("head_output", 1)->values, 0, "output");
    CHECK(trace.find("concat") == nullptr);
}

TEST_CASE("hand rounding of the weights is carried forward to the output", "[attention]") {
    // Rounded to one decimal, row 1 of the weights is [0.1, 0.5, 0.5] (0.0634 rounds up);
    // carried forward, Output 1 = 0.1·[1,2,3] + 0.5·[2,8,0] + 0.5·[2,6,3] = [2.1, 7.2, 1.8].
    // (The illustrated article wrote [0.0, 0.5, 0.5] and got [2.0, 7.0, 1.5]; see qkv check.)
    const Trace trace = test::compute_text(std::string(k_illustrated) + "round: {weights: 1}\n");
    require_near(trace.find("weights", 1)->values, rows({{0.1, 0.5, 0.5}, {0.0, 1.0, 0.0}, {0.0, 0.9, 0.1}}), 0,
                 "rounded A");
    require_near(trace.find("output")->values.row(0), rows({{2.1, 7.2, 1.8}}), 1e-15, "Output 1");
    CHECK(trace.find("weights", 1)->notes.back().find("rounded to 1 decimal by hand") != std::string::npos);
}

TEST_CASE("the sky-is-blue notebook's values come out to 4 decimals", "[attention]") {
    const Trace trace = test::compute_text(test::read_repo_file("examples/sky-is-blue.yaml"));
    // from the notebook's printed tensors (float32, 4 decimals): compared at 6e-5
    const double eps = 6e-5;
    require_near(trace.find("queries", 1)->values, rows({{0.2261, 0.7422}, {0.1699, 0.2857}, {0.1699, 0.2857}}), eps, "Q");
    require_near(trace.find("keys", 1)->values, rows({{0.4986, -0.5362}, {0.0509, 0.0705}, {0.0509, 0.0705}}), eps, "K");
    require_near(trace.find("values", 1)->values, rows({{0.3048, 0.0934}, {0.0742, 0.1921}, {0.0742, 0.1921}}), eps, "V");
    require_near(trace.find("scores", 1)->values,
                 rows({{-0.2853, 0.0638, 0.0638}, {-0.0685, 0.0288, 0.0288}, {-0.0685, 0.0288, 0.0288}}), eps, "S");
    require_near(trace.find("scaled_scores", 1)->values,
                 rows({{-0.2017, 0.0451, 0.0451}, {-0.0484, 0.0204, 0.0204}, {-0.0484, 0.0204, 0.0204}}), eps, "S/√2");
    require_near(trace.find("weights", 1)->values,
                 rows({{0.2809, 0.3595, 0.3595}, {0.3182, 0.3409, 0.3409}, {0.3182, 0.3409, 0.3409}}), eps, "A");
    require_near(trace.find("output")->values, rows({{0.1390, 0.1644}, {0.1476, 0.1607}, {0.1476, 0.1607}}), eps, "output");
    CHECK_THAT(trace.scale, Catch::Matchers::WithinRel(std::sqrt(2.0), 1e-15));
    CHECK(trace.tokens == std::vector<std::string>{"sky", "is", "blue"});
}

TEST_CASE("softmax is stable for large scores and matches the scaling article", "[attention]") {
    // from the scaled dot-product article: softmax([1,2,3,4]) and softmax([10,20,30,40])
    require_near(softmax_rows(rows({{1, 2, 3, 4}})), rows({{0.0320586, 0.08714432, 0.23688282, 0.64391426}}), 1e-7,
                 "softmax([1,2,3,4])");
    require_near(softmax_rows(rows({{10, 20, 30, 40}})),
                 rows({{9.35719813e-14, 2.06106005e-09, 4.53978686e-05, 9.99954600e-01}}), 1e-8,
                 "softmax([10,20,30,40])");
    // a naive exp would overflow to inf/inf here; the row maximum is subtracted first
    const arma::mat A = softmax_rows(rows({{1000, 1001}, {-1000, -1001}}));
    CHECK(A.is_finite());
    const double e = std::exp(1.0);
    require_near(A, rows({{1 / (1 + e), e / (1 + e)}, {e / (1 + e), 1 / (1 + e)}}), 1e-15, "stable softmax");
}

TEST_CASE("masking sets blocked scores to minus infinity and their weights to zero", "[attention]") {
    const Trace trace = test::compute_text(R"(
inputs: [[1, 0], [0, 1], [1, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
scale: none
mask: causal
)");
    const arma::mat& masked = trace.find("masked_scores", 1)->values;
    const double inf = arma::datum::inf;
    // worked by hand: S = X·Xᵀ = [[1,0,1],[0,1,1],[1,1,2]], upper triangle blocked
    require_near(masked, rows({{1, -inf, -inf}, {0, 1, -inf}, {1, 1, 2}}), 0, "masked S");
    const arma::mat& A = trace.find("weights", 1)->values;
    CHECK(A(0, 0) == 1.0);
    CHECK(A(0, 1) == 0.0);
    CHECK(A(1, 2) == 0.0);
    const double e = std::exp(1.0);
    require_near(A.row(1), rows({{1 / (1 + e), e / (1 + e), 0}}), 1e-15, "row 2");
}

TEST_CASE("padding blocks a key for every query", "[attention]") {
    Model model = test::load_text(R"(
inputs: [[1, 0], [0, 1], [1, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
padding: [1, 0, 1]
)");
    const arma::mat allowed = model.allowed();
    require_near(allowed, rows({{1, 0, 1}, {1, 0, 1}, {1, 0, 1}}), 0, "allowed");
    const Trace trace = compute(model);
    CHECK(arma::all(trace.find("weights", 1)->values.col(1) == 0.0));
}

TEST_CASE("heads split the weight columns and concatenate in order", "[attention]") {
    const Trace trace = test::compute_text(test::read_repo_file("examples/two-heads.yaml"));
    CHECK(trace.dims.heads == 2);
    CHECK(trace.dims.d_k == 2);
    // head 2's queries use columns 3-4 of W_Q; worked by hand for "we" = [1,0,1,0]:
    // row 1 of W_Q cols 3-4 is [0,1], row 3 is [0,0] → [0, 1]
    require_near(trace.find("queries", 2)->values.row(0), rows({{0, 1}}), 0, "Q head 2 row 1");
    const arma::mat& concat = trace.find("concat")->values;
    require_near(concat.cols(0, 1), trace.find("head_output", 1)->values, 0, "concat head 1");
    require_near(concat.cols(2, 3), trace.find("head_output", 2)->values, 0, "concat head 2");
    // output = concat · W_O, with W_O's last row [1,1,1]: column j = concat_j + concat_4
    const arma::mat& out = trace.find("output")->values;
    for (arma::uword j = 0; j < 3; ++j) {
        require_near(out.col(j), concat.col(j) + concat.col(3), 1e-15, "output column " + std::to_string(j + 1));
    }
}

TEST_CASE("the default scale divides by the square root of d_k", "[attention]") {
    const Trace trace = test::compute_text(R"(
inputs: [[1, 2, 3, 4]]
weights: {query: [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], key: [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]], value: [[1],[1],[1],[1]]}
)");
    // worked by hand: q·k = 1+4+9+16 = 30, d_k = 4, 30 / 2 = 15
    CHECK(trace.find("scores", 1)->values(0, 0) == 30.0);
    CHECK(trace.find("scaled_scores", 1)->values(0, 0) == 15.0);
    CHECK(trace.scale == 2.0);
    CHECK(trace.find("scaled_scores", 1)->notes == std::vector<std::string>{"divisor = 2.0000 (√4)"});
}

TEST_CASE("without scaling the note says so, rather than showing a divisor of 1", "[attention]") {
    const Trace trace = test::compute_text(k_illustrated);
    CHECK(trace.scale == 1.0);
    CHECK(trace.find("scaled_scores", 1)->notes == std::vector<std::string>{"not scaled: the divisor is 1"});
}

TEST_CASE("sinusoidal positions follow the formula", "[attention]") {
    const arma::mat P = sinusoidal_positions(3, 5);
    for (arma::uword p = 0; p < 3; ++p) {
        for (arma::uword i = 0; 2 * i < 5; ++i) {
            const double angle = double(p) / std::pow(10000.0, 2.0 * double(i) / 5.0);
            CHECK_THAT(P(p, 2 * i), Catch::Matchers::WithinAbs(std::sin(angle), 1e-15));
            if (2 * i + 1 < 5) {
                CHECK_THAT(P(p, 2 * i + 1), Catch::Matchers::WithinAbs(std::cos(angle), 1e-15));
            }
        }
    }
    // position 0 is [0, 1, 0, 1, 0]
    require_near(P.row(0), rows({{0, 1, 0, 1, 0}}), 0, "P row 1");
}

TEST_CASE("the pytorch layout transposes every weight", "[attention]") {
    const std::string x_w = R"(
inputs: [[1, 2], [3, 4]]
weights: {query: [[1, 2, 3], [4, 5, 6]], key: [[0, 1, 0], [1, 0, 1]], value: [[2, 0], [0, 2]], output: [[1, 0, 1], [0, 1, 1]]}
)";
    const std::string pytorch = R"(
layout: pytorch
inputs: [[1, 2], [3, 4]]
weights: {query: [[1, 4], [2, 5], [3, 6]], key: [[0, 1], [1, 0], [0, 1]], value: [[2, 0], [0, 2]], output: [[1, 0], [0, 1], [1, 1]]}
)";
    const Trace a = test::compute_text(x_w);
    const Trace b = test::compute_text(pytorch);
    for (const auto& step : a.steps) {
        // the weights themselves are shown as each file writes them: transposed
        const arma::mat expected = step_row(step.id).parameter ? arma::mat(step.values.t()) : step.values;
        require_near(b.find(step.id, step.head)->values, expected, 0, step_text(step.id));
    }
    CHECK(b.find("queries", 1)->formula == "Q = X·W_Qᵀ");
    CHECK(b.find("w_query", 1)->values.n_rows == 3);  // d_k × d_model, out × in
    CHECK(b.find("w_query", 1)->notes.back() == "in PyTorch's layout, out × in, as the file writes it: queries are X·W_Qᵀ");
}

TEST_CASE("with several heads each per-head formula names the heads it reads", "[attention]") {
    // one head: no index
    const Trace one = test::compute_text(k_illustrated);
    CHECK(one.find("scores", 1)->formula == "S = Q·Kᵀ");
    CHECK(one.find("queries", 1)->latex == "Q = X W_{Q}");

    // four query heads sharing two key/value heads, with RoPE: query head 3 reads key/value head 2
    const Trace gqa = test::compute_text(R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
heads: 4
kv_heads: 2
rope: true
weights:
  query: [[1, 0, 1, 0, 0, 1, 1, 0], [0, 1, 0, 1, 1, 0, 0, 1], [1, 0, 0, 1, 1, 0, 1, 0], [0, 1, 1, 0, 0, 1, 0, 1]]
  key:   [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
  value: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
mask: causal
)");
    CHECK(gqa.find("queries", 3)->formula == "Q_3 = X·W_Q^(3)");
    CHECK(gqa.find("queries", 3)->latex == "Q_{3} = X W_{Q}^{(3)}");
    CHECK(gqa.find("keys", 2)->formula == "K_2 = X·W_K^(2)");
    CHECK(gqa.find("rotated_keys", 2)->latex == "K_{\\mathrm{rot}}^{(2)} = \\operatorname{RoPE}(K_{2})");
    CHECK(gqa.find("scores", 3)->formula == "S_3 = Q_rot^(3)·K_rot^(2)ᵀ");
    CHECK(gqa.find("scores", 3)->latex == "S_{3} = Q_{\\mathrm{rot}}^{(3)} K_{\\mathrm{rot}}^{(2)\\top}");
    CHECK(gqa.find("weights", 4)->latex == "A_{4} = \\operatorname{softmax}(S'_{4})");
    CHECK(gqa.find("head_output", 4)->formula == "Z_4 = A_4·V_2");
    // an entry's formula keeps its own subscripts; d_k and the heads' concatenation are no head's
    CHECK(gqa.find("masked_scores", 1)->formula == "S'[i,j] = −∞ where blocked");
    CHECK(gqa.find("scaled_scores", 2)->formula == "S'_2 = S_2 / √d_k = S_2 / √2");
    CHECK(gqa.find("concat")->latex == "\\begin{bmatrix} Z_{1} & \\cdots & Z_{4} \\end{bmatrix}");
}
