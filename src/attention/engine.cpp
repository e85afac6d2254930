// The large-input path of attention (see engine.hpp for the plan).
// Layout as everywhere in qkv: rows are tokens and Q = X·W_Q. Armadillo and
// BLAS store matrices by column, so head h's block of Q_all (n × H·d_k) is
// one contiguous n × d_k matrix, and a block of query rows is reached with the
// leading dimension n.
#include "attention/engine.hpp"

#include "attention/engine_parts.hpp"

#include "attention/attention.hpp"
#include "attention/kernels.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

namespace qkv {

namespace {

using namespace engine_parts;

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

// Whether the caller keeps this step of this head (0 for a step that is not per head).
bool keeps(const EngineRequest& request, StepId id, int head) { return request.keep && request.keep(id, head); }

// The per-head steps, shared by the worker threads. First each key/value
// head is prepared (RoPE on its keys, and its K and V packed for qkv's own
// products), then every (query head, block of query rows) is an independent
// item (RoPE on the block's queries, then scores … head output); in each
// phase, workers take the next item until none is left.
class HeadSteps {
public:
    // a step's timer and kept matrices: its place in the step table
    static std::size_t slot(StepId id) { return static_cast<std::size_t>(id); }

    HeadSteps(const EngineRequest& request, const Projections& p, arma::mat& concat, EngineResult& result,
              int threads)
        : m_request(request),
          m_weights(*request.weights),
          m_n(p.n),
          m_m(p.m),
          m_block(block_rows(m_n, m_m, threads, m_weights.heads)),
          m_blocks((m_n + m_block - 1) / m_block),
          m_inv_scale(1.0 / request.scale),
          m_own_products(request.own_products && kernels::products_supported()),
          m_Q(p.Q_all),
          m_K(p.K_all),
          m_V(p.V_all),
          m_concat(concat.memptr()) {
        // the whole n × m matrices of the steps a caller keeps, filled block by block
        const int heads = static_cast<int>(m_weights.heads);
        m_all_keys.assign(heads, false);
        for (const StepId id : all_steps()) {
            m_keep[slot(id)].assign(heads, nullptr);
            // the forward pass's n × m steps of the example (the step table's square rows)
            if (!step_row(id).square || is_gradient(id) || !exists(id)) {
                continue;
            }
            for (int h = 1; h <= heads; ++h) {
                if (keeps(request, id, h)) {
                    arma::mat& kept = result.kept[{id, h}];
                    kept.set_size(m_n, m_m);
                    m_keep[slot(id)][h - 1] = kept.memptr();
                    // a step before the mask shows every key, blocked or not
                    m_all_keys[h - 1] = m_all_keys[h - 1] || id < StepId::masked_scores;
                }
            }
        }
        // the scratch block is as long as the widest range of keys
        for (arma::uword h = 0; h < m_weights.heads; ++h) {
            for (arma::uword r0 = 0; r0 < m_n; r0 += m_block) {
                m_max_keys = std::max(m_max_keys, keys_of(h, r0, std::min(m_block, m_n - r0)).second);
            }
        }
    }

    arma::uword items() const { return m_weights.heads * m_blocks; }

    // Each key/value head is prepared before the blocks start, by the workers,
    // a head at a time: RoPE on its keys, and with qkv's own products its K and
    // V packed for them (kernels.hpp).
    arma::uword kv_items() const { return exists(StepId::rotated_keys) || m_own_products ? m_weights.kv_heads : 0; }
    void allocate_packed(Buffer& keys, Buffer& values) {
        if (m_own_products) {
            keys.resize(m_weights.kv_heads * kernels::packed_keys_size(m_m, m_weights.d_k));
            values.resize(m_weights.kv_heads * kernels::packed_values_size(m_m, m_weights.d_v));
            m_K_packed = keys.data();
            m_V_packed = values.data();
        }
    }

