// The large-input path of compute() (attention/engine.hpp) against the step
// functions and against PyTorch, and compute()'s choice of steps to keep.
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <set>

using namespace qkv;
using qkv::test::require_near;
using qkv::test::run_qkv;

namespace {

Trace compute_with(const Model& model, Kernels kernels, int threads = 0, std::vector<StepId> steps = {}) {
    ComputeOptions options;
    options.kernels = kernels;
    options.threads = threads;
    options.steps = std::move(steps);
    return compute(model, options);
}

// Every step of `expected` is in `actual` with the same shape and values within eps.
void require_same_trace(const Trace& actual, const Trace& expected, double eps) {
    REQUIRE(actual.steps.size() == expected.steps.size());
    for (std::size_t s = 0; s < expected.steps.size(); ++s) {
        const Step& want = expected.steps[s];
        const Step& got = actual.steps[s];
        REQUIRE(got.id == want.id);
        REQUIRE(got.head == want.head);
        CHECK(got.formula == want.formula);
        CHECK(got.notes == want.notes);
        CHECK(got.row_labels == want.row_labels);
        CHECK(got.col_labels == want.col_labels);
        require_near(got.values, want.values, eps, step_text(want.id) + " head " + std::to_string(want.head));
    }
}

// "[0.5, -0.3, …]": `count` numbers in [−1, 1) that vary with j, for bias vectors.
std::string vector_text(int count, double phase) {
    std::string text = "[";
    for (int j = 0; j < count; ++j) {
        text += (j == 0 ? "" : ", ") + std::to_string(std::sin(phase + 1.7 * j));
    }
    return text + "]";
}

// A random example large enough for the fast path (n·m ≥ 64·64) yet quick:
// 3 heads of width 8, with biases and W_O.
std::string large_example(int n, const std::string& extra) {
    const std::string rows = std::to_string(n);
    return "inputs: {random: {rows: " + rows + ", cols: 24, seed: 1}}\n"
           "heads: 3\n"
           "weights:\n"
           "  query: {random: {rows: 24, cols: 24, seed: 2}}\n"
           "  key: {random: {rows: 24, cols: 24, seed: 3}}\n"
           "  value: {random: {rows: 24, cols: 24, seed: 4}}\n"
           "  output: {random: {rows: 24, cols: 24, seed: 5}}\n"
           "bias:\n"
           "  query: " + vector_text(24, 0.1) + "\n"
           "  value: " + vector_text(24, 0.2) + "\n"
           "  output: " + vector_text(24, 0.3) + "\n" +
           extra;
}

// The same with grouped-query attention: 4 query heads of width 6 sharing
// `kv_heads` key/value heads, with biases on the keys and values too.
std::string grouped_example(int n, int kv_heads, const std::string& extra) {
    const std::string rows = std::to_string(n);
    const std::string kv_width = std::to_string(6 * kv_heads);
    return "inputs: {random: {rows: " + rows + ", cols: 24, seed: 1}}\n"
           "heads: 4\n"
           "kv_heads: " + std::to_string(kv_heads) + "\n"
           "weights:\n"
           "  query: {random: {rows: 24, cols: 24, seed: 2}}\n"
           "  key: {random: {rows: 24, cols: " + kv_width + ", seed: 3}}\n"
           "  value: {random: {rows: 24, cols: " + kv_width + ", seed: 4}}\n"
           "  output: {random: {rows: 24, cols: 24, seed: 5}}\n"
           "bias:\n"
           "  query: " + vector_text(24, 0.1) + "\n"
           "  key: " + vector_text(6 * kv_heads, 0.4) + "\n"
           "  value: " + vector_text(6 * kv_heads, 0.2) + "\n"
           "  output: " + vector_text(24, 0.3) + "\n" +
           extra;
}

}  // namespace

TEST_CASE("the fast path agrees with PyTorch's reference values to 1e-12", "[compute]") {
    // the same cases and tolerance as test_reference.cpp, forced through the fast path
    int cases = 0;
    for (const auto& name : test::reference_cases()) {
        CAPTURE(name);
        const Model model = test::load_reference_case(name);
        const Trace trace = compute_with(model, Kernels::fast);
        test::require_reference(trace, name);
        // and every other step (scaled and masked scores, concat) as the step functions give it
        require_same_trace(trace, compute_with(model, Kernels::textbook), 1e-12);
        ++cases;
    }
    CHECK(cases >= 36);
}

