// The vector loops of the large-input path (attention/kernels.hpp), on every
// target Highway compiled them for that this CPU runs, each forced in turn:
// exp() against std::exp, and the two per-head products against plain loops,
// on every size at the edges of their tiles; and the engine with qkv's own
// products against the engine with BLAS's.
#include "support.hpp"

#include "attention/engine.hpp"
#include "attention/kernels.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace qkv;

namespace {

// Distance in units in the last place between a and b (both finite, positive).
double ulps(double a, double b) {
    if (a == b) {
        return 0.0;
    }
    const double lower = std::min(a, b);
    return std::abs(a - b) / (std::nextafter(lower, std::numeric_limits<double>::infinity()) - lower);
}


std::vector<double> uniform(std::size_t count, double low, double high, unsigned seed) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> draw(low, high);
    std::vector<double> values(count);
    for (double& value : values) {
        value = draw(engine);
    }
    return values;
}

// Runs `check` once on each target compiled in that this CPU runs, forced as
// the only one.
template <class Check>
void on_every_target(const Check& check) {
    const std::vector<std::int64_t> targets = kernels::targets();
    REQUIRE(!targets.empty());
    for (const std::int64_t target : targets) {
        INFO("target " << kernels::target_name(target));
        const kernels::ScopedTarget forced(target);
        REQUIRE(kernels::chosen_target() == target);
        check();
    }
}

}  // namespace

TEST_CASE("qkv's loops are compiled for, and tested on, every instruction set this CPU has", "[kernels]") {
    const std::vector<std::int64_t> targets = kernels::targets();
    std::vector<std::string> names;
    for (const std::int64_t target : targets) {
        names.emplace_back(kernels::target_name(target));
    }
    CAPTURE(names);
    // the best is the one chosen, when no test forces one
    REQUIRE(!targets.empty());
    CHECK(kernels::chosen_target() == targets.front());
#if defined(__x86_64__)
    // every x86-64 CPU runs plain C++ (one number at a time, or Highway's
    // emulated vectors, whichever Highway builds) and SSSE3
    const auto has = [&](std::string_view name) { return std::find(names.begin(), names.end(), name) != names.end(); };
    CHECK((has("scalar") || has("EMU128 (plain C++)")));
    CHECK(has("SSSE3"));
    // a target is there when the CPU has every extension Highway asks of it,
    // and only when it has the main one
    const bool sse4 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") &&
                      __builtin_cpu_supports("aes");
    // (Highway also asks for F16C, which every CPU with these has)
    const bool avx2 = sse4 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    CHECK((!sse4 || has("SSE4")));
    CHECK((!avx2 || has("AVX2")));
    CHECK((!avx512 || has("AVX-512")));
    CHECK((!has("SSE4") || __builtin_cpu_supports("sse4.2")));
    CHECK((!has("AVX2") || __builtin_cpu_supports("avx2")));
    CHECK((!has("AVX-512") || __builtin_cpu_supports("avx512f")));
    // the engine's own products where the loops run on AVX-512
    CHECK(kernels::products_supported() == (names.front().rfind("AVX-512", 0) == 0));
#elif defined(__aarch64__)
    // every arm64 CPU has NEON
    CHECK(std::find(names.begin(), names.end(), "NEON") != names.end());
#endif
}

TEST_CASE("exp() of the softmax is within 2 ulp of std::exp from 0 down to -708", "[kernels]") {
    // one column: 0 first (its maximum), then a fine grid down to −708
    const std::size_t m = 200001;
    std::vector<double> x(m);
    for (std::size_t j = 0; j < m; ++j) {
        x[j] = -708.0 * static_cast<double>(j) / static_cast<double>(m - 1);
    }
    on_every_target([&] {
        std::vector<double> e = x;
        double sum = 0.0;
        kernels::exp_columns(e.data(), m, 1, &sum);
        double worst = 0.0;
        double worst_at = 0.0;
        double exact_sum = 0.0;
        for (std::size_t j = 0; j < m; ++j) {
            const double want = std::exp(x[j]);
            exact_sum += want;
            if (ulps(e[j], want) > worst) {
                worst = ulps(e[j], want);
                worst_at = x[j];
            }
        }
        CAPTURE(worst_at);
        CHECK(worst <= 2.0);
        CHECK(e[0] == 1.0);  // exp(max − max) is exactly 1
        CHECK(std::abs(sum - exact_sum) <= 1e-13 * exact_sum);
    });
}