    // A worker's own memory: one block of scores (keys × rows), the rows' sums,
    // the block's head output (rows × d_v), and with own products the block's
    // packed queries.
    // A worker's memory for one block at a time, in the workspace's buffer
    // of that worker: kept from one computation to the next, and written by
    // each block before it is read, so that neither a computation's start nor
    // its end touches it on one thread.
    struct Scratch {
        double* scores = nullptr;   // m_max_keys × m_block
        double* sums = nullptr;     // m_block
        double* inverse = nullptr;  // m_block
        double* output = nullptr;   // m_block × d_v
        double* queries = nullptr;  // the block's packed queries, with qkv's own products
        std::array<double, k_step_count> times{};  // milliseconds per step, by its place in the table
        std::bitset<k_step_count> timed;           // the steps timed, which the example has
        void add(StepId id, double ms) {
            times[slot(id)] += ms;
            timed.set(slot(id));
        }
    };
    Scratch make_scratch(Buffer& memory) const {
        // each part a whole number of cache lines from the buffer's start, so
        // that every part is aligned as the buffer is
        const auto lines = [](arma::uword count) { return (count + 7) / 8 * 8; };
        const arma::uword scores = lines(m_max_keys * m_block);
        const arma::uword row = lines(m_block);
        const arma::uword output = lines(m_block * m_weights.d_v);
        const arma::uword queries = m_own_products ? kernels::packed_queries_size(m_block, m_weights.d_k) : 0;
        memory.resize(scores + 2 * row + output + queries);
        Scratch scratch;
        scratch.scores = memory.data();
        scratch.sums = scratch.scores + scores;
        scratch.inverse = scratch.sums + row;
        scratch.output = scratch.inverse + row;
        scratch.queries = scratch.output + output;
        return scratch;
    }

    // step: RoPE's cos(p·θ_k) and sin(p·θ_k) for every position p (of the
    // queries and of the keys) and pair k, once for all heads, before prepare(),
    // each times the attention factor (rope_frequency and rope_attention_factor in
    // attention.hpp; dynamic scaling sees the n positions of the queries)
    void rope_angles() {
        const Rope& rope = *m_request.rope;
        const arma::uword d_k = m_weights.d_k;
        const double factor = rope_attention_factor(rope);
        m_cosines.set_size(std::max(m_n, m_m), rope_pairs(rope, d_k));
        m_sines.set_size(m_cosines.n_rows, m_cosines.n_cols);
        for (arma::uword k = 0; k < m_cosines.n_cols; ++k) {
            const double theta = rope_frequency(rope, k, d_k, m_n);
            for (arma::uword p = 0; p < m_cosines.n_rows; ++p) {
                const double angle = static_cast<double>(p) * theta;
                m_cosines(p, k) = factor * std::cos(angle);
                m_sines(p, k) = factor * std::sin(angle);
            }
        }
    }

    // One key/value head g (0-based).
    void prepare(arma::uword g, Scratch& scratch) const {
        const arma::uword d_k = m_weights.d_k;
        const arma::uword d_v = m_weights.d_v;
        double* K_g = m_K + g * d_k * m_m;
        if (exists(StepId::rotated_keys)) {
            const auto start = Clock::now();
            rotate(K_g, m_m, 0, m_m);
            scratch.add(StepId::rotated_keys, ms_since(start));
        }
        if (m_own_products) {
            kernels::pack_keys(K_g, m_m, d_k, packed_keys(g));
            kernels::pack_values(m_V + g * d_v * m_m, m_m, d_v, packed_values(g));
        }
    }

    // One (query head, block of query rows).
    void work(arma::uword item, Scratch& scratch) const {
        run_item(item / m_blocks, item % m_blocks, scratch);
    }

    // Whether the example has this step, as the step table says (EngineRequest::steps).
    bool exists(StepId id) const { return m_request.has(id); }

private:
    // key/value head g's packed K and V (the buffers belong to the workspace, not to this object)
    double* packed_keys(arma::uword g) const { return m_K_packed + g * kernels::packed_keys_size(m_m, m_weights.d_k); }
    double* packed_values(arma::uword g) const {
        return m_V_packed + g * kernels::packed_values_size(m_m, m_weights.d_v);
    }

    // Rows r0 … r0 + rows − 1 of the queries, for query head h and its
    // key/value head g (0-based), against keys k0 … k0 + keys − 1.
    struct Block {
        arma::uword h = 0;
        arma::uword g = 0;
        arma::uword r0 = 0;
        arma::uword rows = 0;
        arma::uword k0 = 0;
        arma::uword keys = 0;
    };

