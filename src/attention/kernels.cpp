// The vector loops of the large-input path (see kernels.hpp), written once
// with Google Highway and compiled for each instruction set it targets
// (hwy/foreach_target.h includes this file once per target); the best one
// the CPU runs is picked at the first call (HWY_DYNAMIC_DISPATCH).
//
// exp(s) for s ≤ 0 is computed as 2^k · exp(r): k = round(s / ln 2), and
// r = s − k·ln 2 is taken with ln 2 in two parts (a high part whose product
// with k is exact, and the rest), so |r| ≤ ln 2 / 2 ≈ 0.347 to within rounding.
// exp(r) is its Taylor series to r^13, whose first term left out is below
// 0.347^14 / 14! ≈ 4e−18; Horner's rule evaluates it, ending in 1 + r·(…),
// so the result is within 2 ulp of the true value on every target, with or
// without fused multiply-adds (the test suite checks each against std::exp).
// 2^k is put into the exponent bits directly, which is exact for the k that
// occur here: s ≥ −708 gives k ≥ −1021, a normal number.
//
// No -ffast-math: every operation is written as a Highway op, in this order.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#ifndef QKV_KERNELS_SHARED
#define QKV_KERNELS_SHARED

#include "attention/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_pd() and warn about
// it wherever they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace qkv::kernels::shared {

// exp(−708) ≈ 3.3e−308 is the smallest exp() that is still a normal double.
constexpr double k_exp_floor = -708.0;

constexpr double k_log2e = 1.4426950408889634;          // 1 / ln 2
constexpr double k_ln2_hi = 6.93147180369123816490e-01;  // ln 2 to 32 bits: k·k_ln2_hi is exact
constexpr double k_ln2_lo = 1.90821492927058770002e-10;  // ln 2 − k_ln2_hi
// Adding 1.5·2^52 rounds a number below 2^51 in size to the nearest integer k
// and leaves k in the low bits of the sum.
constexpr double k_round_magic = 6755399441055744.0;

// 1/i! for i = 13 down to 2; the last two Horner steps use 1 and 1.
constexpr double k_taylor[] = {
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
    1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
    1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        1.0 / 2.0,
};

// The products' register tiles: 6 queries by up to 32 keys (scores) or 32
// columns of V (weighted sums).
constexpr std::size_t k_tile_rows = 6;
constexpr std::size_t k_panel = k_key_panel;  // keys per panel of K, columns per group of V

// Vectors hold at most 8 doubles here (CappedTag below): 8, 4, 2 and 1 all
// divide a panel of 32.
constexpr std::size_t k_max_lanes = 8;

// Keys per pass of the weighted sum: the group's rows for these keys (64 × 32
// numbers, 16 KiB) stay in the L1 cache while every tile of the block uses them.
constexpr std::size_t k_depth = 64;

inline std::size_t round_up(std::size_t value, std::size_t step) { return (value + step - 1) / step * step; }

// The sink's share of a column's sum, exp(sink − max); nothing without a sink.
inline double sink_term(double sink, double max) {
    return sink == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(sink - max);
}

// Calls tile.template run<R>(i0) over `rows` queries: tiles of 6, then one smaller.
template <class Tile>
void for_rows(std::size_t rows, const Tile& tile) {
    std::size_t i0 = 0;
    for (; i0 + k_tile_rows <= rows; i0 += k_tile_rows) {
        tile.template run<k_tile_rows>(i0);
    }
    switch (rows - i0) {
        case 5:
            tile.template run<5>(i0);
            break;
        case 4:
            tile.template run<4>(i0);
            break;
        case 3:
            tile.template run<3>(i0);
            break;
        case 2:
            tile.template run<2>(i0);
            break;
        case 1:
            tile.template run<1>(i0);
            break;
        default:
            break;
    }
}