TEST_CASE("tanh_scaled is c·tanh(x/c) within a few ulp, at every length", "[kernels]") {
    // from −300 to 300 (past the cap of 50, where tanh is 1), tiny numbers, 0 and −0
    std::vector<double> x;
    for (int i = -30000; i <= 30000; ++i) {
        x.push_back(0.01 * i);
    }
    for (const double tiny : {1e-300, 1e-12, 3e-8, -2.5e-5}) {
        x.push_back(tiny);
    }
    x.push_back(-0.0);
    const double c = 50.0;
    on_every_target([&] {
        // every length around the vector widths, so that each tail is taken
        for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{9}, x.size()}) {
            std::vector<double> capped(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(count));
            kernels::tanh_scaled(capped.data(), count, c);
            double worst = 0.0;
            for (std::size_t i = 0; i < count; ++i) {
                worst = std::max(worst, ulps(capped[i], c * std::tanh(x[i] / c)));
            }
            CAPTURE(count);
            CHECK(worst <= 8.0);
        }
    });
    // the cap's bounds and its middle, exactly
    std::vector<double> ends = {1e6, -1e6, 0.0};
    kernels::tanh_scaled(ends.data(), ends.size(), c);
    CHECK(ends == std::vector<double>{50.0, -50.0, 0.0});
}

TEST_CASE("exp_columns subtracts each column's maximum, at every length", "[kernels]") {
    // lengths around the vector widths (4 and 8) and the unrolled pairs (16)
    on_every_target([&] {
        for (std::size_t m : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 31, 33, 100}) {
            CAPTURE(m);
            const std::size_t count = 3;
            std::vector<double> S = uniform(m * count, -30.0, 40.0, static_cast<unsigned>(m));
            const std::vector<double> before = S;
            std::vector<double> sums(count);
            kernels::exp_columns(S.data(), m, count, sums.data());
            for (std::size_t c = 0; c < count; ++c) {
                double max = before[c * m];
                for (std::size_t j = 0; j < m; ++j) {
                    max = std::max(max, before[c * m + j]);
                }
                double sum = 0.0;
                for (std::size_t j = 0; j < m; ++j) {
                    const double want = std::exp(before[c * m + j] - max);
                    CHECK(ulps(S[c * m + j], want) <= 2.0);
                    sum += S[c * m + j];
                }
                CHECK(std::abs(sums[c] - sum) <= 1e-15 * sum);
            }
        }
    });
}

TEST_CASE("exp_columns turns blocked cells and entries far below the maximum into exact zeros", "[kernels]") {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    on_every_target([&] {
        // 11 entries: blocked cells, one 708 below the maximum (kept), one 709 below (dropped)
        std::vector<double> S = {minus_inf, 2.0, minus_inf, -706.0, -707.0, 1.0, minus_inf, 0.0, -3.0, minus_inf, 2.0};
        std::vector<double> sums(1);
        kernels::exp_columns(S.data(), S.size(), 1, sums.data());
        CHECK(S[0] == 0.0);
        CHECK(S[2] == 0.0);
        CHECK(S[6] == 0.0);
        CHECK(S[9] == 0.0);
        CHECK(S[1] == 1.0);
        CHECK(S[10] == 1.0);
        CHECK(S[3] > 0.0);           // exp(−708), the smallest normal result kept
        CHECK(std::isnormal(S[3]));
        CHECK(S[4] == 0.0);          // exp(−709) would be subnormal
        CHECK(ulps(S[5], std::exp(-1.0)) <= 2.0);
        CHECK(ulps(S[8], std::exp(-5.0)) <= 2.0);
        double sum = 0.0;
        for (const double value : S) {
            sum += value;
        }
        CHECK(std::abs(sums[0] - sum) <= 1e-15 * sum);
        // a NaN score stays visible: the column's sum is NaN
        std::vector<double> with_nan = {1.0, std::nan(""), 0.5, 0.25, 2.0, 1.0, 1.0, 1.0, 1.0};
        kernels::exp_columns(with_nan.data(), with_nan.size(), 1, sums.data());
        CHECK(std::isnan(sums[0]));
    });
}

