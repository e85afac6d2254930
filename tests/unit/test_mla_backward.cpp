// The backward pass of multi-head latent attention (mla:): the rope key's
// gradient summed over the heads, the latent's through its RMSNorm, worked by
// hand on the built-in example; every weight's, γ's and the inputs' gradient
// against central finite differences of L = Σ O ∘ dO; and the mistakes check
// names in them. The reference cases (test_reference.cpp) hold PyTorch's.
#include "support.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>

using namespace qkv;

namespace {

Model builtin_mla_backward() {
    Model model = test::load_text(test::read_repo_file("examples/mla.yaml"), "mla.yaml");
    model.grad_output = arma::mat(model.n(), model.d_out(), arma::fill::ones);
    model.grad_output_ones = true;
    return model;
}

const arma::mat& value(const Trace& trace, StepId id, int head = 0) {
    const Step* step = trace.find(id, head);
    INFO(step_text(id) << " head " << head);
    REQUIRE(step != nullptr);
    return step->values;
}

// L = Σ O ∘ dO from the forward pass alone
double loss(const Model& model) {
    Model forward = model;
    forward.grad_output.reset();
    ComputeOptions options;
    options.kernels = Kernels::textbook;
    return arma::accu(value(compute(forward, options), StepId::output) % *model.grad_output);
}

// One number of the model a finite difference nudges, and the gradient the trace gives it.
struct Entry {
    std::string what;
    std::function<double&(Model&)> cell;
    double gradient;
};

// Every number of X, the weights and the γs, each with its cell of the gradient step. The model
// keeps weights in the x·W layout; the steps are in the file's, so with layout: pytorch transposed.
std::vector<Entry> entries(const Model& model, const Trace& trace) {
    std::vector<Entry> result;
    const bool transposed = model.layout == Layout::pytorch;
    // a weight of in × out kept by `get`, whose gradient is columns `offset` … of step `id` (x·W layout)
    const auto add = [&](const std::string& what, const arma::mat& M, std::function<arma::mat&(Model&)> get, StepId id,
                         arma::uword offset, bool layout) {
        const arma::mat& dW = value(trace, id);
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                const double gradient = layout && transposed ? dW(offset + j, i) : dW(i, offset + j);
                result.push_back({what + "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]",
                                  [get, i, j](Model& m) -> double& { return get(m)(i, j); }, gradient});
            }
        }
    };
    add("X", model.X, [](Model& m) -> arma::mat& { return m.X; }, StepId::grad_inputs, 0, false);
    const Mla& mla = *model.mla;
    if (mla.q_rank) {
        add("W_DQ", *mla.W_qa, [](Model& m) -> arma::mat& { return *m.mla->W_qa; }, StepId::grad_w_q_a, 0, true);
        const arma::mat gamma = mla.q_norm;
        add("q_a_layernorm", gamma, [](Model& m) -> arma::mat& { return m.mla->q_norm; }, StepId::grad_q_a_layernorm,
            0, false);
    }
    add("W_kva", mla.W_kva, [](Model& m) -> arma::mat& { return m.mla->W_kva; }, StepId::grad_w_kv_a, 0, true);
    const arma::mat gamma = mla.kv_norm;
    add("kv_a_layernorm", gamma, [](Model& m) -> arma::mat& { return m.mla->kv_norm; }, StepId::grad_kv_a_layernorm,
        0, false);
    for (std::size_t h = 0; h < model.heads.size(); ++h) {
        const std::string head = " of head " + std::to_string(h + 1);
        const HeadWeights& weights = model.heads[h];
        add("W_Q" + head, weights.W_Q, [h](Model& m) -> arma::mat& { return m.heads[h].W_Q; }, StepId::grad_w_query,
            h * weights.W_Q.n_cols, true);
        add("W_UK" + head, weights.W_K, [h](Model& m) -> arma::mat& { return m.heads[h].W_K; }, StepId::grad_w_key,
            h * weights.W_K.n_cols, true);
        add("W_UV" + head, weights.W_V, [h](Model& m) -> arma::mat& { return m.heads[h].W_V; }, StepId::grad_w_value,
            h * weights.W_V.n_cols, true);
    }
    if (model.W_O) {
        add("W_O", *model.W_O, [](Model& m) -> arma::mat& { return *m.W_O; }, StepId::grad_w_output, 0, true);
    }
    return result;
}

