// Vectorised loops for the large-input path of attention (attention/engine.cpp).
//
// exp() is qkv's own here: a polynomial on 8 (AVX-512) or 4 (AVX2 with FMA)
// doubles at a time, written with intrinsics and picked for the CPU when the
// program starts; other CPUs use std::exp one number at a time. It is within
// 2 ulp of std::exp on the arguments the softmax gives it, needs no
// -ffast-math and no table lookups (gathers are slow on many recent CPUs).
#pragma once

#include <cstddef>
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
// exp(x − max of its column), and sums[c] receives the column's sum. Blocked
// cells (−∞) become exactly 0. Entries more than 708 below their column's
// maximum also become 0 instead of a subnormal (slow, and below 1e−307 of the
// column's largest entry, which is exp(0) = 1). A NaN stays NaN.
void exp_columns(double* S, std::size_t m, std::size_t count, double* sums);

// The same with a chosen version, which the CPU must support (for the tests).
void exp_columns(Isa isa, double* S, std::size_t m, std::size_t count, double* sums);

// The two per-head products of a block of queries, for CPUs with AVX-512
// (products_supported()); elsewhere the engine calls BLAS. They read packed
// copies of their operands, laid out in the order their register tiles walk
// them: K and V packed once per head, the block's queries once per block. With
// no packing per call, a block of a few dozen queries costs no more per query
// than a large one. Matrices are column after column as in Armadillo.
bool products_supported();

// Kp (packed_keys_size doubles) ← K (m × d): panels of 32 keys.
std::size_t packed_keys_size(std::size_t m, std::size_t d);
void pack_keys(const double* K, std::size_t m, std::size_t d, double* Kp);

// Qp (packed_queries_size doubles) ← Q_block (rows × d, Q_block(i, c) = Q[i + c·ldq]): tiles of 6 queries.
std::size_t packed_queries_size(std::size_t rows, std::size_t d);
void pack_queries(const double* Q, std::size_t ldq, std::size_t rows, std::size_t d, double* Qp);

// Vp (packed_values_size doubles) ← V (m × d_v): groups of 32 columns.
std::size_t packed_values_size(std::size_t m, std::size_t d_v);
void pack_values(const double* V, std::size_t m, std::size_t d_v, double* Vp);

// St (m × rows, column i holds query i's scores) = alpha · K · Q_blockᵀ.
void scores_block(const double* Kp, std::size_t m, std::size_t d, const double* Qp, std::size_t rows, double alpha,
                  double* St);

// Z(i, c) = scale[i] · Σ_j St[j + i·m] · V(j, c) for i < rows and c < d_v,
// written to Z[i + c·ldz]: the weighted sum of the block, each query's row
// multiplied by its own factor (1 / its softmax sum).
void weighted_sum_block(const double* St, std::size_t m, std::size_t rows, const double* Vp, std::size_t d_v,
                        const double* scale, double* Z, std::size_t ldz);

}  // namespace qkv::kernels