    // The keys (first, count) that head h's rows r0 … r0 + rows − 1 are computed
    // against: those the mask lets them see, from the start of a panel of packed K
    // on (kernels::k_key_panel); every key when a step before the mask is kept.
    std::pair<arma::uword, arma::uword> keys_of(arma::uword h, arma::uword r0, arma::uword rows) const {
        if (m_all_keys[h]) {
            return {0, m_m};
        }
        auto [first, last] = m_request.mask.key_range(r0, r0 + rows, m_m);
        first -= first % kernels::k_key_panel;
        return {first, last - first};
    }

    // where head h keeps the n × m matrix of a step, or nullptr
    double* kept(StepId id, arma::uword h) const { return m_keep[slot(id)][h]; }

    // `outside` in rows r0 … of a kept n × m matrix, for the keys the block was
    // not computed against
    void fill_outside(const Block& b, double* M, double outside) const {
        for (arma::uword j = 0; j < m_m; ++j) {
            if (j < b.k0 || j >= b.k0 + b.keys) {
                std::fill_n(M + b.r0 + j * m_n, b.rows, outside);
            }
        }
    }

    // step: RoPE, in place on rows r0 … r0 + rows − 1 of one head's queries or
    // keys (d_k columns, leading dimension ld): row p's pair of columns (a, b)
    // of pair k turns by the angle p·θ_k, as rotate() in attention.hpp
    void rotate(double* X, arma::uword ld, arma::uword r0, arma::uword rows) const {
        for (arma::uword k = 0; k < m_cosines.n_cols; ++k) {
            const auto [a, b] = rope_pair(*m_request.rope, k, m_weights.d_k);
            double* x_a = X + a * ld;
            double* x_b = X + b * ld;
            const double* cosines = m_cosines.colptr(k);
            const double* sines = m_sines.colptr(k);
            for (arma::uword p = r0; p < r0 + rows; ++p) {
                const double x = x_a[p];
                const double y = x_b[p];
                x_a[p] = x * cosines[p] - y * sines[p];
                x_b[p] = y * cosines[p] + x * sines[p];
            }
        }
    }

    void run_item(arma::uword h, arma::uword block, Scratch& scratch) const {
        const arma::uword r0 = block * m_block;
        const arma::uword rows = std::min(m_block, m_n - r0);
        const auto [k0, keys] = keys_of(h, r0, rows);
        const Block b{h, m_weights.kv_head_of(h), r0, rows, k0, keys};
        auto start = Clock::now();
        if (exists(StepId::rotated_queries)) {
            // each (head, block) turns its own rows of the head's queries
            rotate(m_Q + h * m_weights.d_k * m_n, m_n, r0, rows);
            scratch.add(StepId::rotated_queries, ms_since(start));
            start = Clock::now();
        }
        block_scores(b, scratch);
        scratch.add(StepId::scores, ms_since(start));
        for (const ElementwiseStep& step : k_elementwise_steps) {
            if (exists(step.id)) {
                start = Clock::now();
                block_elementwise(b, step.id, scratch.scores);
                scratch.add(step.id, ms_since(start));
            }
        }
        if (exists(StepId::biased_scores)) {
            start = Clock::now();
            block_bias(b, scratch.scores);
            scratch.add(StepId::biased_scores, ms_since(start));
        }
        if (exists(StepId::masked_scores)) {
            start = Clock::now();
            block_mask(b, scratch.scores);
            scratch.add(StepId::masked_scores, ms_since(start));
        }
        start = Clock::now();
        block_softmax(b, scratch);
        scratch.add(StepId::weights, ms_since(start));
        start = Clock::now();
        block_head_output(b, scratch);
        scratch.add(StepId::head_output, ms_since(start));
    }

