// Decoding with a key/value cache: one new token at a time, each step on one
// row. Rows are tokens: x_t is 1 × d_model, q_t = x_t·W_Q is 1 × d_k.
#include "attention/decode.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qkv {

namespace {

// `round:` applies to decoding as to the full computation: each value is
// rounded as the step it belongs to, so that a learner's pencil-and-paper
// numbers come out the same one row at a time.
arma::rowvec as_step(const Model& model, StepId id, const arma::rowvec& row) {
    const auto decimals = step_rounding(model, id);
    return decimals ? arma::rowvec(round_to(row, *decimals)) : row;
}

// ALiBi's bias of the query at position t for the cached positions
// first … t: −m·(t − j), 0 (not −0) for the query's own position.
arma::rowvec alibi_row(arma::uword first, arma::uword t, double slope) {
    arma::rowvec bias(t - first + 1);
    for (arma::uword j = first; j <= t; ++j) {
        bias(j - first) = j == t ? 0.0 : -slope * static_cast<double>(t - j);
    }
    return bias;
}

// The projections' source row of token t (1-based): x_t, or x_t + p_t with
// positions, each rounded as its step.
arma::rowvec source_row(const Model& model, arma::uword t) {
    const arma::rowvec x = as_step(model, StepId::inputs, model.X.row(t - 1));
    if (!model.P) {
        return x;
    }
    const arma::rowvec p = as_step(model, StepId::positional, model.P->row(t - 1));
    return as_step(model, StepId::encoded, x + p);
}

// One projection of one row: (1 × out) = x (1 × d_model) · W (d_model × out) + b, rounded as `id`.
arma::rowvec project_row(const Model& model, StepId id, const arma::rowvec& x, const arma::mat& W,
                         const std::optional<arma::rowvec>& b) {
    return as_step(model, id, arma::rowvec(project(x, W, b)));
}

// The new query of head h at position t reads the cache of its key/value head.
DecodeRow attend(const Model& model, const KeyValueCache& cache, const arma::rowvec& x, arma::uword t, int h) {
    const HeadWeights& weights = model.heads.at(static_cast<std::size_t>(h - 1));
    DecodeRow row;
    row.t = t;
    row.head = h;
    row.kv_head = model.kv_head_of(h);
    row.first = cache.first();

    // the query (1 × d_k) of the new token only, rotated at its position t − 1
    row.query = project_row(model, StepId::queries, x, weights.W_Q, weights.b_Q);
    if (model.rope) {
        row.query = as_step(model, StepId::rotated_queries, arma::rowvec(rotate(row.query, *model.rope, t - 1)));
    }

    // dots (1 × c) = q (1 × d_k) · Kᵀ (d_k × c), the cached keys only
    row.dots = as_step(model, StepId::scores, arma::rowvec(scores(row.query, cache.keys())));
    row.scores = as_step(model, StepId::scaled_scores, row.dots / model.scale());
    if (model.alibi) {
        const double slope = (*model.alibi)(static_cast<arma::uword>(h - 1));
        row.bias = as_step(model, StepId::position_bias, alibi_row(row.first, t, slope));
        row.scores = as_step(model, StepId::biased_scores, row.scores + row.bias);
    }
    // every cached key is allowed: the cache holds exactly what the mask lets through
    row.scores = as_step(model, StepId::masked_scores, row.scores);

    // weights (1 × c) = softmax(scores), the head's sink joining the sum when set
    const arma::mat weights_row = model.sinks
                                      ? softmax_rows(row.scores, (*model.sinks)(static_cast<arma::uword>(h - 1)))
                                      : softmax_rows(row.scores);
    row.weights = as_step(model, StepId::weights, arma::rowvec(weights_row));

    // output (1 × d_v) = weights (1 × c) · V (c × d_v)
    row.head_output = as_step(model, StepId::head_output, arma::rowvec(weighted_sum(row.weights, cache.values())));
    return row;
}

}  // namespace

std::vector<DecodeObstacle> decode_obstacles(const Model& model) {
    std::vector<DecodeObstacle> problems;
    if (model.cross()) {
        problems.push_back({"the example is cross-attention (context:)",
                            "self-attention, whose keys and values come from the tokens generated so far",
                            "remove context: and context_tokens:"});
    }
    switch (model.mask_kind) {
        case MaskKind::none:
            problems.push_back({"the example has no mask",
                                "mask: causal or mask: {window: W}, so that no token sees a later one",
                                "add mask: causal to the example"});
            break;
        case MaskKind::matrix:
            problems.push_back({"the example's mask is a matrix",
                                "mask: causal or mask: {window: W}, whose cache is the tokens so far",
                                "write mask: causal (or mask: {window: W}) instead of the matrix"});
            break;
        case MaskKind::causal:
        case MaskKind::window:
            break;
    }
    if (model.padding) {
        problems.push_back({"the example has padding", "no padding, since a cache holds only real tokens",
                            "remove padding: and the padded tokens"});
    }
    return problems;
}