TEST_CASE("the fast path agrees with the step functions on large examples", "[compute]") {
    // variants of a random example of 96-300 tokens, each checked step by step at
    // 1e-12; with 300 tokens the engine takes the queries in two blocks (of 252 and 48)
    const std::string what =
        GENERATE("self-attention", "causal mask", "padding and scale: none", "positions and a numeric scale",
                 "cross-attention with a mask", "RoPE, style half", "RoPE, style interleaved, cross-attention",
                 "grouped-query heads, G = 2", "multi-query heads, G = 1", "ALiBi", "ALiBi with a causal mask",
                 "a window smaller than a block", "a window larger than a block", "sinks",
                 "sinks and a window", "everything together");
    CAPTURE(what);
    std::string yaml;
    if (what == "self-attention") {
        yaml = large_example(160, "");
    } else if (what == "causal mask") {
        yaml = large_example(160, "mask: causal\n");
    } else if (what == "padding and scale: none") {
        // the first two of 130 keys are padding
        std::string padding = "padding: [0, 0";
        for (int j = 2; j < 130; ++j) {
            padding += ", 1";
        }
        yaml = large_example(130, padding + "]\nscale: none\n");
    } else if (what == "positions and a numeric scale") {
        yaml = large_example(96, "positional: sinusoidal\nscale: 2.5\n");
    } else if (what == "cross-attention with a mask") {
        // 100 queries over 70 context rows, a pseudo-random 0/1 mask (a quarter
        // blocked) in which key 1 is always allowed, so that no query is fully blocked
        std::string mask = "context: {random: {rows: 70, cols: 24, seed: 9}}\nmask:\n";
        std::uint64_t state = 12345;
        for (int i = 0; i < 100; ++i) {
            mask += "  - [1";
            for (int j = 1; j < 70; ++j) {
                state = state * 6364136223846793005ULL + 1442695040888963407ULL;
                mask += (state >> 62) == 0 ? ", 0" : ", 1";
            }
            mask += "]\n";
        }
        yaml = large_example(100, mask);
    } else if (what == "RoPE, style half") {
        yaml = large_example(160, "rope: true\nmask: causal\n");
    } else if (what == "RoPE, style interleaved, cross-attention") {
        // the context rows are at positions 0 … 89, like the queries' rows
        yaml = large_example(120, "context: {random: {rows: 90, cols: 24, seed: 9}}\n"
                                  "rope: {base: 500, style: interleaved}\n");
    } else if (what == "grouped-query heads, G = 2") {
        yaml = grouped_example(160, 2, "mask: causal\n");
    } else if (what == "multi-query heads, G = 1") {
        yaml = grouped_example(130, 1, "");
    } else if (what == "ALiBi") {
        yaml = large_example(130, "alibi: true\n");
    } else if (what == "ALiBi with a causal mask") {
        yaml = large_example(300, "alibi: [0.5, 0.125, 0.03]\nmask: causal\n");
    } else if (what == "a window smaller than a block") {
        yaml = large_example(300, "mask: {window: 20}\n");
    } else if (what == "a window larger than a block") {
        yaml = large_example(300, "mask: {window: 270}\n");
    } else if (what == "sinks") {
        yaml = large_example(140, "sinks: [0.5, -1, 3]\n");
    } else if (what == "sinks and a window") {
        yaml = large_example(300, "sinks: [0.5, -1, 3]\nmask: {window: 40}\n");
    } else {
        // gpt-oss's keys and more: GQA, RoPE, ALiBi, a window, sinks and padding
        // (keys 2, 99, 196 and 293: every query still sees itself or another key)
        std::string padding = "padding: [1";
        for (int j = 1; j < 300; ++j) {
            padding += j % 97 == 1 ? ", 0" : ", 1";
        }
        yaml = grouped_example(300, 2, padding + "]\nrope: {base: 150000}\nalibi: true\nmask: {window: 70}\n"
                                                 "sinks: [0.3, -0.4, 1.2, 0]\n");
    }
    const Model model = test::load_text(yaml);
    REQUIRE(model.n() * model.m() >= k_fast_path_cells);
    const Trace fast = compute_with(model, Kernels::automatic);
    const Trace textbook = compute_with(model, Kernels::textbook);
    require_same_trace(fast, textbook, 1e-12);
    // keeping no step before the mask, the engine computes each block of queries
    // only against the keys that a causal mask or a window lets its rows see
    const std::vector<StepId> later = {StepId::masked_scores, StepId::weights, StepId::head_output, StepId::output};
    require_same_trace(compute_with(model, Kernels::automatic, 0, later), compute_with(model, Kernels::textbook, 0, later),
                       1e-12);
    // blocked cells: −∞ before the softmax, weights of exactly 0 after it
    if (model.masked()) {
        const arma::mat allowed = model.allowed();
        const arma::uvec blocked = arma::find(allowed == 0.0);
        REQUIRE(!blocked.is_empty());
        for (int h = 1; h <= static_cast<int>(model.n_heads()); ++h) {
            const arma::mat& masked = fast.find("masked_scores", h)->values;
            const arma::mat& A = fast.find("weights", h)->values;
            CHECK(arma::all(arma::vectorise(masked(blocked)) == -arma::datum::inf));
            CHECK(arma::all(arma::vectorise(A(blocked)) == 0.0));
            CHECK(arma::all(arma::vectorise(A(arma::find(allowed != 0.0))) > 0.0));
        }
    }
    // the backward pass: the engine recomputes each block's weights instead of
    // keeping them, and agrees with the step functions' gradients at 1e-12
    const Model backward = test::load_text(yaml + "grad_output: {random: {rows: " + std::to_string(model.n()) +
                                           ", cols: " + std::to_string(model.d_out()) + ", seed: 5}}\n");
    require_same_trace(compute_with(backward, Kernels::automatic), compute_with(backward, Kernels::textbook), 1e-12);
    // keeping only the gradients that are not per head, no head holds an n × m matrix
    const std::vector<StepId> gradients = {StepId::grad_w_query, StepId::grad_w_key, StepId::grad_w_value,
                                           StepId::grad_inputs,  StepId::grad_context, StepId::grad_b_query};
    require_same_trace(compute_with(backward, Kernels::automatic, 0, gradients),
                       compute_with(backward, Kernels::textbook, 0, gradients), 1e-12);
}

