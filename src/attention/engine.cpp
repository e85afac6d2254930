// The large-input path of attention (see engine.hpp for the plan).
// Layout as everywhere in qkv: rows are tokens and Q = X·W_Q. Armadillo and
// BLAS store matrices by column, so head h's block of Q_all (n × H·d_k) is
// one contiguous n × d_k matrix, and a block of query rows is reached with the
// leading dimension n.
#include "attention/engine.hpp"

#include "attention/kernels.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <thread>

namespace qkv {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// C (rows × cols, leading dimension ldc) = alpha · op(A) · op(B), column-major
// as in BLAS: op(A) is rows × depth, op(B) is depth × cols.
void gemm(bool trans_a, bool trans_b, arma::uword rows, arma::uword cols, arma::uword depth, double alpha,
          const double* A, arma::uword lda, const double* B, arma::uword ldb, double* C, arma::uword ldc) {
#ifdef ARMA_USE_BLAS
    const char ta = trans_a ? 'T' : 'N';
    const char tb = trans_b ? 'T' : 'N';
    const auto m = static_cast<arma::blas_int>(rows);
    const auto n = static_cast<arma::blas_int>(cols);
    const auto k = static_cast<arma::blas_int>(depth);
    const auto la = static_cast<arma::blas_int>(lda);
    const auto lb = static_cast<arma::blas_int>(ldb);
    const auto lc = static_cast<arma::blas_int>(ldc);
    const double beta = 0.0;
    arma::blas::gemm<double>(&ta, &tb, &m, &n, &k, &alpha, A, &la, B, &lb, &beta, C, &lc);
#else
    // Without BLAS: copy the operands out of their strided storage and let
    // Armadillo's own product do the work.
    auto load = [](const double* data, arma::uword r, arma::uword c, arma::uword ld) {
        arma::mat M(r, c);
        for (arma::uword j = 0; j < c; ++j) {
            std::copy(data + j * ld, data + j * ld + r, M.colptr(j));
        }
        return M;
    };
    const arma::mat a = trans_a ? arma::mat(load(A, depth, rows, lda).t()) : load(A, rows, depth, lda);
    const arma::mat b = trans_b ? arma::mat(load(B, cols, depth, ldb).t()) : load(B, depth, cols, ldb);
    const arma::mat product = alpha == 1.0 ? arma::mat(a * b) : arma::mat(alpha * a * b);
    for (arma::uword j = 0; j < cols; ++j) {
        std::copy(product.colptr(j), product.colptr(j) + rows, C + j * ldc);
    }
#endif
}

// Calls work(item, worker) for items 0 … count−1 on `workers` threads (this
// one and workers − 1 more); each thread takes the next item until none is left.
// `work` must not throw.
template <class Work>
void parallel_for(int workers, arma::uword count, const Work& work) {
    workers = static_cast<int>(std::min<arma::uword>(std::max(workers, 1), std::max<arma::uword>(count, 1)));
    std::atomic<arma::uword> next{0};
    const auto run = [&next, count, &work](int worker) {
        for (arma::uword item = next++; item < count; item = next++) {
            work(item, worker);
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w) {
        pool.emplace_back(run, w);
    }
    run(0);
    for (auto& thread : pool) {
        thread.join();
    }
}

// A bias added to some columns of a projection's result.
struct BiasPart {
    arma::uword first = 0;               // the result's column where it starts
    const arma::rowvec* values = nullptr;
};

// R (n × cols, column after column) = A (n × in) · columns first … first+cols−1
// of W (in × …), plus the biases on every row. The columns are shared among
// `workers` slices, one single-threaded BLAS call each: every slice reads all
// of A but only its own part of W.
void project(const arma::mat& A, const arma::mat& W, arma::uword first, arma::uword cols,
             const std::vector<BiasPart>& biases, double* R, int workers) {
    const arma::uword n = A.n_rows;
    const arma::uword slices = std::min<arma::uword>(std::max(workers, 1), std::max<arma::uword>(cols, 1));
    parallel_for(workers, slices, [&](arma::uword slice, int) {
        const arma::uword c0 = cols * slice / slices;
        const arma::uword c1 = cols * (slice + 1) / slices;
        if (c1 == c0 || n == 0) {
            return;
        }
        gemm(false, false, n, c1 - c0, A.n_cols, 1.0, A.memptr(), n, W.colptr(first + c0), W.n_rows, R + c0 * n,
             n);
        for (const BiasPart& bias : biases) {
            const arma::uword b0 = std::max(c0, bias.first);
            const arma::uword b1 = std::min(c1, bias.first + bias.values->n_elem);
            for (arma::uword c = b0; c < b1; ++c) {
                const double value = (*bias.values)(c - bias.first);
                double* column = R + c * n;
                for (arma::uword i = 0; i < n; ++i) {
                    column[i] += value;
                }
            }
        }
    });
}

// dst rows first_row … of an n × m matrix (leading dimension ld) ← the transpose of
// src (m × rows, stored column after column)
void copy_transposed(const double* src, arma::uword m, arma::uword rows, double* dst, arma::uword ld) {
    for (arma::uword j = 0; j < m; ++j) {
        for (arma::uword i = 0; i < rows; ++i) {
            dst[i + j * ld] = src[j + i * m];
        }
    }
}

// Rows of queries per block: about 64 or more, so that each panel of K read for
// the block serves many queries, and the block's scores (m × rows doubles) at
// most about 1 MiB, the size of a core's L2 cache, up to about 256 rows.
arma::uword block_rows(arma::uword n, arma::uword m) {
    arma::uword rows = std::clamp<arma::uword>(131072 / std::max<arma::uword>(m, 1), 64, k_max_block_rows);
    rows -= rows % 6;  // whole tiles of 6 queries for the products (kernels.cpp)
    // for measuring other sizes (docs/performance.md)
    if (const char* forced = std::getenv("QKV_BLOCK_ROWS")) {
        rows = static_cast<arma::uword>(std::clamp(std::atol(forced), 1L, 4096L));
    }
    return std::min(rows, n);
}

// While alive, BLAS uses the given number of threads; the previous number is
// restored afterwards, also when an exception passes.
class ScopedBlasThreads {
public:
    explicit ScopedBlasThreads(int threads) : m_previous(blas_threads()) { set_blas_threads(threads); }
    ~ScopedBlasThreads() { set_blas_threads(m_previous); }
    ScopedBlasThreads(const ScopedBlasThreads&) = delete;
    ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

private:
    int m_previous;
};

// Whether the caller keeps this step of this head (0 for a step that is not per head).
bool keeps(const EngineRequest& request, StepId id, int head) { return request.keep && request.keep(id, head); }

// The per-head steps, shared by the worker threads. Every (head, block of
// query rows) is an independent item; workers take the next one until none is left.
class HeadSteps {
public:
    // the per-head steps in order; also the index of their timers and kept matrices
    enum Part { p_scores, p_scaled, p_masked, p_weights, p_head_output, k_parts };
    static constexpr StepId k_ids[k_parts] = {StepId::scores, StepId::scaled_scores, StepId::masked_scores,
                                              StepId::weights, StepId::head_output};

    // Q_all: n × H·d_k; K_all: m × H·d_k; V_all: m × H·d_v, column after column
    HeadSteps(const EngineRequest& request, const double* Q_all, arma::uword n, const double* K_all,
              const double* V_all, arma::uword m, arma::mat& concat, EngineResult& result)
        : m_request(request),
          m_weights(*request.weights),
          m_n(n),
          m_m(m),
          m_block(block_rows(m_n, m_m)),
          m_blocks((m_n + m_block - 1) / m_block),
          m_inv_scale(1.0 / request.scale),
          m_own_products(request.own_products && kernels::products_supported()),
          m_Q(Q_all),
          m_K(K_all),
          m_V(V_all),
          m_concat(concat.memptr()) {
        // the whole n × m matrices of the steps a caller keeps, filled block by block
        const int heads = static_cast<int>(m_weights.heads);
        for (const Part part : {p_scores, p_scaled, p_masked, p_weights}) {
            m_keep[part].assign(heads, nullptr);
            if (part == p_masked && !request.mask.any()) {
                continue;
            }
            for (int h = 1; h <= heads; ++h) {
                if (keeps(request, k_ids[part], h)) {
                    arma::mat& kept = result.kept[{k_ids[part], h}];
                    kept.set_size(m_n, m_m);
                    m_keep[part][h - 1] = kept.memptr();
                }
            }
        }
        if (request.mask.padding != nullptr) {
            for (arma::uword j = 0; j < m_m; ++j) {
                if ((*request.mask.padding)(j) == 0.0) {
                    m_padded_keys.push_back(j);
                }
            }
        }
    }

    arma::uword items() const { return m_weights.heads * m_blocks; }

    // With qkv's own products, each head's K and V are packed for them
    // (kernels.hpp) before the blocks start, by the workers, a head at a time.
    arma::uword packing_items() const { return m_own_products ? m_weights.heads : 0; }
    void allocate_packed(Buffer& keys, Buffer& values) {
        if (m_own_products) {
            keys.resize(m_weights.heads * kernels::packed_keys_size(m_m, m_weights.d_k));
            values.resize(m_weights.heads * kernels::packed_values_size(m_m, m_weights.d_v));
            m_K_packed = keys.data();
            m_V_packed = values.data();
        }
    }
    void pack(arma::uword h) noexcept {
        const arma::uword d_k = m_weights.d_k;
        const arma::uword d_v = m_weights.d_v;
        kernels::pack_keys(m_K + h * d_k * m_m, m_m, d_k, packed_keys(h));
        kernels::pack_values(m_V + h * d_v * m_m, m_m, d_v, packed_values(h));
    }

    // A worker's own memory: one block of scores (m × rows), the rows' sums,
    // and with own products the block's packed queries.
    struct Scratch {
        std::vector<double> scores;
        std::vector<double> sums;
        std::vector<double> inverse;
        std::vector<double> queries;
        std::array<double, k_parts> times{};  // milliseconds per step
    };
    Scratch make_scratch() const {
        return {std::vector<double>(m_m * m_block), std::vector<double>(m_block), std::vector<double>(m_block),
                std::vector<double>(m_own_products ? kernels::packed_queries_size(m_block, m_weights.d_k) : 0),
                {}};
    }

    // One (head, block of query rows).
    void work(arma::uword item, Scratch& scratch) const noexcept {
        run_item(item / m_blocks, item % m_blocks, scratch);
    }

private:
    // head h's packed K and V (the buffers belong to the workspace, not to this object)
    double* packed_keys(arma::uword h) const { return m_K_packed + h * kernels::packed_keys_size(m_m, m_weights.d_k); }
    double* packed_values(arma::uword h) const {
        return m_V_packed + h * kernels::packed_values_size(m_m, m_weights.d_v);
    }

    // Rows r0 … r0 + rows − 1 of the queries, for head h (0-based).
    struct Block {
        arma::uword h = 0;
        arma::uword r0 = 0;
        arma::uword rows = 0;
    };

    // where head h keeps the n × m matrix of a step, or nullptr
    double* kept(Part part, arma::uword h) const { return m_keep[part][h]; }

    void run_item(arma::uword h, arma::uword block, Scratch& scratch) const {
        const arma::uword r0 = block * m_block;
        const Block b{h, r0, std::min(m_block, m_n - r0)};
        auto& times = scratch.times;
        auto start = Clock::now();
        block_scores(b, scratch);
        times[p_scores] += ms_since(start);
        if (m_request.mask.any()) {
            start = Clock::now();
            block_mask(b, scratch.scores.data());
            times[p_masked] += ms_since(start);
        }
        start = Clock::now();
        block_softmax(b, scratch);
        times[p_weights] += ms_since(start);
        start = Clock::now();
        block_head_output(b, scratch);
        times[p_head_output] += ms_since(start);
    }

    // step: scaled scores of the block, transposed so that each query's row is
    // contiguous: S'ᵀ (m × rows) = (1/scale) · K_h (m × d_k) · Q_blockᵀ (d_k × rows)
    void block_scores(const Block& b, Scratch& scratch) const {
        double* St = scratch.scores.data();
        const arma::uword n = m_n;
        const arma::uword m = m_m;
        const arma::uword d_k = m_weights.d_k;
        const double* Q_h = m_Q + b.h * d_k * n;  // n × d_k, queries of this block from row r0
        const double* K_h = m_K + b.h * d_k * m;  // m × d_k
        if (m_own_products) {
            kernels::pack_queries(Q_h + b.r0, n, b.rows, d_k, scratch.queries.data());
            kernels::scores_block(packed_keys(b.h), m, d_k, scratch.queries.data(), b.rows, m_inv_scale, St);
        } else {
            gemm(false, true, m, b.rows, d_k, m_inv_scale, K_h, m, Q_h + b.r0, n, St, m);
        }
        if (double* S = kept(p_scores, b.h)) {
            // S_block (rows × m) = Q_block · K_hᵀ, unscaled, straight into rows r0 … of S
            gemm(false, true, b.rows, m, d_k, 1.0, Q_h + b.r0, n, K_h, m, S + b.r0, n);
        }
        if (double* scaled = kept(p_scaled, b.h)) {
            copy_transposed(St, m, b.rows, scaled + b.r0, n);
        }
    }

    // step: masking, blocked cells of the block's scores (m × rows) become −∞
    void block_mask(const Block& b, double* St) const {
        const arma::uword m = m_m;
        const double minus_inf = -std::numeric_limits<double>::infinity();
        const MaskView& mask = m_request.mask;
        for (arma::uword i = 0; i < b.rows; ++i) {
            double* row = St + i * m;
            const arma::uword query = b.r0 + i;
            if (mask.causal) {
                for (arma::uword j = query + 1; j < m; ++j) {
                    row[j] = minus_inf;
                }
                // a sliding window also blocks the keys before query − window + 1
                for (arma::uword j = 0; mask.window > 0 && j + mask.window <= query && j < m; ++j) {
                    row[j] = minus_inf;
                }
            }
            for (const arma::uword j : m_padded_keys) {
                row[j] = minus_inf;
            }
            if (mask.matrix != nullptr) {
                for (arma::uword j = 0; j < m; ++j) {
                    if ((*mask.matrix)(query, j) == 0.0) {
                        row[j] = minus_inf;
                    }
                }
            }
        }
        if (double* masked = kept(p_masked, b.h)) {
            copy_transposed(St, m, b.rows, masked + b.r0, m_n);
        }
    }

    // step: softmax along each row; exp(s − max) in place, the division by the
    // row sum is applied to the head output (block_head_output)
    void block_softmax(const Block& b, Scratch& scratch) const {
        double* St = scratch.scores.data();
        double* inverse = scratch.inverse.data();
        const arma::uword n = m_n;
        const arma::uword m = m_m;
        kernels::exp_columns(St, m, b.rows, scratch.sums.data());
        for (arma::uword i = 0; i < b.rows; ++i) {
            inverse[i] = 1.0 / scratch.sums[i];
        }
        if (double* A = kept(p_weights, b.h)) {
            for (arma::uword j = 0; j < m; ++j) {
                for (arma::uword i = 0; i < b.rows; ++i) {
                    A[b.r0 + i + j * n] = St[j + i * m] * inverse[i];
                }
            }
        }
    }

    // step: head output of the block, Z_block (rows × d_v) = E_block (rows × m) · V_h (m × d_v),
    // then row i divided by its softmax sum
    void block_head_output(const Block& b, const Scratch& scratch) const {
        const double* St = scratch.scores.data();
        const double* inverse = scratch.inverse.data();
        const arma::uword n = m_n;
        const arma::uword m = m_m;
        const arma::uword d_v = m_weights.d_v;
        const double* V_h = m_V + b.h * d_v * m;  // m × d_v
        double* Z_h = m_concat + b.h * d_v * n;   // n × d_v, this head's columns of the concatenation
        if (m_own_products) {
            kernels::weighted_sum_block(St, m, b.rows, packed_values(b.h), d_v, inverse, Z_h + b.r0, n);
        } else {
            gemm(true, false, b.rows, d_v, m, 1.0, St, m, V_h, m, Z_h + b.r0, n);
            for (arma::uword c = 0; c < d_v; ++c) {
                double* z = Z_h + c * n + b.r0;
                for (arma::uword i = 0; i < b.rows; ++i) {
                    z[i] *= inverse[i];
                }
            }
        }
    }

    const EngineRequest& m_request;
    const PackedWeights& m_weights;
    arma::uword m_n;
    arma::uword m_m;
    arma::uword m_block;
    arma::uword m_blocks;
    double m_inv_scale;
    bool m_own_products;
    const double* m_Q;
    const double* m_K;
    const double* m_V;
    double* m_concat;
    std::vector<double*> m_keep[k_parts];  // per head: where a kept step's n × m matrix is filled, or nullptr
    std::vector<arma::uword> m_padded_keys;
    double* m_K_packed = nullptr;  // with own products: each head's K and V, packed
    double* m_V_packed = nullptr;
};


// Q, K and V of every head, column after column: Q_all (n × H·d_k), K_all
// (m × H·d_k), V_all (m × H·d_v); head h's block of each is contiguous.
struct Projections {
    arma::uword n = 0;  // query rows
    arma::uword m = 0;  // key and value rows
    const double* Q_all = nullptr;
    const double* K_all = nullptr;
    const double* V_all = nullptr;
};

// step: projections for every head at once. When keys and values read the
// queries' rows (self-attention), Q, K and V are one product,
// [Q_all K_all V_all] (n × (2·H·d_k + H·d_v)) = X · W_QKV; otherwise Q_all = X·W_Q
// and [K_all V_all] = C·[W_K W_V]. A product's time is shared among its
// steps in proportion to their columns.
Projections project_heads(const EngineRequest& request, EngineWorkspace& workspace, int threads, StepTimes& times) {
    const PackedWeights& weights = *request.weights;
    const arma::mat& X = *request.X;
    const arma::mat& C = *request.C;
    Projections p;
    p.n = X.n_rows;
    p.m = C.n_rows;
    const arma::uword n = p.n;
    const arma::uword m = p.m;
    const arma::uword q_width = weights.q_width();
    const arma::uword v_width = weights.v_width();
    const std::vector<BiasPart> bias_q = weights.b_Q.is_empty() ? std::vector<BiasPart>{}
                                                                 : std::vector<BiasPart>{{0, &weights.b_Q}};
    std::vector<BiasPart> bias_kv;
    if (!weights.b_K.is_empty()) {
        bias_kv.push_back({0, &weights.b_K});
    }
    if (!weights.b_V.is_empty()) {
        bias_kv.push_back({q_width, &weights.b_V});
    }
    arma::mat& projections = workspace.projections;  // [Q K V] for self-attention, else Q alone
    arma::mat& KV_all = workspace.keys_values;       // [K V] for cross-attention
    auto start = Clock::now();
    if (&X == &C) {
        std::vector<BiasPart> biases = bias_q;
        for (BiasPart part : bias_kv) {
            part.first += q_width;
            biases.push_back(part);
        }
        projections.set_size(n, 2 * q_width + v_width);
        project(X, weights.W_QKV, 0, projections.n_cols, biases, projections.memptr(), threads);
        const double ms = ms_since(start);
        const double width = static_cast<double>(projections.n_cols);
        times.emplace_back(StepId::queries, ms * static_cast<double>(q_width) / width);
        times.emplace_back(StepId::keys, ms * static_cast<double>(q_width) / width);
        times.emplace_back(StepId::values, ms * static_cast<double>(v_width) / width);
        p.K_all = projections.memptr() + n * q_width;
        p.V_all = p.K_all + n * q_width;
    } else {
        projections.set_size(n, q_width);
        project(X, weights.W_QKV, 0, q_width, bias_q, projections.memptr(), threads);
        times.emplace_back(StepId::queries, ms_since(start));
        start = Clock::now();
        KV_all.set_size(m, q_width + v_width);
        project(C, weights.W_QKV, q_width, KV_all.n_cols, bias_kv, KV_all.memptr(), threads);
        const double ms = ms_since(start);
        const double kv_width = static_cast<double>(KV_all.n_cols);
        times.emplace_back(StepId::keys, ms * static_cast<double>(q_width) / kv_width);
        times.emplace_back(StepId::values, ms * static_cast<double>(v_width) / kv_width);
        p.K_all = KV_all.memptr();
        p.V_all = p.K_all + m * q_width;
    }
    p.Q_all = projections.memptr();
    return p;
}

// Copies out the Q, K and V the caller keeps, head by head.
void keep_projections(const EngineRequest& request, const Projections& p, EngineResult& result) {
    const PackedWeights& weights = *request.weights;
    const arma::uword n = p.n;
    const arma::uword m = p.m;
    for (int h = 1; h <= static_cast<int>(weights.heads); ++h) {
        const arma::uword first = (h - 1) * weights.d_k;
        if (keeps(request, StepId::queries, h)) {
            result.kept[{StepId::queries, h}] = arma::mat(p.Q_all + first * n, n, weights.d_k);
        }
        if (keeps(request, StepId::keys, h)) {
            result.kept[{StepId::keys, h}] = arma::mat(p.K_all + first * m, m, weights.d_k);
        }
        if (keeps(request, StepId::values, h)) {
            result.kept[{StepId::values, h}] = arma::mat(p.V_all + (h - 1) * weights.d_v * m, m, weights.d_v);
        }
    }
}

// steps per head: scores, masking, softmax and weighted sum, block by block on
// `threads` workers; each head's output lands in its columns of the
// concatenation (n × H·d_v)
void run_heads(const EngineRequest& request, const Projections& p, arma::mat& concat, EngineWorkspace& workspace,
               int threads, EngineResult& result, StepTimes& times) {
    HeadSteps steps(request, p.Q_all, p.n, p.K_all, p.V_all, p.m, concat, result);
    const int workers = static_cast<int>(std::min<arma::uword>(threads, steps.items()));
    // allocated here, so that running out of memory is an exception of this thread
    std::vector<HeadSteps::Scratch> scratch;
    for (int w = 0; w < workers; ++w) {
        scratch.push_back(steps.make_scratch());
    }
    steps.allocate_packed(workspace.packed_keys, workspace.packed_values);
    const auto start = Clock::now();
    // with own products, each head's K and V packed first, then the blocks
    parallel_for(workers, steps.packing_items(), [&steps](arma::uword h, int) { steps.pack(h); });
    parallel_for(workers, steps.items(),
                 [&steps, &scratch](arma::uword item, int worker) { steps.work(item, scratch[worker]); });
    // the workers ran side by side: share the wall time among the steps in
    // proportion to the time the workers spent in each
    const double wall = ms_since(start);
    std::array<double, HeadSteps::k_parts> per_part{};
    double busy = 0.0;
    for (const auto& local : scratch) {
        for (int part = 0; part < HeadSteps::k_parts; ++part) {
            per_part[part] += local.times[part];
            busy += local.times[part];
        }
    }
    for (int part = 0; part < HeadSteps::k_parts; ++part) {
        // the scaling is part of the score product; masking exists only with a mask
        if (part == HeadSteps::p_scaled || (part == HeadSteps::p_masked && !request.mask.any())) {
            continue;
        }
        times.emplace_back(HeadSteps::k_ids[part], busy > 0.0 ? wall * per_part[part] / busy : 0.0);
    }
}

// Copies out the head outputs and the concatenation the caller keeps.
void keep_head_outputs(const EngineRequest& request, const arma::mat& concat, EngineResult& result) {
    const PackedWeights& weights = *request.weights;
    const int heads = static_cast<int>(weights.heads);
    for (int h = 1; h <= heads; ++h) {
        if (keeps(request, StepId::head_output, h)) {
            result.kept[{StepId::head_output, h}] = concat.cols((h - 1) * weights.d_v, h * weights.d_v - 1);
        }
    }
    if (heads > 1 && keeps(request, StepId::concat, 0)) {
        result.kept[{StepId::concat, 0}] = concat;
    }
}

// step: output projection, (n × d_out) = concat (n × H·d_v) · W_O (H·d_v × d_out) + b_O;
// without W_O the output is the concatenation itself
void project_output(const EngineRequest& request, arma::mat& concat, EngineWorkspace& workspace, int threads,
                    EngineResult& result, StepTimes& times) {
    const PackedWeights& weights = *request.weights;
    const auto start = Clock::now();
    if (weights.W_O.is_empty()) {
        result.output = std::move(concat);
    } else {
        result.output = std::move(workspace.output);
        result.output.set_size(concat.n_rows, weights.W_O.n_cols);
        const std::vector<BiasPart> bias_o =
            weights.b_O.is_empty() ? std::vector<BiasPart>{} : std::vector<BiasPart>{{0, &weights.b_O}};
        project(concat, weights.W_O, 0, weights.W_O.n_cols, bias_o, result.output.memptr(), threads);
    }
    times.emplace_back(StepId::output, ms_since(start));
}

}  // namespace

PackedWeights pack_weights(const Model& model) {
    PackedWeights packed;
    const arma::uword heads = model.n_heads();
    const arma::uword d_k = model.d_k();
    const arma::uword d_v = model.d_v();
    packed.heads = heads;
    packed.d_k = d_k;
    packed.d_v = d_v;
    packed.W_QKV.set_size(model.d_model(), 2 * heads * d_k + heads * d_v);
    bool any_b_Q = false;
    bool any_b_K = false;
    bool any_b_V = false;
    for (const auto& head : model.heads) {
        any_b_Q = any_b_Q || head.b_Q.has_value();
        any_b_K = any_b_K || head.b_K.has_value();
        any_b_V = any_b_V || head.b_V.has_value();
    }
    if (any_b_Q) {
        packed.b_Q.zeros(heads * d_k);
    }
    if (any_b_K) {
        packed.b_K.zeros(heads * d_k);
    }
    if (any_b_V) {
        packed.b_V.zeros(heads * d_v);
    }
    const arma::uword k_first = heads * d_k;
    const arma::uword v_first = 2 * heads * d_k;
    for (arma::uword h = 0; h < heads; ++h) {
        const HeadWeights& head = model.heads[h];
        packed.W_QKV.cols(h * d_k, (h + 1) * d_k - 1) = head.W_Q;
        packed.W_QKV.cols(k_first + h * d_k, k_first + (h + 1) * d_k - 1) = head.W_K;
        packed.W_QKV.cols(v_first + h * d_v, v_first + (h + 1) * d_v - 1) = head.W_V;
        if (head.b_Q) {
            packed.b_Q.cols(h * d_k, (h + 1) * d_k - 1) = *head.b_Q;
        }
        if (head.b_K) {
            packed.b_K.cols(h * d_k, (h + 1) * d_k - 1) = *head.b_K;
        }
        if (head.b_V) {
            packed.b_V.cols(h * d_v, (h + 1) * d_v - 1) = *head.b_V;
        }
    }
    if (model.W_O) {
        packed.W_O = *model.W_O;
    }
    if (model.b_O) {
        packed.b_O = *model.b_O;
    }
    return packed;
}

MaskView mask_view(const Model& model) {
    MaskView view;
    view.causal = model.mask_kind == MaskKind::causal || model.mask_kind == MaskKind::window;
    view.window = model.mask_kind == MaskKind::window ? model.window : 0;
    view.matrix = model.mask_kind == MaskKind::matrix ? &model.mask : nullptr;
    view.padding = model.padding ? &*model.padding : nullptr;
    return view;
}

EngineResult run_engine(const EngineRequest& request) {
    const int threads = request.threads > 0 ? request.threads : default_threads();
    EngineWorkspace local;
    EngineWorkspace& workspace = request.workspace != nullptr ? *request.workspace : local;
    EngineResult result;
    StepTimes times;

    // qkv's own threads share every step; BLAS runs single-threaded inside
    // them, so that its idle threads never compete with qkv's for the cores
    ScopedBlasThreads blas(1);

    const Projections projections = project_heads(request, workspace, threads, times);
    keep_projections(request, projections, result);

    arma::mat& concat = workspace.concat;
    concat.set_size(projections.n, request.weights->heads * request.weights->d_v);
    run_heads(request, projections, concat, workspace, threads, result, times);
    keep_head_outputs(request, concat, result);

    project_output(request, concat, workspace, threads, result, times);

    if (request.times != nullptr) {
        *request.times = std::move(times);
    }
    return result;
}

std::uint64_t estimate_memory(std::uint64_t n, std::uint64_t m, std::uint64_t d_model, std::uint64_t heads,
                              std::uint64_t d_k, std::uint64_t d_v, std::uint64_t d_out, std::uint64_t square_steps,
                              std::uint64_t kept_heads) {
    kept_heads = std::min(kept_heads, heads);
    // Everything the trace keeps, in doubles: inputs (with positions and context),
    // weights, the projections of every head, and per kept head its Q, K, V,
    // head output and kept n × m matrices.
    const std::uint64_t inputs = 3 * n * d_model + m * d_model;
    const std::uint64_t weights = d_model * heads * (2 * d_k + d_v) + heads * d_v * d_out;
    const std::uint64_t projections = heads * (n * d_k + m * d_k + m * d_v);
    const std::uint64_t per_kept_head = n * d_k + m * d_k + m * d_v + square_steps * n * m + n * d_v;
    // a few blocks of query rows against every key, while the heads are worked on
    const std::uint64_t scratch = 8 * std::min<std::uint64_t>(n, k_max_block_rows) * m;
    const std::uint64_t outputs = n * heads * d_v + n * d_out;
    return 8 * (inputs + weights + projections + kept_heads * per_kept_head + scratch + outputs);
}

}  // namespace qkv

