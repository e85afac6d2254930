// QK-norm (qk_norm:, norm_eps:), worked by hand: each query and key row divided
// by its root mean square and multiplied by its gain, forward and back, and
// what explain, JSON, the worksheet and check say about it.
#include "support.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"
#include "explain/explain.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace qkv;

namespace {

// X = I, so Q = W_Q = [[3, 4], [1, 1]] and K = W_K = [[0, 2], [2, 0]]. With
// eps 0.5 the means of squares come out whole: q1: (9 + 16)/2 + 0.5 = 13,
// q2: (1 + 1)/2 + 0.5 = 1.5, and both keys 2 + 0.5 = 2.5.
const char* const k_normed = R"(
inputs: [[1, 0], [0, 1]]
weights:
  query: [[3, 4], [1, 1]]
  key: [[0, 2], [2, 0]]
  value: [[1], [0]]
qk_norm: {query: [1, 2], key: [0.5, 1]}
norm_eps: 0.5
grad_output: ones
)";

std::string matrix_answer(const arma::mat& M, int decimals) {
    std::string text = "[";
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        text += i == 0 ? "[" : ", [";
        for (arma::uword j = 0; j < M.n_cols; ++j) {
            text += (j == 0 ? "" : ", ") + fmt::format("{:.{}f}", M(i, j), decimals);
        }
        text += "]";
    }
    return text + "]";
}

}  // namespace

TEST_CASE("qk_norm divides each query and key row by its root mean square and multiplies it by γ",
          "[steps][qk_norm]") {
    const Model model = test::load_text(k_normed);
    REQUIRE(model.qk_norm.has_value());
    CHECK(model.qk_norm_eps() == 0.5);
    const Trace trace = compute(model);
    const double r13 = 1.0 / std::sqrt(13.0);
    const double r15 = 1.0 / std::sqrt(1.5);
    const double r25 = 1.0 / std::sqrt(2.5);
    const arma::mat Q = test::rows({{3 * r13 * 1, 4 * r13 * 2}, {1 * r15 * 1, 1 * r15 * 2}});
    const arma::mat K = test::rows({{0, 2 * r25 * 1}, {2 * r25 * 0.5, 0}});
    test::require_near(trace.find(StepId::normed_queries, 1)->values, Q, 1e-15, "normed_queries");
    test::require_near(trace.find(StepId::normed_keys, 1)->values, K, 1e-15, "normed_keys");
    // the scores read the normed rows (no RoPE here)
    test::require_near(trace.find(StepId::scores, 1)->values, Q * K.t(), 1e-15, "scores");
    CHECK(step_inputs(model, {StepId::scores, 1}).front().id == StepId::normed_queries);

    // the way back through the norm, against central differences of the norm itself:
    // grad_queries[i, j] = Σ_k dy_k · ∂y_k/∂x_j
    const arma::mat& dY = trace.find(StepId::grad_normed_queries, 1)->values;
    const arma::mat& dX = trace.find(StepId::grad_queries, 1)->values;
    const arma::mat X = test::rows({{3, 4}, {1, 1}});
    const arma::rowvec gain = {1, 2};
    const double h = 1e-6;
    for (arma::uword i = 0; i < 2; ++i) {
        for (arma::uword j = 0; j < 2; ++j) {
            arma::mat up = X.row(i);
            arma::mat down = X.row(i);
            up(0, j) += h;
            down(0, j) -= h;
            const double slope =
                arma::dot(dY.row(i), (rms_norm(up, gain, 0.5) - rms_norm(down, gain, 0.5)) / (2 * h));
            CHECK(dX(i, j) == Approx(slope).epsilon(1e-8));
        }
    }
    // dγ_k = Σ_i dy_ik · x_ik · r_i
    const arma::vec r = {r13, r15};
    const arma::rowvec dgamma = {dY(0, 0) * 3 * r(0) + dY(1, 0) * 1 * r(1), dY(0, 1) * 4 * r(0) + dY(1, 1) * 1 * r(1)};
    test::require_near(trace.find(StepId::grad_q_norm, 0)->values, dgamma, 1e-15, "grad_q_norm");

    // the words
    const Step& step = *trace.find(StepId::normed_queries, 1);
    CHECK(step.formula == "Q_norm = RMSNorm(Q): each row q / √(mean(q²) + eps) ∘ γ");
    CHECK(step.notes.at(1) == "eps = 0.5 (norm_eps:); γ = [1, 2]");
    CHECK(trace.find(StepId::scores, 1)->formula == "S = Q_norm·K_normᵀ");
}

