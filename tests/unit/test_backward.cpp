// The backward pass (STEPS in man/qkv.1.in), step by step: each gradient step worked by
// hand on a 2 × 2 example, then the whole pass against central finite
// differences of L = Σ O ∘ dO on random models of every kind, the order of the
// steps in the trace, hand rounding, and --steps / --head.
//
// Most hand-worked cases use one example: X = I, W_Q = W_K = I,
// W_V = [[1, 2], [3, 4]], scale none. Then Q = K = I, S = I, V = W_V, and with
// p = e/(e + 1), q = 1/(e + 1) (so p + q = 1) the weights are
// A = softmax of each row of I = [[p, q], [q, p]].
#include "support.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <set>

using namespace qkv;
using test::require_near;
using test::rows;

namespace {

const double k_e = std::exp(1.0);
const double k_p = k_e / (k_e + 1);  // softmax([1, 0]) = [p, q]
const double k_q = 1 / (k_e + 1);
const double k_pq = k_p * k_q;       // = e / (e + 1)²

// The hand example, without its grad_output.
const char* const k_hand = R"(
inputs: [[1, 0], [0, 1]]
weights:
  query: [[1, 0], [0, 1]]
  key:   [[1, 0], [0, 1]]
  value: [[1, 2], [3, 4]]
scale: none
)";

// The hand example with two heads of width 1 and W_O = [[1, 2], [3, 4]]; d_k = 1, so √d_k = 1.
// Head 1 reads column 1 of each weight, head 2 column 2: Q_1 = K_1 = [[1], [0]],
// Q_2 = K_2 = [[0], [1]], V_1 = [[1], [3]], V_2 = [[2], [4]].
const char* const k_two_heads = R"(
inputs: [[1, 0], [0, 1]]
heads: 2
weights:
  query:  [[1, 0], [0, 1]]
  key:    [[1, 0], [0, 1]]
  value:  [[1, 2], [3, 4]]
  output: [[1, 2], [3, 4]]
)";

Trace compute_hand(const std::string& extra) { return test::compute_text(std::string(k_hand) + extra); }

const arma::mat& value(const Trace& trace, StepId id, int head = 0) {
    const Step* step = trace.find(id, head);
    INFO("step " << step_name(id) << " head " << head);
    REQUIRE(step != nullptr);
    return step->values;
}

// Loads with --backward (grad_output: ones unless the file gives it).
Model load_backward(const std::string& yaml) {
    LoadOptions options;
    options.backward = true;
    return load_model({"test.yaml", yaml, ""}, options);
}

}  // namespace

// ── each step by hand ───────────────────────────────────────────────────────

TEST_CASE("grad_output is the given dO: ones or the file's matrix", "[backward]") {
    SECTION("ones: L is the sum of every output value") {
        const Trace trace = compute_hand("grad_output: ones\n");
        require_near(value(trace, StepId::grad_output), rows({{1, 1}, {1, 1}}), 0, "dO");
        CHECK(trace.find(StepId::grad_output)->notes.front().find("ones") != std::string::npos);
    }
    SECTION("a matrix, as written") {
        const Trace trace = compute_hand("grad_output: [[1, -2], [0.5, 0]]\n");
        require_near(value(trace, StepId::grad_output), rows({{1, -2}, {0.5, 0}}), 0, "dO");
    }
    SECTION("--backward means ones for a file without grad_output") {
        const Trace trace = compute(load_backward(k_hand));
        require_near(value(trace, StepId::grad_output), rows({{1, 1}, {1, 1}}), 0, "dO");
    }
    SECTION("no grad_output and no --backward: no gradient step at all") {
        const Trace trace = compute_hand("");
        for (const Step& step : trace.steps) {
            CAPTURE(step_name(step.id));
            CHECK_FALSE(is_gradient(step.id));
        }
    }
}

TEST_CASE("grad_head_output is dO itself with one head and no W_O", "[backward]") {
    const Trace trace = compute_hand("grad_output: [[1, -2], [0.5, 0]]\n");
    require_near(value(trace, StepId::grad_head_output, 1), rows({{1, -2}, {0.5, 0}}), 0, "dZ");
    CHECK(trace.find(StepId::grad_concat) == nullptr);
}

TEST_CASE("grad_concat is dO·W_Oᵀ and each head takes back its own columns", "[backward]") {
    const Trace trace = test::compute_text(std::string(k_two_heads) + "grad_output: ones\n");
    // dConcat = [[1, 1], [1, 1]]·W_Oᵀ = [[1, 1], [1, 1]]·[[1, 3], [2, 4]] = [[3, 7], [3, 7]]
    require_near(value(trace, StepId::grad_concat), rows({{3, 7}, {3, 7}}), 0, "dConcat");
    require_near(value(trace, StepId::grad_head_output, 1), rows({{3}, {3}}), 0, "dZ_1");
    require_near(value(trace, StepId::grad_head_output, 2), rows({{7}, {7}}), 0, "dZ_2");

    SECTION("several heads without W_O: each head's columns of dO, and no grad_concat") {
        const Trace plain = test::compute_text(R"(
inputs: [[1, 0], [0, 1]]
heads: 2
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 2], [3, 4]]}
grad_output: [[1, 2], [3, 4]]
)");
        CHECK(plain.find(StepId::grad_concat) == nullptr);
        require_near(value(plain, StepId::grad_head_output, 1), rows({{1}, {3}}), 0, "dZ_1");
        require_near(value(plain, StepId::grad_head_output, 2), rows({{2}, {4}}), 0, "dZ_2");
    }
    SECTION("one head with W_O: dZ = dO·W_Oᵀ, and no grad_concat") {
        const Trace one = test::compute_text(R"(
inputs: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 2], [3, 4]], output: [[1, 2], [3, 4]]}
grad_output: [[1, 0], [0, 1]]
)");
        // dO = I, so dZ = W_Oᵀ = [[1, 3], [2, 4]]
        CHECK(one.find(StepId::grad_concat) == nullptr);
        require_near(value(one, StepId::grad_head_output, 1), rows({{1, 3}, {2, 4}}), 0, "dZ");
    }
}

TEST_CASE("grad_weights is dZ·Vᵀ", "[backward]") {
    // dZ = dO = ones; dA = ones·Vᵀ = ones·[[1, 3], [2, 4]]: each row [1 + 2, 3 + 4] = [3, 7]
    const Trace trace = compute_hand("grad_output: ones\n");
    require_near(value(trace, StepId::grad_weights, 1), rows({{3, 7}, {3, 7}}), 0, "dA");
    // two heads: dA_1 = dZ_1·V_1ᵀ = [[3], [3]]·[1, 3] = [[3, 9], [3, 9]];
    // dA_2 = [[7], [7]]·[2, 4] = [[14, 28], [14, 28]]
    const Trace two = test::compute_text(std::string(k_two_heads) + "grad_output: ones\n");
    require_near(value(two, StepId::grad_weights, 1), rows({{3, 9}, {3, 9}}), 0, "dA_1");
    require_near(value(two, StepId::grad_weights, 2), rows({{14, 28}, {14, 28}}), 0, "dA_2");
}

