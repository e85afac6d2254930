// exp() on vectors, for the softmax of the large-input path (see kernels.hpp).
//
// exp(s) for s ≤ 0 is computed as 2^k · exp(r): k = round(s / ln 2), and
// r = s − k·ln 2 is taken with ln 2 in two parts (a high part whose product
// with k is exact, and the rest), so |r| ≤ ln 2 / 2 ≈ 0.347 to within rounding.
// exp(r) is its Taylor series to r^13, whose first term left out is below
// 0.347^14 / 14! ≈ 4e−18; Horner's rule evaluates it, ending in 1 + r·(…),
// so the result is within 2 ulp of the true value (the test suite checks this
// against std::exp). 2^k is put into the exponent bits directly, which is exact
// for the k that occur here: s ≥ −708 gives k ≥ −1021, a normal number.
//
// No -ffast-math: every operation is written as an intrinsic, in this order.
#include "attention/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QKV_X86_KERNELS 1
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_pd() and warn about
// it wherever they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace qkv::kernels {

namespace {

// exp(−708) ≈ 3.3e−308 is the smallest exp() that is still a normal double.
constexpr double k_exp_floor = -708.0;

constexpr double k_log2e = 1.4426950408889634;          // 1 / ln 2
constexpr double k_ln2_hi = 6.93147180369123816490e-01;  // ln 2 to 32 bits: k·k_ln2_hi is exact
constexpr double k_ln2_lo = 1.90821492927058770002e-10;  // ln 2 − k_ln2_hi

// 1/i! for i = 13 down to 2; the last two Horner steps use 1 and 1.
constexpr double k_taylor[] = {
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
    1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
    1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        1.0 / 2.0,
};

// The products' register tiles: 6 queries by 32 keys (scores) or by 32 columns
// of V (weighted sums).
constexpr std::size_t k_tile_rows = 6;
constexpr std::size_t k_panel = k_key_panel;  // keys per panel of K, columns per group of V

std::size_t round_up(std::size_t value, std::size_t step) { return (value + step - 1) / step * step; }

// The sink's share of a column's sum, exp(sink − max); nothing without a sink.
double sink_term(double sink, double max) {
    return sink == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(sink - max);
}

void exp_columns_scalar(double* S, std::size_t m, std::size_t count, double* sums, double sink) {
    for (std::size_t c = 0; c < count; ++c) {
        double* x = S + c * m;
        // the column maximum, the sink included; at least one entry is finite
        // (no query is fully blocked)
        double max = sink;
        for (std::size_t j = 0; j < m; ++j) {
            max = x[j] > max ? x[j] : max;
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < m; ++j) {
            const double shifted = x[j] - max;
            x[j] = shifted < k_exp_floor ? 0.0 : std::exp(shifted);
            sum += x[j];
        }
        sums[c] = sum + sink_term(sink, max);
    }
}

#ifdef QKV_X86_KERNELS

// ── AVX-512: 8 doubles at a time ─────────────────────────────────────────────

__attribute__((target("avx512f"))) inline __m512d exp8(__m512d s) {
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(s, _mm512_set1_pd(k_log2e)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(k_ln2_hi), s);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(k_ln2_lo), r);
    __m512d p = _mm512_set1_pd(k_taylor[0]);
    for (std::size_t i = 1; i < std::size(k_taylor); ++i) {
        p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(k_taylor[i]));
    }
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    return _mm512_scalef_pd(p, k);  // p · 2^k
}

// exp(x − max) of up to 8 entries, in place; `lanes` selects them. Returns
// the values written (0 in lanes not selected).
__attribute__((target("avx512f"))) inline __m512d exp8_shifted(double* x, __mmask8 lanes, __m512d max) {
    const __m512d s = _mm512_sub_pd(_mm512_maskz_loadu_pd(lanes, x), max);
    // below the floor (and −∞): exp of the floor, then 0; a NaN compares false and stays NaN
    const __mmask8 negligible = _mm512_cmp_pd_mask(s, _mm512_set1_pd(k_exp_floor), _CMP_LT_OQ);
    const __m512d clamped = _mm512_mask_blend_pd(negligible, s, _mm512_set1_pd(k_exp_floor));
    const __m512d e = _mm512_maskz_mov_pd(static_cast<__mmask8>(lanes & ~negligible), exp8(clamped));
    _mm512_mask_storeu_pd(x, lanes, e);
    return e;
}