TEST_CASE("scores far beyond exp()'s range give zeros, not NaN, on the fast path", "[compute]") {
    // inputs in ±300: scores reach the hundreds of thousands, so most exp(s − max)
    // are far below the smallest double. The step functions give 0 or subnormals
    // there, the fast path 0; both agree within 1e-12, and every row still sums to 1.
    std::string yaml = large_example(100, "scale: none\n");
    const std::string from = "inputs: {random: {rows: 100, cols: 24, seed: 1}}";
    yaml.replace(yaml.find(from), from.size(), "inputs: {random: {rows: 100, cols: 24, seed: 1, low: -300, high: 300}}");
    const Model model = test::load_text(yaml);
    const Trace fast = compute_with(model, Kernels::fast);
    const Trace textbook = compute_with(model, Kernels::textbook);
    // Scores of 1e5 that cancel down to tens carry rounding errors of about
    // 1e−16 · 1e5 whatever computes them, and the two paths sum in different
    // orders; so the tolerance here is a few units in the last place of the
    // largest score, not 1e−12.
    double largest = 0.0;
    for (int h = 1; h <= 3; ++h) {
        largest = std::max(largest, arma::abs(textbook.find("scaled_scores", h)->values).max());
    }
    REQUIRE(largest > 1e4);
    require_same_trace(fast, textbook, std::max(1e-12, 1e-15 * largest));
    for (int h = 1; h <= 3; ++h) {
        const arma::mat& A = fast.find("weights", h)->values;
        CHECK(A.is_finite());
        CHECK(arma::accu(A == 0.0) > A.n_elem / 2);  // saturated: most weights vanish
        require_near(arma::sum(A, 1), arma::ones(A.n_rows), 1e-14, "row sums");
    }
}

