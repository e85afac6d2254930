// `qkv bench`'s measurement: the large-input path (engine.hpp) timed step by
// step on random float64 data of a given size, as `qkv run --steps output`
// computes it, optionally with grouped-query heads, a sliding window and RoPE,
// and with the backward pass.
// The command only checks its options and writes the report.
#pragma once

#include "attention/step_id.hpp"
#include "model/model.hpp"

#include <armadillo>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qkv {

struct BenchSpec {
    arma::uword tokens = 512;  // n
    arma::uword d_model = 768;
    arma::uword heads = 12;    // must divide d_model: d_k = d_v = d_model / heads
    arma::uword kv_heads = 0;  // key/value heads G, dividing heads; 0: one per query head
    arma::uword window = 0;    // a sliding-window causal mask of W keys; 0: no mask
    bool rope = false;         // RoPE (base 10000, style half); d_k must be even
    arma::uword rope_dim = 0;  // with RoPE: the first rope_dim elements of each head turn (even); 0: all d_k
    std::string rope_scaling;  // with RoPE: linear, dynamic, yarn or llama3, as `qkv bench --rope-scaling` sets it; empty: none
    bool qk_norm = false;      // QK-norm over each head (qk_norm: true)
    // multi-head latent attention (mla:) with DeepSeek-V3's proportions per head
    // (d_n = d_v = 128, d_r = 64, r = 512, r_q = 1536) scaled to d_n = d_model / heads:
    // d_r = d_n / 2, r = 4·d_n, r_q = 12·d_n; RoPE turns the rope parts
    bool mla = false;
    std::map<std::string, double> numbers;  // the example's number keys (model/keys.def) given as flags, by name
    bool backward = false;     // the backward pass too, from dO = ones (L = the sum of the outputs)
    int repeat = 10;           // timed runs, after one warm-up
    int threads = 0;           // 0: as many as BLAS uses

    arma::uword kv_head_count() const { return kv_heads == 0 ? heads : kv_heads; }
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

// Bytes a benchmark of this size is estimated to need (estimate_memory),
// held against --max-memory.
std::uint64_t bench_bytes(const BenchSpec& spec);

// The latent sizes of spec.mla: d_n, d_r, d_v, r and r_q.
Mla bench_latent_sizes(const BenchSpec& spec);

// One warm-up run, then spec.repeat timed ones. `progress` is called with 0
// when the timed runs start and with the number done after each one. Throws
// std::invalid_argument when spec.heads does not divide spec.d_model, when
// spec.kv_heads does not divide spec.heads, or with RoPE on an odd d_k.
BenchResult run_benchmark(const BenchSpec& spec, const std::function<void(int done)>& progress);

}  // namespace qkv
