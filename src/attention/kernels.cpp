// Compiled with -ffast-math (see CMakeLists.txt), and only this file: the loop
// below then calls glibc's vector exp. The flags let the compiler reorder the
// sum. A blocked cell's −∞ is only subtracted from and compared with, never
// passed to exp(): every argument of exp() is clamped to a normal range first.
// The test suite checks that blocked cells still come out as exact zeros.
#include "attention/kernels.hpp"

#include <cmath>

// One copy of the loop per instruction set, picked when the program starts:
// AVX-512 uses 8-wide exp, AVX2 4-wide, anything else 2-wide (SSE2).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QKV_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QKV_VECTOR_CLONES
#endif

namespace qkv::kernels {

namespace {

// exp(−708) ≈ 3.3e−308 is the smallest exp() that is still a normal double.
constexpr double k_exp_floor = -708.0;

}  // namespace

QKV_VECTOR_CLONES
void exp_columns(double* S, std::size_t m, std::size_t count, double* sums) {
    for (std::size_t c = 0; c < count; ++c) {
        double* x = S + c * m;
        // the column maximum; at least one entry is finite (no query is fully blocked)
        double max = x[0];
        for (std::size_t j = 1; j < m; ++j) {
            max = x[j] > max ? x[j] : max;
        }
        // subtract the maximum so exp() cannot overflow; clamp before exp() so that
        // −∞ and very negative entries take the fast path, then give them 0
        double sum = 0.0;
        for (std::size_t j = 0; j < m; ++j) {
            const double shifted = x[j] - max;
            const bool negligible = shifted < k_exp_floor;
            const double e = std::exp(negligible ? k_exp_floor : shifted);
            x[j] = negligible ? 0.0 : e;
            sum += x[j];
        }
        sums[c] = sum;
    }
}

}  // namespace qkv::kernels
