// `qkv bench`'s measurement (see bench.hpp): the example's weights packed for
// the engine, one warm-up run, then the timed runs and their medians.
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

}  // namespace

double attended_pairs(const Model& model) {
    const MaskView mask = mask_view(model);
    double pairs = 0.0;
    for (arma::uword i = 0; i < model.n(); ++i) {
        const auto [first, last] = mask.seen_by(i, model.m());
        pairs += static_cast<double>(last - first);
    }
    return pairs;
}

// Multiply-adds of the matrix products, counted twice (the usual GEMM
// convention): the projections (Q for H heads, K and V for G), the scores and
// weighted sums over the keys each query may see (all m; with a window, query
// i from 0 sees min(i + 1, W)), and the output projection; with the backward
// pass, its products too.
double bench_flops(const Model& model) {
    const auto n = static_cast<double>(model.n());
    const auto m = static_cast<double>(model.m());
    const auto d_model = static_cast<double>(model.d_model());
    const auto H = static_cast<double>(model.n_heads());
    const auto d_k = static_cast<double>(model.d_k());
    const auto d_v = static_cast<double>(model.d_v());
    const double per_head = 2 * attended_pairs(model) * (d_k + d_v) * H;
    // without W_O the output is the heads' outputs side by side, no product
    const double output = model.W_O ? 2 * n * H * d_v * static_cast<double>(model.d_out()) : 0.0;
    if (model.mla) {
        // the latents (X·W_qa, X·W_kva), the queries from theirs (or X·W_Q), every head's keys and
        // values from [C K_R] as the engine packs them (pack_weights), the scores and weighted sums
        // over d_k and d_v, and the output projection
        const Mla& mla = *model.mla;
        const auto r = static_cast<double>(mla.kv_rank + mla.rope_dim);
        const double r_q = mla.q_rank ? static_cast<double>(*mla.q_rank) : 0.0;
        const double latents = 2 * n * d_model * (r_q + r);
        const double queries = 2 * n * (mla.q_rank ? r_q : d_model) * H * d_k;
        const double projections = queries + 2 * m * r * H * (d_k + d_v);
        return latents + projections + per_head + output;
    }
    const double kv_width = static_cast<double>(model.n_kv_heads()) * (d_k + d_v);
    const double projections = 2 * n * d_model * H * d_k + 2 * m * d_model * kv_width;
    if (!model.backward()) {
        return projections + per_head + output;
    }
    // the backward pass: dConcat and dW_O; per head the weights again, dA, dQ,
    // dK and dV; then [dW_Q dW_K dW_V] and dX, each as large as the projections
    return projections + per_head + output + 2 * output + 5 * per_head / 2 + 2 * projections;
}

namespace {

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

// mla's latents, as the step functions make them, each product shared among the
// threads: the queries' normed latent (X itself without q_rank, the engine's
// W_Q being q_proj), and [C K_R] that every head's keys and values are made
// from. Their times go to `times`.
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
    if (mla.q_rank) {
        out.queries = project_shared(X, *mla.W_qa, threads);
        times.emplace_back(StepId::q_latent, ms_since());
        rms_norm_columns(out.queries.memptr(), out.queries.n_rows, out.queries.n_cols, out.queries.n_cols,
                         mla.q_norm.memptr(), model.rms_eps());
        times.emplace_back(StepId::normed_q_latent, ms_since());
    } else {
        out.queries = X;
        ms_since();
    }
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

// What the engine's projections read: the steps before its first row, worked
// by the step functions (the inputs, X + P, the context). The keys' source is
// empty when it is the queries' own (self-attention, which the engine tells
// by the two being one matrix).
std::pair<arma::mat, arma::mat> projection_sources(const Model& model) {
    StepValues values;
    for (const StepKey& key : step_sequence(model)) {
        if (step_row(key.id).engine) {
            break;
        }
        values[key] = std::make_shared<const arma::mat>(compute_step(model, key, values));
    }
    const StepKey queries = step_inputs(model, {StepId::queries, 1}).front();
    const StepKey keys = step_inputs(model, {StepId::keys, 1}).front();
    return {*values.at(queries), keys == queries ? arma::mat() : *values.at(keys)};
}

}  // namespace

BenchResult run_benchmark(const Model& model, const BenchRuns& runs, const std::function<void(int done)>& progress) {
    ComputeOptions fast;
    fast.kernels = Kernels::fast;
    if (!use_fast_path(model, fast)) {
        throw std::invalid_argument("bench: the large-input path does not compute every step of this example");
    }
    BenchResult result;
    result.threads = runs.threads > 0 ? runs.threads : default_threads();

    // with mla, the latents are made in every run from X; otherwise the engine reads its sources as they are
    const std::pair<arma::mat, arma::mat> sources =
        model.mla ? std::pair<arma::mat, arma::mat>(model.X, arma::mat()) : projection_sources(model);
    const arma::mat& X = sources.first;
    const arma::mat& C = sources.second;
    const PackedWeights weights = pack_weights(model);

    EngineRequest request;
    request.X = &X;
    request.C = model.cross() ? &C : &X;
    request.weights = &weights;
    request.scale = model.scale();
    request.rope = model.rope ? &*model.rope : nullptr;
    request.alibi = model.alibi ? &*model.alibi : nullptr;
    request.sinks = model.sinks ? &*model.sinks : nullptr;
    request.mask = mask_view(model);
    request.model = &model;
    request.steps = steps_of(model);
    request.threads = result.threads;  // nothing kept: only the output, as `qkv run --steps output`
    request.grad_output = model.grad_output ? &*model.grad_output : nullptr;

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
        if (model.mla) {
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
    for (int run = 1; run <= runs.repeat; ++run) {
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
    result.gflops = bench_flops(model) / (result.total_ms * 1e-3) / 1e9;
    result.peak_rss_mb = peak_rss_mb();
    result.blas = blas_name();
    result.own_products = kernels::products_supported();
    result.kernels_target = std::string(kernels::target_name(kernels::chosen_target()));
    return result;
}

}  // namespace qkv
