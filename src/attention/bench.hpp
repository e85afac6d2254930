// `qkv bench`'s measurement: an example's attention timed step by step on the
// large-input path (engine.hpp), as `qkv run --steps output` computes it, with
// the backward pass when the example has a grad_output. The example comes
// through the loader like any other (the command writes one of random data
// from its flags, or reads a file); the command only writes the report.
#pragma once

#include "attention/step_id.hpp"
#include "model/model.hpp"

#include <armadillo>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace qkv {

struct BenchRuns {
    int repeat = 10;  // timed runs, after one warm-up
    int threads = 0;  // 0: as many as BLAS uses
};

struct BenchResult {
    int threads = 0;         // the threads that shared every step
    double total_ms = 0.0;   // median over the timed runs
    // Each step's median milliseconds, in the order of the steps (summed over heads).
    std::vector<std::pair<StepId, double>> steps;
    double gflops = 0.0;     // the matrix products' flops (2 per multiply-add) over total_ms
    double peak_rss_mb = 0.0;
    std::string blas;        // as blas_name() gives it
    bool own_products = false;   // the per-head products are qkv's own, not BLAS's
    std::string kernels_target;  // the instructions qkv's loops run on: "AVX-512", "AVX2", "NEON", …
};

// The (query, key) pairs the example's causal mask and window let through
// (n·m without them): what the engine's blocks compute.
double attended_pairs(const Model& model);

// The flops of the matrix products the engine computes for the example
// (2 per multiply-add), the backward pass's with a grad_output.
double bench_flops(const Model& model);

// One warm-up run, then runs.repeat timed ones. `progress` is called with 0
// when the timed runs start and with the number done after each one. The
// steps before the engine's first (the inputs, X + P, the context) are worked
// once before the runs; with mla, each run makes the latents first, their
// products shared among the threads as the engine's are. Throws
// std::invalid_argument for an example the engine does not compute
// (hand rounding, or a step it has no code for).
BenchResult run_benchmark(const Model& model, const BenchRuns& runs, const std::function<void(int done)>& progress);

}  // namespace qkv