TEST_CASE("grad_scaled_scores is A ∘ (dA − rowsum(dA ∘ A))", "[backward]") {
    SECTION("dO = ones") {
        // row 1: A = [p, q], dA = [3, 7], rowsum = 3p + 7q;
        //   dS'[1,1] = p·(3 − 3p − 7q) = p·(3(p + q) − 3p − 7q) = −4pq, dS'[1,2] = q·(7 − 3p − 7q) = 4pq
        // row 2: A = [q, p]: dS'[2,1] = q·(3 − 3q − 7p) = −4pq, dS'[2,2] = p·(7 − 3q − 7p) = 4pq
        const Trace trace = compute_hand("grad_output: ones\n");
        require_near(value(trace, StepId::grad_scaled_scores, 1),
                     rows({{-4 * k_pq, 4 * k_pq}, {-4 * k_pq, 4 * k_pq}}), 1e-15, "dS'");
    }
    SECTION("dO = [[1, 0], [0, 0]]: only O[1,1] counts") {
        // dA row 1 = [1, 0]·Vᵀ = [1, 3], row 2 = 0; dS' row 1 = [p(1 − p − 3q), q(3 − p − 3q)] = [−2pq, 2pq]
        const Trace trace = compute_hand("grad_output: [[1, 0], [0, 0]]\n");
        require_near(value(trace, StepId::grad_scaled_scores, 1), rows({{-2 * k_pq, 2 * k_pq}, {0, 0}}), 1e-15,
                     "dS'");
    }
    SECTION("two heads") {
        // head 1: A_1 = [[p, q], [1/2, 1/2]] (S_1 = [[1, 0], [0, 0]]), dA_1 = [[3, 9], [3, 9]]:
        //   row 1 [−6pq, 6pq]; row 2: rowsum 6, [½(3 − 6), ½(9 − 6)] = [−1.5, 1.5]
        // head 2: A_2 = [[1/2, 1/2], [q, p]], dA_2 = [[14, 28], [14, 28]]:
        //   row 1: rowsum 21, [½(14 − 21), ½(28 − 21)] = [−3.5, 3.5]; row 2 [−14pq, 14pq]
        const Trace trace = test::compute_text(std::string(k_two_heads) + "grad_output: ones\n");
        require_near(value(trace, StepId::grad_scaled_scores, 1), rows({{-6 * k_pq, 6 * k_pq}, {-1.5, 1.5}}), 1e-14,
                     "dS'_1");
        require_near(value(trace, StepId::grad_scaled_scores, 2), rows({{-3.5, 3.5}, {-14 * k_pq, 14 * k_pq}}),
                     1e-14, "dS'_2");
    }
    SECTION("a blocked cell's gradient is exactly 0, never −0") {
        // X = [[1, 0], [0, 1], [1, 1]], causal: row 2 of S is [0, 1, −∞], A row 2 = [q, p, 0];
        // V = X·W_V = [[1, 2], [3, 4], [4, 6]]; dO = −ones, so dA row 2 = −[3, 7, 10]
        // and dS' row 2 = [q(−3 + 3q + 7p), p(−7 + 3q + 7p), 0·(−10 + 3q + 7p)] = [4pq, −4pq, 0];
        // the last is 0 times a negative number, −0 in IEEE arithmetic, which the step writes 0
        const Trace trace = test::compute_text(R"(
inputs: [[1, 0], [0, 1], [1, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 2], [3, 4]]}
scale: none
mask: causal
grad_output: [[-1, -1], [-1, -1], [-1, -1]]
)");
        const arma::mat& dS = value(trace, StepId::grad_scaled_scores, 1);
        require_near(dS.row(1), rows({{4 * k_pq, -4 * k_pq, 0}}), 1e-15, "dS' row 2");
        for (const auto& [i, j] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}}) {
            CAPTURE(i + 1, j + 1);
            CHECK(dS(i, j) == 0.0);
            CHECK_FALSE(std::signbit(dS(i, j)));
        }
        // row 1 attends to key 1 only: its weight is 1 whatever the score, so its gradient is 0 too
        CHECK(dS(0, 0) == 0.0);
    }
}

TEST_CASE("grad_scores is dS' divided by the scale", "[backward]") {
    // With scale s, S' = I/s and A = [[p_s, q_s], [q_s, p_s]], p_s = σ(1/s); the working above gives
    // dS' = 4·p_s·q_s·[[−1, 1], [−1, 1]] and dS = dS' / s.
    const auto expected = [](double s) {
        const double p = 1 / (1 + std::exp(-1 / s));
        const double pq = p * (1 - p);
        return std::pair{arma::mat(rows({{-4 * pq, 4 * pq}, {-4 * pq, 4 * pq}})),
                         arma::mat(rows({{-4 * pq, 4 * pq}, {-4 * pq, 4 * pq}}) / s)};
    };
    SECTION("scale none: dS = dS'") {
        const Trace trace = compute_hand("grad_output: ones\n");
        require_near(value(trace, StepId::grad_scores, 1), expected(1).second, 1e-15, "dS");
    }
    SECTION("scale sqrt_dk: dS = dS' / √2") {
        const std::string text = std::string(k_hand);
        const Trace trace = test::compute_text(text.substr(0, text.find("scale: none")) + "grad_output: ones\n");
        const auto [dS_scaled, dS] = expected(std::sqrt(2.0));
        require_near(value(trace, StepId::grad_scaled_scores, 1), dS_scaled, 1e-15, "dS'");
        require_near(value(trace, StepId::grad_scores, 1), dS, 1e-15, "dS");
    }
    SECTION("a numeric scale: dS = dS' / 4") {
        const std::string text = std::string(k_hand);
        const Trace trace =
            test::compute_text(text.substr(0, text.find("scale: none")) + "scale: 4\ngrad_output: ones\n");
        const auto [dS_scaled, dS] = expected(4.0);
        require_near(value(trace, StepId::grad_scaled_scores, 1), dS_scaled, 1e-15, "dS'");
        require_near(value(trace, StepId::grad_scores, 1), dS, 1e-15, "dS");
    }
}

TEST_CASE("grad_queries is dS·K, grad_keys dSᵀ·Q and grad_values Aᵀ·dZ", "[backward]") {
    SECTION("the hand example: K = Q = I") {
        // dS = 4pq·[[−1, 1], [−1, 1]]: dQ = dS·I = dS; dK = dSᵀ·I = 4pq·[[−1, −1], [1, 1]]
        const Trace trace = compute_hand("grad_output: ones\n");
        require_near(value(trace, StepId::grad_queries, 1), rows({{-4 * k_pq, 4 * k_pq}, {-4 * k_pq, 4 * k_pq}}),
                     1e-15, "dQ");
        require_near(value(trace, StepId::grad_keys, 1), rows({{-4 * k_pq, -4 * k_pq}, {4 * k_pq, 4 * k_pq}}), 1e-15,
                     "dK");
        // dV = Aᵀ·ones: each column of A sums to p + q = 1
        require_near(value(trace, StepId::grad_values, 1), rows({{1, 1}, {1, 1}}), 1e-15, "dV");
    }
    SECTION("grad_values with a causal mask, where Aᵀ ≠ A") {
        // A = [[1, 0], [q, p]], dZ = dO = [[1, 0], [0, 2]]:
        // dV = Aᵀ·dZ = [[1, q], [0, p]]·[[1, 0], [0, 2]] = [[1, 2q], [0, 2p]] (A·dZ would be [[1, 0], [q, 2p]])
        const Trace trace = compute_hand("mask: causal\ngrad_output: [[1, 0], [0, 2]]\n");
        require_near(value(trace, StepId::grad_values, 1), rows({{1, 2 * k_q}, {0, 2 * k_p}}), 1e-15, "dV");
    }
    SECTION("two heads: K_1 = [[1], [0]], K_2 = [[0], [1]]") {
        // dQ_1 = dS_1·K_1 = first column of dS_1 = [[−6pq], [−1.5]]; dQ_2 = second column of dS_2 = [[3.5], [14pq]]
        // dK_1 = dS_1ᵀ·Q_1 = first row of dS_1, as a column: [[−6pq], [6pq]]; dK_2 = second row of dS_2: [[−14pq], [14pq]]
        // dV_1 = A_1ᵀ·dZ_1 = [[p, ½], [q, ½]]·[[3], [3]] = [[3p + 1.5], [3q + 1.5]]
        // dV_2 = A_2ᵀ·dZ_2 = [[½, q], [½, p]]·[[7], [7]] = [[3.5 + 7q], [3.5 + 7p]]
        const Trace trace = test::compute_text(std::string(k_two_heads) + "grad_output: ones\n");
        require_near(value(trace, StepId::grad_queries, 1), rows({{-6 * k_pq}, {-1.5}}), 1e-14, "dQ_1");
        require_near(value(trace, StepId::grad_queries, 2), rows({{3.5}, {14 * k_pq}}), 1e-14, "dQ_2");
        require_near(value(trace, StepId::grad_keys, 1), rows({{-6 * k_pq}, {6 * k_pq}}), 1e-14, "dK_1");
        require_near(value(trace, StepId::grad_keys, 2), rows({{-14 * k_pq}, {14 * k_pq}}), 1e-14, "dK_2");
        require_near(value(trace, StepId::grad_values, 1), rows({{3 * k_p + 1.5}, {3 * k_q + 1.5}}), 1e-14, "dV_1");
        require_near(value(trace, StepId::grad_values, 2), rows({{3.5 + 7 * k_q}, {3.5 + 7 * k_p}}), 1e-14, "dV_2");
    }
}