// The products one number at a time, for targets without register tiles.
inline void scores_block_plain(const double* Kp, std::size_t first, std::size_t keys, std::size_t d,
                               const double* Qp, std::size_t rows, double alpha, double* St) {
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

inline void weighted_sum_block_plain(const double* St, std::size_t keys, std::size_t rows, const double* Vp,
                                     std::size_t m, std::size_t first, std::size_t d_v, const double* scale,
                                     double* Z, std::size_t ldz) {
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

}  // namespace qkv::kernels::shared

#endif  // QKV_KERNELS_SHARED

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace qkv::kernels::shared;

using D = hn::CappedTag<double, k_max_lanes>;
using Vec = hn::Vec<D>;

// The target this copy of the loops was compiled for.
std::int64_t Target() { return HWY_TARGET; }

HWY_INLINE Vec Exp(D d, Vec s) {
    const Vec magic = hn::Set(d, k_round_magic);
    const Vec t = hn::MulAdd(s, hn::Set(d, k_log2e), magic);
    const Vec k = hn::Sub(t, magic);
    Vec r = hn::NegMulAdd(k, hn::Set(d, k_ln2_hi), s);
    r = hn::NegMulAdd(k, hn::Set(d, k_ln2_lo), r);
    Vec p = hn::Set(d, k_taylor[0]);
    for (std::size_t i = 1; i < std::size(k_taylor); ++i) {
        p = hn::MulAdd(p, r, hn::Set(d, k_taylor[i]));
    }
    const Vec one = hn::Set(d, 1.0);
    p = hn::MulAdd(p, r, one);
    p = hn::MulAdd(p, r, one);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // p · 2^k in one instruction (5 % of the softmax's time)
    return Vec{_mm512_scalef_pd(p.raw, k.raw)};
#else
    // 2^k: the biased exponent k + 1023, from t's low bits, shifted into the exponent field
    const hn::RebindToSigned<D> di;
    const auto biased = hn::Add(hn::BitCast(di, t), hn::Set(di, std::int64_t{1023}));
    return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<52>(biased)));
#endif
}

// exp(x − max); below the floor (and −∞) exactly 0. A NaN compares false and stays NaN.
HWY_INLINE Vec ExpShifted(D d, Vec x, Vec max) {
    const Vec s = hn::Sub(x, max);
    const auto negligible = hn::Lt(s, hn::Set(d, k_exp_floor));
    return hn::IfThenZeroElse(negligible, Exp(d, hn::IfThenElse(negligible, hn::Set(d, k_exp_floor), s)));
}

void ExpColumns(double* HWY_RESTRICT S, std::size_t m, std::size_t count, double* HWY_RESTRICT sums,
                double sink) {
    const D d;
    const std::size_t N = hn::Lanes(d);
    for (std::size_t c = 0; c < count; ++c) {
        double* x = S + c * m;
        // the column maximum, the sink included; at least one entry is finite
        // (no query is fully blocked)
        Vec vmax = hn::Set(d, sink);
        std::size_t j = 0;
        for (; j + N <= m; j += N) {
            vmax = hn::Max(vmax, hn::LoadU(d, x + j));
        }
        double max = hn::GetLane(hn::MaxOfLanes(d, vmax));
        for (std::size_t t = j; t < m; ++t) {
            max = x[t] > max ? x[t] : max;
        }
        const Vec vm = hn::Set(d, max);
        // two sums, so that consecutive additions do not wait for each other
        Vec sum0 = hn::Zero(d);
        Vec sum1 = hn::Zero(d);
        j = 0;
        for (; j + 2 * N <= m; j += 2 * N) {
            const Vec e0 = ExpShifted(d, hn::LoadU(d, x + j), vm);
            const Vec e1 = ExpShifted(d, hn::LoadU(d, x + j + N), vm);
            hn::StoreU(e0, d, x + j);
            hn::StoreU(e1, d, x + j + N);
            sum0 = hn::Add(sum0, e0);
            sum1 = hn::Add(sum1, e1);
        }
        if (j + N <= m) {
            const Vec e = ExpShifted(d, hn::LoadU(d, x + j), vm);
            hn::StoreU(e, d, x + j);
            sum0 = hn::Add(sum0, e);
            j += N;
        }
        if (j < m) {
            // the last few entries through a vector of their own, −∞ after them (exp gives 0)
            double tail[k_max_lanes];
            std::fill(std::begin(tail), std::end(tail), -std::numeric_limits<double>::infinity());
            std::copy(x + j, x + m, tail);
            const Vec e = ExpShifted(d, hn::LoadU(d, tail), vm);
            hn::StoreU(e, d, tail);
            std::copy(tail, tail + (m - j), x + j);
            sum1 = hn::Add(sum1, e);
        }
        sums[c] = hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1))) + sink_term(sink, max);
    }
}