// Each entry's gradient against (L(+h) − L(−h)) / 2h, h = 1e-6: good to about 1e-9 here.
int check_finite_differences(const Model& model) {
    const double h = 1e-6;
    const Trace trace = compute(model);
    const std::vector<Entry> all = entries(model, trace);
    int wrong = 0;
    for (const Entry& entry : all) {
        Model plus = model;
        entry.cell(plus) += h;
        Model minus = model;
        entry.cell(minus) -= h;
        const double numeric = (loss(plus) - loss(minus)) / (2 * h);
        const double difference = std::abs(entry.gradient - numeric);
        if (difference > 1e-6 * std::abs(numeric) && difference > 1e-8) {
            UNSCOPED_INFO(entry.what << ": gradient step " << entry.gradient << ", finite difference " << numeric);
            ++wrong;
        }
    }
    CHECK(wrong == 0);
    return static_cast<int>(all.size());
}

std::string diagnosis_of(const std::string& file, const std::string& answers) {
    const test::CliResult graded = test::run_qkv({"check", file, "--answers", "-", "-f", "json"}, answers);
    INFO(answers << graded.out << graded.err);
    REQUIRE(graded.status == 1);
    return test::first_diagnosis(graded.out);
}

}  // namespace

TEST_CASE("mla's backward pass: the rope key's gradient sums every head's share, the latent's goes back through "
          "its norm",
          "[backward][mla]") {
    const Model model = builtin_mla_backward();
    const Trace trace = compute(model);
    // every head's dK ends in its share of the one rope key's gradient (d_n = 1, d_r = 2)
    const arma::mat& dK1 = value(trace, StepId::grad_keys, 1);
    const arma::mat& dK2 = value(trace, StepId::grad_keys, 2);
    test::require_near(value(trace, StepId::grad_rope_keys), dK1.cols(1, 2) + dK2.cols(1, 2), 0, "grad_rope_keys");
    CHECK(arma::abs(dK1.cols(1, 2) - dK2.cols(1, 2)).max() > 0.1);  // the shares differ: neither alone is the sum
    // the normed latent fed each head's k_nope through W_UK and its values through W_UV (kv_b_proj's rows)
    const arma::mat dC = dK1.col(0) * model.heads[0].W_K.t() + value(trace, StepId::grad_values, 1) * model.heads[0].W_V.t() +
                         dK2.col(0) * model.heads[1].W_K.t() + value(trace, StepId::grad_values, 2) * model.heads[1].W_V.t();
    test::require_near(value(trace, StepId::grad_normed_kv_latent), dC, 1e-15, "grad_normed_kv_latent");
    // the latent of "saw" is [0, 3], γ = [1, 0.5]: r = 1/√(4.5 + 1e-6). Element 1 is 0, so it gets r·γ₁·dy₁
    // alone; element 2 is the whole row, and scaling it barely moves the normed row [0, 0.5·3r]: what is left
    // of r·γ₂·dy₂ is that times eps / (4.5 + eps)
    const double r = 1.0 / std::sqrt(4.5 + 1e-6);
    const arma::mat& dy = value(trace, StepId::grad_normed_kv_latent);
    const arma::mat& dc = value(trace, StepId::grad_kv_latent);
    CHECK_THAT(dc(1, 0), Catch::Matchers::WithinRel(r * dy(1, 0), 1e-14));
    CHECK_THAT(dc(1, 1), Catch::Matchers::WithinRel(0.5 * r * dy(1, 1) * 1e-6 / (4.5 + 1e-6), 1e-8));
    // dγ[c] = Σ_i dy[i,c]·c[i,c]·r_i: "I" is [2, 0], "saw" [0, 3], "it" [1, 2]
    const double r1 = 1.0 / std::sqrt(2.0 + 1e-6);
    const double r3 = 1.0 / std::sqrt(2.5 + 1e-6);
    const arma::mat& dgamma = value(trace, StepId::grad_kv_a_layernorm);
    CHECK_THAT(dgamma(0, 0), Catch::Matchers::WithinRel(dy(0, 0) * 2 * r1 + dy(2, 0) * 1 * r3, 1e-14));
    CHECK_THAT(dgamma(0, 1), Catch::Matchers::WithinRel(dy(1, 1) * 3 * r + dy(2, 1) * 2 * r3, 1e-14));
    // dW_kva = Xᵀ·[dC_KV dK_R], and dX adds the queries' path and the latent's
    const arma::mat dA = arma::join_rows(dc, value(trace, StepId::grad_rope_keys));
    test::require_near(value(trace, StepId::grad_w_kv_a), model.X.t() * dA, 1e-15, "grad_w_kv_a");
    const arma::mat dX = value(trace, StepId::grad_queries, 1) * model.heads[0].W_Q.t() +
                         value(trace, StepId::grad_queries, 2) * model.heads[1].W_Q.t() + dA * model.mla->W_kva.t();
    test::require_near(value(trace, StepId::grad_inputs), dX, 1e-14, "grad_inputs");
    // no step of the latent queries without q_rank
    CHECK(trace.find(StepId::grad_q_latent) == nullptr);
    CHECK(trace.find(StepId::grad_w_q_a) == nullptr);
}