__attribute__((target("avx512f"))) void exp_columns_avx512(double* S, std::size_t m, std::size_t count,
                                                             double* sums, double sink) {
    const std::size_t full = m - m % 8;
    const auto tail = static_cast<__mmask8>((1U << (m % 8)) - 1U);
    for (std::size_t c = 0; c < count; ++c) {
        double* x = S + c * m;
        __m512d vmax = _mm512_set1_pd(sink);
        for (std::size_t j = 0; j < full; j += 8) {
            vmax = _mm512_max_pd(vmax, _mm512_loadu_pd(x + j));
        }
        if (tail != 0) {
            vmax = _mm512_mask_max_pd(vmax, tail, vmax, _mm512_maskz_loadu_pd(tail, x + full));
        }
        const double column_max = _mm512_reduce_max_pd(vmax);
        const __m512d max = _mm512_set1_pd(column_max);
        // two sums, so that consecutive additions do not wait for each other
        __m512d sum0 = _mm512_setzero_pd();
        __m512d sum1 = _mm512_setzero_pd();
        std::size_t j = 0;
        for (; j + 16 <= full; j += 16) {
            sum0 = _mm512_add_pd(sum0, exp8_shifted(x + j, 0xFF, max));
            sum1 = _mm512_add_pd(sum1, exp8_shifted(x + j + 8, 0xFF, max));
        }
        if (j < full) {
            sum0 = _mm512_add_pd(sum0, exp8_shifted(x + j, 0xFF, max));
        }
        if (tail != 0) {
            sum1 = _mm512_add_pd(sum1, exp8_shifted(x + full, tail, max));
        }
        sums[c] = _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1)) + sink_term(sink, column_max);
    }
}

// ── AVX2 with FMA: 4 doubles at a time ───────────────────────────────────────

__attribute__((target("avx2,fma"))) inline __m256d exp4(__m256d s) {
    // adding 1.5·2^52 rounds s/ln 2 to the nearest integer k and leaves k in the
    // low bits of the sum
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);
    const __m256d t = _mm256_fmadd_pd(s, _mm256_set1_pd(k_log2e), magic);
    const __m256d k = _mm256_sub_pd(t, magic);
    __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(k_ln2_hi), s);
    r = _mm256_fnmadd_pd(k, _mm256_set1_pd(k_ln2_lo), r);
    __m256d p = _mm256_set1_pd(k_taylor[0]);
    for (std::size_t i = 1; i < std::size(k_taylor); ++i) {
        p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(k_taylor[i]));
    }
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
    // 2^k: the biased exponent k + 1023 shifted into the exponent field
    const __m256i biased = _mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023));
    return _mm256_mul_pd(p, _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52)));
}

__attribute__((target("avx2,fma"))) inline __m256d exp4_shifted(double* x, __m256i lanes, __m256d max) {
    const __m256d s = _mm256_sub_pd(_mm256_maskload_pd(x, lanes), max);
    const __m256d negligible = _mm256_cmp_pd(s, _mm256_set1_pd(k_exp_floor), _CMP_LT_OQ);
    const __m256d clamped = _mm256_blendv_pd(s, _mm256_set1_pd(k_exp_floor), negligible);
    const __m256d e = _mm256_and_pd(_mm256_castsi256_pd(lanes), _mm256_andnot_pd(negligible, exp4(clamped)));
    _mm256_maskstore_pd(x, lanes, e);
    return e;
}