TEST_CASE("grad_w_* are sourceᵀ·dY in the file's layout and shape", "[backward]") {
    SECTION("x_w: Xᵀ·dY, in × out; X = I, so the gradients of Q, K and V themselves") {
        const Trace trace = compute_hand("grad_output: ones\n");
        require_near(value(trace, StepId::grad_w_query), rows({{-4 * k_pq, 4 * k_pq}, {-4 * k_pq, 4 * k_pq}}), 1e-15,
                     "dW_Q");
        require_near(value(trace, StepId::grad_w_key), rows({{-4 * k_pq, -4 * k_pq}, {4 * k_pq, 4 * k_pq}}), 1e-15,
                     "dW_K");
        require_near(value(trace, StepId::grad_w_value), rows({{1, 1}, {1, 1}}), 1e-15, "dW_V");
        CHECK(trace.find(StepId::grad_w_output) == nullptr);
    }
    SECTION("pytorch: the same example written out × in gives the transposes") {
        // W_V = [[1, 2], [3, 4]] in x·W is [[1, 3], [2, 4]] as nn.Linear.weight
        const Trace trace = test::compute_text(R"(
layout: pytorch
inputs: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 3], [2, 4]]}
scale: none
grad_output: ones
)");
        require_near(value(trace, StepId::grad_w_query), rows({{-4 * k_pq, -4 * k_pq}, {4 * k_pq, 4 * k_pq}}), 1e-15,
                     "dW_Q (out × in)");
        require_near(value(trace, StepId::grad_w_key), rows({{-4 * k_pq, 4 * k_pq}, {-4 * k_pq, 4 * k_pq}}), 1e-15,
                     "dW_K (out × in)");
    }
    SECTION("two heads side by side, and W_O's gradient concatᵀ·dO") {
        // dW_Q = Xᵀ·[dQ_1 dQ_2] = [[−6pq, 3.5], [−1.5, 14pq]]
        // concat = [Z_1 Z_2] with Z_1 = A_1·V_1 = [[p + 3q], [2]] = [[1 + 2q], [2]], Z_2 = A_2·V_2 = [[3], [4 − 2q]];
        // dW_O = concatᵀ·ones: each row the column sum of concat, [[3 + 2q, 3 + 2q], [7 − 2q, 7 − 2q]]
        const Trace trace = test::compute_text(std::string(k_two_heads) + "grad_output: ones\n");
        require_near(value(trace, StepId::grad_w_query), rows({{-6 * k_pq, 3.5}, {-1.5, 14 * k_pq}}), 1e-14, "dW_Q");
        require_near(value(trace, StepId::grad_w_output), rows({{3 + 2 * k_q, 3 + 2 * k_q}, {7 - 2 * k_q, 7 - 2 * k_q}}),
                     1e-14, "dW_O");
    }
    SECTION("the shapes of non-square weights: in × out for x_w, out × in for pytorch") {
        // d_model = 3, two heads with d_k = 2, d_v = 1, d_out = 4
        const std::string x_w = R"(
inputs: [[1, 0, 2], [0, 1, -1], [1, 1, 0]]
heads: 2
weights:
  query: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]]
  key: [[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 1, 0]]
  value: [[1, 0], [0, 2], [1, 1]]
  output: [[1, 0, 2, 0], [0, 1, 0, 3]]
grad_output: [[1, 0, 2, 0], [0, -1, 0, 1], [0.5, 0, 0, 1]]
)";
        const std::string pytorch = R"(
layout: pytorch
inputs: [[1, 0, 2], [0, 1, -1], [1, 1, 0]]
heads: 2
weights:
  query: [[1, 0, 1], [0, 1, 1], [0, 1, 0], [1, 0, 0]]
  key: [[0, 1, 1], [1, 0, 0], [1, 0, 1], [0, 1, 0]]
  value: [[1, 0, 1], [0, 2, 1]]
  output: [[1, 0], [0, 1], [2, 0], [0, 3]]
grad_output: [[1, 0, 2, 0], [0, -1, 0, 1], [0.5, 0, 0, 1]]
)";
        const Trace a = test::compute_text(x_w);
        const Trace b = test::compute_text(pytorch);
        // the same attention, so the same output, and each weight's gradient transposed
        require_near(value(b, StepId::output), value(a, StepId::output), 1e-14, "same output");
        const std::pair<StepId, std::pair<arma::uword, arma::uword>> shapes[] = {
            {StepId::grad_w_query, {3, 4}}, {StepId::grad_w_key, {3, 4}}, {StepId::grad_w_value, {3, 2}},
            {StepId::grad_w_output, {2, 4}}};
        for (const auto& [id, shape] : shapes) {
            CAPTURE(step_name(id));
            CHECK(value(a, id).n_rows == shape.first);
            CHECK(value(a, id).n_cols == shape.second);
            CHECK(value(b, id).n_rows == shape.second);
            CHECK(value(b, id).n_cols == shape.first);
            require_near(value(b, id), value(a, id).t(), 1e-13, std::string(step_name(id)) + " transposed");
        }
    }
    SECTION("a heads: list gives one weight gradient per head, its block of the split one") {
        const std::string list = R"(
inputs: [[1, 0], [0, 1]]
heads:
  - {query: [[1], [0]], key: [[1], [0]], value: [[1], [3]]}
  - {query: [[0], [1]], key: [[0], [1]], value: [[2], [4]]}
weights: {output: [[1, 2], [3, 4]]}
grad_output: ones
)";
        const Trace split = test::compute_text(std::string(k_two_heads) + "grad_output: ones\n");
        const Trace listed = test::compute_text(list);
        CHECK(listed.dims.weight_sets);
        for (const StepId id : {StepId::grad_w_query, StepId::grad_w_key, StepId::grad_w_value}) {
            CAPTURE(step_name(id));
            CHECK(listed.find(id, 0) == nullptr);
            for (int h = 1; h <= 2; ++h) {
                require_near(value(listed, id, h), value(split, id).col(h - 1), 1e-15, "head " + std::to_string(h));
            }
        }
        // W_O stays one matrix
        require_near(value(listed, StepId::grad_w_output), value(split, StepId::grad_w_output), 1e-15, "dW_O");
        require_near(value(listed, StepId::grad_w_query, 1), rows({{-6 * k_pq}, {-1.5}}), 1e-14, "dW_Q head 1");
    }
}

