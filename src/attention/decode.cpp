// Decoding with a key/value cache: one new token at a time, each step on one
// row. Rows are tokens: x_t is 1 × d_model, q_t = x_t·W_Q is 1 × d_k.
#include "attention/decode.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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

// The steps decoding computes for each token: the example's steps before
// concat, in the table's order, without its weights (which are given).
std::vector<StepId> decoded_steps(const Model& model) {
    std::vector<StepId> ids;
    for (const StepId id : all_steps()) {
        if (id == StepId::concat) {
            break;
        }
        if (!step_row(id).parameter && step_exists(model, id)) {
            ids.push_back(id);
        }
    }
    return ids;
}

// The step of key/value head g that query heads read, among those of `reader`.
StepId kv_input(const Model& model, StepId reader) {
    for (const StepKey& input : step_inputs(model, {reader, 1})) {
        if (is_per_kv_head(input.id)) {
            return input.id;
        }
    }
    throw std::logic_error(step_text(reader) + " reads no step of a key/value head");
}

// One step at the new token, as its row of the step table says: compute() on
// the token's row (and the caches), or the row's own function of the positions.
arma::rowvec at_token(const Model& model, const StepKey& key, const TokenPositions& at,
                      const std::vector<const arma::mat*>& inputs) {
    const StepRow& row = step_row(key.id);
    const arma::mat value = row.token == OneToken::by_row ? row.compute(model, key.head, inputs)
                                                          : row.decode(model, key.head, at, inputs);
    return as_step(model, key.id, arma::rowvec(value));
}