__attribute__((target("avx2,fma"))) void exp_columns_avx2(double* S, std::size_t m, std::size_t count,
                                                            double* sums, double sink) {
    const std::size_t full = m - m % 4;
    const std::size_t rest = m % 4;
    const __m256i all = _mm256_set1_epi64x(-1);
    const __m256i tail = _mm256_set_epi64x(rest > 3 ? -1 : 0, rest > 2 ? -1 : 0, rest > 1 ? -1 : 0, rest > 0 ? -1 : 0);
    for (std::size_t c = 0; c < count; ++c) {
        double* x = S + c * m;
        __m256d vmax = _mm256_set1_pd(sink);
        for (std::size_t j = 0; j < full; j += 4) {
            vmax = _mm256_max_pd(vmax, _mm256_loadu_pd(x + j));
        }
        double lanes[4];
        _mm256_storeu_pd(lanes, vmax);
        double max = lanes[0];
        for (const double lane : {lanes[1], lanes[2], lanes[3]}) {
            max = lane > max ? lane : max;
        }
        for (std::size_t j = full; j < m; ++j) {
            max = x[j] > max ? x[j] : max;
        }
        const __m256d vm = _mm256_set1_pd(max);
        __m256d sum0 = _mm256_setzero_pd();
        __m256d sum1 = _mm256_setzero_pd();
        std::size_t j = 0;
        for (; j + 8 <= full; j += 8) {
            sum0 = _mm256_add_pd(sum0, exp4_shifted(x + j, all, vm));
            sum1 = _mm256_add_pd(sum1, exp4_shifted(x + j + 4, all, vm));
        }
        if (j < full) {
            sum0 = _mm256_add_pd(sum0, exp4_shifted(x + j, all, vm));
        }
        if (rest != 0) {
            sum1 = _mm256_add_pd(sum1, exp4_shifted(x + full, tail, vm));
        }
        _mm256_storeu_pd(lanes, _mm256_add_pd(sum0, sum1));
        sums[c] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + sink_term(sink, max);
    }
}

// ── the per-head products, AVX-512 ──────────────────────────────────────────
//
// Both are register tiles in the manner of BLAS micro-kernels: R ≤ 6 queries
// by up to 32 numbers (four vectors), so that 24 sums stay in registers while
// the depth is walked. They read packed copies (see kernels.hpp), laid out in
// the order the tiles walk them; with m a power of two, the unpacked columns
// would fall into the same few sets of the L1 cache and evict each other.

// St[j0 … j0+31, queries i0 … i0+R−1] of the score product, from the panel of
// K (d × 32) and the tile of queries (d × 6)
template <std::size_t R>
__attribute__((target("avx512f"))) void scores_tile(const double* Kp, std::size_t d, const double* Qp,
                                                     std::size_t m, std::size_t i0, std::size_t j0,
                                                     __mmask32 stored, double alpha, double* St) {
    __m512d acc[R][4];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < 4; ++v) {
            acc[r][v] = _mm512_setzero_pd();
        }
    }
    for (std::size_t c = 0; c < d; ++c) {
        const double* k = Kp + c * k_panel;
        const __m512d k0 = _mm512_loadu_pd(k);
        const __m512d k1 = _mm512_loadu_pd(k + 8);
        const __m512d k2 = _mm512_loadu_pd(k + 16);
        const __m512d k3 = _mm512_loadu_pd(k + 24);
        const double* q = Qp + c * k_tile_rows;
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
            const __m512d qr = _mm512_set1_pd(q[r]);
            acc[r][0] = _mm512_fmadd_pd(k0, qr, acc[r][0]);
            acc[r][1] = _mm512_fmadd_pd(k1, qr, acc[r][1]);
            acc[r][2] = _mm512_fmadd_pd(k2, qr, acc[r][2]);
            acc[r][3] = _mm512_fmadd_pd(k3, qr, acc[r][3]);
        }
    }
    const __m512d a = _mm512_set1_pd(alpha);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        double* out = St + (i0 + r) * m + j0;
