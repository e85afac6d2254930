// The backward pass on the large-input path (STEPS in man/qkv.1.in), after engine.cpp's
// forward pass. Layout as there: rows are tokens, matrices are stored column
// after column, so head h's block of Q_all is one contiguous n × d_k matrix.
//
// - dConcat = dO·W_Oᵀ, dW_O = concatᵀ·dO and db_O: three products.
// - Each query head, on one worker: block after block of query rows, its
//   weights are recomputed from Q and K (the scores, ALiBi's bias, the mask,
//   the softmax with the sink), as FlashAttention's backward does, instead of
//   keeping an n × m matrix per head. From the block's dA = dZ·Vᵀ come
//   dS′ = A ∘ (dA − rowsum(dA ∘ A)), the block's rows of dQ = dS′·K / scale,
//   and its additions to dK += dS′ᵀ·Q / scale and dV += Aᵀ·dZ. The scores are
//   held transposed (keys × rows), so that a query's row is contiguous.
// - RoPE is turned back on dQ and dK, and the query heads that share a
//   key/value head add their dK and dV together.
// - Then [dW_Q dW_K dW_V] = sourceᵀ·[dQ dK dV], the biases' column sums, and
//   dX = [dQ dK dV]·W_QKVᵀ (dC for the keys and values in cross-attention):
//   large products, their columns shared among the workers.
#include "attention/attention.hpp"
#include "attention/engine_parts.hpp"
#include "attention/kernels.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace qkv::engine_parts {

namespace {

bool keeps(const EngineRequest& request, StepId id, int head) { return request.keep && request.keep(id, head); }

// C (rows × cols) = alpha·op(A)·op(B) + beta·C, the columns of C shared among
// `workers`, each slice one single-threaded BLAS call
void shared_product(int workers, bool trans_a, bool trans_b, arma::uword rows, arma::uword cols, arma::uword depth,
                    double alpha, const double* A, arma::uword lda, const double* B, arma::uword ldb, double* C,
                    arma::uword ldc) {
    const arma::uword slices = std::min<arma::uword>(std::max(workers, 1), std::max<arma::uword>(cols, 1));
    parallel_for(workers, slices, [&](arma::uword slice, int) {
        const arma::uword c0 = cols * slice / slices;
        const arma::uword c1 = cols * (slice + 1) / slices;
        if (c1 == c0 || rows == 0) {
            return;
        }
        // column c of op(B) is column c of B, or row c of B when transposed
        const double* b = trans_b ? B + c0 : B + c0 * ldb;
        gemm(trans_a, trans_b, rows, c1 - c0, depth, alpha, A, lda, b, ldb, C + c0 * ldc, ldc);
    });
}

// Turns each row's pairs back by −p·θ_k, p = the row (from 0), times the
// attention factor, in place: the gradient of RoPE's rotation is its
// transpose (attention.hpp, rotate_back); `length` is what dynamic scaling saw.
void rotate_back_in_place(double* M, arma::uword rows, arma::uword d, const Rope& rope, arma::uword length) {
    const double factor = rope_attention_factor(rope);
    for (arma::uword k = 0; k < rope_pairs(rope, d); ++k) {
        const double theta = rope_frequency(rope, k, d, length);
        const auto [a, b] = rope_pair(rope, k, d);
        double* column_a = M + a * rows;
        double* column_b = M + b * rows;
        for (arma::uword p = 0; p < rows; ++p) {
            const double angle = static_cast<double>(p) * theta;
            const double c = factor * std::cos(angle);
            const double s = factor * std::sin(angle);
            const double x_a = column_a[p];
            const double x_b = column_b[p];
            column_a[p] = x_a * c + x_b * s;
            column_b[p] = x_b * c - x_a * s;
        }
    }
}

// The per-head part: every block of one query head's rows, on one worker.
class HeadGradients {
public:
    // time spent in each part, per worker
    enum Part { p_weights, p_grad_weights, p_softmax, p_queries, p_keys, p_values, k_parts };
    static constexpr StepId k_ids[k_parts] = {StepId::grad_scaled_scores, StepId::grad_weights,
                                              StepId::grad_scaled_scores, StepId::grad_queries,
                                              StepId::grad_keys,          StepId::grad_values};