// Step `key` at the new token into `now`, which holds this token's rows (and
// the caches) of the steps it reads.
void compute_row(const Model& model, const StepKey& key, const TokenPositions& at,
                 std::map<StepKey, arma::mat>& now) {
    std::vector<const arma::mat*> inputs;
    for (const StepKey& input : step_inputs(model, key)) {
        inputs.push_back(&now.at(input));
    }
    now[key] = at_token(model, key, at, inputs);
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
    if (problems.empty()) {
        for (const StepId id : decoded_steps(model)) {
            if (step_row(id).token == OneToken::none) {
                problems.push_back({"decoding has no one-token form of the step " + step_text(id),
                                    "an example whose steps decoding computes",
                                    "leave out the key that makes " + step_text(id)});
            }
        }
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

arma::mat DecodeTrace::cache_latent(const DecodeRow& row) const { return latents.rows(row.first - 1, row.t - 1); }

arma::mat DecodeTrace::cache_rope_keys(const DecodeRow& row) const {
    return rope_keys.rows(row.first - 1, row.t - 1);
}

namespace {

// A decode trace with the example's sizes and window, and nothing decoded yet.
DecodeTrace sizes_of(const Model& model) {
    DecodeTrace trace;
    trace.n = model.n();
    trace.heads = model.n_heads();
    trace.kv_heads = model.n_kv_heads();
    trace.d_k = model.d_k();
    trace.d_v = model.d_v();
    trace.window = model.mask_kind == MaskKind::window ? model.window : 0;
    return trace;
}

// Multi-head latent attention, absorbed (DeepSeek's attn_impl "absorb"): one
// cache of [c, k_rope] per position for every head; each head's query turned
// into the latent's terms by W_UK, its output out of them by W_UV.
DecodeTrace decode_latent(const Model& model) {
    const Mla& mla = *model.mla;
    DecodeTrace trace = sizes_of(model);
    trace.kv_rank = mla.kv_rank;
    trace.rope_dim = mla.rope_dim;
    trace.bytes_per_token = (mla.kv_rank + mla.rope_dim) * sizeof(double);
    trace.bytes_per_token_unabsorbed = trace.heads * (mla.nope_dim + mla.rope_dim + mla.v_dim) * sizeof(double);
    trace.latents.set_size(trace.n, mla.kv_rank);
    trace.rope_keys.set_size(trace.n, mla.rope_dim);
    const arma::uword slots = trace.window == 0 ? trace.n : std::min(trace.window, trace.n);
    // one cache for every head, its two parts a position's normed latent and its turned rope key
    KeyValueCache cache(slots, mla.kv_rank, mla.rope_dim);
    // the rope key alone turns whole: the rope part of a head, without the d_n elements before it
    Rope rope_part = *model.rope;
    rope_part.skip = 0;

    // what every head reads (x_t, the latents, the rope key), and each query head's steps
    std::vector<StepId> shared;
    std::vector<StepId> query_steps;
    for (const StepId id : decoded_steps(model)) {
        if (!is_per_head(id)) {
            shared.push_back(id);
        } else if (!is_per_kv_head(id) && id != StepId::scores && id != StepId::head_output) {
            query_steps.push_back(id);
        }
    }
    const arma::uword d_n = mla.nope_dim;
    for (arma::uword t = 1; t <= trace.n; ++t) {
        std::map<StepKey, arma::mat> now;
        TokenPositions at{t - 1, t - 1};
        const auto compute = [&](const StepKey& key) { compute_row(model, key, at, now); };
        for (const StepId id : shared) {
            compute({id, 0});
        }
        // the new token joins the cache: its normed latent and its rope key, turned at its position
        const arma::rowvec latent = now.at({StepId::normed_kv_latent, 0});
        const arma::rowvec rope_key =
            as_step(model, StepId::rotated_keys, arma::rowvec(rotate(now.at({StepId::rope_keys, 0}), rope_part, t - 1)));
        cache.append(latent, rope_key);
        trace.latents.row(t - 1) = latent;
        trace.rope_keys.row(t - 1) = rope_key;
        const arma::mat cached_latents = cache.keys();
        const arma::mat cached = arma::join_rows(cached_latents, cache.values());  // [c, k_rope], a row each
        at.first_key = cache.first() - 1;

        for (int h = 1; h <= static_cast<int>(trace.heads); ++h) {
            DecodeRow row;
            row.t = t;
            row.head = h;
            row.kv_head = model.kv_head_of(h);
            row.first = cache.first();
            const HeadWeights& weights = model.kv_weights(row.kv_head);
            // the steps before the scores (queries, rotated_queries), then the absorbed query
            std::vector<StepId>::const_iterator id = query_steps.begin();
            for (; id != query_steps.end() && *id < StepId::scores; ++id) {
                compute({*id, h});
            }
            const arma::rowvec q = now.at({scored_queries(model), h});
            row.query = arma::join_rows(q.head_cols(d_n) * weights.W_K.t(), q.tail_cols(mla.rope_dim));
            // q·k_j for each cached position, from the latents and rope keys alone
            row.dots = as_step(model, StepId::scores, arma::rowvec(row.query * cached.t()));
            now[{StepId::scores, h}] = row.dots;
            for (; id != query_steps.end(); ++id) {
                compute({*id, h});
            }
            if (model.alibi) {
                row.bias = now.at({StepId::position_bias, h});
            }
            row.scores = now.at(step_inputs(model, {StepId::weights, h}).front());
            row.weights = now.at({StepId::weights, h});
            // the weighted latents, then W_UV
            row.latent_output = row.weights * cached_latents;
            row.head_output = as_step(model, StepId::head_output, arma::rowvec(row.latent_output * weights.W_V));
            trace.rows.push_back(std::move(row));
        }
    }
    return trace;
}

}  // namespace

DecodeTrace decode(const Model& model) {
    if (!decode_obstacles(model).empty()) {
        throw std::invalid_argument("decoding needs causal self-attention without padding");
    }
    if (model.mla) {
        return decode_latent(model);
    }
    DecodeTrace trace = sizes_of(model);
    trace.bytes_per_token = (trace.d_k + trace.d_v) * trace.kv_heads * sizeof(double);

    // one cache per key/value head; a window needs no more slots than it lets through
    const arma::uword slots = trace.window == 0 ? trace.n : std::min(trace.window, trace.n);
    std::vector<KeyValueCache> caches(trace.kv_heads, KeyValueCache(slots, trace.d_k, trace.d_v));
    trace.keys.assign(trace.kv_heads, arma::mat(trace.n, trace.d_k));
    trace.values.assign(trace.kv_heads, arma::mat(trace.n, trace.d_v));

    // the steps of each kind of head, and which steps of a key/value head the caches hold
    std::vector<StepId> shared;
    std::vector<StepId> per_kv_head;
    std::vector<StepId> per_query_head;
    for (const StepId id : decoded_steps(model)) {
        (!is_per_head(id) ? shared : is_per_kv_head(id) ? per_kv_head : per_query_head).push_back(id);
    }
    const StepId cached_keys = kv_input(model, StepId::scores);
    const StepId cached_values = kv_input(model, StepId::head_output);

    for (arma::uword t = 1; t <= trace.n; ++t) {
        // this token's rows by step and head, the rows of a step before it only as its cache
        std::map<StepKey, arma::mat> now;
        TokenPositions at{t - 1, t - 1};
        const auto compute = [&](const StepKey& key) { compute_row(model, key, at, now); };
        // what every head reads (x_t, or x_t + p_t)
        for (const StepId id : shared) {
            compute({id, 0});
        }
        // only the new token is projected: its key and value join each cache (the key turned at its position)
        // step by step, each for every head, as a step of one head may read every head's (qk_norm over: all)
        for (const StepId id : per_kv_head) {
            for (int g = 1; g <= static_cast<int>(trace.kv_heads); ++g) {
                compute({id, g});
            }
        }
        for (int g = 1; g <= static_cast<int>(trace.kv_heads); ++g) {
            const arma::rowvec key = now.at({cached_keys, g});
            const arma::rowvec value = now.at({cached_values, g});
            caches[static_cast<std::size_t>(g - 1)].append(key, value);
            trace.keys[static_cast<std::size_t>(g - 1)].row(t - 1) = key;
            trace.values[static_cast<std::size_t>(g - 1)].row(t - 1) = value;
        }
        // then the new token's query, in each query head, reads its key/value head's cache
        for (int g = 1; g <= static_cast<int>(trace.kv_heads); ++g) {
            const KeyValueCache& cache = caches[static_cast<std::size_t>(g - 1)];
            now[{cached_keys, g}] = cache.keys();
            now[{cached_values, g}] = cache.values();
            at.first_key = cache.first() - 1;
            // a step of the key/value head that is not cached has only this token's row: no query reads it
            for (const StepId id : per_kv_head) {
                if (id != cached_keys && id != cached_values) {
                    now.erase({id, g});
                }
            }
        }
        for (const StepId id : per_query_head) {
            for (int h = 1; h <= static_cast<int>(trace.heads); ++h) {
                compute({id, h});
            }
        }
        for (int h = 1; h <= static_cast<int>(trace.heads); ++h) {
            DecodeRow row;
            row.t = t;
            row.head = h;
            row.kv_head = model.kv_head_of(h);
            row.first = caches[static_cast<std::size_t>(row.kv_head - 1)].first();
            row.query = now.at(step_inputs(model, {StepId::scores, h}).front());
            row.dots = now.at({StepId::scores, h});
            if (model.alibi) {
                row.bias = now.at({StepId::position_bias, h});
            }
            row.scores = now.at(step_inputs(model, {StepId::weights, h}).front());
            row.weights = now.at({StepId::weights, h});
            row.head_output = now.at({StepId::head_output, h});
            trace.rows.push_back(std::move(row));
        }
    }
    return trace;
}

}  // namespace qkv
