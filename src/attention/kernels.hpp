// Vectorised loops for the large-input path of attention (attention/engine.cpp).
//
// exp() is qkv's own here: a polynomial on 8 (AVX-512) or 4 (AVX2 with FMA)
// doubles at a time, written with intrinsics and picked for the CPU when the
// program starts; other CPUs use std::exp one number at a time. It is within
// 2 ulp of std::exp on the arguments the softmax gives it, needs no
// -ffast-math and no table lookups (gathers are slow on many recent CPUs).
#pragma once

#include <cstddef>
#include <limits>
#include <string_view>

namespace qkv::kernels {

// The instruction sets exp_columns has a version for.
enum class Isa { scalar, avx2, avx512 };

// The best version this CPU can run.
Isa best_isa();
// Its name, as qkv bench shows it: "AVX-512", "AVX2" or "scalar".
std::string_view isa_name(Isa isa);
// Whether this CPU can run the version.
bool supported(Isa isa);

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

// The same with a chosen version, which the CPU must support (for the tests).
void exp_columns(Isa isa, double* S, std::size_t m, std::size_t count, double* sums,
                 double sink = -std::numeric_limits<double>::infinity());

// The two per-head products of a block of queries, for CPUs with AVX-512
// (products_supported()); elsewhere the engine calls BLAS. They read packed
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