    struct Scratch {
        Buffer scores;        // keys × rows: the block's weights
        Buffer gradient;      // keys × rows: dA, then dS′
        Buffer sums;          // rows: the softmax's sums
        // with qkv's own products (kernels.hpp): the head's K packed as keys and as
        // values, V packed as keys, and the block's queries and dZ packed
        Buffer keys;
        Buffer keys_as_values;
        Buffer values_as_keys;
        Buffer rows_packed;
        Buffer inverse_scale;  // rows: 1 / scale, the factor of each row of dQ
        // keys × rows each: the input and the output of each elementwise step the example has
        std::vector<Buffer> elementwise_inputs;
        std::vector<Buffer> elementwise_outputs;
        std::array<double, k_parts> times{};
    };

    HeadGradients(const EngineRequest& request, const Projections& p, const double* dZ_all, double* dQ_all,
                  double* dK_heads, double* dV_heads, EngineResult& result)
        : m_request(request), m_weights(*request.weights), m_p(p), m_dZ_all(dZ_all), m_dQ_all(dQ_all),
          m_dK_heads(dK_heads), m_dV_heads(dV_heads), m_result(result),
          m_own_products(request.own_products && kernels::products_supported()),
          m_rows(std::min<arma::uword>(p.n, std::clamp<arma::uword>(131072 / std::max<arma::uword>(p.m, 1), 16,
                                                                     k_max_block_rows))) {
        for (const ElementwiseStep& step : k_elementwise_steps) {
            if (request.has(step.id)) {
                m_elementwise.push_back(step);
            }
        }
        // the n × m matrices a caller keeps, allocated here on the calling thread
        for (int h = 1; h <= static_cast<int>(m_weights.heads); ++h) {
            for (const StepId id : {StepId::grad_scaled_scores, StepId::grad_scores}) {
                if (keeps(request, id, h)) {
                    m_result.kept[{id, h}].zeros(p.n, p.m);
                }
            }
            for (const ElementwiseStep& step : m_elementwise) {
                if (keeps(request, step.gradient, h)) {
                    m_result.kept[{step.gradient, h}].zeros(p.n, p.m);
                }
            }
        }
    }

    Scratch make_scratch() const {
        Scratch scratch;
        scratch.scores.resize(m_p.m * m_rows);
        scratch.gradient.resize(m_p.m * m_rows);
        scratch.sums.resize(m_rows);
        scratch.elementwise_inputs.resize(m_elementwise.size());
        scratch.elementwise_outputs.resize(m_elementwise.size());
        for (std::size_t e = 0; e < m_elementwise.size(); ++e) {
            scratch.elementwise_inputs[e].resize(m_p.m * m_rows);
            scratch.elementwise_outputs[e].resize(m_p.m * m_rows);
        }
        if (m_own_products) {
            const arma::uword d_k = m_weights.d_k;
            const arma::uword d_v = m_weights.d_v;
            scratch.keys.resize(kernels::packed_keys_size(m_p.m, d_k));
            scratch.keys_as_values.resize(kernels::packed_values_size(m_p.m, d_k));
            scratch.values_as_keys.resize(kernels::packed_keys_size(m_p.m, d_v));
            scratch.rows_packed.resize(kernels::packed_queries_size(m_rows, std::max(d_k, d_v)));
            scratch.inverse_scale.assign(m_rows, 1.0 / m_request.scale);
        }
        return scratch;
    }