TEST_CASE("compute keeps only the chosen steps, with the same numbering", "[compute]") {
    const Model model = test::load_text(large_example(120, "mask: causal\n"));
    const Trace full = compute(model);
    ComputeOptions options;
    options.steps = {StepId::weights, StepId::output};
    options.head = 2;
    const Trace some = compute(model, options);
    // the same steps in the same order, so "Step 9 · Attention weights" keeps its number
    REQUIRE(some.steps.size() == full.steps.size());
    for (std::size_t s = 0; s < full.steps.size(); ++s) {
        const Step& step = some.steps[s];
        CAPTURE(step.id, step.head);
        CHECK(step.id == full.steps[s].id);
        CHECK(step.head == full.steps[s].head);
        CHECK(step.title == full.steps[s].title);
        const bool kept = step.id == "output" || (step.id == "weights" && step.head == 2);
        CHECK(step.values.is_empty() == !kept);
        CHECK(step.row_labels.empty() == !kept);
        if (kept) {
            // the kept steps are bit for bit those of the whole trace
            CHECK(arma::approx_equal(step.values, full.find(step.id, step.head)->values, "absdiff", 0.0));
        }
    }
}

TEST_CASE("the fast path gives the same numbers with one thread or two", "[compute]") {
    const Model model = test::load_text(large_example(200, "mask: causal\n"));
    const Trace one = compute_with(model, Kernels::fast, 1);
    const Trace two = compute_with(model, Kernels::fast, 2);
    require_same_trace(two, one, 1e-14);
}

TEST_CASE("small examples keep the step functions' exact numbers", "[compute]") {
    // below k_fast_path_cells the automatic choice is the textbook path, which the
    // golden files and the articles' numbers were made with
    const Model model = test::load_text(test::read_repo_file("examples/two-heads.yaml"));
    REQUIRE(model.n() * model.m() < k_fast_path_cells);
    require_same_trace(compute(model), compute_with(model, Kernels::textbook), 0.0);
    // hand rounding always takes the textbook path, even when fast is asked for
    const Model rounded = test::load_text(large_example(80, "round: {weights: 2}\n"));
    const Trace trace = compute_with(rounded, Kernels::fast);
    const arma::mat& A = trace.find("weights", 1)->values;
    CHECK(arma::approx_equal(A, arma::round(A * 100) / 100, "absdiff", 1e-15));
}

TEST_CASE("the memory estimate counts only the keys a sliding window lets a block see", "[compute][cli]") {
    // 16384 tokens of width 8, keeping only the output, on 2 threads (run_qkv):
    // the data is about 15 MiB, and each thread's block of 60 queries against
    // every key 60 · 16384 doubles (7.5 MiB); with a window of 16, against
    // 60 + 16 keys and a panel (under 0.1 MiB)
    const std::string model = "inputs: {random: {rows: 16384, cols: 8, seed: 1}}\n"
                              "weights:\n"
                              "  query: {random: {rows: 8, cols: 8, seed: 2}}\n"
                              "  key: {random: {rows: 8, cols: 8, seed: 3}}\n"
                              "  value: {random: {rows: 8, cols: 8, seed: 4}}\n";
    const std::vector<std::string> args = {"run", "-", "-s", "output", "-f", "csv", "--max-memory", "24MiB"};
    const auto windowed = run_qkv(args, model + "mask: {window: 16}\n");
    CHECK(windowed.status == 0);
    CHECK(windowed.err.empty());
    test::require_input_error(run_qkv(args, model + "mask: causal\n"), "the computation needs about 30 MiB");
}