TEST_CASE("mla's gradients of X, every weight and both γs agree with central finite differences",
          "[backward][mla][gradcheck]") {
    CHECK(check_finite_differences(builtin_mla_backward()) > 30);
    // with q_rank (DeepSeek-V3's yarn, interleaved), in the pytorch layout, and a window with grad_output: ones
    for (const char* name : {"mla_q_rank_interleaved_yarn", "mla_mask_padding_pytorch", "mla_window_q_rank"}) {
        CAPTURE(name);
        const Model model = test::load_reference_case(name);
        REQUIRE(model.grad_output.has_value());
        CHECK(check_finite_differences(model) > 40);
    }
}

TEST_CASE("check names mla's backward mistakes: one head's share of the rope key, the latent's norm skipped",
          "[backward][mla][check][cli]") {
    const std::string file = test::source_dir() + "/tests/reference/cases/mla_no_q_rank_causal.yaml";
    const Trace trace = compute(test::load_reference_case("mla_no_q_rank_causal"));
    // head 2's share of the rope key's gradient (d_n = 2, d_r = 4): the whole step, and one number of it
    const arma::mat share = value(trace, StepId::grad_keys, 2).cols(2, 5);
    CHECK(diagnosis_of(file, "grad_rope_keys: " + test::yaml_matrix(share, 4) + "\n") == "mla_rope_key_one_head");
    arma::mat one(share.n_rows, share.n_cols);
    one.fill(arma::datum::nan);
    one(2, 1) = share(2, 1);
    std::string answer = test::yaml_matrix(one, 4);
    for (std::size_t at = 0; (at = answer.find("nan", at)) != std::string::npos;) {
        answer.replace(at, 3, "~");
    }
    CHECK(diagnosis_of(file, "grad_rope_keys: " + answer + "\n") == "mla_rope_key_one_head");
    // the normed latent's gradient passed back as the latent's
    CHECK(diagnosis_of(file, "grad_kv_latent: " + test::yaml_matrix(value(trace, StepId::grad_normed_kv_latent), 4) +
                                 "\n") == "mla_latent_norm_backward_skipped");
    // with q_rank, dX through the query latent alone
    const std::string yarn = test::source_dir() + "/tests/reference/cases/mla_q_rank_interleaved_yarn.yaml";
    const Model latent = test::load_reference_case("mla_q_rank_interleaved_yarn");
    const arma::mat queries_only = value(compute(latent), StepId::grad_q_latent) * latent.mla->W_qa->t();
    CHECK(diagnosis_of(yarn, "grad_inputs: " + test::yaml_matrix(queries_only, 4) + "\n") == "grad_inputs_queries_only");
}

TEST_CASE("run --backward with mla writes the latents' gradients in every format", "[backward][mla][cli][golden]") {
    const test::CliResult text = test::run_qkv({"run", "mla", "--backward"});
    REQUIRE(text.status == 0);
    test::check_golden("mla.backward.txt", text.out);
    const test::CliResult json = test::run_qkv({"run", "mla", "--backward", "-f", "json"});
    REQUIRE(json.status == 0);
    std::vector<std::string> ids;
    const auto parsed = nlohmann::json::parse(json.out);
    for (const auto& step : parsed.at("steps")) {
        if (ids.empty() || ids.back() != step.at("id")) {
            ids.push_back(step.at("id"));
        }
    }
    // after each head's dQ, dK and dV: back through the latent to the weights and X
    REQUIRE(ids.size() > 9);
    const std::vector<std::string> tail(ids.end() - 9, ids.end());
    CHECK(tail == std::vector<std::string>{"grad_rope_keys", "grad_normed_kv_latent", "grad_kv_latent",
                                           "grad_kv_a_layernorm", "grad_w_query", "grad_w_key", "grad_w_value",
                                           "grad_w_kv_a", "grad_inputs"});
}