TEST_CASE("exp_columns lets a sink join each column's maximum and sum", "[kernels]") {
    // sinks below, between and above the columns' entries (and −∞, no sink)
    const double minus_inf = -std::numeric_limits<double>::infinity();
    on_every_target([&] {
        for (const double sink : {minus_inf, -40.0, 0.5, 3.0, 800.0}) {
            for (std::size_t m : {1, 7, 8, 17}) {
                CAPTURE(sink, m);
                const std::size_t count = 2;
                std::vector<double> S = uniform(m * count, -2.0, 2.0, static_cast<unsigned>(m));
                if (m > 1) {
                    S[1] = minus_inf;  // a blocked cell still gives 0
                }
                const std::vector<double> before = S;
                std::vector<double> sums(count);
                kernels::exp_columns(S.data(), m, count, sums.data(), sink);
                for (std::size_t c = 0; c < count; ++c) {
                    // the formula of EXAMPLE FILES in man/qkv.1.in: M = max(max_j x_j, s)
                    double max = sink;
                    for (std::size_t j = 0; j < m; ++j) {
                        max = std::max(max, before[c * m + j]);
                    }
                    double want_sum = sink == minus_inf ? 0.0 : std::exp(sink - max);
                    for (std::size_t j = 0; j < m; ++j) {
                        const double want = std::exp(before[c * m + j] - max);
                        want_sum += want;
                        if (want < 1e-300) {
                            CHECK(S[c * m + j] == 0.0);  // blocked, or far below a large sink
                        } else {
                            CHECK(ulps(S[c * m + j], want) <= 2.0);
                        }
                    }
                    CHECK(std::abs(sums[c] - want_sum) <= 1e-15 * want_sum);
                }
            }
        }
    });
}

TEST_CASE("the score product matches plain loops at every edge of its tiles", "[kernels]") {
    on_every_target([&] {
    // keys around the panel of 32, from the first key or from the third panel
    // on, queries around the tile of 6, several depths
    for (std::size_t first : {0, 64}) {
        for (std::size_t keys : {1, 5, 31, 32, 33, 70}) {
            for (std::size_t rows : {1, 5, 6, 7, 13}) {
                for (std::size_t d : {1, 3, 8, 64}) {
                    CAPTURE(first, keys, rows, d);
                    const std::size_t m = first + keys + 3;  // three keys after the range
                    const std::size_t ldq = rows + 4;        // the block starts inside a taller Q
                    const std::vector<double> K = uniform(m * d, -1.0, 1.0, 1);
                    const std::vector<double> Q = uniform(ldq * d, -1.0, 1.0, 2);
                    std::vector<double> Kp(kernels::packed_keys_size(m, d));
                    std::vector<double> Qp(kernels::packed_queries_size(rows, d));
                    kernels::pack_keys(K.data(), m, d, Kp.data());
                    kernels::pack_queries(Q.data() + 2, ldq, rows, d, Qp.data());
                    std::vector<double> St(keys * rows + 1, 99.0);  // one guard cell past the end
                    kernels::scores_block(Kp.data(), first, keys, d, Qp.data(), rows, 0.5, St.data());
                    for (std::size_t i = 0; i < rows; ++i) {
                        for (std::size_t j = 0; j < keys; ++j) {
                            double want = 0.0;
                            for (std::size_t c = 0; c < d; ++c) {
                                want += K[first + j + c * m] * Q[2 + i + c * ldq];
                            }
                            REQUIRE(St[j + i * keys] == Approx(0.5 * want).margin(1e-14));
                        }
                    }
                    CHECK(St[keys * rows] == 99.0);
                }
            }
        }
    }
    });
}