    // Every block of query head h (0-based).
    void head(arma::uword h, Scratch& s) const {
        const arma::uword n = m_p.n;
        const arma::uword m = m_p.m;
        const arma::uword d_k = m_weights.d_k;
        const arma::uword d_v = m_weights.d_v;
        const arma::uword g = m_weights.kv_head_of(h);
        const double* Q = m_p.Q_all + h * d_k * n;
        const double* K = m_p.K_all + g * d_k * m;
        const double* V = m_p.V_all + g * d_v * m;
        const double* dZ = m_dZ_all + h * d_v * n;
        double* dQ = m_dQ_all + h * d_k * n;
        double* dK = m_dK_heads + h * d_k * m;
        double* dV = m_dV_heads + h * d_v * m;
        std::fill(dK, dK + m * d_k, 0.0);
        std::fill(dV, dV + m * d_v, 0.0);
        const double inverse_scale = 1.0 / m_request.scale;
        const bool alibi = m_request.has(StepId::position_bias);
        const double slope = alibi ? (*m_request.alibi)(h) : 0.0;
        const double sink =
            m_request.sinks != nullptr ? (*m_request.sinks)(h) : -std::numeric_limits<double>::infinity();
        const int head = static_cast<int>(h) + 1;
        arma::mat* kept_scaled = find_kept(StepId::grad_scaled_scores, head);
        arma::mat* kept_scores = find_kept(StepId::grad_scores, head);
        if (m_own_products) {
            kernels::pack_keys(K, m, d_k, s.keys.data());
            kernels::pack_values(K, m, d_k, s.keys_as_values.data());
            kernels::pack_keys(V, m, d_v, s.values_as_keys.data());
        }
        for (arma::uword r0 = 0; r0 < n; r0 += m_rows) {
            const arma::uword rows = std::min(m_rows, n - r0);
            auto [k0, k1] = m_request.mask.key_range(r0, r0 + rows, m);
            if (m_own_products) {
                k0 -= k0 % kernels::k_key_panel;  // packed K starts a panel there; the mask blocks the extra keys
            }
            const arma::uword keys = k1 - k0;
            if (keys == 0) {
                for (arma::uword c = 0; c < d_k; ++c) {
                    std::fill(dQ + c * n + r0, dQ + c * n + r0 + rows, 0.0);
                }
                continue;
            }
            double* A = s.scores.data();
            double* G = s.gradient.data();
            // the block's weights, transposed: Sᵀ (keys × rows) = K·Qᵀ / scale, then bias, mask, softmax
            auto start = Clock::now();
            if (m_own_products) {
                kernels::pack_queries(Q + r0, n, rows, d_k, s.rows_packed.data());
                kernels::scores_block(s.keys.data(), k0, keys, d_k, s.rows_packed.data(), rows, inverse_scale, A);
            } else {
                gemm(false, true, keys, rows, d_k, inverse_scale, K + k0, m, Q + r0, n, A, keys);
            }
            // each elementwise step, its input and output kept for the way back
            for (std::size_t e = 0; e < m_elementwise.size(); ++e) {
                std::copy_n(A, keys * rows, s.elementwise_inputs[e].data());
                step_row(m_elementwise[e].id).elementwise->apply(*m_request.model, head, A, keys * rows);
                std::copy_n(A, keys * rows, s.elementwise_outputs[e].data());
            }
            if (alibi || m_request.mask.any()) {
                for (arma::uword i = 0; i < rows; ++i) {
                    double* column = A + i * keys;
                    const arma::uword query = r0 + i;
                    for (arma::uword j = 0; j < keys; ++j) {
                        const arma::uword key = k0 + j;
                        if (alibi) {
                            column[j] += alibi_bias(query, key, slope);
                        }
                        if (m_request.mask.any() && m_request.mask.blocked(query, key)) {
                            column[j] = -std::numeric_limits<double>::infinity();
                        }
                    }
                }
            }
            // exp(x − M) in place, M the column's maximum with the sink, and each column's sum
            kernels::exp_columns(A, keys, rows, s.sums.data(), sink);
            for (arma::uword i = 0; i < rows; ++i) {
                const double inverse_sum = 1.0 / s.sums[i];
                double* column = A + i * keys;
                for (arma::uword j = 0; j < keys; ++j) {
                    column[j] *= inverse_sum;
                }
            }
            s.times[p_weights] += ms_since(start);
            // dAᵀ (keys × rows) = V·dZᵀ
            start = Clock::now();
            if (m_own_products) {
                kernels::pack_queries(dZ + r0, n, rows, d_v, s.rows_packed.data());
                kernels::scores_block(s.values_as_keys.data(), k0, keys, d_v, s.rows_packed.data(), rows, 1.0, G);
            } else {
                gemm(false, true, keys, rows, d_v, 1.0, V + k0, m, dZ + r0, n, G, keys);
            }
            s.times[p_grad_weights] += ms_since(start);
            // dS′ = A ∘ (dA − rowsum(dA ∘ A)), a query's row being a column here
            start = Clock::now();
            for (arma::uword i = 0; i < rows; ++i) {
                const double* a = A + i * keys;
                double* d = G + i * keys;
                double row_term = 0.0;
                for (arma::uword j = 0; j < keys; ++j) {
                    row_term += d[j] * a[j];
                }
                for (arma::uword j = 0; j < keys; ++j) {
                    d[j] = a[j] * (d[j] - row_term);
                }
            }
            // back through the elementwise steps: each one's gradient times its f′ at its input
            for (std::size_t e = m_elementwise.size(); e-- > 0;) {
                if (arma::mat* kept = find_kept(m_elementwise[e].gradient, head)) {
                    copy_transposed(G, keys, rows, kept->memptr() + r0 + k0 * n, n);
                }
                step_row(m_elementwise[e].id).elementwise->back(*m_request.model, head, s.elementwise_inputs[e].data(),
                                                                 s.elementwise_outputs[e].data(), G, keys * rows);
            }
            if (kept_scaled != nullptr) {
                copy_transposed(G, keys, rows, kept_scaled->memptr() + r0 + k0 * n, n);
            }
            if (kept_scores != nullptr) {
                copy_transposed(G, keys, rows, kept_scores->memptr() + r0 + k0 * n, n);
            }
            s.times[p_softmax] += ms_since(start);
            // the block's rows of dQ (rows × d_k) = dS′·K / scale
            start = Clock::now();
            if (m_own_products) {
                kernels::weighted_sum_block(G, keys, rows, s.keys_as_values.data(), m, k0, d_k,
                                            s.inverse_scale.data(), dQ + r0, n);
            } else {
                gemm(true, false, rows, d_k, keys, inverse_scale, G, keys, K + k0, m, dQ + r0, n);
            }
            s.times[p_queries] += ms_since(start);
            // dK (keys × d_k) += dS′ᵀ·Q / scale, dV (keys × d_v) += Aᵀ·dZ
            start = Clock::now();
            gemm(false, false, keys, d_k, rows, inverse_scale, G, keys, Q + r0, n, dK + k0, m, 1.0);
            s.times[p_keys] += ms_since(start);
            start = Clock::now();
            gemm(false, false, keys, d_v, rows, 1.0, A, keys, dZ + r0, n, dV + k0, m, 1.0);
            s.times[p_values] += ms_since(start);
        }
        if (kept_scores != nullptr) {
            *kept_scores *= inverse_scale;
        }
        if (m_request.has(StepId::rotated_queries)) {
            const auto start = Clock::now();
            rotate_back_in_place(dQ, n, d_k, *m_request.rope, n);
            rotate_back_in_place(dK, m, d_k, *m_request.rope, n);
            s.times[p_queries] += ms_since(start);
        }
    }

private:
    arma::mat* find_kept(StepId id, int head) const {
        const auto found = m_result.kept.find({id, head});
        return found == m_result.kept.end() ? nullptr : &found->second;
    }

