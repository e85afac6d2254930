// Vectorised loops for the large-input path of attention (attention/engine.cpp).
//
// They are written once with Google Highway and compiled for every
// instruction set Highway targets on the machine's architecture (AVX-512,
// AVX2, SSE4, SSSE3 and plain C++ on x86-64; NEON and SVE on arm64); the best
// one the CPU runs is picked at the first call. exp() is qkv's own: a
// polynomial within 2 ulp of std::exp on the arguments the softmax gives it,
// with no -ffast-math and no table lookups (gathers are slow on many CPUs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace qkv::kernels {

// The target the loops run on (Highway's HWY_* bit), and every target
// compiled in that this CPU can run, best first (while a ScopedTarget lives,
// that target alone).
std::int64_t chosen_target();
std::vector<std::int64_t> targets();
// A target's name, as qkv bench shows it: "AVX-512", "AVX2", "NEON", …
std::string_view target_name(std::int64_t target);

// While it lives, the loops run on `target` (one of targets()), as on a CPU
// that had nothing better: for the tests. It changes a process-wide choice,
// so no other thread may call the loops meanwhile.
class ScopedTarget {
public:
    explicit ScopedTarget(std::int64_t target);
    ~ScopedTarget();
    ScopedTarget(const ScopedTarget&) = delete;
    ScopedTarget& operator=(const ScopedTarget&) = delete;
};

// The unnormalised softmax of `count` columns of length m stored one after the
// other (column c starts at S + c·m), in place: each entry x becomes
// exp(x − M), M the column's maximum, and sums[c] receives the column's sum.
// Blocked cells (−∞) become exactly 0. Entries more than 708 below M also
// become 0 instead of a subnormal (slow, and below 1e−307 of the column's
// largest entry, which is exp(0) = 1). A NaN stays NaN.
//
// A finite `sink` is one more logit in every column, with no entry of its own
// (attention sinks): it joins the maximum, M = max(max_j x_j, sink), and the
// sum, sums[c] = Σ_j exp(x_j − M) + exp(sink − M). −∞ is no sink.
void exp_columns(double* S, std::size_t m, std::size_t count, double* sums,
                 double sink = -std::numeric_limits<double>::infinity());

// c·tanh(x/c) in place for each of the `count` numbers at x: within a few
// ulp of std::tanh on every target (Highway's Tanh, 4 ulp at most).
void tanh_scaled(double* x, std::size_t count, double c);

// The two per-head products of a block of queries. The engine uses them where
// the loops run on AVX-512 (products_supported()), and BLAS's elsewhere; they
// compute the same numbers on every target. They read packed
// copies of their operands, laid out in the order their register tiles walk
// them: K and V packed once per head, the block's queries once per block. With
// no packing per call, a block of a few dozen queries costs no more per query
// than a large one. Matrices are column after column as in Armadillo.
bool products_supported();

// Keys per panel of packed K: a block's keys may start only at a multiple of it.
inline constexpr std::size_t k_key_panel = 32;

// Kp (packed_keys_size doubles) ← K (m × d): panels of k_key_panel keys.
std::size_t packed_keys_size(std::size_t m, std::size_t d);
void pack_keys(const double* K, std::size_t m, std::size_t d, double* Kp);

// Qp (packed_queries_size doubles) ← Q_block (rows × d, Q_block(i, c) = Q[i + c·ldq]): tiles of 6 queries.
std::size_t packed_queries_size(std::size_t rows, std::size_t d);
void pack_queries(const double* Q, std::size_t ldq, std::size_t rows, std::size_t d, double* Qp);

// Vp (packed_values_size doubles) ← V (m × d_v): groups of 32 columns.
std::size_t packed_values_size(std::size_t m, std::size_t d_v);
void pack_values(const double* V, std::size_t m, std::size_t d_v, double* Vp);

// St (keys × rows, column i holds query i's scores) = alpha · K_range · Q_blockᵀ,
// K_range the keys first … first + keys − 1 of the packed K (first a
// multiple of k_key_panel).
void scores_block(const double* Kp, std::size_t first, std::size_t keys, std::size_t d, const double* Qp,
                  std::size_t rows, double alpha, double* St);

// Z(i, c) = scale[i] · Σ_j St[j + i·keys] · V(first + j, c) for i < rows and
// c < d_v, written to Z[i + c·ldz]: the weighted sum of the block over keys
// first … first + keys − 1 of V (m × d_v, packed whole), each query's row
// multiplied by its own factor (1 / its softmax sum).
void weighted_sum_block(const double* St, std::size_t keys, std::size_t rows, const double* Vp, std::size_t m,
                        std::size_t first, std::size_t d_v, const double* scale, double* Z, std::size_t ldz);

}  // namespace qkv::kernels