TEST_CASE("qk_norm over: all takes the mean over every head together, and offset: 1 multiplies by 1 + γ",
          "[steps][qk_norm]") {
    // two heads of width 1: the token's row [3, 4] is normed whole, each head keeping its element
    const std::string example = "inputs: [[1, 0], [0, 1]]\n"
                                "heads: 2\n"
                                "weights: {query: [[3, 4], [1, 1]], key: [[0, 2], [2, 0]], value: [[1, 0], [0, 1]]}\n"
                                "qk_norm: {over: all, offset: 1, query: [0, 1], eps: 0.5}\n";
    const Model model = test::load_text(example);
    const Trace trace = compute(model);
    const double r13 = 1.0 / std::sqrt(13.0);
    const double r15 = 1.0 / std::sqrt(1.5);
    test::require_near(trace.find(StepId::normed_queries, 1)->values, test::rows({{3 * r13}, {1 * r15}}), 1e-15,
                       "head 1, gain 1 + 0");
    test::require_near(trace.find(StepId::normed_queries, 2)->values, test::rows({{4 * r13 * 2}, {1 * r15 * 2}}),
                       1e-15, "head 2, gain 1 + 1");
    // each head reads every head's queries, so the steps of every head come first
    CHECK(step_inputs(model, {StepId::normed_queries, 1}).size() == 2);
    const std::vector<StepKey> order = step_sequence(model);
    const auto at = [&order](StepKey key) { return std::find(order.begin(), order.end(), key) - order.begin(); };
    CHECK(at({StepId::queries, 2}) < at({StepId::normed_queries, 1}));
    // γ defaults to 0 with offset 1, so the keys' gain is 1
    CHECK(arma::all(model.qk_norm->key == 0.0));
}

TEST_CASE("qk_norm in explain, JSON, the worksheet and check", "[qk_norm][cli]") {
    const Model model = test::load_text(k_normed);
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
    const std::string normed = lines("normed_queries[1,2]");
    INFO(normed);
    CHECK(normed.find("mean(q²) = (3² + 4²) / 2 = 12.500000\n") != std::string::npos);
    CHECK(normed.find("r = 1/√(mean(q²) + eps) = 1/√(12.500000 + 0.5) = 0.277350\n") != std::string::npos);
    CHECK(normed.find("normed_queries[1,2] = q[2]·r·γ[2] = 4 · 0.277350 · 2 = 2.218801\n") != std::string::npos);
    const std::string back = lines("grad_queries[1,1]");
    INFO(back);
    CHECK(back.find("grad_queries[1,1] = r·γ[1]·dy[1] − q[1]·r³·m = 0.277350 · 1 · ") != std::string::npos);

    const test::CliResult json = test::run_qkv({"run", "-", "-f", "json"}, k_normed);
    REQUIRE(json.status == 0);
    const auto params = nlohmann::json::parse(json.out)["params"];
    CHECK(params["qk_norm"]["over"] == "head");
    CHECK(params["qk_norm"]["query"] == std::vector<double>{1, 2});
    CHECK(params["qk_norm"]["eps"] == 0.5);
    CHECK(params["norm_eps"] == 0.5);
    const test::CliResult plain = test::run_qkv({"run", "two-heads", "-f", "json"});
    CHECK(nlohmann::json::parse(plain.out)["params"]["qk_norm"].is_null());

    const test::CliResult sheet = test::run_qkv({"worksheet", "-"}, k_normed);
    REQUIRE(sheet.status == 0);
    // (Markdown escapes the brackets of γ's numbers)
    CHECK(sheet.out.find("QK-norm: divide each query and key row by √(mean of its squares + eps), the mean over the "
                         "head's d_k = 2 values, then multiply element by element by γ; eps = 0.5, γ = \\[1, 2\\] "
                         "for the queries and \\[0.5, 1\\] for the keys.") != std::string::npos);

    // LayerNorm's way: each row's mean subtracted first; [3, 4] − 3.5 = [−0.5, 0.5], over √(0.25 + 0.5)
    const double layer = 0.5 / std::sqrt(0.75);
    const std::string answers = "answers:\n  normed_queries: " +
                                matrix_answer(test::rows({{-layer, 2 * layer}, {0, 0}}), 4) + "\n";
    const test::CliResult checked = test::run_qkv({"check", "-"}, std::string(k_normed) + answers);
    INFO(checked.out << checked.err);
    CHECK(checked.status == 1);
    CHECK(checked.out.find("Each row's mean was subtracted before dividing, as LayerNorm does") != std::string::npos);

    // one number alone gets the diagnosis the row gets: γ left out of normed_queries[1,2] (4/√13, not 8/√13)
    const test::TempDir folder;
    const std::string file = folder.write("normed.yaml", k_normed);
    const std::string one = "normed_queries: [[~, " + fmt::format("{:.4f}", 4.0 / std::sqrt(13.0)) + "], ~]\n";
    const test::CliResult graded = test::run_qkv({"check", file, "--answers", "-", "-f", "json"}, one);
    INFO(graded.out << graded.err);
    CHECK(graded.status == 1);
    const auto report = nlohmann::json::parse(graded.out);
    CHECK(report["steps"][0]["cells"][0]["diagnosis_id"] == "qk_norm_gamma_forgotten");

    // the way back through the norm left out: grad_queries written as grad_normed_queries
    const arma::mat& skipped = trace.find(StepId::grad_normed_queries, 1)->values;
    const test::CliResult back_checked =
        test::run_qkv({"check", file, "--answers", "-"}, "grad_queries: " + matrix_answer(skipped, 4) + "\n");
    INFO(back_checked.out << back_checked.err);
    CHECK(back_checked.status == 1);
    CHECK(back_checked.out.find("The norm was left out on the way back") != std::string::npos);
}