TEST_CASE("the weighted sum matches plain loops at every edge of its tiles", "[kernels]") {
    on_every_target([&] {
    // columns around the vector of 8 and the group of 32, keys around a pass of
    // 64, from the first key or from the fourth on
    for (std::size_t first : {0, 3}) {
        for (std::size_t d_v : {1, 7, 8, 9, 31, 32, 33, 64, 70}) {
            for (std::size_t keys : {1, 63, 64, 65, 130}) {
                for (std::size_t rows : {1, 6, 7, 13}) {
                    CAPTURE(first, d_v, keys, rows);
                    const std::size_t m = first + keys + 2;  // two keys after the range
                    const std::size_t ldz = rows + 3;
                    const std::vector<double> St = uniform(keys * rows, 0.0, 1.0, 3);
                    const std::vector<double> V = uniform(m * d_v, -1.0, 1.0, 4);
                    const std::vector<double> scale = uniform(rows, 0.5, 2.0, 5);
                    std::vector<double> Vp(kernels::packed_values_size(m, d_v));
                    kernels::pack_values(V.data(), m, d_v, Vp.data());
                    std::vector<double> Z(ldz * d_v, 99.0);
                    kernels::weighted_sum_block(St.data(), keys, rows, Vp.data(), m, first, d_v, scale.data(),
                                                Z.data(), ldz);
                    for (std::size_t c = 0; c < d_v; ++c) {
                        for (std::size_t i = 0; i < ldz; ++i) {
                            if (i >= rows) {
                                REQUIRE(Z[i + c * ldz] == 99.0);  // rows below the block are not touched
                                continue;
                            }
                            double want = 0.0;
                            for (std::size_t j = 0; j < keys; ++j) {
                                want += St[j + i * keys] * V[first + j + c * m];
                            }
                            REQUIRE(Z[i + c * ldz] == Approx(scale[i] * want).margin(1e-13));
                        }
                    }
                }
            }
        }
    }
    });
}

namespace {

// The steps of an example with these features, as the step table says: an
// engine request built by hand names them as attention.cpp's does (steps_of).
StepSet steps_with(arma::uword heads, arma::uword kv_heads, bool rope, bool alibi, bool masked, bool backward) {
    Model model;
    model.heads.resize(heads);
    model.kv_head_count = kv_heads;
    if (rope) {
        model.rope = Rope{};
    }
    if (alibi) {
        model.alibi = arma::rowvec(heads, arma::fill::ones);
    }
    if (masked) {
        model.mask_kind = MaskKind::causal;
    }
    model.W_O = arma::mat();
    if (backward) {
        model.grad_output = arma::mat();
    }
    return steps_of(model);
}

}  // namespace

TEST_CASE("the engine gives the same numbers with qkv's own products and with BLAS's", "[kernels]") {
    // widths that fill no tile exactly: d_k 20, d_v 36, 150 tokens, a causal mask
    const arma::uword n = 150;
    const arma::uword d_model = 24;
    arma::arma_rng::set_seed(7);
    const arma::mat X = arma::randu(n, d_model) * 2.0 - 1.0;
    PackedWeights weights;
    weights.heads = 2;
    weights.kv_heads = 2;
    weights.d_k = 20;
    weights.d_v = 36;
    weights.set_projections(arma::randu(d_model, 40) - 0.5, arma::randu(d_model, 40) - 0.5,
                            arma::randu(d_model, 72) - 0.5);
    weights.b_K = arma::randu<arma::rowvec>(40);
    weights.W_O = arma::randu(72, d_model) - 0.5;
    EngineRequest request;
    request.X = &X;
    request.C = &X;
    request.weights = &weights;
    request.scale = std::sqrt(20.0);
    request.mask.causal = true;
    request.steps = steps_with(2, 2, false, false, true, true);
    request.keep = [](StepId, int) { return true; };
    request.threads = 2;
    // and the backward pass: each block's weights recomputed, dA and dQ by the same products
    const arma::mat grad_output = arma::randu(n, d_model) - 0.5;
    request.grad_output = &grad_output;

    request.own_products = false;
    const EngineResult blas = run_engine(request);
    request.own_products = true;
    const EngineResult own = run_engine(request);
    request.threads = 3;
    const EngineResult own_three = run_engine(request);

    REQUIRE(own.kept.size() == blas.kept.size());
    for (const auto& [key, values] : blas.kept) {
        const std::string what = step_text(key.id) + " head " + std::to_string(key.head);
        test::require_near(own.kept.at(key), values, 1e-12, what);
        test::require_near(own_three.kept.at(key), values, 1e-12, what);
    }
    test::require_near(own.output, blas.output, 1e-12, "output");
    test::require_near(own_three.output, blas.output, 1e-12, "output");
    CHECK(blas.kept.count({StepId::grad_scaled_scores, 2}) == 1);
    for (const auto* result : {&own, &own_three}) {
        test::require_near(result->gradients.W_QKV, blas.gradients.W_QKV, 1e-12, "[dW_Q dW_K dW_V]");
        test::require_near(result->gradients.b_QKV, blas.gradients.b_QKV, 1e-12, "[db_Q db_K db_V]");
        test::require_near(result->gradients.W_O, blas.gradients.W_O, 1e-12, "dW_O");
        test::require_near(result->gradients.X, blas.gradients.X, 1e-12, "dX");
    }
    // the causal mask: query 0 sees key 0 alone
    CHECK(own.kept.at({StepId::weights, 1})(0, 0) == 1.0);
    CHECK(own.kept.at({StepId::weights, 1})(0, 1) == 0.0);
}

