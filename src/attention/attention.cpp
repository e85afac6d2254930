// Scaled dot-product attention, one step at a time, keeping every intermediate.
// Rows are tokens: X is n × d_model and Q = X·W_Q (see model/model.hpp).
#include "attention/attention.hpp"
#include "base/numbers.hpp"
#include "base/parse.hpp"

#include "attention/engine.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <numbers>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <cstdio>
#include <map>
#include <memory>

namespace qkv {

namespace {

// Builds the trace step by step. Steps the caller does not keep are listed by
// id, head, title and formulas only, so that step numbers stay the same.
class TraceBuilder {
public:
    TraceBuilder(const Model& model, const ComputeOptions& options)
        : m_model(model), m_options(options), m_context(model) {}

    bool keeps(StepId id, int head) const {
        if (!m_options.steps.empty() &&
            std::find(m_options.steps.begin(), m_options.steps.end(), id) == m_options.steps.end()) {
            return false;
        }
        if (head == 0 || m_options.head == 0) {
            return true;
        }
        // --head h keeps query head h's steps and the key/value head it reads
        return head == (is_per_kv_head(id) ? m_model.kv_head_of(m_options.head) : m_options.head);
    }

    // Records a step with its values, already rounded as `round:` asks.
    void add(const StepKey& key, arma::mat values) {
        Step step = m_context.describe(key);
        if (const auto rounding = step_rounding(m_model, key.id)) {
            step.notes.push_back("rounded to " + std::to_string(*rounding) + (*rounding == 1 ? " decimal" : " decimals") +
                                 " by hand (round); later steps use the rounded values");
        }
        if (keeps(step.id, step.head)) {
            step.values = std::move(values);
        } else {
            step.explanation.clear();
            step.notes.clear();
            step.row_labels.clear();
            step.col_labels.clear();
        }
        if (!step_row(key.id).parameter &&
            std::find(m_trace.numbering.begin(), m_trace.numbering.end(), key.id) == m_trace.numbering.end()) {
            m_trace.numbering.push_back(key.id);
        }
        m_trace.steps.push_back(std::move(step));
    }