#pragma GCC unroll 4
        for (std::size_t v = 0; v < 4; ++v) {
            const auto lanes = static_cast<__mmask8>(stored >> (8 * v));
            _mm512_mask_storeu_pd(out + 8 * v, lanes, _mm512_mul_pd(acc[r][v], a));
        }
    }
}

// Keys per pass of the weighted sum: the group's rows for these keys (64 × 32
// numbers, 16 KiB) stay in the L1 cache while every tile of the block uses them.
constexpr std::size_t k_depth = 64;

// Z[queries i0 … i0+R−1, columns c0 … c0+8·NV−1] of the weighted sum, over
// keys j0 … j1−1 of the group of V (m × 32). Between passes the sums wait in
// `partial` (32 numbers per query); the last pass scales them and writes the
// `width` columns that exist.
template <std::size_t NV, std::size_t R>
__attribute__((target("avx512f"))) void weighted_sum_tile(const double* St, std::size_t m, const double* Vp,
                                                           std::size_t i0, std::size_t j0, std::size_t j1,
                                                           double* partial, std::size_t c0, std::size_t width,
                                                           const double* scale, double* Z, std::size_t ldz) {
    __m512d acc[R][NV];
    double* sums = partial + i0 * k_panel;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            acc[r][v] = j0 == 0 ? _mm512_setzero_pd() : _mm512_loadu_pd(sums + r * k_panel + 8 * v);
        }
    }
    const double* e = St + i0 * m;
    for (std::size_t j = j0; j < j1; ++j) {
        __m512d vj[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            vj[v] = _mm512_loadu_pd(Vp + j * k_panel + 8 * v);
        }
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
            const __m512d er = _mm512_set1_pd(e[r * m + j]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                acc[r][v] = _mm512_fmadd_pd(vj[v], er, acc[r][v]);
            }
        }
    }
    if (j1 < m) {
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                _mm512_storeu_pd(sums + r * k_panel + 8 * v, acc[r][v]);
            }
        }
        return;
    }
    // the tile's columns are n apart in Z: write them one number at a time
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        alignas(64) double row[8 * NV];
        const __m512d s = _mm512_set1_pd(scale[i0 + r]);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            _mm512_store_pd(row + 8 * v, _mm512_mul_pd(acc[r][v], s));
        }
        for (std::size_t c = 0; c < width; ++c) {
            Z[i0 + r + (c0 + c) * ldz] = row[c];
        }
    }
}

// Calls Tile<R>::run(i0, args) over `rows` queries: tiles of 6, then one smaller.
template <template <std::size_t> class Tile, class Args>
void for_rows(std::size_t rows, const Args& args) {
    std::size_t i0 = 0;
    for (; i0 + k_tile_rows <= rows; i0 += k_tile_rows) {
        Tile<k_tile_rows>::run(i0, args);
    }
    switch (rows - i0) {
        case 5:
            Tile<5>::run(i0, args);
            break;
        case 4:
            Tile<4>::run(i0, args);
            break;
        case 3:
            Tile<3>::run(i0, args);
            break;
        case 2:
            Tile<2>::run(i0, args);
            break;
        case 1:
            Tile<1>::run(i0, args);
            break;
        default:
            break;
    }
}

struct ScoresArgs {
    const double* Kp;  // the panel
    std::size_t d;
    const double* Qp;
    std::size_t m;  // the block's keys: the length of St's columns
    std::size_t j0;
    __mmask32 stored;
    double alpha;
    double* St;
};

template <std::size_t R>
struct ScoresTile {
    static void run(std::size_t i0, const ScoresArgs& a) {
        scores_tile<R>(a.Kp, a.d, a.Qp + i0 * a.d, a.m, i0, a.j0, a.stored, a.alpha, a.St);
    }
};

struct WeightedSumArgs {
    const double* St;
    std::size_t m;     // the block's keys: the length of St's columns
    const double* Vp;  // the group, from the block's first key
    std::size_t j0;    // the pass's keys
    std::size_t j1;
    double* partial;
    std::size_t c0;
    std::size_t width;
    const double* scale;
    double* Z;
    std::size_t ldz;
};