// x → c·tanh(x/c) in place, a vector at a time, the last few numbers through
// a vector's worth of room; Highway's Tanh is within 4 ulp of std::tanh
void TanhScaled(double* HWY_RESTRICT x, std::size_t count, double c) {
    const D d;
    const std::size_t N = hn::Lanes(d);
    const Vec vc = hn::Set(d, c);
    const auto capped = [&](Vec v) { return hn::Mul(vc, hn::Tanh(d, hn::Div(v, vc))); };
    std::size_t i = 0;
    for (; i + N <= count; i += N) {
        hn::StoreU(capped(hn::LoadU(d, x + i)), d, x + i);
    }
    if (i < count) {
        double tail[k_max_lanes] = {};
        std::copy(x + i, x + count, tail);
        hn::StoreU(capped(hn::LoadU(d, tail)), d, tail);
        std::copy(tail, tail + (count - i), x + i);
    }
}

#if HWY_HAVE_SCALABLE

// Vectors of a length known only at run time cannot be held in arrays, which
// the register tiles below need: these targets compute the products one
// number at a time (the engine uses BLAS's there, products_supported()).
void ScoresBlock(const double* Kp, std::size_t first, std::size_t keys, std::size_t depth, const double* Qp,
                 std::size_t rows, double alpha, double* St) {
    scores_block_plain(Kp, first, keys, depth, Qp, rows, alpha, St);
}

void WeightedSumBlock(const double* St, std::size_t keys, std::size_t rows, const double* Vp, std::size_t m,
                      std::size_t first, std::size_t d_v, const double* scale, double* Z, std::size_t ldz) {
    weighted_sum_block_plain(St, keys, rows, Vp, m, first, d_v, scale, Z, ldz);
}

#else

// ── the per-head products ───────────────────────────────────────────────────
//
// Both are register tiles in the manner of BLAS micro-kernels: up to 6 queries
// by k_vectors vectors, so that the sums stay in registers while the depth is
// walked. They read packed copies (see kernels.hpp), laid out in the order the
// tiles walk them; with m a power of two, the unpacked columns would fall into
// the same few sets of the L1 cache and evict each other.

// Vectors per row of a tile: with 32 vector registers, 24 sums, 4 loads and a
// broadcast; with 16, 12 sums, 2 loads and a broadcast.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM_A64
constexpr std::size_t k_vectors = 4;
#else
constexpr std::size_t k_vectors = 2;
#endif

// The lanes of v from `first` on, `count` of them at most, to out[first …].
HWY_INLINE void StorePart(D d, Vec v, std::size_t first, std::size_t count, double* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // AVX-512 stores the lanes of a mask without touching the others
    if (first < count) {
        hn::BlendedStore(v, hn::FirstN(d, count - first), d, out + first);
    }
#else
    // elsewhere a blended store may read and write back the whole vector
    const std::size_t N = hn::Lanes(d);
    if (first + N <= count) {
        hn::StoreU(v, d, out + first);
    } else if (first < count) {
        double lanes[k_max_lanes];
        hn::StoreU(v, d, lanes);
        std::copy(lanes, lanes + (count - first), out + first);
    }
#endif
}