TEST_CASE("grad_b_* are the column sums of the gradients the biases were added to", "[backward]") {
    // zero biases leave the forward pass as it was
    const Trace trace = compute_hand("bias: {query: [0, 0], key: [0, 0], value: [0, 0]}\ngrad_output: ones\n");
    // db_Q = column sums of dQ = 4pq·[[−1, 1], [−1, 1]]: [−8pq, 8pq]
    require_near(value(trace, StepId::grad_b_query), rows({{-8 * k_pq, 8 * k_pq}}), 1e-15, "db_Q");
    // db_K is always 0: adding one vector to every key moves each row of scores by a constant,
    // which the softmax ignores (each row of dS sums to 0, so the columns of dSᵀ·Q do)
    require_near(value(trace, StepId::grad_b_key), rows({{0, 0}}), 1e-15, "db_K");
    // db_V = column sums of dV = ones: [2, 2]
    require_near(value(trace, StepId::grad_b_value), rows({{2, 2}}), 1e-15, "db_V");
    CHECK(trace.find(StepId::grad_b_output) == nullptr);

    SECTION("db_O: the column sums of dO") {
        const Trace with_o =
            test::compute_text(std::string(k_two_heads) + "bias: {output: [0, 0]}\ngrad_output: [[1, 2], [3, -5]]\n");
        require_near(value(with_o, StepId::grad_b_output), rows({{4, -3}}), 0, "db_O");
    }
    SECTION("a bias on one head of a heads: list gives that head's gradient only") {
        const Trace listed = test::compute_text(R"(
inputs: [[1, 0], [0, 1]]
heads:
  - {query: [[1], [0]], key: [[1], [0]], value: [[1], [3]], bias: {query: [0]}}
  - {query: [[0], [1]], key: [[0], [1]], value: [[2], [4]]}
weights: {output: [[1, 2], [3, 4]]}
grad_output: ones
)");
        // db_Q of head 1 = sum of dQ_1 = −6pq − 1.5
        require_near(value(listed, StepId::grad_b_query, 1), rows({{-6 * k_pq - 1.5}}), 1e-14, "db_Q head 1");
        CHECK(listed.find(StepId::grad_b_query, 2) == nullptr);
        CHECK(listed.find(StepId::grad_b_key, 1) == nullptr);
    }
}

TEST_CASE("a pytorch: block gets in_proj and out_proj gradients instead of grad_w_* and grad_b_*", "[backward]") {
    // the two-head hand example as nn.MultiheadAttention: in_proj_weight = [W_Qᵀ; W_Kᵀ; W_Vᵀ], out_proj.weight = W_Oᵀ
    const Trace trace = test::compute_text(R"(
inputs: [[1, 0], [0, 1]]
pytorch:
  num_heads: 2
  in_proj_weight: [[1, 0], [0, 1], [1, 0], [0, 1], [1, 3], [2, 4]]
  in_proj_bias: [0, 0, 0, 0, 0, 0]
  out_proj_weight: [[1, 3], [2, 4]]
  out_proj_bias: [0, 0]
grad_output: ones
)");
    for (const StepId id : {StepId::grad_w_query, StepId::grad_w_key, StepId::grad_w_value, StepId::grad_w_output,
                            StepId::grad_b_query, StepId::grad_b_key, StepId::grad_b_value, StepId::grad_b_output}) {
        CAPTURE(step_name(id));
        CHECK(trace.find(id) == nullptr);
    }
    // [dQᵀ·X; dKᵀ·X; dVᵀ·X] with X = I, each dY = [dY_1 dY_2] from the two-head working above:
    // dQᵀ = [[−6pq, −1.5], [3.5, 14pq]], dKᵀ = [[−6pq, 6pq], [−14pq, 14pq]],
    // dVᵀ = [[3p + 1.5, 3q + 1.5], [3.5 + 7q, 3.5 + 7p]]
    require_near(value(trace, StepId::grad_in_proj_weight),
                 rows({{-6 * k_pq, -1.5},
                       {3.5, 14 * k_pq},
                       {-6 * k_pq, 6 * k_pq},
                       {-14 * k_pq, 14 * k_pq},
                       {3 * k_p + 1.5, 3 * k_q + 1.5},
                       {3.5 + 7 * k_q, 3.5 + 7 * k_p}}),
                 1e-14, "d in_proj_weight");
    // column sums of [dQ dK dV]: dK's are 0; dV_1 sums to 3 + 3 = 6, dV_2 to 7 + 7 = 14
    require_near(value(trace, StepId::grad_in_proj_bias), rows({{-6 * k_pq - 1.5, 3.5 + 14 * k_pq, 0, 0, 6, 14}}),
                 1e-14, "d in_proj_bias");
    // dOᵀ·concat: each row the column sums of concat, [3 + 2q, 7 − 2q]
    require_near(value(trace, StepId::grad_out_proj_weight), rows({{3 + 2 * k_q, 7 - 2 * k_q}, {3 + 2 * k_q, 7 - 2 * k_q}}),
                 1e-14, "d out_proj.weight");
    require_near(value(trace, StepId::grad_out_proj_bias), rows({{2, 2}}), 0, "d out_proj.bias");

    SECTION("without biases there are no bias gradients") {
        const Trace bare = test::compute_text(R"(
inputs: [[1, 0], [0, 1]]
pytorch:
  num_heads: 2
  in_proj_weight: [[1, 0], [0, 1], [1, 0], [0, 1], [1, 3], [2, 4]]
  out_proj_weight: [[1, 3], [2, 4]]
grad_output: ones
)");
        CHECK(bare.find(StepId::grad_in_proj_weight) != nullptr);
        CHECK(bare.find(StepId::grad_in_proj_bias) == nullptr);
        CHECK(bare.find(StepId::grad_out_proj_bias) == nullptr);
    }
}

TEST_CASE("grad_inputs adds every path from X, and grad_context the keys' and values'", "[backward]") {
    SECTION("self-attention: dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ") {
        // = dS + dSᵀ + ones·[[1, 3], [2, 4]] = 4pq·[[−2, 0], [0, 2]] + [[3, 7], [3, 7]]
        const Trace trace = compute_hand("grad_output: ones\n");
        require_near(value(trace, StepId::grad_inputs), rows({{3 - 8 * k_pq, 7}, {3, 7 + 8 * k_pq}}), 1e-14, "dX");
        CHECK(trace.find(StepId::grad_context) == nullptr);
    }
    SECTION("cross-attention: dX through the queries only, dC through the keys and values") {
        // X = [[1, 0]], C = I: Q = [[1, 0]], K = I, S = [[1, 0]], A = [[p, q]], V = W_V, dO = [[1, 1]]
        // dA = [3, 7], dS = [−4pq, 4pq]; dQ = dS·K = [−4pq, 4pq] and dX = dQ·W_Qᵀ = dQ
        // dK = dSᵀ·Q = [[−4pq, 0], [4pq, 0]]; dV = Aᵀ·dZ = [[p, p], [q, q]];
        // dC = dK·W_Kᵀ + dV·W_Vᵀ = dK + [[3p, 7p], [3q, 7q]]
        const Trace trace = test::compute_text(R"(
inputs: [[1, 0]]
context: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 2], [3, 4]]}
scale: none
grad_output: ones
)");
        require_near(value(trace, StepId::grad_inputs), rows({{-4 * k_pq, 4 * k_pq}}), 1e-15, "dX");
        require_near(value(trace, StepId::grad_context),
                     rows({{-4 * k_pq + 3 * k_p, 7 * k_p}, {4 * k_pq + 3 * k_q, 7 * k_q}}), 1e-15, "dC");
    }
}