    // step: scaled scores of the block, transposed so that each query's row is
    // contiguous: S'ᵀ (keys × rows) = (1/scale) · K_g (keys × d_k) · Q_blockᵀ (d_k × rows),
    // with the keys of the block's range, of the query head's key/value head g
    void block_scores(const Block& b, Scratch& scratch) const {
        double* St = scratch.scores;
        const arma::uword n = m_n;
        const arma::uword m = m_m;
        const arma::uword d_k = m_weights.d_k;
        const double* Q_h = m_Q + b.h * d_k * n;  // n × d_k, queries of this block from row r0
        const double* K_g = m_K + b.g * d_k * m;  // m × d_k, keys of this block from row k0
        if (m_own_products) {
            kernels::pack_queries(Q_h + b.r0, n, b.rows, d_k, scratch.queries);
            kernels::scores_block(packed_keys(b.g), b.k0, b.keys, d_k, scratch.queries, b.rows, m_inv_scale,
                                  St);
        } else {
            gemm(false, true, b.keys, b.rows, d_k, m_inv_scale, K_g + b.k0, m, Q_h + b.r0, n, St, b.keys);
        }
        // a kept step before the mask has every key in the block (keys_of)
        if (double* S = kept(StepId::scores, b.h)) {
            // S_block (rows × m) = Q_block · K_gᵀ, unscaled, straight into rows r0 … of S
            gemm(false, true, b.rows, m, d_k, 1.0, Q_h + b.r0, n, K_g, m, S + b.r0, n);
        }
        if (double* scaled = kept(StepId::scaled_scores, b.h)) {
            copy_transposed(St, m, b.rows, scaled + b.r0, n);
        }
    }

    // step: an elementwise step of the scores (k_elementwise_steps), its row's
    // f applied in place to the block's scores
    void block_elementwise(const Block& b, StepId id, double* St) const {
        step_row(id).elementwise->apply(*m_request.model, static_cast<int>(b.h) + 1, St, b.keys * b.rows);
        // a kept step before the mask has every key in the block (keys_of)
        if (double* kept_values = kept(id, b.h)) {
            copy_transposed(St, m_m, b.rows, kept_values + b.r0, m_n);
        }
    }

    // step: ALiBi's bias −m_h·|i − j| for query i and key j, added to the block's
    // scaled scores as it is computed: no n × m matrix unless position_bias is kept
    void block_bias(const Block& b, double* St) const {
        const double slope = (*m_request.alibi)(b.h);
        const auto bias = [slope](arma::uword i, arma::uword j) { return alibi_bias(i, j, slope); };
        for (arma::uword i = 0; i < b.rows; ++i) {
            double* row = St + i * b.keys;
            for (arma::uword j = 0; j < b.keys; ++j) {
                row[j] += bias(b.r0 + i, b.k0 + j);
            }
        }
        // a kept step before the mask has every key in the block (keys_of)
        if (double* B = kept(StepId::position_bias, b.h)) {
            for (arma::uword j = 0; j < m_m; ++j) {
                for (arma::uword i = 0; i < b.rows; ++i) {
                    B[b.r0 + i + j * m_n] = bias(b.r0 + i, j);
                }
            }
        }
        if (double* biased = kept(StepId::biased_scores, b.h)) {
            copy_transposed(St, m_m, b.rows, biased + b.r0, m_n);
        }
    }

    // step: masking, blocked cells of the block's scores (keys × rows) become −∞;
    // keys outside the block's range are blocked for all its rows
    void block_mask(const Block& b, double* St) const {
        const double minus_inf = -std::numeric_limits<double>::infinity();
        const MaskView& mask = m_request.mask;
        const arma::uword end = b.k0 + b.keys;
        for (arma::uword i = 0; i < b.rows; ++i) {
            double* row = St + i * b.keys;  // row[key − k0]
            const arma::uword query = b.r0 + i;
            // what the causal mask and its window block, then the matrix and padding among the rest
            const auto [first, last] = mask.seen_by(query, m_m);
            const arma::uword from = std::clamp(first, b.k0, end);
            const arma::uword to = std::clamp(last, from, end);
            std::fill(row, row + (from - b.k0), minus_inf);
            std::fill(row + (to - b.k0), row + b.keys, minus_inf);
            for (arma::uword key = from; (mask.matrix != nullptr || mask.padding != nullptr) && key < to; ++key) {
                if (mask.matrix_blocks(query, key) || mask.padding_blocks(key)) {
                    row[key - b.k0] = minus_inf;
                }
            }
        }
        if (double* masked = kept(StepId::masked_scores, b.h)) {
            copy_transposed(St, b.keys, b.rows, masked + b.r0 + b.k0 * m_n, m_n);
            fill_outside(b, masked, minus_inf);
        }
    }