// ── the cache ───────────────────────────────────────────────────────────────
KeyValueCache::KeyValueCache(arma::uword slots, arma::uword d_k, arma::uword d_v)
    : m_keys(slots, d_k, arma::fill::zeros), m_values(slots, d_v, arma::fill::zeros) {
    if (slots == 0) {
        throw std::invalid_argument("a key/value cache needs at least one slot");
    }
}

void KeyValueCache::append(const arma::rowvec& key, const arma::rowvec& value) {
    ++m_last;
    // the slot of the position W before, when the cache is full
    m_keys.row(slot_of(m_last)) = key;
    m_values.row(slot_of(m_last)) = value;
}

arma::uword KeyValueCache::size() const { return std::min(m_last, m_keys.n_rows); }

arma::uword KeyValueCache::first() const { return m_last == 0 ? 0 : m_last - size() + 1; }

arma::uword KeyValueCache::last() const { return m_last; }

arma::mat KeyValueCache::keys() const {
    arma::mat result(size(), m_keys.n_cols);
    for (arma::uword p = first(); p != 0 && p <= m_last; ++p) {
        result.row(p - first()) = m_keys.row(slot_of(p));
    }
    return result;
}

arma::mat KeyValueCache::values() const {
    arma::mat result(size(), m_values.n_cols);
    for (arma::uword p = first(); p != 0 && p <= m_last; ++p) {
        result.row(p - first()) = m_values.row(slot_of(p));
    }
    return result;
}

std::uint64_t KeyValueCache::bytes() const { return size() * (m_keys.n_cols + m_values.n_cols) * sizeof(double); }

// ── the decode trace ────────────────────────────────────────────────────────
arma::uword DecodeTrace::cached_after(arma::uword t) const { return window == 0 ? t : std::min(t, window); }

arma::mat DecodeTrace::cache_keys(const DecodeRow& row) const {
    return keys.at(static_cast<std::size_t>(row.kv_head - 1)).rows(row.first - 1, row.t - 1);
}

arma::mat DecodeTrace::cache_values(const DecodeRow& row) const {
    return values.at(static_cast<std::size_t>(row.kv_head - 1)).rows(row.first - 1, row.t - 1);
}

DecodeTrace decode(const Model& model) {
    if (!decode_obstacles(model).empty()) {
        throw std::invalid_argument("decoding needs causal self-attention without padding");
    }
    DecodeTrace trace;
    trace.n = model.n();
    trace.heads = model.n_heads();
    trace.kv_heads = model.n_kv_heads();
    trace.d_k = model.d_k();
    trace.d_v = model.d_v();
    trace.window = model.mask_kind == MaskKind::window ? model.window : 0;
    trace.bytes_per_token = (trace.d_k + trace.d_v) * trace.kv_heads * sizeof(double);

    // one cache per key/value head; a window needs no more slots than it lets through
    const arma::uword slots = trace.window == 0 ? trace.n : std::min(trace.window, trace.n);
    std::vector<KeyValueCache> caches(trace.kv_heads, KeyValueCache(slots, trace.d_k, trace.d_v));
    trace.keys.assign(trace.kv_heads, arma::mat(trace.n, trace.d_k));
    trace.values.assign(trace.kv_heads, arma::mat(trace.n, trace.d_v));

    for (arma::uword t = 1; t <= trace.n; ++t) {
        // only the new token is projected: its key and value join each cache
        const arma::rowvec x = source_row(model, t);
        for (int g = 1; g <= static_cast<int>(trace.kv_heads); ++g) {
            const HeadWeights& kv = model.kv_weights(g);
            arma::rowvec key = project_row(model, StepId::keys, x, kv.W_K, kv.b_K);
            if (model.rope) {
                // turned once, at its own position, and stored turned
                key = as_step(model, StepId::rotated_keys, arma::rowvec(rotate(key, *model.rope, t - 1)));
            }
            const arma::rowvec value = project_row(model, StepId::values, x, kv.W_V, kv.b_V);
            caches[static_cast<std::size_t>(g - 1)].append(key, value);
            trace.keys[static_cast<std::size_t>(g - 1)].row(t - 1) = key;
            trace.values[static_cast<std::size_t>(g - 1)].row(t - 1) = value;
        }
        // then the new token's query, in each query head, reads its key/value head's cache
        for (int h = 1; h <= static_cast<int>(trace.heads); ++h) {
            trace.rows.push_back(attend(model, caches[static_cast<std::size_t>(model.kv_head_of(h) - 1)], x, t, h));
        }
    }
    return trace;
}

}  // namespace qkv
