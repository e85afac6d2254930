// `qkv bench`'s measurement (see bench.hpp): random data, the weights packed
// for the engine, one warm-up run, then the timed runs and their medians.
#include "attention/bench.hpp"
#include "model/keys.hpp"
#include "attention/steps.hpp"

#include "attention/attention.hpp"
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
// The (query, key) pairs the mask lets through: query i (from 0) sees min(i + 1, W) keys with a window, all n without.
double attended_pairs(const BenchSpec& spec) {
    const auto n = static_cast<double>(spec.tokens);
    if (spec.window == 0) {
        return n * n;
    }
    const double W = static_cast<double>(std::min(spec.window, spec.tokens));
    return W * (W + 1) / 2 + (n - W) * W;
}

double flops(const BenchSpec& spec) {
    const auto n = static_cast<double>(spec.tokens);
    const double pairs = attended_pairs(spec);
    if (spec.mla) {
        // the latents (X·W_qa, X·W_kva), the queries from theirs, every head's keys and values from
        // [C K_R] as the engine packs them (pack_weights), the scores and weighted sums over d_k and
        // d_v, and the output projection
        const Mla mla = bench_latent_sizes(spec);
        const auto H = static_cast<double>(spec.heads);
        const auto d_k = static_cast<double>(mla.nope_dim + mla.rope_dim);
        const auto d_v = static_cast<double>(mla.v_dim);
        const auto r = static_cast<double>(mla.kv_rank + mla.rope_dim);
        const auto r_q = static_cast<double>(*mla.q_rank);
        const double latents = 2 * n * static_cast<double>(spec.d_model) * (r_q + r);
        const double projections = 2 * n * (r_q * H * d_k + r * H * (d_k + d_v));
        const double per_head = 2 * pairs * (d_k + d_v) * H;
        return latents + projections + per_head + 2 * n * H * d_v * static_cast<double>(spec.d_model);
    }
    const auto d_model = static_cast<double>(spec.d_model);
    const double d_k = d_model / static_cast<double>(spec.heads);  // = d_v; H·d_k = d_out = d_model
    const double kv_width = static_cast<double>(spec.kv_head_count()) * d_k;
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
    if (spec.rope || spec.mla) {
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

// mla's random model: the latent weights (±1/√d_model), γ = 1, and each head's
// blocks of q_b_proj and kv_b_proj (±1/√r_q, ±1/√r), packed for the engine by
// pack_weights as a file's would be.
Model latent_model(const BenchSpec& spec) {
    Model model = bench_model(spec);
    Mla mla = bench_latent_sizes(spec);
    const double bound = 1.0 / std::sqrt(static_cast<double>(spec.d_model));
    mla.W_qa = uniform(spec.d_model, *mla.q_rank, -bound, bound);
    mla.q_norm.ones(*mla.q_rank);
    mla.W_kva = uniform(spec.d_model, mla.kv_rank + mla.rope_dim, -bound, bound);
    mla.kv_norm.ones(mla.kv_rank);
    const double q_bound = 1.0 / std::sqrt(static_cast<double>(*mla.q_rank));
    const double kv_bound = 1.0 / std::sqrt(static_cast<double>(mla.kv_rank));
    for (HeadWeights& head : model.heads) {
        head.W_Q = uniform(*mla.q_rank, mla.nope_dim + mla.rope_dim, -q_bound, q_bound);
        head.W_K = uniform(mla.kv_rank, mla.nope_dim, -kv_bound, kv_bound);
        head.W_V = uniform(mla.kv_rank, mla.v_dim, -kv_bound, kv_bound);
    }
    model.W_O = uniform(spec.heads * mla.v_dim, spec.d_model, -bound, bound);
    model.kv_head_count = 0;
    model.rope->skip = mla.nope_dim;
    model.mla = std::move(mla);
    return model;
}

// mla's latents, as the step functions make them, each product shared among the
// threads: the queries' normed latent, and [C K_R] that every head's keys and
// values are made from. Their times go to `times`.
struct Latents {
    arma::mat queries;  // n × r_q
    arma::mat keys;     // n × (r + d_r)
};
Latents latents(const Model& model, const arma::mat& X, int threads, StepTimes& times) {
    const Mla& mla = *model.mla;
    Latents out;
    auto start = Clock::now();
    const auto ms_since = [&start] {
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        start = Clock::now();
        return ms;
    };
    out.queries = project_shared(X, *mla.W_qa, threads);
    times.emplace_back(StepId::q_latent, ms_since());
    rms_norm_columns(out.queries.memptr(), out.queries.n_rows, out.queries.n_cols, out.queries.n_cols,
                     mla.q_norm.memptr(), model.rms_eps());
    times.emplace_back(StepId::normed_q_latent, ms_since());
    // one product makes the latent and the rope keys: its time is shared between them by their columns
    out.keys = project_shared(X, mla.W_kva, threads);
    const double product_ms = ms_since();
    const double share = static_cast<double>(mla.kv_rank) / static_cast<double>(mla.kv_rank + mla.rope_dim);
    // the latent's columns come first, each whole (column-major): normed in place
    rms_norm_columns(out.keys.memptr(), out.keys.n_rows, mla.kv_rank, mla.kv_rank, mla.kv_norm.memptr(),
                     model.rms_eps());
    times.emplace_back(StepId::kv_latent, product_ms * share);
    times.emplace_back(StepId::normed_kv_latent, ms_since());
    times.emplace_back(StepId::rope_keys, product_ms * (1.0 - share));
    return out;
}

}  // namespace

Mla bench_latent_sizes(const BenchSpec& spec) {
    const arma::uword d_n = spec.d_model / std::max<arma::uword>(spec.heads, 1);
    Mla mla;
    mla.nope_dim = d_n;
    mla.rope_dim = d_n / 2;
    mla.v_dim = d_n;
    mla.kv_rank = 4 * d_n;
    mla.q_rank = 12 * d_n;
    return mla;
}

std::uint64_t bench_bytes(const BenchSpec& spec) {
    MemoryShape shape;
    shape.n = spec.tokens;
    shape.m = spec.tokens;
    shape.d_model = spec.d_model;
    shape.heads = spec.heads;
    shape.kv_heads = spec.kv_head_count();
    shape.d_k = spec.d_model / std::max<arma::uword>(spec.heads, 1);
    shape.d_v = shape.d_k;
    if (spec.mla) {
        const Mla mla = bench_latent_sizes(spec);
        shape.d_k = mla.nope_dim + mla.rope_dim;
        shape.d_v = mla.v_dim;
    }
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
    if (spec.mla && (spec.d_model / spec.heads) % 4 != 0) {
        throw std::invalid_argument("bench: mla needs d_model / heads divisible by 4 (d_r = d_n / 2, even)");
    }
    BenchResult result;
    result.threads = spec.threads > 0 ? spec.threads : default_threads();

    // random data: inputs in [−1, 1), weights in ±1/√d_model
    arma::arma_rng::set_seed(1);
    const arma::mat X = uniform(spec.tokens, spec.d_model, -1.0, 1.0);
    const Model model = spec.mla ? latent_model(spec) : bench_model(spec);
    const PackedWeights weights =
        spec.mla ? pack_weights(model) : random_weights(spec.d_model, spec.heads, spec.kv_head_count());
    const Rope rope = spec.mla ? *model.rope : bench_rope(spec);  // base 10000, style half

    EngineRequest request;
    request.X = &X;
    request.C = &X;
    request.weights = &weights;
    request.scale = spec.mla ? model.scale() : std::sqrt(static_cast<double>(weights.d_k));
    request.rope = spec.rope || spec.mla ? &rope : nullptr;
    request.mask.causal = spec.window > 0;
    request.mask.window = spec.window;
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
    // with mla, each run first makes the latents the engine's projections read
    Latents latent;
    StepTimes latent_times;
    const auto run_once = [&] {
        if (spec.mla) {
            latent_times.clear();
            latent = latents(model, X, result.threads, latent_times);
            request.X = &latent.queries;
            request.C = &latent.keys;
        }
        EngineResult engine = run_engine(request);
        times.insert(times.begin(), latent_times.begin(), latent_times.end());
        return engine;
    };
    EngineResult warm_up = run_once();
    workspace.output = std::move(warm_up.output);
    workspace.gradients = std::move(warm_up.gradients);
    Timings timings;
    progress(0);
    for (int run = 1; run <= spec.repeat; ++run) {
        const auto start = Clock::now();
        EngineResult engine = run_once();
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