    // step: softmax along each row; exp(s − max) in place, the head's sink
    // joining each row's max and sum; the division by the row sum is applied
    // to the head output (block_head_output)
    void block_softmax(const Block& b, Scratch& scratch) const {
        double* St = scratch.scores;
        double* inverse = scratch.inverse;
        const double sink = m_request.sinks != nullptr ? (*m_request.sinks)(b.h)
                                                       : -std::numeric_limits<double>::infinity();
        kernels::exp_columns(St, b.keys, b.rows, scratch.sums, sink);
        for (arma::uword i = 0; i < b.rows; ++i) {
            inverse[i] = 1.0 / scratch.sums[i];
        }
        if (double* A = kept(StepId::weights, b.h)) {
            for (arma::uword j = 0; j < b.keys; ++j) {
                for (arma::uword i = 0; i < b.rows; ++i) {
                    A[b.r0 + i + (b.k0 + j) * m_n] = St[j + i * b.keys] * inverse[i];
                }
            }
            fill_outside(b, A, 0.0);
        }
    }

    // step: head output of the block, Z_block (rows × d_v) = E_block (rows × keys) · V_g (keys × d_v),
    // then row i divided by its softmax sum
    void block_head_output(const Block& b, Scratch& scratch) const {
        const double* St = scratch.scores;
        const double* inverse = scratch.inverse;
        const arma::uword n = m_n;
        const arma::uword m = m_m;
        const arma::uword d_v = m_weights.d_v;
        const double* V_g = m_V + b.g * d_v * m;  // m × d_v
        double* Z = scratch.output;        // rows × d_v
        if (m_own_products) {
            kernels::weighted_sum_block(St, b.keys, b.rows, packed_values(b.g), m, b.k0, d_v, inverse, Z, b.rows);
        } else {
            gemm(true, false, b.rows, d_v, b.keys, 1.0, St, b.keys, V_g + b.k0, m, Z, b.rows);
            for (arma::uword c = 0; c < d_v; ++c) {
                for (arma::uword i = 0; i < b.rows; ++i) {
                    Z[i + c * b.rows] *= inverse[i];
                }
            }
        }
        // into rows r0 … of this head's columns of the concatenation (n × d_v), a
        // column at a time: with n a power of two, the products' tiles writing
        // there directly would map the columns onto the same few cache sets
        double* Z_h = m_concat + b.h * d_v * n;
        for (arma::uword c = 0; c < d_v; ++c) {
            std::copy_n(Z + c * b.rows, b.rows, Z_h + c * n + b.r0);
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
    double* m_Q;  // RoPE turns the queries and keys in place
    double* m_K;
    const double* m_V;
    double* m_concat;
    // per step and query head: where a kept step's n × m matrix is filled, or nullptr
    std::array<std::vector<double*>, k_step_count> m_keep;
    std::vector<bool> m_all_keys;          // per query head: every key is computed (a step before the mask is kept)
    arma::uword m_max_keys = 0;    // the most keys of any block
    arma::mat m_cosines;           // with RoPE: positions × d_k/2
    arma::mat m_sines;
    double* m_K_packed = nullptr;  // with own products: each key/value head's K and V, packed
    double* m_V_packed = nullptr;
};

// step: projections for every head at once. When keys and values read the
// queries' rows (self-attention), Q, K and V are one product,
// [Q_all K_all V_all] (n × (H·d_k + G·d_k + G·d_v)) = X · W_QKV; otherwise
// Q_all = X·W_Q and [K_all V_all] = C·[W_K W_V] (with mla, C·W_KV). A product's time is shared
// among its steps in proportion to their columns.
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
    const arma::uword k_width = weights.k_width();
    const arma::uword v_width = weights.v_width();
    const std::vector<BiasPart> bias_q = weights.b_Q.is_empty() ? std::vector<BiasPart>{}
                                                                 : std::vector<BiasPart>{{0, &weights.b_Q}};
    std::vector<BiasPart> bias_kv;
    if (!weights.b_K.is_empty()) {
        bias_kv.push_back({0, &weights.b_K});
    }
    if (!weights.b_V.is_empty()) {
        bias_kv.push_back({k_width, &weights.b_V});
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
        projections.set_size(n, q_width + k_width + v_width);
        project(X, weights.W_QKV, 0, projections.n_cols, biases, projections.memptr(), threads);
        const double ms = ms_since(start);
        const double width = static_cast<double>(projections.n_cols);
        times.emplace_back(StepId::queries, ms * static_cast<double>(q_width) / width);
        times.emplace_back(StepId::keys, ms * static_cast<double>(k_width) / width);
        times.emplace_back(StepId::values, ms * static_cast<double>(v_width) / width);
        p.K_all = projections.memptr() + n * q_width;
        p.V_all = p.K_all + n * k_width;
    } else {
        projections.set_size(n, q_width);
        project(X, weights.W_QKV, 0, q_width, bias_q, projections.memptr(), threads);
        times.emplace_back(StepId::queries, ms_since(start));
        start = Clock::now();
        KV_all.set_size(m, k_width + v_width);
        if (weights.W_KV.is_empty()) {
            project(C, weights.W_QKV, q_width, KV_all.n_cols, bias_kv, KV_all.memptr(), threads);
        } else {
            project(C, weights.W_KV, 0, KV_all.n_cols, bias_kv, KV_all.memptr(), threads);
        }
        const double ms = ms_since(start);
        const double kv_width = static_cast<double>(KV_all.n_cols);
        times.emplace_back(StepId::keys, ms * static_cast<double>(k_width) / kv_width);
        times.emplace_back(StepId::values, ms * static_cast<double>(v_width) / kv_width);
        p.K_all = KV_all.memptr();
        p.V_all = p.K_all + m * k_width;
    }
    p.Q_all = projections.memptr();
    return p;
}

// Copies out the Q (per query head) and the K, V (per key/value head) the
// caller keeps; `rotated`: the steps after RoPE, rotated_queries and rotated_keys.
void keep_projections(const EngineRequest& request, const Projections& p, bool rotated, EngineResult& result) {
    const PackedWeights& weights = *request.weights;
    const StepId queries = rotated ? StepId::rotated_queries : StepId::queries;
    const StepId keys = rotated ? StepId::rotated_keys : StepId::keys;
    for (int h = 1; h <= static_cast<int>(weights.heads); ++h) {
        if (keeps(request, queries, h)) {
            result.kept[{queries, h}] = arma::mat(p.Q_all + (h - 1) * weights.d_k * p.n, p.n, weights.d_k);
        }
    }
    for (int g = 1; g <= static_cast<int>(weights.kv_heads); ++g) {
        if (keeps(request, keys, g)) {
            result.kept[{keys, g}] = arma::mat(p.K_all + (g - 1) * weights.d_k * p.m, p.m, weights.d_k);
        }
        if (!rotated && keeps(request, StepId::values, g)) {
            result.kept[{StepId::values, g}] = arma::mat(p.V_all + (g - 1) * weights.d_v * p.m, p.m, weights.d_v);
        }
    }
}

// step: QK-norm (qk_norm), in place on Q_all and K_all: each token's row over
// each head's d_k columns, or over: all over the whole projection, divided by
// its root mean square and multiplied by offset + γ (attention.hpp). With the
// backward pass the rows before the norm are kept in the workspace first.
void normalize_projections(const EngineRequest& request, Projections& p, EngineWorkspace& workspace,
                           EngineResult& result, StepTimes& times) {
    const PackedWeights& weights = *request.weights;
    const Model& model = *request.model;
    const QkNorm& norm = *model.qk_norm;
    const double eps = model.qk_norm_eps();
    const arma::uword q_width = weights.q_width();
    const arma::uword k_width = weights.k_width();
    auto start = Clock::now();
    if (request.grad_output != nullptr) {
        workspace.unnormed.set_size(p.n * q_width + p.m * k_width, 1);
        double* copy = workspace.unnormed.memptr();
        std::copy_n(p.Q_all, p.n * q_width, copy);
        std::copy_n(p.K_all, p.m * k_width, copy + p.n * q_width);
        p.Q_unnormed = copy;
        p.K_unnormed = copy + p.n * q_width;
    }
    const auto normalize = [&](bool queries) {
        const StepId normed = queries ? StepId::normed_queries : StepId::normed_keys;
        double* M = queries ? p.Q_all : p.K_all;
        const arma::uword rows = queries ? p.n : p.m;
        const arma::uword width = queries ? q_width : k_width;
        const arma::rowvec gain = norm.gain(queries);
        rms_norm_columns(M, rows, width, norm.over_all ? width : weights.d_k, gain.memptr(), eps);
        for (int h = 1; h <= static_cast<int>(queries ? weights.heads : weights.kv_heads); ++h) {
            if (keeps(request, normed, h)) {
                result.kept[{normed, h}] = arma::mat(M + (h - 1) * weights.d_k * rows, rows, weights.d_k);
            }
        }
        times.emplace_back(normed, ms_since(start));
        start = Clock::now();
    };
    normalize(true);
    normalize(false);
}

// steps per head: RoPE, scores, ALiBi's bias, masking, softmax and weighted
// sum, block by block on `threads` workers; each head's output lands in its
// columns of the concatenation (n × H·d_v)
void run_heads(const EngineRequest& request, const Projections& p, arma::mat& concat, EngineWorkspace& workspace,
               int threads, EngineResult& result, StepTimes& times) {
    HeadSteps steps(request, p, concat, result, threads);
    const int workers = static_cast<int>(std::min<arma::uword>(threads, steps.items()));
    // allocated here, so that running out of memory is an exception of this thread
    if (workspace.head_scratch.size() < static_cast<std::size_t>(workers)) {
        workspace.head_scratch.resize(workers);
    }
    std::vector<HeadSteps::Scratch> scratch;
    for (int w = 0; w < workers; ++w) {
        scratch.push_back(steps.make_scratch(workspace.head_scratch[w]));
    }
    steps.allocate_packed(workspace.packed_keys, workspace.packed_values);
    const auto start = Clock::now();
    if (request.has(StepId::rotated_queries)) {
        // RoPE's angles on this thread, counted with rotated_queries
        steps.rope_angles();
        scratch.front().add(StepId::rotated_queries, ms_since(start));
    }
    // the key/value heads first, then the blocks
    parallel_for(workers, steps.kv_items(),
                 [&steps, &scratch](arma::uword g, int worker) { steps.prepare(g, scratch[worker]); });
    parallel_for(workers, steps.items(),
                 [&steps, &scratch](arma::uword item, int worker) { steps.work(item, scratch[worker]); });
    const auto per_step = share_wall_time<k_step_count>(ms_since(start), scratch);
    std::bitset<k_step_count> timed;
    for (const auto& local : scratch) {
        timed |= local.timed;
    }
    // the scaling is part of the score product, ALiBi's bias part of the biased scores
    for (const StepId id : all_steps()) {
        if (timed.test(HeadSteps::slot(id))) {
            times.emplace_back(id, per_step[HeadSteps::slot(id)]);
        }
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

arma::mat project_shared(const arma::mat& A, const arma::mat& W, int threads) {
    single_threaded_blas_calls();
    arma::mat result(A.n_rows, W.n_cols);
    project(A, W, 0, W.n_cols, {}, result.memptr(), threads > 0 ? threads : default_threads());
    return result;
}

EngineResult run_engine(const EngineRequest& request) {
    const int threads = request.threads > 0 ? request.threads : default_threads();
    EngineWorkspace local;
    EngineWorkspace& workspace = request.workspace != nullptr ? *request.workspace : local;
    EngineResult result;
    StepTimes times;

    // qkv's own threads share every step; BLAS runs single-threaded inside them
    single_threaded_blas_calls();

    Projections projections = project_heads(request, workspace, threads, times);
    keep_projections(request, projections, false, result);
    if (request.has(StepId::normed_queries)) {
        normalize_projections(request, projections, workspace, result, times);
    }

    arma::mat& concat = workspace.concat;
    concat.set_size(projections.n, request.weights->heads * request.weights->d_v);
    run_heads(request, projections, concat, workspace, threads, result, times);
    if (request.has(StepId::rotated_queries)) {
        keep_projections(request, projections, true, result);  // turned in place by the heads
    }
    keep_head_outputs(request, concat, result);

    // the backward pass reads the concatenation only for W_O's gradient; without
    // W_O the output takes it over
    const bool backward = request.grad_output != nullptr;
    project_output(request, concat, workspace, threads, result, times);
    if (backward) {
        run_backward(request, projections, request.weights->W_O.is_empty() ? nullptr : &concat, workspace, threads,
                     result, times);
    }

    if (request.times != nullptr) {
        // in the order of the steps (the projections' product times queries, keys
        // and values before RoPE turns the queries)
        std::stable_sort(times.begin(), times.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        *request.times = std::move(times);
    }
    return result;
}

}  // namespace qkv