// St[keys j … j+stored−1, queries i0 … i0+R−1] of the score product, from a
// panel of K (d × 32, read from `Kp` on, which is key j's place in it) and the
// tile of queries (d × 6). St's columns are `keys` long.
template <std::size_t R>
HWY_INLINE void ScoresTile(D d, const double* HWY_RESTRICT Kp, std::size_t depth, const double* HWY_RESTRICT Qp,
                           std::size_t keys, std::size_t i0, std::size_t j, std::size_t stored, double alpha,
                           double* HWY_RESTRICT St) {
    const std::size_t N = hn::Lanes(d);
    Vec acc[R][k_vectors];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < k_vectors; ++v) {
            acc[r][v] = hn::Zero(d);
        }
    }
    for (std::size_t c = 0; c < depth; ++c) {
        const double* k = Kp + c * k_panel;
        Vec kv[k_vectors];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < k_vectors; ++v) {
            kv[v] = hn::LoadU(d, k + v * N);
        }
        const double* q = Qp + c * k_tile_rows;
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
            const Vec qr = hn::Set(d, q[r]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < k_vectors; ++v) {
                acc[r][v] = hn::MulAdd(kv[v], qr, acc[r][v]);
            }
        }
    }
    const Vec a = hn::Set(d, alpha);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        double* out = St + (i0 + r) * keys + j;
#pragma GCC unroll 4
        for (std::size_t v = 0; v < k_vectors; ++v) {
            StorePart(d, hn::Mul(acc[r][v], a), v * N, stored, out);
        }
    }
}

struct ScoresTiles {
    const double* Kp;  // key j's place in its panel
    std::size_t depth;
    const double* Qp;
    std::size_t keys;  // the block's keys: the length of St's columns
    std::size_t j;
    std::size_t stored;
    double alpha;
    double* St;

    template <std::size_t R>
    void run(std::size_t i0) const {
        ScoresTile<R>(D(), Kp, depth, Qp + i0 * depth, keys, i0, j, stored, alpha, St);
    }
};

void ScoresBlock(const double* Kp, std::size_t first, std::size_t keys, std::size_t depth, const double* Qp,
                 std::size_t rows, double alpha, double* St) {
    // a panel of 32 keys at a time, for all the block's queries: the panel
    // (32 × d numbers) stays in the L1 cache while the queries pass
    const std::size_t span = k_vectors * hn::Lanes(D());  // keys per tile: 32 with AVX-512
    const double* Kp_range = Kp + first * depth;          // the panel of key `first`
    for (std::size_t j0 = 0; j0 < keys; j0 += k_panel) {
        const double* panel = Kp_range + j0 * depth;
        for (std::size_t h = 0; h < k_panel && j0 + h < keys; h += span) {
            const ScoresTiles tiles{panel + h, depth, Qp, keys, j0 + h, std::min(span, keys - j0 - h), alpha, St};
            for_rows(rows, tiles);
        }
    }
}

// Z[queries i0 … i0+R−1, `width` columns from Z on] of the weighted sum, over
// keys j0 … j1−1 of a group of V (m × 32, read from `Vp` on, the first
// column's place in it). Between passes the sums wait in `partial` (32
// numbers per query, read from the first column's place); the last pass
// scales them and writes the columns.
template <std::size_t NV, std::size_t R>
HWY_INLINE void WeightedSumTile(D d, const double* HWY_RESTRICT St, std::size_t keys, const double* HWY_RESTRICT Vp,
                                std::size_t i0, std::size_t j0, std::size_t j1, double* HWY_RESTRICT partial,
                                std::size_t width, const double* HWY_RESTRICT scale, double* HWY_RESTRICT Z,
                                std::size_t ldz) {
    const std::size_t N = hn::Lanes(d);
    Vec acc[R][NV];
    // no sums wait when the keys fit one pass (partial is null then)
    double* sums = partial == nullptr ? nullptr : partial + i0 * k_panel;
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            acc[r][v] = j0 == 0 ? hn::Zero(d) : hn::LoadU(d, sums + r * k_panel + v * N);
        }
    }
    const double* e = St + i0 * keys;
    for (std::size_t j = j0; j < j1; ++j) {
        Vec vj[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            vj[v] = hn::LoadU(d, Vp + j * k_panel + v * N);
        }
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
            const Vec er = hn::Set(d, e[r * keys + j]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                acc[r][v] = hn::MulAdd(vj[v], er, acc[r][v]);
            }
        }
    }
    if (j1 < keys) {
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                hn::StoreU(acc[r][v], d, sums + r * k_panel + v * N);
            }
        }
        return;
    }
    // the tile's columns are ldz apart in Z: write them one number at a time
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        double row[k_vectors * k_max_lanes];
        const Vec s = hn::Set(d, scale[i0 + r]);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            hn::StoreU(hn::Mul(acc[r][v], s), d, row + v * N);
        }
        for (std::size_t c = 0; c < width; ++c) {
            Z[i0 + r + c * ldz] = row[c];
        }
    }
}