    Trace& trace() { return m_trace; }

private:
    const Model& m_model;
    const ComputeOptions& m_options;
    StepContext m_context;
    Trace m_trace;
};

// What the engine's projections read, computed before it takes over: X, X + P
// or C; with mla the query source (the normed query latent with q_rank) and the
// normed latent and rope keys that every head's keys and values are made from.
std::vector<StepKey> projection_sources(const Model& model) {
    std::vector<StepKey> sources = step_inputs(model, {StepId::queries, 1});
    for (const StepKey& read : step_inputs(model, {StepId::keys, 1})) {
        sources.push_back(read);
    }
    return sources;
}

// The engine takes over at the first of its rows in the table and computes the
// rest, so it is used only when it computes every step of the example from
// there on (the example's weights are read from the model): a step the engine
// has no code for is computed by the step functions, never left out. Its rows
// read only each other and what its projections read (projection_sources).
bool engine_computes_the_rest(const Model& model) {
    const std::vector<StepKey> sources = projection_sources(model);
    bool handed_over = false;
    for (const StepKey& key : step_sequence(model)) {
        const StepRow& row = step_row(key.id);
        handed_over = handed_over || row.engine;
        if (handed_over && !row.engine && !row.parameter) {
            return false;
        }
        for (const StepKey& read : row.engine ? step_inputs(model, key) : std::vector<StepKey>{}) {
            const bool source = std::find(sources.begin(), sources.end(), read) != sources.end();
            if (!source && !step_row(read.id).engine) {
                return false;
            }
        }
    }
    return true;
}


// A gradient that is not per query or key/value head, from the engine's packed
// gradients, in the file's layout and shape as the step table gives it.
arma::mat engine_gradient(const Model& model, const StepKey& key, const EngineGradients& grads,
                          const PackedWeights& packed) {
    const bool pytorch = model.layout == Layout::pytorch;
    const auto in_layout = [pytorch](const arma::mat& gradient) { return pytorch ? arma::mat(gradient.t()) : gradient; };
    // the columns of a packed projection: all of them, or head h's with a list of heads
    const auto columns = [&](arma::uword first, arma::uword width, arma::uword per_head) {
        const arma::uword from = key.head == 0 ? first : first + static_cast<arma::uword>(key.head - 1) * per_head;
        const arma::uword count = key.head == 0 ? width : per_head;
        return std::pair{from, from + count - 1};
    };
    const arma::uword q = packed.q_width();
    const arma::uword k = packed.k_width();
    const arma::uword v = packed.v_width();
    switch (key.id) {
        case StepId::grad_output:
            return *model.grad_output;
        case StepId::grad_concat:
            return grads.concat;
        case StepId::grad_w_query: {
            const auto [a, b] = columns(0, q, packed.d_k);
            return in_layout(grads.W_QKV.cols(a, b));
        }
        case StepId::grad_w_key: {
            const auto [a, b] = columns(q, k, packed.d_k);
            return in_layout(grads.W_QKV.cols(a, b));
        }
        case StepId::grad_w_value: {
            const auto [a, b] = columns(q + k, v, packed.d_v);
            return in_layout(grads.W_QKV.cols(a, b));
        }
        case StepId::grad_b_query: {
            const auto [a, b] = columns(0, q, packed.d_k);
            return grads.b_QKV.cols(a, b);
        }
        case StepId::grad_b_key: {
            const auto [a, b] = columns(q, k, packed.d_k);
            return grads.b_QKV.cols(a, b);
        }
        case StepId::grad_b_value: {
            const auto [a, b] = columns(q + k, v, packed.d_v);
            return grads.b_QKV.cols(a, b);
        }
        case StepId::grad_w_output:
            return in_layout(grads.W_O);
        case StepId::grad_b_output:
        case StepId::grad_out_proj_bias:
            return grads.b_O;
        case StepId::grad_in_proj_weight:
            return grads.W_QKV.t();  // [dW_Qᵀ; dW_Kᵀ; dW_Vᵀ], out × in as in_proj_weight
        case StepId::grad_in_proj_bias:
            return grads.b_QKV;
        case StepId::grad_out_proj_weight:
            return grads.W_O.t();
        case StepId::grad_inputs:
            return grads.X;
        case StepId::grad_context:
            return grads.C;
        case StepId::grad_q_norm:
            return grads.q_norm;
        case StepId::grad_k_norm:
            return grads.k_norm;
        // the forward steps, and the gradients the engine hands back head by head itself
        default:
            break;
    }
    throw std::logic_error(step_text(key.id) + " is not one of the engine's whole gradients: it hands back the "
                           "per-head steps itself");
}

// Steps `rest` (from the projections on) by the large-input engine, which
// reads the projections' sources from `values`.
void add_engine_steps(const Model& model, const ComputeOptions& options, TraceBuilder& builder,
                      const StepValues& values, const std::vector<StepKey>& rest) {
    const arma::mat& X = *values.at(step_inputs(model, {StepId::queries, 1}).front());
    const std::vector<StepKey> key_sources = step_inputs(model, {StepId::keys, 1});
    // with mla the keys and values read [C K_R] (pack_weights)
    const arma::mat latent = model.mla ? arma::mat(arma::join_rows(*values.at(key_sources.at(0)),
                                                                   *values.at(key_sources.at(1))))
                                       : arma::mat();
    const arma::mat& C = model.mla ? latent : *values.at(key_sources.front());
    const PackedWeights packed = pack_weights(model);
    EngineRequest request;
    request.X = &X;
    request.C = &C;
    request.weights = &packed;
    request.scale = model.scale();
    request.rope = model.rope ? &*model.rope : nullptr;
    request.alibi = model.alibi ? &*model.alibi : nullptr;
    request.sinks = model.sinks ? &*model.sinks : nullptr;
    request.mask = mask_view(model);
    request.model = &model;
    request.steps = steps_of(model);
    // the engine numbers keys, values and rotated_keys by key/value head, as the trace does
    request.keep = [&builder](StepId id, int head) { return builder.keeps(id, head); };
    request.threads = options.threads;
    request.grad_output = model.grad_output ? &*model.grad_output : nullptr;
    EngineResult result = run_engine(request);
    for (const StepKey& key : rest) {
        if (step_row(key.id).parameter) {
            builder.add(key, compute_step(model, key, values));  // the example's weights, read from the model
            continue;
        }
        if (key.id == StepId::output) {
            builder.add(key, std::move(result.output));
            continue;
        }
        const auto found = result.kept.find(key);
        if (found != result.kept.end()) {
            builder.add(key, std::move(found->second));
        } else if (is_gradient(key.id) && !is_per_head(key.id) && builder.keeps(key.id, key.head)) {
            builder.add(key, engine_gradient(model, key, result.gradients, packed));
        } else {
            builder.add(key, arma::mat());
        }
    }
}

}  // namespace

bool use_fast_path(const Model& model, const ComputeOptions& options) {
    if (!model.round.empty() || options.kernels == Kernels::textbook || !engine_computes_the_rest(model)) {
        return false;
    }
    return options.kernels == Kernels::fast || model.n() * model.m() >= k_fast_path_cells;
}

arma::mat product(const arma::mat& A, const arma::mat& B) {
    if (static_cast<double>(A.n_rows) * static_cast<double>(A.n_cols) * static_cast<double>(B.n_cols) >
        k_ordered_work) {
        return A * B;
    }
    if (A.n_cols != B.n_rows) {
        throw std::logic_error("product: " + std::to_string(A.n_rows) + " × " + std::to_string(A.n_cols) + " times " +
                               std::to_string(B.n_rows) + " × " + std::to_string(B.n_cols));
    }
    // column j gains a_k·b_kj for k = 1, 2, … in turn: every entry is summed
    // in that order, and A is read down its columns, as it is stored
    arma::mat result(A.n_rows, B.n_cols, arma::fill::zeros);
    for (arma::uword j = 0; j < B.n_cols; ++j) {
        double* sum = result.colptr(j);
        for (arma::uword k = 0; k < A.n_cols; ++k) {
            const double* a = A.colptr(k);
            const double b = B(k, j);
            for (arma::uword i = 0; i < A.n_rows; ++i) {
                sum[i] += a[i] * b;
            }
        }
    }
    return result;
}

arma::mat project(const arma::mat& X, const arma::mat& W, const std::optional<arma::rowvec>& b) {
    // (n × out) = X (n × in) · W (in × out), then b added to every row
    arma::mat result = product(X, W);
    if (b) {
        result.each_row() += *b;
    }
    return result;
}

arma::mat scores(const arma::mat& Q, const arma::mat& K) {
    // (n × m) = Q (n × d_k) · Kᵀ (d_k × m): entry (i, j) is q_i · k_j
    return product(Q, K.t());
}

arma::uword rope_pairs(const Rope& rope, arma::uword d) { return rope.rotated(d) / 2; }

double rope_max_positions(const Rope& rope) {
    if (rope.max_position_embeddings) {
        return *rope.max_position_embeddings;
    }
    if (!rope.scaling || !rope.scaling->original_max_position_embeddings) {
        return 0.0;
    }
    const RopeScaling& scaling = *rope.scaling;
    return scaling.type == RopeScalingType::dynamic ? *scaling.original_max_position_embeddings
                                                    : scaling.factor * *scaling.original_max_position_embeddings;
}

double YarnRamp::at(arma::uword k) const {
    return std::clamp((static_cast<double>(k) - low) / (high - low), 0.0, 1.0);
}

YarnRamp yarn_ramp(const Rope& rope, arma::uword d) {
    const RopeScaling& scaling = *rope.scaling;
    const double dim = static_cast<double>(rope.rotated(d));
    const double original = scaling.original_max_position_embeddings.value_or(rope_max_positions(rope));
    // the pair that turns `rotations` times over the original context
    const auto pair_of = [&](double rotations) {
        return dim * std::log(original / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(rope.base));
    };
    YarnRamp ramp{pair_of(scaling.beta_fast), pair_of(scaling.beta_slow)};
    if (scaling.truncate) {
        ramp.low = std::floor(ramp.low);
        ramp.high = std::ceil(ramp.high);
    }
    ramp.low = std::max(ramp.low, 0.0);
    ramp.high = std::min(ramp.high, dim - 1.0);
    if (ramp.low == ramp.high) {
        ramp.high += 0.001;  // as transformers does, so that the ramp is not a step
    }
    return ramp;
}

double rope_frequency(const Rope& rope, arma::uword k, arma::uword d, arma::uword length) {
    const double dim = static_cast<double>(rope.rotated(d));
    const double exponent = 2.0 * static_cast<double>(k) / dim;
    const double theta = std::pow(rope.base, -exponent);
    if (!rope.scaling) {
        return theta;
    }
    const RopeScaling& scaling = *rope.scaling;
    const double factor = scaling.factor;
    switch (scaling.type) {
        case RopeScalingType::linear:
            return theta / factor;
        case RopeScalingType::dynamic: {
            // the base raised for a length past max_position_embeddings
            const double positions = rope_max_positions(rope);
            const double seen = std::max(static_cast<double>(length), positions);
            const double base = rope.base * std::pow(factor * seen / positions - (factor - 1.0), dim / (dim - 2.0));
            return std::pow(base, -exponent);
        }
        case RopeScalingType::yarn: {
            const double ramp = yarn_ramp(rope, d).at(k);
            return theta / factor * ramp + theta * (1.0 - ramp);
        }
        case RopeScalingType::llama3: {
            const double original = *scaling.original_max_position_embeddings;
            const double wavelength = 2.0 * std::numbers::pi / theta;
            if (wavelength > original / scaling.low_freq_factor) {
                return theta / factor;
            }
            if (wavelength < original / scaling.high_freq_factor) {
                return theta;
            }
            const double smooth = (original / wavelength - scaling.low_freq_factor) /
                                  (scaling.high_freq_factor - scaling.low_freq_factor);
            return (1.0 - smooth) * theta / factor + smooth * theta;
        }
    }
    return theta;
}

double rope_attention_factor(const Rope& rope) {
    if (!rope.scaling || rope.scaling->type != RopeScalingType::yarn) {
        return 1.0;
    }
    const RopeScaling& scaling = *rope.scaling;
    if (scaling.attention_factor) {
        return *scaling.attention_factor;
    }
    const auto mscale = [&](double m) { return scaling.factor <= 1.0 ? 1.0 : 0.1 * m * std::log(scaling.factor) + 1.0; };
    if (scaling.mscale && scaling.mscale_all_dim && *scaling.mscale != 0.0 && *scaling.mscale_all_dim != 0.0) {
        return mscale(*scaling.mscale) / mscale(*scaling.mscale_all_dim);
    }
    return mscale(1.0);
}

std::pair<arma::uword, arma::uword> rope_pair(const Rope& rope, arma::uword k, arma::uword d) {
    const arma::uword s = rope.skip;  // mla: the rope part follows the nope part
    return rope.style == RopeStyle::half ? std::pair{s + k, s + k + rope_pairs(rope, d)}
                                         : std::pair{s + 2 * k, s + 2 * k + 1};
}

namespace {

// Each pair of each row turned by direction·p·θ_k, p = first + r, and
// multiplied by the attention factor.
arma::mat turn_pairs(const arma::mat& X, const Rope& rope, arma::uword first, arma::uword length, double direction) {
    const arma::uword d = X.n_cols;
    const arma::uword seen = length == 0 ? first + X.n_rows : length;
    const double factor = rope_attention_factor(rope);
    arma::mat result = X;
    for (arma::uword k = 0; k < rope_pairs(rope, d); ++k) {
        const double theta = rope_frequency(rope, k, d, seen);
        const auto [a, b] = rope_pair(rope, k, d);
        for (arma::uword r = 0; r < X.n_rows; ++r) {
            // the pair (x_a, x_b) turned by the angle p·θ_k, p = first + r
            const double angle = static_cast<double>(first + r) * theta;
            const double c = factor * std::cos(angle);
            const double s = factor * direction * std::sin(angle);
            result(r, a) = X(r, a) * c - X(r, b) * s;
            result(r, b) = X(r, b) * c + X(r, a) * s;
        }
    }
    return result;
}

}  // namespace

arma::mat rotate(const arma::mat& X, const Rope& rope, arma::uword first, arma::uword length) {
    return turn_pairs(X, rope, first, length, 1.0);
}

arma::mat rotate_back(const arma::mat& X, const Rope& rope, arma::uword first, arma::uword length) {
    return turn_pairs(X, rope, first, length, -1.0);
}

namespace {

// 1/√(mean(x²) + eps) of each row i of the run of `group` columns from column c0, into r[i]
void inverse_rms(const double* M, arma::uword n, arma::uword c0, arma::uword group, double eps, double* r) {
    std::fill_n(r, n, 0.0);
    for (arma::uword c = c0; c < c0 + group; ++c) {
        const double* column = M + c * n;
        for (arma::uword i = 0; i < n; ++i) {
            r[i] += column[i] * column[i];
        }
    }
    for (arma::uword i = 0; i < n; ++i) {
        r[i] = 1.0 / std::sqrt(r[i] / static_cast<double>(group) + eps);
    }
}

}  // namespace

void rms_norm_columns(double* M, arma::uword n, arma::uword width, arma::uword group, const double* gain,
                      double eps) {
    std::vector<double> r(n);
    for (arma::uword c0 = 0; c0 + group <= width; c0 += group) {
        inverse_rms(M, n, c0, group, eps, r.data());
        for (arma::uword c = c0; c < c0 + group; ++c) {
            double* column = M + c * n;
            const double g = gain[c - c0];
            for (arma::uword i = 0; i < n; ++i) {
                column[i] = column[i] * r[i] * g;
            }
        }
    }
}

void rms_norm_back_columns(double* dY, const double* X, arma::uword n, arma::uword width, arma::uword group,
                           const double* gain, double eps, double* dgain) {
    std::vector<double> r(n);
    std::vector<double> dot(n);
    for (arma::uword c0 = 0; c0 + group <= width; c0 += group) {
        inverse_rms(X, n, c0, group, eps, r.data());
        // Σ_c x_c·gain_c·dy_c of each row
        std::fill(dot.begin(), dot.end(), 0.0);
        for (arma::uword c = c0; c < c0 + group; ++c) {
            const double* x = X + c * n;
            const double* dy = dY + c * n;
            const double g = gain[c - c0];
            double gain_sum = 0.0;
            for (arma::uword i = 0; i < n; ++i) {
                dot[i] += x[i] * g * dy[i];
                gain_sum += dy[i] * x[i] * r[i];
            }
            if (dgain != nullptr) {
                dgain[c - c0] += gain_sum;
            }
        }
        for (arma::uword c = c0; c < c0 + group; ++c) {
            const double* x = X + c * n;
            double* dy = dY + c * n;
            const double g = gain[c - c0];
            for (arma::uword i = 0; i < n; ++i) {
                dy[i] = r[i] * g * dy[i] - x[i] * r[i] * r[i] * r[i] * dot[i] / static_cast<double>(group);
            }
        }
    }
}

arma::mat rms_norm(const arma::mat& X, const arma::rowvec& gain, double eps) {
    arma::mat result = X;
    rms_norm_columns(result.memptr(), X.n_rows, X.n_cols, X.n_cols, gain.memptr(), eps);
    return result;
}

arma::mat rms_norm_back(const arma::mat& X, const arma::rowvec& gain, double eps, const arma::mat& dY) {
    arma::mat result = dY;
    rms_norm_back_columns(result.memptr(), X.memptr(), X.n_rows, X.n_cols, X.n_cols, gain.memptr(), eps, nullptr);
    return result;
}

arma::rowvec rms_norm_gain_gradient(const arma::mat& X, double eps, const arma::mat& dY) {
    arma::rowvec result(X.n_cols, arma::fill::zeros);
    arma::mat scratch = dY;
    const arma::rowvec ones(X.n_cols, arma::fill::ones);
    rms_norm_back_columns(scratch.memptr(), X.memptr(), X.n_rows, X.n_cols, X.n_cols, ones.memptr(), eps,
                          result.memptr());
    return result;
}

arma::vec rms_inverse(const arma::mat& X, double eps) {
    arma::vec r(X.n_rows);
    inverse_rms(X.memptr(), X.n_rows, 0, X.n_cols, eps, r.memptr());
    return r;
}

arma::rowvec alibi_slopes(arma::uword heads) {
    // for a power of two P: 2^(−8/P), 2^(−16/P), …, 2^(−8)
    const auto power_of_two = [](arma::uword P) {
        arma::rowvec slopes(P);
        for (arma::uword h = 1; h <= P; ++h) {
            slopes(h - 1) = std::exp2(-8.0 * static_cast<double>(h) / static_cast<double>(P));
        }
        return slopes;
    };
    arma::uword P = 1;
    while (P * 2 <= heads) {
        P *= 2;
    }
    if (P == heads) {
        return power_of_two(P);
    }
    const arma::rowvec first = power_of_two(P);
    const arma::rowvec between = power_of_two(2 * P);
    arma::rowvec slopes(heads);
    slopes.head(P) = first;
    for (arma::uword k = 0; P + k < heads; ++k) {
        slopes(P + k) = between(2 * k);  // h = 1, 3, 5, … of 2P (0-based 0, 2, 4, …)
    }
    return slopes;
}

arma::mat position_bias(arma::uword n, arma::uword m, double slope, arma::uword first_query, arma::uword first_key) {
    arma::mat bias(n, m);
    for (arma::uword j = 0; j < m; ++j) {
        for (arma::uword i = 0; i < n; ++i) {
            bias(i, j) = alibi_bias(first_query + i, first_key + j, slope);
        }
    }
    return bias;
}

arma::mat apply_mask(const arma::mat& S, const arma::mat& allowed) {
    arma::mat result = S;
    result.elem(arma::find(allowed == 0.0)).fill(-arma::datum::inf);
    return result;
}

// a sink of −∞ is no sink: exp(−∞) adds nothing to the sum
arma::mat softmax_rows(const arma::mat& S) { return softmax_rows(S, -arma::datum::inf); }

arma::mat softmax_rows(const arma::mat& S, double sink) {
    arma::mat A(S.n_rows, S.n_cols);
    for (arma::uword i = 0; i < S.n_rows; ++i) {
        // subtract the row maximum so exp() cannot overflow; −∞ cells give exp = 0.
        // The sink joins the row's maximum and its sum, and gets no column of its own
        const double row_max = std::max(S.row(i).max(), sink);
        double sum = std::exp(sink - row_max);
        for (arma::uword j = 0; j < S.n_cols; ++j) {
            const double e = std::exp(S(i, j) - row_max);
            A(i, j) = e;
            sum += e;
        }
        A.row(i) /= sum;
    }
    return A;
}

arma::mat weighted_sum(const arma::mat& A, const arma::mat& V) {
    // (n × d_v) = A (n × m) · V (m × d_v): row i is Σ_j a_ij · v_j
    return product(A, V);
}

OnlineState online_softmax(const arma::rowvec& x, const arma::mat& V, arma::uword block, std::optional<double> sink,
                           bool rescale, const std::function<void(const OnlineUpdate&)>& each) {
    OnlineState state{-arma::datum::inf, 0.0, arma::rowvec(V.n_cols, arma::fill::zeros)};
    // keys first … last, or the sink when first is the row's length
    const auto update = [&](arma::uword first, arma::uword last, double block_max) {
        OnlineUpdate u;
        u.first = first;
        u.last = last;
        u.sink = first == x.n_elem;
        u.block_max = block_max;
        u.before = state;
        if (std::isinf(block_max) && block_max < 0) {
            u.blocked = true;  // a block of blocked keys adds nothing
        } else {
            const double m_new = std::max(state.max, block_max);
            // ℓ and o times exp(m_old − m_new), exp(−∞ − m) = 0 from the start; then the new terms
            u.factor = !rescale ? 1.0 : std::isinf(state.max) && state.max < 0 ? 0.0 : std::exp(state.max - m_new);
            double added = u.sink ? std::exp(block_max - m_new) : 0.0;
            state.output *= u.factor;
            for (arma::uword j = first; !u.sink && j <= last; ++j) {
                const double e = std::exp(x(j) - m_new);
                added += e;
                state.output += e * V.row(j);
            }
            state.sum = state.sum * u.factor + added;
            state.max = m_new;
        }
        u.after = state;
        if (each) {
            each(u);
        }
    };
    for (arma::uword first = 0; first < x.n_elem; first += block) {
        const arma::uword last = std::min<arma::uword>(first + block, x.n_elem) - 1;
        update(first, last, x.subvec(first, last).max());
    }
    if (sink) {
        update(x.n_elem, x.n_elem, *sink);
    }
    return state;
}

namespace {

// `value` rounded to `decimals` places as it reads: its shortest decimal form
// (1.005, not the 1.00499999999999989… that the double holds) rounded half
// away from zero, as on paper. Infinities and NaN stay as they are.
double round_as_written(double value, int decimals) {
    if (!std::isfinite(value)) {
        return value;
    }
    std::string digits = shortest_fixed(std::abs(value));
    const std::size_t point = digits.find('.');
    if (point == std::string::npos || digits.size() - point - 1 <= static_cast<std::size_t>(decimals)) {
        return value;  // no more decimals than that already
    }
    const bool up = digits[point + 1 + decimals] >= '5';
    digits.resize(decimals == 0 ? point : point + 1 + decimals);
    if (up) {
        // add one in the last place kept, carrying through nines
        std::size_t i = digits.size();
        while (i > 0) {
            --i;
            if (digits[i] == '.') {
                continue;
            }
            if (digits[i] != '9') {
                ++digits[i];
                break;
            }
            digits[i] = '0';
            if (i == 0) {
                digits.insert(digits.begin(), '1');
            }
        }
    }
    double result = 0.0;
    parse_double(digits.data(), digits.data() + digits.size(), result);
    return std::signbit(value) ? -result : result;
}

}  // namespace

arma::mat softmax_backward(const arma::mat& A, const arma::mat& dA) {
    // row i: A_ij·(dA_ij − Σ_k dA_ik·A_ik); a blocked cell's 0·(…) may be −0, written 0
    const arma::colvec row_terms = arma::sum(dA % A, 1);
    arma::mat result = A % (dA.each_col() - row_terms);
    result.transform([](double value) { return value == 0.0 ? 0.0 : value; });
    return result;
}

arma::mat round_to(const arma::mat& M, int decimals) {
    arma::mat result = M;
    result.transform([decimals](double value) { return round_as_written(value, decimals); });
    return result;
}

arma::mat sinusoidal_positions(arma::uword n, arma::uword d_model) {
    // P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(p / 10000^(2i/d_model)), p from 0
    arma::mat P(n, d_model);
    for (arma::uword p = 0; p < n; ++p) {
        for (arma::uword c = 0; c < d_model; ++c) {
            const double two_i = static_cast<double>(c - c % 2);
            const double angle = static_cast<double>(p) / std::pow(10000.0, two_i / static_cast<double>(d_model));
            P(p, c) = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
    }
    return P;
}

Trace compute(const Model& model, const ComputeOptions& options) {
    TraceBuilder builder(model, options);
    Trace& trace = builder.trace();
    trace.title = model.title;
    trace.description = model.description;
    trace.tokens = model.tokens;
    trace.cross = model.cross();
    if (model.cross()) {
        trace.context_tokens = model.context_tokens;
    }
    trace.dims = {model.n(), model.m(), model.d_model(), model.n_heads(), model.d_k(), model.d_v(), model.d_out(),
                  model.n_kv_heads(), model.weight_form == WeightForm::head_list};
    trace.scale = model.scale();

    // The steps in the order of the step table (attention/steps.hpp); each is
    // computed from the steps it reads and dropped after the last one that reads it.
    const std::vector<StepKey> sequence = step_sequence(model);
    // room for every step at once: a Step is copied, not moved, when the
    // vector grows (arma::mat's move may throw), n × m matrices and all
    trace.steps.reserve(sequence.size());
    std::map<StepKey, std::size_t> last_read;
    for (std::size_t k = 0; k < sequence.size(); ++k) {
        for (const StepKey& input : step_inputs(model, sequence[k])) {
            last_read[input] = k;
        }
    }
    const bool fast = use_fast_path(model, options);
    StepValues values;
    for (std::size_t k = 0; k < sequence.size(); ++k) {
        const StepKey& key = sequence[k];
        if (fast && step_row(key.id).engine) {
            // the rest on the large-input path, which hands back only the steps kept
            add_engine_steps(model, options, builder, values, std::vector<StepKey>(sequence.begin() + k, sequence.end()));
            break;
        }
        auto value = std::make_shared<const arma::mat>(compute_step(model, key, values));
        builder.add(key, *value);
        values[key] = std::move(value);
        for (const StepKey& input : step_inputs(model, key)) {
            if (last_read[input] == k) {
                values.erase(input);
            }
        }
    }
    return std::move(trace);
}

}  // namespace qkv
