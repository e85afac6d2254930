// `qkv bench`'s measurement (see bench.hpp): random data, the weights packed
// for the engine, one warm-up run, then the timed runs and their medians.
#include "attention/bench.hpp"
#include "model/keys.hpp"
#include "attention/steps.hpp"

#include "attention/engine.hpp"
#include "attention/kernels.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

namespace qkv {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
#ifdef __APPLE__
    return static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);  // macOS reports bytes
#else
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
#endif
}

// Multiply-adds of the matrix products, counted twice (the usual GEMM
// convention): the projections (Q for H heads, K and V for G), the scores and
// weighted sums over the keys each query may see (all n; with a window, query
// i from 0 sees min(i + 1, W)), and the output projection; with the backward
// pass, its products too.
double flops(const BenchSpec& spec) {
    const auto n = static_cast<double>(spec.tokens);
    const auto d_model = static_cast<double>(spec.d_model);
    const double d_k = d_model / static_cast<double>(spec.heads);  // = d_v; H·d_k = d_out = d_model
    const double kv_width = static_cast<double>(spec.kv_head_count()) * d_k;
    // the (query, key) pairs the mask lets through: query i (from 0) sees min(i + 1, W) keys
    double pairs = n * n;
    if (spec.window > 0) {
        const double W = static_cast<double>(std::min(spec.window, spec.tokens));
        pairs = W * (W + 1) / 2 + (n - W) * W;
    }
    const double projections = 2 * n * d_model * (d_model + 2 * kv_width);
    const double per_head = 2 * 2 * pairs * d_k * static_cast<double>(spec.heads);
    const double output = 2 * n * d_model * d_model;
    if (!spec.backward) {
        return projections + per_head + output;
    }
    // the backward pass: dConcat and dW_O; per head the weights again, dA, dQ,
    // dK and dV; then [dW_Q dW_K dW_V] and dX, each as large as the projections
    return projections + per_head + output + 2 * output + 5 * per_head / 2 + 2 * projections;
}

// Uniform in [low, high), like `{random: ...}`.
arma::mat uniform(arma::uword rows, arma::uword cols, double low, double high) {
    arma::mat M(rows, cols, arma::fill::randu);
    return low + (high - low) * M;
}

// Random weights in ±1/√d_model (as nn.Linear starts), packed for the engine:
// H query heads and G key/value heads of width d_model / H, and an output projection.
PackedWeights random_weights(arma::uword d_model, arma::uword heads, arma::uword kv_heads) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(d_model));
    PackedWeights weights;
    weights.heads = heads;
    weights.kv_heads = kv_heads;
    weights.d_k = d_model / heads;
    weights.d_v = weights.d_k;
    weights.set_projections(uniform(d_model, d_model, -bound, bound),
                            uniform(d_model, weights.k_width(), -bound, bound),
                            uniform(d_model, weights.v_width(), -bound, bound));
    weights.W_O = uniform(d_model, d_model, -bound, bound);
    return weights;
}

// RoPE as the benchmark turns it: base 10000, style half, the first rope_dim elements of each head.
Rope bench_rope(const BenchSpec& spec) {
    Rope rope;
    const arma::uword d_k = spec.d_model / std::max<arma::uword>(spec.heads, 1);
    if (spec.rope_dim > 0 && d_k > 0) {
        rope.partial_rotary_factor = static_cast<double>(spec.rope_dim) / static_cast<double>(d_k);
    }
    // each scaling with the settings of a checkpoint that uses it (BENCHMARK in man/qkv.1)
    if (!spec.rope_scaling.empty()) {
        RopeScaling scaling;
        scaling.factor = 8.0;
        scaling.original_max_position_embeddings = std::max<double>(static_cast<double>(spec.tokens) / 2.0, 1.0);
        if (spec.rope_scaling == "dynamic") {
            scaling.type = RopeScalingType::dynamic;
        } else if (spec.rope_scaling == "yarn") {
            scaling.type = RopeScalingType::yarn;  // DeepSeek-V3's, without its mscale
            scaling.factor = 40.0;
            scaling.original_max_position_embeddings = 4096.0;
        } else if (spec.rope_scaling == "llama3") {
            scaling.type = RopeScalingType::llama3;  // Llama 3.1's
            scaling.original_max_position_embeddings = 8192.0;
        }
        rope.scaling = scaling;
    }
    return rope;
}

// The model the benchmark's steps are those of: its features, and the number
// keys given as flags (the steps read those), without its numbers, since
// which steps an example has never depends on them.
Model bench_model(const BenchSpec& spec) {
    Model model;
    for (const KeyRow* row : number_key_rows()) {
        if (const auto given = spec.numbers.find(std::string(row->name)); given != spec.numbers.end()) {
            model.*row->number->member = given->second;
        }
    }
    model.heads.resize(spec.heads);
    model.kv_head_count = spec.kv_head_count();
    if (spec.rope) {
        model.rope = bench_rope(spec);
    }
    if (spec.qk_norm) {
        // γ = 1 of d_k numbers, over each head
        const arma::uword d_k = spec.d_model / std::max<arma::uword>(spec.heads, 1);
        QkNorm norm;
        norm.query.ones(d_k);
        norm.key.ones(d_k);
        model.qk_norm = norm;
    }
    if (spec.window > 0) {
        model.mask_kind = MaskKind::window;
        model.window = spec.window;
    }
    model.W_O = arma::mat();
    if (spec.backward) {
        model.grad_output = arma::mat();
    }
    return model;
}