TEST_CASE("with RoPE the gradients of Q and K are turned back through the rotation", "[backward][rope]") {
    for (const std::string style : {"half", "interleaved"}) {
        CAPTURE(style);
        const Model model = test::load_text(R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]]
heads: 2
weights:
  query: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
  key:   [[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]]
  value: [[1, 0, 2, 0], [0, 1, 0, 2], [1, 1, 0, 0], [0, 0, 1, 1]]
rope: {base: 100, style: )" + style + R"(}
mask: causal
grad_output: [[1, 0, -1, 2], [0.5, 1, 0, 0], [0, -2, 1, 1], [1, 1, 1, -1]]
)");
        const Trace trace = compute(model);
        for (int h = 1; h <= 2; ++h) {
            CAPTURE(h);
            const arma::mat& dS = value(trace, StepId::grad_scores, h);
            const arma::mat dQ_rotated = dS * value(trace, StepId::rotated_keys, h);
            require_near(value(trace, StepId::grad_queries, h), rotate_back(dQ_rotated, *model.rope), 1e-14,
                         "dQ = RoPE⁻¹(dS·K_rot)");
            const arma::mat dK_rotated = dS.t() * value(trace, StepId::rotated_queries, h);
            require_near(value(trace, StepId::grad_keys, h), rotate_back(dK_rotated, *model.rope), 1e-14,
                         "dK = RoPE⁻¹(dSᵀ·Q_rot)");
            // the turn matters: rows after the first differ from the unturned gradient
            CHECK(arma::abs(value(trace, StepId::grad_queries, h) - dQ_rotated).max() > 1e-3);
        }
    }
}

TEST_CASE("with grouped-query attention a shared key/value head's gradient sums its query heads", "[backward][gqa]") {
    // examples/gqa.yaml: query heads 1 and 2 read key/value head 1, heads 3 and 4 head 2
    const Model model = load_backward(test::read_repo_file("examples/gqa.yaml"));
    const Trace trace = compute(model);
    CHECK(trace.find(StepId::grad_keys, 3) == nullptr);
    CHECK(trace.find(StepId::grad_values, 3) == nullptr);
    for (int g = 1; g <= 2; ++g) {
        CAPTURE(g);
        const int a = 2 * g - 1, b = 2 * g;
        const arma::mat dK_a = value(trace, StepId::grad_scores, a).t() * value(trace, StepId::queries, a);
        const arma::mat dK_b = value(trace, StepId::grad_scores, b).t() * value(trace, StepId::queries, b);
        require_near(value(trace, StepId::grad_keys, g), dK_a + dK_b, 1e-14, "dK = Σ_h dS_hᵀ·Q_h");
        CHECK(arma::abs(dK_b).max() > 1e-3);  // both heads contribute
        const arma::mat dV_a = value(trace, StepId::weights, a).t() * value(trace, StepId::grad_head_output, a);
        const arma::mat dV_b = value(trace, StepId::weights, b).t() * value(trace, StepId::grad_head_output, b);
        require_near(value(trace, StepId::grad_values, g), dV_a + dV_b, 1e-14, "dV = Σ_h A_hᵀ·dZ_h");
        CHECK(arma::abs(dV_b).max() > 1e-3);
        // a query head reads the keys of its own key/value head
        require_near(value(trace, StepId::grad_queries, b),
                     value(trace, StepId::grad_scores, b) * value(trace, StepId::keys, g), 1e-14, "dQ_h = dS_h·K_g");
    }
    // W_K's gradient puts the key/value heads side by side: 4 × (2·d_k)
    CHECK(value(trace, StepId::grad_w_key).n_cols == 4);
}

// ── the whole pass against finite differences ───────────────────────────────