template <std::size_t NV>
struct WeightedSumTile {
    template <std::size_t R>
    struct Rows {
        static void run(std::size_t i0, const WeightedSumArgs& a) {
            weighted_sum_tile<NV, R>(a.St, a.m, a.Vp, i0, a.j0, a.j1, a.partial, a.c0, a.width, a.scale, a.Z, a.ldz);
        }
    };
};

#endif  // QKV_X86_KERNELS

}  // namespace

bool supported(Isa isa) {
    switch (isa) {
        case Isa::scalar:
            return true;
#ifdef QKV_X86_KERNELS
        case Isa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::avx512:
            return __builtin_cpu_supports("avx512f");
#endif
        default:
            return false;
    }
}

Isa best_isa() {
    static const Isa best = supported(Isa::avx512) ? Isa::avx512 : supported(Isa::avx2) ? Isa::avx2 : Isa::scalar;
    return best;
}

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::avx512:
            return "AVX-512";
        case Isa::avx2:
            return "AVX2";
        case Isa::scalar:
            break;
    }
    return "scalar";
}

void exp_columns(Isa isa, double* S, std::size_t m, std::size_t count, double* sums, double sink) {
    switch (isa) {
#ifdef QKV_X86_KERNELS
        case Isa::avx512:
            exp_columns_avx512(S, m, count, sums, sink);
            return;
        case Isa::avx2:
            exp_columns_avx2(S, m, count, sums, sink);
            return;
#endif
        default:
            exp_columns_scalar(S, m, count, sums, sink);
            return;
    }
}

void exp_columns(double* S, std::size_t m, std::size_t count, double* sums, double sink) {
    exp_columns(best_isa(), S, m, count, sums, sink);
}

bool products_supported() { return best_isa() == Isa::avx512; }

std::size_t packed_keys_size(std::size_t m, std::size_t d) { return round_up(m, k_panel) * d; }

void pack_keys(const double* K, std::size_t m, std::size_t d, double* Kp) {
    // panel p holds keys 32p … 32p+31: for each c, their K(j, c) side by side
    // (zeros past the last key)
    for (std::size_t j0 = 0; j0 < m; j0 += k_panel) {
        double* panel = Kp + j0 * d;
        for (std::size_t c = 0; c < d; ++c) {
            for (std::size_t jj = 0; jj < k_panel; ++jj) {
                panel[c * k_panel + jj] = j0 + jj < m ? K[j0 + jj + c * m] : 0.0;
            }
        }
    }
}

std::size_t packed_queries_size(std::size_t rows, std::size_t d) { return round_up(rows, k_tile_rows) * d; }

void pack_queries(const double* Q, std::size_t ldq, std::size_t rows, std::size_t d, double* Qp) {
    // tile t holds queries 6t … 6t+5: for each c, their Q(i, c) side by side.
    // Q is read a column at a time: with ldq a power of two, reading the
    // block's columns in turn for each tile would map them all onto the same
    // few sets of the L1 cache.
    for (std::size_t c = 0; c < d; ++c) {
        const double* column = Q + c * ldq;
        for (std::size_t i0 = 0; i0 < rows; i0 += k_tile_rows) {
            double* tile = Qp + i0 * d + c * k_tile_rows;
            for (std::size_t r = 0; r < k_tile_rows; ++r) {
                tile[r] = i0 + r < rows ? column[i0 + r] : 0.0;
            }
        }
    }
}

std::size_t packed_values_size(std::size_t m, std::size_t d_v) { return round_up(d_v, k_panel) * m; }

void pack_values(const double* V, std::size_t m, std::size_t d_v, double* Vp) {
    // group g holds columns 32g … 32g+31: for each key j, its V(j, c) side by side
    // (zeros past the last column)
    for (std::size_t c0 = 0; c0 < d_v; c0 += k_panel) {
        double* group = Vp + c0 * m;
        for (std::size_t j = 0; j < m; ++j) {
            for (std::size_t cc = 0; cc < k_panel; ++cc) {
                group[j * k_panel + cc] = c0 + cc < d_v ? V[j + (c0 + cc) * m] : 0.0;
            }
        }
    }
}