TEST_CASE("the fast path has every row of the step table that an example has, as the step functions do",
          "[compute]") {
    // four large examples whose steps, together, are every row of the table: grouped-query heads with
    // every forward variant (soft-capping and QK-norm among them), a cross-attention normed over: all, and a
    // pytorch: block, each with its backward pass; and latent attention with a query latent (mla:), whose
    // latents the step functions make before the engine takes over, every head's keys and values from [C K_R]
    const std::string grad = "grad_output: {random: {rows: 130, cols: 24, seed: 6}}\n";
    const std::vector<std::string> examples = {
        grouped_example(130, 2, "positional: sinusoidal\nrope: true\nalibi: true\nmask: causal\n"
                                "sinks: [0.3, -0.4, 1.2, 0]\nsoftcap: 2.5\nqk_norm: {offset: 1, query: " +
                                    vector_text(6, 0.2) + "}\nnorm_eps: 1e-5\n" + grad),
        large_example(130, "context: {random: {rows: 70, cols: 24, seed: 9}}\nqk_norm: {over: all}\n" + grad),
        "inputs: {random: {rows: 130, cols: 24, seed: 1}}\n"
        "pytorch:\n"
        "  num_heads: 3\n"
        "  in_proj_weight: {random: {rows: 72, cols: 24, seed: 2}}\n"
        "  in_proj_bias: " + vector_text(72, 0.5) + "\n"
        "  out_proj_weight: {random: {rows: 24, cols: 24, seed: 3}}\n"
        "  out_proj_bias: " + vector_text(24, 0.7) + "\n" + grad,
        "inputs: {random: {rows: 130, cols: 24, seed: 1}}\n"
        "heads: 3\nmla: {kv_rank: 6, rope_dim: 4, nope_dim: 2, v_dim: 5, q_rank: 8}\n"
        "rope: {style: interleaved}\nmask: causal\n"
        "weights:\n"
        "  q_a_proj: {random: {rows: 24, cols: 8, seed: 2}}\n"
        "  q_a_layernorm: " + vector_text(8, 0.9) + "\n"
        "  q_b_proj: {random: {rows: 8, cols: 18, seed: 3}}\n"
        "  kv_a_proj_with_mqa: {random: {rows: 24, cols: 10, seed: 4}}\n"
        "  kv_b_proj: {random: {rows: 6, cols: 21, seed: 5}}\n"
        "  o_proj: {random: {rows: 15, cols: 24, seed: 6}}\n",
    };
    std::set<StepId> seen;
    for (const std::string& yaml : examples) {
        const Model model = test::load_text(yaml);
        REQUIRE(model.n() * model.m() >= k_fast_path_cells);
        CHECK(use_fast_path(model, {}));
        const Trace fast = compute_with(model, Kernels::automatic);
        require_same_trace(fast, compute_with(model, Kernels::textbook), 1e-12);
        for (const Step& step : fast.steps) {
            CAPTURE(step_text(step.id), step.head);
            CHECK_FALSE(step.values.is_empty());
            seen.insert(step.id);
        }
    }
    // the backward pass of mla is the step functions' alone (as is `qkv bench --mla`): its gradients of the
    // latents come after the engine's rows, so an example with them is not handed to the engine
    const std::set<StepId> step_functions_only = {
        StepId::grad_normed_q_latent, StepId::grad_q_latent,       StepId::grad_rope_keys,
        StepId::grad_normed_kv_latent, StepId::grad_kv_latent,     StepId::grad_q_a_layernorm,
        StepId::grad_kv_a_layernorm,  StepId::grad_w_q_a,          StepId::grad_w_kv_a};
    const Model latent_backward = test::load_text(examples.back() + "grad_output: {random: {rows: 130, cols: 24, seed: 7}}\n");
    CHECK_FALSE(use_fast_path(latent_backward, {}));
    for (const StepId id : all_steps()) {
        CAPTURE(step_text(id));
        CHECK(seen.count(id) == (step_functions_only.count(id) == 0 ? 1U : 0U));
    }
}

TEST_CASE("a product sums each entry in order, from the first term to the last, as by hand", "[compute][unit]") {
    // 1e16 + 1 is 1e16 in a double: summed in order, (1e16 + 1) − 1e16 + 1 is 1;
    // a sum in pairs or blocks gives 2 or 0
    const arma::mat A = {{1e16, 1.0, -1e16, 1.0}, {1.0, 1e16, 1.0, -1e16}};
    const arma::mat B = arma::ones(4, 1);
    const arma::mat C = product(A, B);
    CHECK(C(0, 0) == ((1e16 + 1.0) - 1e16) + 1.0);
    CHECK(C(1, 0) == ((1.0 + 1e16) + 1.0) - 1e16);
    // every entry is its row of A against its column of B, summed left to right
    const arma::mat X = arma::randu(5, 7);
    const arma::mat Y = arma::randn(7, 3);
    const arma::mat Z = product(X, Y);
    for (arma::uword i = 0; i < 5; ++i) {
        for (arma::uword j = 0; j < 3; ++j) {
            double sum = 0.0;
            for (arma::uword k = 0; k < 7; ++k) {
                sum += X(i, k) * Y(k, j);
            }
            CHECK(Z(i, j) == sum);
        }
    }
    // past k_ordered_work multiply-adds the product is BLAS's, equal within rounding
    const arma::mat big_a = arma::randn(300, 300);
    const arma::mat big_b = arma::randn(300, 300);
    REQUIRE(300.0 * 300.0 * 300.0 > k_ordered_work);
    require_near(product(big_a, big_b), big_a * big_b, 1e-12, "a large product");
    CHECK_THROWS_AS(product(arma::mat(2, 3), arma::mat(2, 3)), std::logic_error);
}