namespace {

// Random numbers written out in YAML, from a fixed seed.
class RandomYaml {
public:
    explicit RandomYaml(unsigned seed) : m_engine(seed) {}
    std::string number() {
        char text[40];
        std::snprintf(text, sizeof text, "%.17g", m_uniform(m_engine));
        return text;
    }
    std::string vector(int count) {
        std::string text = "[";
        for (int j = 0; j < count; ++j) {
            text += (j == 0 ? "" : ", ") + number();
        }
        return text + "]";
    }
    std::string matrix(int n_rows, int n_cols) {
        std::string text = "[";
        for (int i = 0; i < n_rows; ++i) {
            text += (i == 0 ? "" : ", ") + vector(n_cols);
        }
        return text + "]";
    }

private:
    std::mt19937 m_engine;
    std::uniform_real_distribution<double> m_uniform{-1.0, 1.0};
};

struct RandomModel {
    std::string name;
    std::string yaml;
};

std::vector<RandomModel> random_models() {
    RandomYaml r(20240611);
    std::vector<RandomModel> models;
    const auto add = [&](std::string name, std::string yaml) { models.push_back({std::move(name), std::move(yaml)}); };
    add("causal mask, two heads, every bias, W_O",
        "inputs: " + r.matrix(3, 4) + "\nheads: 2\nweights:\n  query: " + r.matrix(4, 4) + "\n  key: " + r.matrix(4, 4) +
            "\n  value: " + r.matrix(4, 4) + "\n  output: " + r.matrix(4, 3) + "\nbias: {query: " + r.vector(4) +
            ", key: " + r.vector(4) + ", value: " + r.vector(4) + ", output: " + r.vector(3) +
            "}\nmask: causal\ngrad_output: " + r.matrix(3, 3) + "\n");
    add("padding, three heads, a numeric scale, no W_O",
        "inputs: " + r.matrix(4, 3) + "\nheads: 3\nweights:\n  query: " + r.matrix(3, 3) + "\n  key: " + r.matrix(3, 3) +
            "\n  value: " + r.matrix(3, 6) + "\npadding: [1, 1, 0, 1]\nscale: 1.7\ngrad_output: " + r.matrix(4, 6) + "\n");
    add("sinusoidal positions, one head, W_O",
        "inputs: " + r.matrix(3, 4) + "\nweights:\n  query: " + r.matrix(4, 2) + "\n  key: " + r.matrix(4, 2) +
            "\n  value: " + r.matrix(4, 3) + "\n  output: " + r.matrix(3, 4) +
            "\npositional: sinusoidal\ngrad_output: " + r.matrix(3, 4) + "\n");
    add("a positional matrix and grad_output: ones",
        "inputs: " + r.matrix(3, 2) + "\nweights:\n  query: " + r.matrix(2, 2) + "\n  key: " + r.matrix(2, 2) +
            "\n  value: " + r.matrix(2, 2) + "\npositional: " + r.matrix(3, 2) + "\ngrad_output: ones\n");
    add("cross-attention with a mask, two heads, biases, W_O",
        "inputs: " + r.matrix(2, 3) + "\ncontext: " + r.matrix(3, 3) + "\nheads: 2\nweights:\n  query: " +
            r.matrix(3, 4) + "\n  key: " + r.matrix(3, 4) + "\n  value: " + r.matrix(3, 4) + "\n  output: " +
            r.matrix(4, 3) + "\nbias: {query: " + r.vector(4) + ", key: " + r.vector(4) + ", value: " + r.vector(4) +
            "}\nmask: [[1, 0, 1], [1, 1, 0]]\ngrad_output: " + r.matrix(2, 3) + "\n");
    add("RoPE (half), causal, two heads",
        "inputs: " + r.matrix(4, 4) + "\nheads: 2\nweights:\n  query: " + r.matrix(4, 4) + "\n  key: " + r.matrix(4, 4) +
            "\n  value: " + r.matrix(4, 4) + "\nrope: true\nmask: causal\ngrad_output: " + r.matrix(4, 4) + "\n");
    add("RoPE (interleaved, base 100) in cross-attention, with biases",
        "inputs: " + r.matrix(2, 4) + "\ncontext: " + r.matrix(3, 4) + "\nweights:\n  query: " + r.matrix(4, 4) +
            "\n  key: " + r.matrix(4, 4) + "\n  value: " + r.matrix(4, 2) + "\nbias: {query: " + r.vector(4) +
            ", key: " + r.vector(4) + "}\nrope: {base: 100, style: interleaved}\ngrad_output: " + r.matrix(2, 2) + "\n");
    add("grouped-query: four query heads, two key/value heads, every bias, W_O",
        "inputs: " + r.matrix(3, 4) + "\nheads: 4\nkv_heads: 2\nweights:\n  query: " + r.matrix(4, 8) + "\n  key: " +
            r.matrix(4, 4) + "\n  value: " + r.matrix(4, 4) + "\n  output: " + r.matrix(8, 3) + "\nbias: {query: " +
            r.vector(8) + ", key: " + r.vector(4) + ", value: " + r.vector(4) + ", output: " + r.vector(3) +
            "}\nmask: causal\ngrad_output: " + r.matrix(3, 3) + "\n");
    add("multi-query with RoPE",
        "inputs: " + r.matrix(3, 3) + "\nheads: 2\nkv_heads: 1\nweights:\n  query: " + r.matrix(3, 4) + "\n  key: " +
            r.matrix(3, 2) + "\n  value: " + r.matrix(3, 2) + "\nrope: true\ngrad_output: " + r.matrix(3, 4) + "\n");
    add("ALiBi (Press et al.'s slopes), causal, two heads, W_O",
        "inputs: " + r.matrix(4, 4) + "\nheads: 2\nweights:\n  query: " + r.matrix(4, 4) + "\n  key: " + r.matrix(4, 4) +
            "\n  value: " + r.matrix(4, 4) + "\n  output: " + r.matrix(4, 4) +
            "\nalibi: true\nmask: causal\ngrad_output: " + r.matrix(4, 4) + "\n");
    add("ALiBi with given slopes and a sliding window",
        "inputs: " + r.matrix(4, 3) + "\nheads: 2\nweights:\n  query: " + r.matrix(3, 4) + "\n  key: " + r.matrix(3, 4) +
            "\n  value: " + r.matrix(3, 2) + "\nalibi: [0.5, 0.25]\nmask: {window: 2}\ngrad_output: " + r.matrix(4, 2) +
            "\n");
    add("attention sinks, causal, two heads",
        "inputs: " + r.matrix(3, 4) + "\nheads: 2\nweights:\n  query: " + r.matrix(4, 4) + "\n  key: " + r.matrix(4, 4) +
            "\n  value: " + r.matrix(4, 4) + "\nsinks: [0.3, -0.7]\nmask: causal\ngrad_output: " + r.matrix(3, 4) + "\n");
    add("layout pytorch, two heads, biases, W_O",
        "layout: pytorch\ninputs: " + r.matrix(3, 3) + "\nheads: 2\nweights:\n  query: " + r.matrix(4, 3) +
            "\n  key: " + r.matrix(4, 3) + "\n  value: " + r.matrix(2, 3) + "\n  output: " + r.matrix(3, 2) +
            "\nbias: {query: " + r.vector(4) + ", value: " + r.vector(2) + ", output: " + r.vector(3) +
            "}\ngrad_output: " + r.matrix(3, 3) + "\n");
    add("a heads: list with a bias on one head, W_O",
        "inputs: " + r.matrix(3, 3) + "\nheads:\n  - {query: " + r.matrix(3, 2) + ", key: " + r.matrix(3, 2) +
            ", value: " + r.matrix(3, 2) + ", bias: {query: " + r.vector(2) + ", key: " + r.vector(2) +
            ", value: " + r.vector(2) + "}}\n  - {query: " + r.matrix(3, 2) + ", key: " + r.matrix(3, 2) +
            ", value: " + r.matrix(3, 2) + "}\nweights: {output: " + r.matrix(4, 3) + "}\nbias: {output: " +
            r.vector(3) + "}\nmask: causal\ngrad_output: " + r.matrix(3, 3) + "\n");
    add("a heads: list in layout pytorch",
        "layout: pytorch\ninputs: " + r.matrix(3, 3) + "\nheads:\n  - {query: " + r.matrix(2, 3) + ", key: " +
            r.matrix(2, 3) + ", value: " + r.matrix(1, 3) + "}\n  - {query: " + r.matrix(2, 3) + ", key: " +
            r.matrix(2, 3) + ", value: " + r.matrix(1, 3) + "}\nweights: {output: " + r.matrix(2, 2) +
            "}\ngrad_output: " + r.matrix(3, 2) + "\n");
    add("a pytorch: block with biases, causal",
        "inputs: " + r.matrix(3, 4) + "\npytorch:\n  num_heads: 2\n  in_proj_weight: " + r.matrix(12, 4) +
            "\n  in_proj_bias: " + r.vector(12) + "\n  out_proj_weight: " + r.matrix(4, 4) + "\n  out_proj_bias: " +
            r.vector(4) + "\nmask: causal\ngrad_output: " + r.matrix(3, 4) + "\n");
    add("a pytorch: block without biases, padding",
        "inputs: " + r.matrix(3, 2) + "\npytorch:\n  num_heads: 1\n  in_proj_weight: " + r.matrix(6, 2) +
            "\n  out_proj_weight: " + r.matrix(2, 2) + "\npadding: [0, 1, 1]\ngrad_output: " + r.matrix(3, 2) + "\n");
    add("cross-attention with everything: sinusoidal positions, multi-query, RoPE, ALiBi, sinks",
        "inputs: " + r.matrix(2, 4) + "\ncontext: " + r.matrix(3, 4) + "\nheads: 2\nkv_heads: 1\nweights:\n  query: " +
            r.matrix(4, 4) + "\n  key: " + r.matrix(4, 2) + "\n  value: " + r.matrix(4, 2) + "\n  output: " +
            r.matrix(4, 4) + "\npositional: sinusoidal\nrope: true\nalibi: true\nsinks: [0.2, -0.4]\ngrad_output: " +
            r.matrix(2, 4) + "\n");
    return models;
}

// L = Σ O ∘ dO, from the forward pass alone.
double loss(const Model& model) {
    Model forward = model;
    forward.grad_output.reset();
    ComputeOptions options;
    options.kernels = Kernels::textbook;
    const Trace trace = compute(forward, options);
    const Step* output = trace.find(StepId::output);
    REQUIRE(output != nullptr);
    return arma::accu(output->values % *model.grad_output);
}

// One entry of the model that a finite difference nudges, and the gradient step's value for it.
struct Entry {
    std::string what;
    std::function<void(Model&, double)> nudge;
    double gradient;
};

// Every entry of X, C, the weights and the biases, each with its cell of the gradient step that
// the trace holds for it. The model stores weights in the x·W layout (in × out); the gradient steps
// are in the file's layout, so with layout: pytorch their cells are read transposed.
std::vector<Entry> entries(const Model& model, const Trace& trace, std::set<StepId>& used) {
    std::vector<Entry> result;
    const auto grad = [&](StepId id, int head) -> const arma::mat& {
        used.insert(id);
        return value(trace, id, head);
    };
    const bool transposed = model.layout == Layout::pytorch;
    const auto add_matrix = [&](const std::string& what, const arma::mat& M,
                                const std::function<double&(Model&, arma::uword, arma::uword)>& cell,
                                const std::function<double(arma::uword, arma::uword)>& gradient) {
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                result.push_back({what + "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]",
                                  [cell, i, j](Model& m, double delta) { cell(m, i, j) += delta; }, gradient(i, j)});
            }
        }
    };
    const int H = static_cast<int>(model.n_heads());
    const int G = static_cast<int>(model.n_kv_heads());
    const arma::uword d_k = model.d_k(), d_v = model.d_v(), E = H * d_k;

    // X and C
    const arma::mat& dX = grad(StepId::grad_inputs, 0);
    add_matrix("X", model.X, [](Model& m, arma::uword i, arma::uword j) -> double& { return m.X(i, j); },
               [&dX](arma::uword i, arma::uword j) { return dX(i, j); });
    if (model.C) {
        const arma::mat& dC = grad(StepId::grad_context, 0);
        add_matrix("C", *model.C, [](Model& m, arma::uword i, arma::uword j) -> double& { return (*m.C)(i, j); },
                   [&dC](arma::uword i, arma::uword j) { return dC(i, j); });
    }

    // the query heads that hold key/value head g's weights (each holds a copy with kv_heads)
    const auto sharing = [](const Model& m, int g) {
        std::vector<std::size_t> heads;
        for (int h = 1; h <= static_cast<int>(m.n_heads()); ++h) {
            if (m.kv_head_of(h) == g) {
                heads.push_back(static_cast<std::size_t>(h - 1));
            }
        }
        return heads;
    };
    using Member = arma::mat HeadWeights::*;
    using BiasMember = std::optional<arma::rowvec> HeadWeights::*;
    struct Projection {
        const char* name;
        Member W;
        BiasMember b;
        bool shared;  // per key/value head
        arma::uword width;
        StepId grad_w, grad_b;
        arma::uword block;  // its first row in in_proj_weight
    };
    const Projection projections[] = {
        {"W_Q", &HeadWeights::W_Q, &HeadWeights::b_Q, false, d_k, StepId::grad_w_query, StepId::grad_b_query, 0},
        {"W_K", &HeadWeights::W_K, &HeadWeights::b_K, true, d_k, StepId::grad_w_key, StepId::grad_b_key, E},
        {"W_V", &HeadWeights::W_V, &HeadWeights::b_V, true, d_v, StepId::grad_w_value, StepId::grad_b_value, 2 * E},
    };
    for (const Projection& p : projections) {
        const int count = p.shared ? G : H;
        for (int g = 1; g <= count; ++g) {
            const std::vector<std::size_t> holders =
                p.shared ? sharing(model, g) : std::vector<std::size_t>{static_cast<std::size_t>(g - 1)};
            const HeadWeights& head = model.heads[holders.front()];
            const std::string name = std::string(p.name) + " of head " + std::to_string(g);
            const arma::uword offset = static_cast<arma::uword>(g - 1) * p.width;
            const auto weight_cell = [holders, W = p.W](Model& m, arma::uword i, arma::uword j) -> double& {
                // every copy but the first moves too; the first is returned for the caller's nudge
                return (m.heads[holders.front()].*W)(i, j);
            };
            const auto nudge_copies = [holders, W = p.W](Model& m, arma::uword i, arma::uword j, double delta) {
                for (std::size_t k = 1; k < holders.size(); ++k) {
                    (m.heads[holders[k]].*W)(i, j) += delta;
                }
            };
            std::function<double(arma::uword, arma::uword)> gradient;
            std::function<double(arma::uword)> bias_gradient;
            if (model.weight_form == WeightForm::pytorch_block) {
                const arma::mat& dW = grad(StepId::grad_in_proj_weight, 0);
                gradient = [&dW, row = p.block + offset](arma::uword i, arma::uword j) { return dW(row + j, i); };
                if (head.*p.b) {
                    const arma::mat& db = grad(StepId::grad_in_proj_bias, 0);
                    bias_gradient = [&db, column = p.block + offset](arma::uword j) { return db(0, column + j); };
                }
            } else if (model.weight_form == WeightForm::head_list) {
                const arma::mat& dW = grad(p.grad_w, g);
                gradient = [&dW, transposed](arma::uword i, arma::uword j) { return transposed ? dW(j, i) : dW(i, j); };
                if (head.*p.b) {
                    const arma::mat& db = grad(p.grad_b, g);
                    bias_gradient = [&db](arma::uword j) { return db(0, j); };
                }
            } else {
                const arma::mat& dW = grad(p.grad_w, 0);
                gradient = [&dW, transposed, offset](arma::uword i, arma::uword j) {
                    return transposed ? dW(offset + j, i) : dW(i, offset + j);
                };
                if (head.*p.b) {
                    const arma::mat& db = grad(p.grad_b, 0);
                    bias_gradient = [&db, offset](arma::uword j) { return db(0, offset + j); };
                }
            }
            const arma::mat& W = head.*p.W;
            for (arma::uword i = 0; i < W.n_rows; ++i) {
                for (arma::uword j = 0; j < W.n_cols; ++j) {
                    result.push_back({name + "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]",
                                      [weight_cell, nudge_copies, i, j](Model& m, double delta) {
                                          weight_cell(m, i, j) += delta;
                                          nudge_copies(m, i, j, delta);
                                      },
                                      gradient(i, j)});
                }
            }
            if (head.*p.b) {
                for (arma::uword j = 0; j < (head.*p.b)->n_elem; ++j) {
                    result.push_back({"b" + std::string(p.name).substr(1) + " of head " + std::to_string(g) + "[" +
                                          std::to_string(j + 1) + "]",
                                      [holders, b = p.b, j](Model& m, double delta) {
                                          for (const std::size_t k : holders) {
                                              (*(m.heads[k].*b))(j) += delta;
                                          }
                                      },
                                      bias_gradient(j)});
                }
            }
        }
    }

    // W_O and b_O
    if (model.W_O) {
        const bool block = model.weight_form == WeightForm::pytorch_block;
        const arma::mat& dW = grad(block ? StepId::grad_out_proj_weight : StepId::grad_w_output, 0);
        const bool out_in = block || transposed;
        add_matrix("W_O", *model.W_O, [](Model& m, arma::uword i, arma::uword j) -> double& { return (*m.W_O)(i, j); },
                   [&dW, out_in](arma::uword i, arma::uword j) { return out_in ? dW(j, i) : dW(i, j); });
        if (model.b_O) {
            const arma::mat& db = grad(block ? StepId::grad_out_proj_bias : StepId::grad_b_output, 0);
            for (arma::uword j = 0; j < model.b_O->n_elem; ++j) {
                result.push_back({"b_O[" + std::to_string(j + 1) + "]",
                                  [j](Model& m, double delta) { (*m.b_O)(j) += delta; }, db(0, j)});
            }
        }
    }
    return result;
}

}  // namespace