template <std::size_t NV>
struct WeightedSumTiles {
    const double* St;
    std::size_t keys;  // the block's keys: the length of St's columns
    const double* Vp;  // the group, from the block's first key and the tile's first column
    std::size_t j0;    // the pass's keys
    std::size_t j1;
    double* partial;
    std::size_t width;
    const double* scale;
    double* Z;
    std::size_t ldz;

    template <std::size_t R>
    void run(std::size_t i0) const {
        WeightedSumTile<NV, R>(D(), St, keys, Vp, i0, j0, j1, partial, width, scale, Z, ldz);
    }
};

// The tiles of `width` columns, with as many vectors as they need.
template <std::size_t NV = k_vectors>
void weighted_sum_tiles(std::size_t vectors, std::size_t rows, const WeightedSumTiles<k_vectors>& all) {
    if constexpr (NV > 1) {
        if (vectors < NV) {
            weighted_sum_tiles<NV - 1>(vectors, rows, all);
            return;
        }
    }
    const WeightedSumTiles<NV> tiles{all.St,      all.keys,  all.Vp,    all.j0, all.j1,
                                     all.partial, all.width, all.scale, all.Z,  all.ldz};
    for_rows(rows, tiles);
}

void WeightedSumBlock(const double* St, std::size_t keys, std::size_t rows, const double* Vp, std::size_t m,
                      std::size_t first, std::size_t d_v, const double* scale, double* Z, std::size_t ldz) {
    const std::size_t N = hn::Lanes(D());
    const std::size_t span = k_vectors * N;  // columns per tile: 32 with AVX-512
    // sums between passes over the keys, 32 per query
    std::vector<double> partial(keys > k_depth ? round_up(rows, k_tile_rows) * k_panel : 0);
    for (std::size_t c0 = 0; c0 < d_v; c0 += k_panel) {
        const std::size_t width = std::min(k_panel, d_v - c0);
        const double* group = Vp + c0 * m + first * k_panel;  // the group's row of key `first`
        for (std::size_t j0 = 0; j0 < keys; j0 += k_depth) {
            for (std::size_t h = 0; h < width; h += span) {
                const std::size_t columns = std::min(span, width - h);
                const WeightedSumTiles<k_vectors> tiles{St, keys, group + h, j0, std::min(j0 + k_depth, keys),
                                                        partial.empty() ? nullptr : partial.data() + h, columns,
                                                        scale, Z + (c0 + h) * ldz, ldz};
                weighted_sum_tiles((columns + N - 1) / N, rows, tiles);
            }
        }
    }
}

#endif  // HWY_HAVE_SCALABLE

}  // namespace qkv::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace qkv::kernels {

HWY_EXPORT(Target);
HWY_EXPORT(ExpColumns);
HWY_EXPORT(TanhScaled);
HWY_EXPORT(ScoresBlock);
HWY_EXPORT(WeightedSumBlock);

std::int64_t chosen_target() { return HWY_DYNAMIC_DISPATCH(Target)(); }

std::vector<std::int64_t> targets() { return hwy::SupportedAndGeneratedTargets(); }

std::string_view target_name(std::int64_t target) {
    switch (target) {
#if HWY_ARCH_X86
        case HWY_AVX3:
            return "AVX-512";
        case HWY_AVX3_DL:
            return "AVX-512 (Ice Lake)";
#endif
        case HWY_SCALAR:
            return "scalar";
        case HWY_EMU128:
            return "EMU128 (plain C++)";
        default:
            return hwy::TargetName(target);
    }
}