// Each run's total and each step's times, the steps in the order they first came.
struct Timings {
    std::vector<double> totals;
    std::vector<StepId> order;
    std::map<StepId, std::vector<double>> per_step;

    void add(double total_ms, const StepTimes& times) {
        totals.push_back(total_ms);
        for (const auto& [id, ms] : times) {
            if (per_step.find(id) == per_step.end()) {
                order.push_back(id);
            }
            per_step[id].push_back(ms);
        }
    }
};

}  // namespace

std::uint64_t bench_bytes(const BenchSpec& spec) {
    MemoryShape shape;
    shape.n = spec.tokens;
    shape.m = spec.tokens;
    shape.d_model = spec.d_model;
    shape.heads = spec.heads;
    shape.kv_heads = spec.kv_head_count();
    shape.d_k = spec.d_model / std::max<arma::uword>(spec.heads, 1);
    shape.d_v = shape.d_k;
    shape.d_out = spec.d_model;
    shape.rope = spec.rope;
    shape.window = spec.window;
    shape.backward = spec.backward;
    shape.threads = spec.threads;
    // nothing kept but the output; the backward's dO besides
    return estimate_memory(shape, 0, 0) + (spec.backward ? 8 * spec.tokens * spec.d_model : 0);
}

BenchResult run_benchmark(const BenchSpec& spec, const std::function<void(int done)>& progress) {
    if (spec.heads == 0 || spec.d_model % spec.heads != 0) {
        throw std::invalid_argument("bench: heads must divide d_model");
    }
    if (spec.heads % spec.kv_head_count() != 0) {
        throw std::invalid_argument("bench: key/value heads must divide heads");
    }
    if (spec.rope && (spec.d_model / spec.heads) % 2 != 0 && spec.rope_dim == 0) {
        throw std::invalid_argument("bench: RoPE needs an even d_k");
    }
    if (spec.rope_dim % 2 != 0 || spec.rope_dim > spec.d_model / spec.heads) {
        throw std::invalid_argument("bench: the rotated width must be even and at most d_k");
    }
    BenchResult result;
    result.threads = spec.threads > 0 ? spec.threads : default_threads();

    // random data: inputs in [−1, 1), weights in ±1/√d_model
    arma::arma_rng::set_seed(1);
    const arma::mat X = uniform(spec.tokens, spec.d_model, -1.0, 1.0);
    const PackedWeights weights = random_weights(spec.d_model, spec.heads, spec.kv_head_count());
    const Rope rope = bench_rope(spec);  // base 10000, style half

    EngineRequest request;
    request.X = &X;
    request.C = &X;
    request.weights = &weights;
    request.scale = std::sqrt(static_cast<double>(weights.d_k));
    request.rope = spec.rope ? &rope : nullptr;
    request.mask.causal = spec.window > 0;
    request.mask.window = spec.window;
    const Model model = bench_model(spec);
    request.model = &model;
    request.steps = steps_of(model);
    request.threads = result.threads;  // nothing kept: only the output, as `qkv run --steps output`
    const arma::mat grad_output(spec.tokens, spec.d_model, arma::fill::ones);
    request.grad_output = spec.backward ? &grad_output : nullptr;

    // one warm-up run (first touches of memory), then the timed runs; the
    // workspace keeps the large matrices' memory from run to run
    StepTimes times;
    request.times = &times;
    EngineWorkspace workspace;
    request.workspace = &workspace;
    EngineResult warm_up = run_engine(request);
    workspace.output = std::move(warm_up.output);
    workspace.gradients = std::move(warm_up.gradients);
    Timings timings;
    progress(0);
    for (int run = 1; run <= spec.repeat; ++run) {
        const auto start = Clock::now();
        EngineResult engine = run_engine(request);
        const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        workspace.output = std::move(engine.output);
        workspace.gradients = std::move(engine.gradients);
        timings.add(total_ms, times);
        progress(run);
    }

    result.total_ms = median(timings.totals);
    for (const StepId id : timings.order) {
        result.steps.emplace_back(id, median(timings.per_step[id]));
    }
    result.gflops = flops(spec) / (result.total_ms * 1e-3) / 1e9;
    result.peak_rss_mb = peak_rss_mb();
    result.blas = blas_name();
    result.own_products = kernels::products_supported();
    result.kernels_target = std::string(kernels::target_name(kernels::chosen_target()));
    return result;
}

}  // namespace qkv