namespace {

// Compares every entry's gradient step with the central difference (L(+h) − L(−h)) / 2h. The nudge
// h = 1e-6 gives a difference good to about 1e-9 here (the rounding of L ≈ 1 over 2e-6, and h² times
// the third derivative ≈ 1e-12), far inside the tolerance of 1e-6 relative (1e-8 absolute near 0).
void check_finite_differences(const std::string& yaml) {
    const double h = 1e-6;
    INFO(yaml);
    const Model model = test::load_text(yaml);
    const Trace trace = compute(model);
    std::set<StepId> used;
    const std::vector<Entry> all = entries(model, trace, used);
    REQUIRE(all.size() > 10);
    std::string mismatches;
    int count = 0;
    for (const Entry& entry : all) {
        Model plus = model;
        entry.nudge(plus, h);
        Model minus = model;
        entry.nudge(minus, -h);
        const double numeric = (loss(plus) - loss(minus)) / (2 * h);
        const double difference = std::abs(entry.gradient - numeric);
        const bool close = difference <= 1e-6 * std::abs(numeric) || difference <= 1e-8;
        if (!close && ++count <= 12) {
            char line[200];
            std::snprintf(line, sizeof line, "%s: gradient step %.12g, finite difference %.12g\n", entry.what.c_str(),
                          entry.gradient, numeric);
            mismatches += line;
        }
    }
    INFO(count << " of " << all.size() << " entries differ; the first of them:\n" << mismatches);
    CHECK(count == 0);
}

}  // namespace

TEST_CASE("every gradient step agrees with central finite differences of L = Σ O ∘ dO", "[backward][gradcheck]") {
    for (const RandomModel& random : random_models()) {
        DYNAMIC_SECTION(random.name) { check_finite_differences(random.yaml); }
    }
}