#ifdef QKV_X86_KERNELS

void scores_block(const double* Kp, std::size_t first, std::size_t keys, std::size_t d, const double* Qp,
                  std::size_t rows, double alpha, double* St) {
    // a panel of 32 keys at a time, for all the block's queries: the panel
    // (32 × d numbers) stays in the L1 cache while the queries pass
    const double* Kp_range = Kp + first * d;  // the panel of key `first`
    for (std::size_t j0 = 0; j0 < keys; j0 += k_panel) {
        const std::size_t panel_keys = std::min(k_panel, keys - j0);
        const auto stored = static_cast<__mmask32>(panel_keys == 32 ? 0xFFFFFFFFU : (1U << panel_keys) - 1U);
        const ScoresArgs args{Kp_range + j0 * d, d, Qp, keys, j0, stored, alpha, St};
        for_rows<ScoresTile>(rows, args);
    }
}

void weighted_sum_block(const double* St, std::size_t keys, std::size_t rows, const double* Vp, std::size_t m,
                        std::size_t first, std::size_t d_v, const double* scale, double* Z, std::size_t ldz) {
    // sums between passes over the keys, 32 per query
    std::vector<double> partial(keys > k_depth ? round_up(rows, k_tile_rows) * k_panel : 0);
    for (std::size_t c0 = 0; c0 < d_v; c0 += k_panel) {
        const std::size_t width = std::min(k_panel, d_v - c0);
        const double* group = Vp + c0 * m + first * k_panel;  // the group's row of key `first`
        for (std::size_t j0 = 0; j0 < keys; j0 += k_depth) {
            const WeightedSumArgs args{St,    keys,  group, j0, std::min(j0 + k_depth, keys), partial.data(), c0,
                                       width, scale, Z,     ldz};
            switch ((width + 7) / 8) {
                case 1:
                    for_rows<WeightedSumTile<1>::Rows>(rows, args);
                    break;
                case 2:
                    for_rows<WeightedSumTile<2>::Rows>(rows, args);
                    break;
                case 3:
                    for_rows<WeightedSumTile<3>::Rows>(rows, args);
                    break;
                default:
                    for_rows<WeightedSumTile<4>::Rows>(rows, args);
                    break;
            }
        }
    }
}

#else

// Without AVX-512 the engine calls BLAS instead (products_supported() is
// false); these plain loops compute the same numbers, one at a time.
void scores_block(const double* Kp, std::size_t first, std::size_t keys, std::size_t d, const double* Qp,
                  std::size_t rows, double alpha, double* St) {
    for (std::size_t i = 0; i < rows; ++i) {
        const double* q = Qp + (i / k_tile_rows) * k_tile_rows * d;
        for (std::size_t j = 0; j < keys; ++j) {
            const std::size_t key = first + j;
            const double* k = Kp + (key / k_panel) * k_panel * d;
            double sum = 0.0;
            for (std::size_t c = 0; c < d; ++c) {
                sum += k[c * k_panel + key % k_panel] * q[c * k_tile_rows + i % k_tile_rows];
            }
            St[j + i * keys] = alpha * sum;
        }
    }
}

void weighted_sum_block(const double* St, std::size_t keys, std::size_t rows, const double* Vp, std::size_t m,
                        std::size_t first, std::size_t d_v, const double* scale, double* Z, std::size_t ldz) {
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t c = 0; c < d_v; ++c) {
            const double* group = Vp + (c / k_panel) * k_panel * m;
            double sum = 0.0;
            for (std::size_t j = 0; j < keys; ++j) {
                sum += St[j + i * keys] * group[(first + j) * k_panel + c % k_panel];
            }
            Z[i + c * ldz] = scale[i] * sum;
        }
    }
}

#endif

}  // namespace qkv::kernels