    const EngineRequest& m_request;
    const PackedWeights& m_weights;
    const Projections& m_p;
    const double* m_dZ_all;
    double* m_dQ_all;
    double* m_dK_heads;
    double* m_dV_heads;
    EngineResult& m_result;
    bool m_own_products;
    arma::uword m_rows;
    std::vector<ElementwiseStep> m_elementwise;  // the example's elementwise steps, in order
};

}  // namespace

void run_backward(const EngineRequest& request, const Projections& p, const arma::mat* concat,
                  EngineWorkspace& workspace, int threads, EngineResult& result, StepTimes& times) {
    const PackedWeights& weights = *request.weights;
    const arma::mat& dO = *request.grad_output;
    const arma::uword n = p.n;
    const arma::uword m = p.m;
    const arma::uword H = weights.heads;
    const arma::uword G = weights.kv_heads;
    const arma::uword d_k = weights.d_k;
    const arma::uword d_v = weights.d_v;
    const arma::uword q_width = weights.q_width();
    const arma::uword k_width = weights.k_width();
    const arma::uword v_width = weights.v_width();
    const bool self = request.X == request.C;
    result.gradients = std::move(workspace.gradients);
    EngineGradients& grads = result.gradients;

    // dConcat = dO·W_Oᵀ, dW_O = concatᵀ·dO, db_O = the column sums of dO
    auto start = Clock::now();
    if (weights.W_O.is_empty()) {
        grads.concat = dO;
    } else {
        grads.concat.set_size(n, H * d_v);
        shared_product(threads, false, true, n, H * d_v, dO.n_cols, 1.0, dO.memptr(), n, weights.W_O.memptr(),
                       weights.W_O.n_rows, grads.concat.memptr(), n);
    }
    times.emplace_back(StepId::grad_concat, ms_since(start));
    start = Clock::now();
    if (concat != nullptr) {
        grads.W_O.set_size(H * d_v, dO.n_cols);
        shared_product(threads, true, false, H * d_v, dO.n_cols, n, 1.0, concat->memptr(), n, dO.memptr(), n,
                       grads.W_O.memptr(), H * d_v);
    }
    grads.b_O = arma::sum(dO, 0);
    times.emplace_back(StepId::grad_w_output, ms_since(start));

    // [dQ dK dV] side by side as W_QKV is, one matrix in self-attention (n = m);
    // the query heads' own dK and dV, summed per key/value head afterwards with
    // grouped-query attention
    arma::mat& queries_part = workspace.grad_projections;
    queries_part.set_size(n, self ? q_width + k_width + v_width : q_width);
    arma::mat& kv_part = workspace.grad_keys_values;
    if (!self) {
        kv_part.set_size(m, k_width + v_width);
    }
    double* dQ_all = queries_part.memptr();
    double* dK_all = self ? dQ_all + n * q_width : kv_part.memptr();
    double* dV_all = dK_all + m * k_width;
    arma::mat& shared_heads = workspace.grad_shared;  // m × H·(d_k + d_v) when G < H
    if (G != H) {
        shared_heads.set_size(m, H * (d_k + d_v));
    }
    double* dK_heads = G == H ? dK_all : shared_heads.memptr();
    double* dV_heads = G == H ? dV_all : dK_heads + m * H * d_k;

    start = Clock::now();
    HeadGradients heads(request, p, grads.concat.memptr(), dQ_all, dK_heads, dV_heads, result);
    const int workers = static_cast<int>(std::min<arma::uword>(std::max(threads, 1), H));
    std::vector<HeadGradients::Scratch> scratch;
    for (int w = 0; w < workers; ++w) {
        scratch.push_back(heads.make_scratch());
    }
    parallel_for(workers, H, [&heads, &scratch](arma::uword h, int worker) { heads.head(h, scratch[worker]); });
    if (G != H) {
        // key/value head g adds the dK and dV of its H/G query heads
        const arma::uword group = H / G;
        for (arma::uword g = 0; g < G; ++g) {
            arma::mat dK(dK_all + g * d_k * m, m, d_k, false, true);
            arma::mat dV(dV_all + g * d_v * m, m, d_v, false, true);
            dK.zeros();
            dV.zeros();
            for (arma::uword h = g * group; h < (g + 1) * group; ++h) {
                dK += arma::mat(dK_heads + h * d_k * m, m, d_k, false, true);
                dV += arma::mat(dV_heads + h * d_v * m, m, d_v, false, true);
            }
        }
    }
    const auto per_part = share_wall_time<HeadGradients::k_parts>(ms_since(start), scratch);
    // the weights recomputed for dS′ count with it
    std::vector<std::pair<StepId, double>> head_times;
    for (int part = 0; part < HeadGradients::k_parts; ++part) {
        const double ms = per_part[part];
        const StepId id = HeadGradients::k_ids[part];
        const auto same = std::find_if(head_times.begin(), head_times.end(), [id](const auto& t) { return t.first == id; });
        if (same == head_times.end()) {
            head_times.emplace_back(id, ms);
        } else {
            same->second += ms;
        }
    }
    times.insert(times.end(), head_times.begin(), head_times.end());

    // back through QK-norm: dQ_all and dK_all, the gradients of the normed rows,
    // become those of the rows before the norm, and each γ gains its gradient
    if (request.has(StepId::grad_normed_queries)) {
        // counted with the per-head part's time of the same step
        const auto add_time = [&times](StepId id, double ms) {
            const auto same = std::find_if(times.begin(), times.end(), [id](const auto& t) { return t.first == id; });
            if (same == times.end()) {
                times.emplace_back(id, ms);
            } else {
                same->second += ms;
            }
        };
        const Model& model = *request.model;
        const QkNorm& norm = *model.qk_norm;
        const auto back_through_norm = [&](bool queries) {
            const auto began = Clock::now();
            const StepId normed = queries ? StepId::grad_normed_queries : StepId::grad_normed_keys;
            double* dY = queries ? dQ_all : dK_all;
            const arma::uword rows = queries ? n : m;
            const arma::uword width = queries ? q_width : k_width;
            for (int h = 1; h <= static_cast<int>(queries ? H : G); ++h) {
                if (keeps(request, normed, h)) {
                    result.kept[{normed, h}] = arma::mat(dY + (h - 1) * d_k * rows, rows, d_k);
                }
            }
            const arma::rowvec gain = norm.gain(queries);
            arma::rowvec& dgain = queries ? grads.q_norm : grads.k_norm;
            dgain.zeros(norm.over_all ? width : d_k);
            rms_norm_back_columns(dY, queries ? p.Q_unnormed : p.K_unnormed, rows, width,
                                  norm.over_all ? width : d_k, gain.memptr(), model.qk_norm_eps(), dgain.memptr());
            add_time(queries ? StepId::grad_queries : StepId::grad_keys, ms_since(began));
        };
        back_through_norm(true);
        back_through_norm(false);
    }

    // the per-head gradients the caller keeps
    for (int h = 1; h <= static_cast<int>(H); ++h) {
        const auto column = static_cast<arma::uword>(h - 1);
        if (keeps(request, StepId::grad_head_output, h)) {
            result.kept[{StepId::grad_head_output, h}] = grads.concat.cols(column * d_v, (column + 1) * d_v - 1);
        }
        if (keeps(request, StepId::grad_weights, h)) {
            // every cell, blocked ones too, as the step functions give it: dZ·Vᵀ
            const arma::uword g = weights.kv_head_of(column);
            result.kept[{StepId::grad_weights, h}] =
                grads.concat.cols(column * d_v, (column + 1) * d_v - 1) *
                arma::mat(p.V_all + g * d_v * m, m, d_v, false, true).t();
        }
        if (keeps(request, StepId::grad_queries, h)) {
            result.kept[{StepId::grad_queries, h}] = arma::mat(dQ_all + column * d_k * n, n, d_k);
        }
    }
    for (int g = 1; g <= static_cast<int>(G); ++g) {
        const auto column = static_cast<arma::uword>(g - 1);
        if (keeps(request, StepId::grad_keys, g)) {
            result.kept[{StepId::grad_keys, g}] = arma::mat(dK_all + column * d_k * m, m, d_k);
        }
        if (keeps(request, StepId::grad_values, g)) {
            result.kept[{StepId::grad_values, g}] = arma::mat(dV_all + column * d_v * m, m, d_v);
        }
    }

    // [dW_Q dW_K dW_V] = sourceᵀ·[dQ dK dV], the biases' column sums, and dX (and dC)
    const arma::mat& X = *request.X;
    const arma::mat& C = *request.C;
    const arma::uword d_model = X.n_cols;
    const arma::uword width = q_width + k_width + v_width;
    start = Clock::now();
    grads.W_QKV.set_size(d_model, width);
    shared_product(threads, true, false, d_model, queries_part.n_cols, n, 1.0, X.memptr(), n, queries_part.memptr(), n,
                   grads.W_QKV.memptr(), d_model);
    if (!self) {
        shared_product(threads, true, false, d_model, k_width + v_width, m, 1.0, C.memptr(), m, kv_part.memptr(), m,
                       grads.W_QKV.colptr(q_width), d_model);
    }
    grads.b_QKV = self ? arma::rowvec(arma::sum(queries_part, 0))
                       : arma::rowvec(arma::join_rows(arma::sum(queries_part, 0), arma::sum(kv_part, 0)));
    const double weights_ms = ms_since(start);
    times.emplace_back(StepId::grad_w_query, weights_ms * static_cast<double>(q_width) / static_cast<double>(width));
    times.emplace_back(StepId::grad_w_key, weights_ms * static_cast<double>(k_width) / static_cast<double>(width));
    times.emplace_back(StepId::grad_w_value, weights_ms * static_cast<double>(v_width) / static_cast<double>(width));
    start = Clock::now();
    grads.X.set_size(n, d_model);
    // dX (n × d_model) = [dQ dK dV] · W_QKVᵀ, or dQ · W_Qᵀ in cross-attention
    shared_product(threads, false, true, n, d_model, queries_part.n_cols, 1.0, queries_part.memptr(), n,
                   weights.W_QKV.memptr(), d_model, grads.X.memptr(), n);
    times.emplace_back(StepId::grad_inputs, ms_since(start));
    if (!self) {
        start = Clock::now();
        grads.C.set_size(m, d_model);
        shared_product(threads, false, true, m, d_model, k_width + v_width, 1.0, kv_part.memptr(), m,
                       weights.W_QKV.colptr(q_width), d_model, grads.C.memptr(), m);
        times.emplace_back(StepId::grad_context, ms_since(start));
    }
}

}  // namespace qkv::engine_parts