TEST_CASE("a pytorch: block with in_proj_bias in cross-attention has its gradients", "[backward][gradcheck]") {
    // dQ has n rows and dK, dV have m: grad_in_proj_bias sums the columns of each on its own
    RandomYaml r(7);
    std::vector<RandomModel> models;
    const auto add = [&](std::string name, std::string yaml) { models.push_back({std::move(name), std::move(yaml)}); };
    add("a pytorch: block in cross-attention",
        "inputs: " + r.matrix(2, 4) + "\ncontext: " + r.matrix(3, 4) + "\npytorch:\n  num_heads: 2\n  in_proj_weight: " +
            r.matrix(12, 4) + "\n  in_proj_bias: " + r.vector(12) + "\n  out_proj_weight: " + r.matrix(4, 4) +
            "\ngrad_output: " + r.matrix(2, 4) + "\n");
    for (const RandomModel& random : models) {
        CAPTURE(random.name);
        check_finite_differences(random.yaml);
    }
}

TEST_CASE("the finite-difference models between them reach every gradient of a weight, a bias and an input",
          "[backward][gradcheck]") {
    std::set<StepId> used;
    for (const RandomModel& random : random_models()) {
        CAPTURE(random.name);
        const Model model = test::load_text(random.yaml);
        entries(model, compute(model), used);
    }
    for (const StepId id : {StepId::grad_inputs, StepId::grad_context, StepId::grad_w_query, StepId::grad_w_key,
                            StepId::grad_w_value, StepId::grad_w_output, StepId::grad_b_query, StepId::grad_b_key,
                            StepId::grad_b_value, StepId::grad_b_output, StepId::grad_in_proj_weight,
                            StepId::grad_in_proj_bias, StepId::grad_out_proj_weight, StepId::grad_out_proj_bias}) {
        CAPTURE(step_name(id));
        CHECK(used.count(id) == 1);
    }
}

TEST_CASE("every step a gradient step reads comes before it in the trace", "[backward]") {
    for (const RandomModel& random : random_models()) {
        CAPTURE(random.name);
        const Model model = test::load_text(random.yaml);
        const std::vector<StepKey> sequence = step_sequence(model);
        const Trace trace = compute(model);
        REQUIRE(trace.steps.size() == sequence.size());
        std::map<StepKey, std::size_t> position;
        for (std::size_t k = 0; k < sequence.size(); ++k) {
            CHECK(trace.steps[k].id == sequence[k].id);
            CHECK(trace.steps[k].head == sequence[k].head);
            CHECK(position.count(sequence[k]) == 0);  // each once
            position[sequence[k]] = k;
        }
        for (std::size_t k = 0; k < sequence.size(); ++k) {
            if (!is_gradient(sequence[k].id)) {
                continue;
            }
            for (const StepKey& input : step_inputs(model, sequence[k])) {
                CAPTURE(step_name(sequence[k].id), sequence[k].head, step_name(input.id), input.head);
                REQUIRE(position.count(input) == 1);
                CHECK(position[input] < k);
            }
        }
        // with kv_heads, the gradient of a shared key/value head follows every query head's grad_scores
        for (int g = 1; g <= static_cast<int>(model.n_kv_heads()); ++g) {
            for (int h = 1; h <= static_cast<int>(model.n_heads()); ++h) {
                if (model.kv_head_of(h) == g) {
                    CAPTURE(g, h);
                    CHECK(position.at({StepId::grad_scores, h}) < position.at({StepId::grad_keys, g}));
                    CHECK(position.at({StepId::grad_head_output, h}) < position.at({StepId::grad_values, g}));
                }
            }
        }
        // the backward pass follows the whole forward pass
        CHECK(position.at({StepId::output, 0}) < position.at({StepId::grad_output, 0}));
    }
}

TEST_CASE("round: rounds the gradients too, and later gradients use the rounded values", "[backward]") {
    const std::string model_text = test::read_repo_file("examples/gqa.yaml");
    const Model exact_model = load_backward(model_text);
    const Model model = load_backward(model_text + "round: 2\n");
    const Trace exact = compute(exact_model);
    const Trace trace = compute(model);
    int rounded_steps = 0;
    for (const Step& step : trace.steps) {
        if (!is_gradient(step.id)) {
            continue;
        }
        CAPTURE(step_name(step.id), step.head);
        require_near(step.values, round_to(step.values, 2), 0, "rounded to 2 decimals");
        CHECK(step.notes.back().find("rounded to 2 decimals by hand") != std::string::npos);
        ++rounded_steps;
    }
    CHECK(rounded_steps > 20);
    // each later gradient is its formula applied to the rounded values before it, then rounded
    for (int h = 1; h <= 4; ++h) {
        CAPTURE(h);
        const arma::mat& A = value(trace, StepId::weights, h);
        const arma::mat& dA = value(trace, StepId::grad_weights, h);
        require_near(value(trace, StepId::grad_scaled_scores, h), round_to(softmax_backward(A, dA), 2), 0,
                     "dS' from the rounded A and dA");
        require_near(value(trace, StepId::grad_scores, h),
                     round_to(value(trace, StepId::grad_scaled_scores, h) / std::sqrt(2.0), 2), 0,
                     "dS from the rounded dS'");
    }
    arma::mat dX(3, 4, arma::fill::zeros);
    for (int h = 1; h <= 4; ++h) {
        dX += value(trace, StepId::grad_queries, h) * model.heads[static_cast<std::size_t>(h - 1)].W_Q.t();
    }
    for (int g = 1; g <= 2; ++g) {
        dX += value(trace, StepId::grad_keys, g) * model.kv_weights(g).W_K.t() +
              value(trace, StepId::grad_values, g) * model.kv_weights(g).W_V.t();
    }
    require_near(value(trace, StepId::grad_inputs), round_to(dX, 2), 0, "dX from the rounded dQ, dK, dV");
    // and the rounding shows: the rounded pass differs from the exact one
    CHECK(arma::abs(value(trace, StepId::grad_inputs) - value(exact, StepId::grad_inputs)).max() > 1e-6);

    SECTION("round: {grad_weights: 1} rounds that step only") {
        const Trace one = compute(load_backward(model_text + "round: {grad_weights: 1}\n"));
        require_near(value(one, StepId::grad_weights, 1), round_to(value(exact, StepId::grad_weights, 1), 1), 0,
                     "dA rounded to 1 decimal");
        const arma::mat& dS = value(one, StepId::grad_scaled_scores, 1);
        require_near(dS, softmax_backward(value(one, StepId::weights, 1), value(one, StepId::grad_weights, 1)), 1e-15,
                     "dS' from the rounded dA, not rounded itself");
    }
}

TEST_CASE("a kept gradient step of a chosen head (--steps, --head) is of the key/value head the query head reads",
          "[backward][gqa]") {
    const Model model = load_backward(test::read_repo_file("examples/gqa.yaml"));
    const Trace full = compute(model);
    ComputeOptions options;
    options.steps = {StepId::grad_keys};
    options.head = 3;
    const Trace trace = compute(model, options);
    // every step is still listed, so step numbers stay the same
    REQUIRE(trace.steps.size() == full.steps.size());
    // query head 3 reads key/value head ⌈3·2/4⌉ = 2
    REQUIRE(model.kv_head_of(3) == 2);
    int kept = 0;
    for (const Step& step : trace.steps) {
        CAPTURE(step_name(step.id), step.head);
        if (step.id == StepId::grad_keys && step.head == 2) {
            require_near(step.values, value(full, StepId::grad_keys, 2), 0, "dK of key/value head 2");
            ++kept;
        } else {
            CHECK(step.values.is_empty());
        }
    }
    CHECK(kept == 1);

    SECTION("a per-query-head gradient keeps query head 3 itself") {
        ComputeOptions queries;
        queries.steps = {StepId::grad_queries, StepId::grad_values};
        queries.head = 3;
        const Trace narrowed = compute(model, queries);
        CHECK_FALSE(narrowed.find(StepId::grad_queries, 3)->values.is_empty());
        CHECK(narrowed.find(StepId::grad_queries, 2)->values.is_empty());
        CHECK_FALSE(narrowed.find(StepId::grad_values, 2)->values.is_empty());
        CHECK(narrowed.find(StepId::grad_values, 1)->values.is_empty());
    }
}