TEST_CASE("the engine gives the same numbers with both products over the keys a window lets through", "[kernels]") {
    // 600 tokens make three blocks of 216 queries; with a window of 40 and no step
    // before the mask kept, each block runs over its own range of keys. Four query
    // heads share two key/value heads, with RoPE, ALiBi and sinks.
    const arma::uword n = 600;
    const arma::uword d_model = 24;
    arma::arma_rng::set_seed(11);
    const arma::mat X = arma::randu(n, d_model) * 2.0 - 1.0;
    PackedWeights weights;
    weights.heads = 4;
    weights.kv_heads = 2;
    weights.d_k = 6;
    weights.d_v = 10;
    weights.set_projections(arma::randu(d_model, 24) - 0.5, arma::randu(d_model, 12) - 0.5,
                            arma::randu(d_model, 20) - 0.5);
    weights.W_O = arma::randu(40, d_model) - 0.5;
    const Rope rope;
    const arma::rowvec alibi = {0.5, 0.25, 0.125, 0.0625};
    const arma::rowvec sinks = {0.3, -0.4, 1.2, 0.0};
    EngineRequest request;
    request.X = &X;
    request.C = &X;
    request.weights = &weights;
    request.scale = std::sqrt(6.0);
    request.rope = &rope;
    request.alibi = &alibi;
    request.sinks = &sinks;
    request.mask.causal = true;
    request.mask.window = 40;
    request.steps = steps_with(4, 2, true, true, true, true);
    request.keep = [](StepId id, int) {
        return id == StepId::rotated_keys || id == StepId::masked_scores || id == StepId::weights ||
               id == StepId::head_output || id == StepId::grad_scaled_scores || id == StepId::grad_keys;
    };
    request.threads = 2;
    // the backward pass too: a block's keys start at a panel of packed K, before the window
    const arma::mat grad_output = arma::randu(n, d_model) - 0.5;
    request.grad_output = &grad_output;

    request.own_products = false;
    const EngineResult blas = run_engine(request);
    request.own_products = true;
    const EngineResult own = run_engine(request);

    REQUIRE(own.kept.size() == blas.kept.size());
    REQUIRE(own.kept.count({StepId::rotated_keys, 2}) == 1);  // per key/value head
    REQUIRE(own.kept.count({StepId::rotated_keys, 3}) == 0);
    for (const auto& [key, values] : blas.kept) {
        test::require_near(own.kept.at(key), values, 1e-12, step_text(key.id) + " head " + std::to_string(key.head));
    }
    test::require_near(own.output, blas.output, 1e-12, "output");
    test::require_near(own.gradients.W_QKV, blas.gradients.W_QKV, 1e-12, "[dW_Q dW_K dW_V]");
    test::require_near(own.gradients.X, blas.gradients.X, 1e-12, "dX");
    REQUIRE(own.kept.count({StepId::grad_keys, 2}) == 1);  // per key/value head
    // outside the window, in the blocks' ranges or not: −∞ before the softmax, 0 after
    const arma::mat& masked = own.kept.at({StepId::masked_scores, 3});
    const arma::mat& A = own.kept.at({StepId::weights, 3});
    for (const auto& [i, j] : {std::pair<arma::uword, arma::uword>{500, 0}, {500, 460}, {300, 260}, {10, 11}}) {
        CAPTURE(i, j);
        CHECK(masked(i, j) == -arma::datum::inf);
        CHECK(A(i, j) == 0.0);
    }
    CHECK(A(500, 461) > 0.0);  // the first key of query 500's window
    // with a sink each row sums to less than 1
    CHECK(arma::sum(A.row(500)) < 1.0);
}