ScopedTarget::ScopedTarget(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }

ScopedTarget::~ScopedTarget() { hwy::SetSupportedTargetsForTest(0); }

void exp_columns(double* S, std::size_t m, std::size_t count, double* sums, double sink) {
    HWY_DYNAMIC_DISPATCH(ExpColumns)(S, m, count, sums, sink);
}

void tanh_scaled(double* x, std::size_t count, double c) { HWY_DYNAMIC_DISPATCH(TanhScaled)(x, count, c); }

bool products_supported() {
#if HWY_ARCH_X86
    // measured against OpenBLAS on this kind of CPU only (docs/performance.md)
    const std::int64_t target = chosen_target();
    return target == HWY_AVX3 || target == HWY_AVX3_DL;
#else
    return false;
#endif
}

std::size_t packed_keys_size(std::size_t m, std::size_t d) { return shared::round_up(m, k_key_panel) * d; }

void pack_keys(const double* K, std::size_t m, std::size_t d, double* Kp) {
    // panel p holds keys 32p … 32p+31: for each c, their K(j, c) side by side
    // (zeros past the last key)
    for (std::size_t j0 = 0; j0 < m; j0 += k_key_panel) {
        double* panel = Kp + j0 * d;
        for (std::size_t c = 0; c < d; ++c) {
            for (std::size_t jj = 0; jj < k_key_panel; ++jj) {
                panel[c * k_key_panel + jj] = j0 + jj < m ? K[j0 + jj + c * m] : 0.0;
            }
        }
    }
}

std::size_t packed_queries_size(std::size_t rows, std::size_t d) {
    return shared::round_up(rows, shared::k_tile_rows) * d;
}

void pack_queries(const double* Q, std::size_t ldq, std::size_t rows, std::size_t d, double* Qp) {
    // tile t holds queries 6t … 6t+5: for each c, their Q(i, c) side by side.
    // Q is read a column at a time: with ldq a power of two, reading the
    // block's columns in turn for each tile would map them all onto the same
    // few sets of the L1 cache.
    constexpr std::size_t tile_rows = shared::k_tile_rows;
    for (std::size_t c = 0; c < d; ++c) {
        const double* column = Q + c * ldq;
        for (std::size_t i0 = 0; i0 < rows; i0 += tile_rows) {
            double* tile = Qp + i0 * d + c * tile_rows;
            for (std::size_t r = 0; r < tile_rows; ++r) {
                tile[r] = i0 + r < rows ? column[i0 + r] : 0.0;
            }
        }
    }
}

std::size_t packed_values_size(std::size_t m, std::size_t d_v) { return shared::round_up(d_v, k_key_panel) * m; }

void pack_values(const double* V, std::size_t m, std::size_t d_v, double* Vp) {
    // group g holds columns 32g … 32g+31: for each key j, its V(j, c) side by side
    // (zeros past the last column)
    for (std::size_t c0 = 0; c0 < d_v; c0 += k_key_panel) {
        double* group = Vp + c0 * m;
        for (std::size_t j = 0; j < m; ++j) {
            for (std::size_t cc = 0; cc < k_key_panel; ++cc) {
                group[j * k_key_panel + cc] = c0 + cc < d_v ? V[j + (c0 + cc) * m] : 0.0;
            }
        }
    }
}

void scores_block(const double* Kp, std::size_t first, std::size_t keys, std::size_t d, const double* Qp,
                  std::size_t rows, double alpha, double* St) {
    HWY_DYNAMIC_DISPATCH(ScoresBlock)(Kp, first, keys, d, Qp, rows, alpha, St);
}

void weighted_sum_block(const double* St, std::size_t keys, std::size_t rows, const double* Vp, std::size_t m,
                        std::size_t first, std::size_t d_v, const double* scale, double* Z, std::size_t ldz) {
    HWY_DYNAMIC_DISPATCH(WeightedSumBlock)(St, keys, rows, Vp, m, first, d_v, scale, Z, ldz);
}

}  // namespace qkv::kernels

#endif  // HWY_ONCE
