// Decoding with a key/value cache (`qkv run FILE --decode`):
// attention computed one new token at a time, as a language model generates.
//
// At position t (1-based) only token t is projected: its key and value are
// appended to the cache of each key/value head (rotated at position t − 1
// first when RoPE is on), and its query, one row, is scored against the keys
// in that cache. Tokens before t are never projected again. This is computed
// from the model alone, not read from the full computation's matrices, and
// equals row t of the full computation's weights and head outputs (the tests
// ask for 1e-12): under a causal mask a token's row never changes once it has
// been computed.
//
// Rows are tokens, as everywhere: a key is a 1 × d_k row, the cache's keys
// are c × d_k with the oldest position first.
//
// Multi-head latent attention (mla:) is decoded as DeepSeek's inference code
// decodes it in its absorbed form (attn_impl "absorb"): one cache for every
// head, of each token's normed latent c (r numbers) and its rope key turned
// at its position (d_r numbers). Each head's query absorbs W_UK, so that it
// meets the latents themselves: q·k_j = [q_nope·W_UKᵀ, q_rope]·[c_j, k_rope,j];
// its output absorbs W_UV: z = (Σ_j weight_j·c_j)·W_UV. No head's keys or
// values are ever made.
#pragma once

#include "model/model.hpp"

#include <armadillo>

#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

// Why a model cannot be decoded token by token: decoding needs causal
// self-attention (mask: causal or a window, no padding, no context, no mask
// matrix). One entry per problem, empty when the model can be decoded.
struct DecodeObstacle {
    std::string found;     // "the example has padding"
    std::string expected;  // "no padding: a cache holds only real tokens"
    std::string hint;      // how to fix it
};
std::vector<DecodeObstacle> decode_obstacles(const Model& model);

// One key/value head's cache: the keys and values of the positions seen so
// far, at most `slots` of them. Once it is full, each new position overwrites
// the oldest one: a rolling buffer (Mistral's), where position p lives in slot
// (p − 1) mod slots. With a causal mask the slots are the n tokens and
// nothing is ever overwritten; with a window of W there are W slots. With
// mla its two parts are each position's normed latent and turned rope key.
class KeyValueCache {
public:
    KeyValueCache(arma::uword slots, arma::uword d_k, arma::uword d_v);

    // Stores the key (1 × d_k) and value (1 × d_v) of the next position.
    void append(const arma::rowvec& key, const arma::rowvec& value);

    arma::uword size() const;   // positions held
    arma::uword first() const;  // the oldest position held (1-based); 0 when empty
    arma::uword last() const;   // the newest position held (1-based); 0 when empty
    // The cached keys (size × d_k) and values (size × d_v), oldest first.
    arma::mat keys() const;
    arma::mat values() const;
    // What the cache holds in float64: size · (d_k + d_v) · 8 bytes.
    std::uint64_t bytes() const;

private:
    arma::uword slot_of(arma::uword position) const { return (position - 1) % m_keys.n_rows; }

    arma::mat m_keys;        // slots × d_k
    arma::mat m_values;      // slots × d_v
    arma::uword m_last = 0;  // positions appended so far
};

// One query head at one position: what the new token's query read and what
// it made of it. c is the number of cached positions, first … t.
struct DecodeRow {
    arma::uword t = 0;          // the new token's position, 1-based
    int head = 0;               // the query head, 1-based
    int kv_head = 0;            // the key/value head whose cache it read, 1-based
    arma::uword first = 0;      // the oldest cached position; the cache held first … t
    arma::rowvec query;         // 1 × d_k: x_t·W_Q (+ b_Q), rotated at position t − 1 with RoPE;
                                // mla: 1 × (r + d_r), [q_nope·W_UKᵀ, q_rope], the absorbed query
    arma::rowvec dots;          // 1 × c: q·k_j for each cached key (the `scores` step's row)
    arma::rowvec bias;          // 1 × c: ALiBi's −m_h·(t − j); empty without ALiBi
    arma::rowvec scores;        // 1 × c: what the softmax reads: q·k_j / scale (+ bias)
    arma::rowvec weights;       // 1 × c: softmax(scores), with the head's sink when set
    arma::rowvec head_output;   // 1 × d_v: weights · cached values
    arma::rowvec latent_output; // mla: 1 × r, weights · cached latents, which W_UV turns into head_output
};

struct DecodeTrace {
    arma::uword n = 0;          // tokens decoded
    arma::uword heads = 1;      // query heads H
    arma::uword kv_heads = 1;   // key/value heads G, one cache each
    arma::uword d_k = 0;
    arma::uword d_v = 0;
    arma::uword window = 0;     // the sliding window W; 0 for a causal mask (the cache keeps every position)
    // Every key and value written to the cache of key/value head g (index
    // g − 1), by position: row p − 1 is position p's (its key after RoPE).
    // The cache that row (t, h) read holds rows first − 1 … t − 1 of these.
    std::vector<arma::mat> keys;
    std::vector<arma::mat> values;
    // Position by position, query heads ascending within a position.
    std::vector<DecodeRow> rows;
    // mla: the one cache every head reads, by position as `keys` is: row p − 1
    // is position p's normed latent (n × r) and its rope key, turned (n × d_r)
    arma::uword kv_rank = 0;    // r; 0 without mla
    arma::uword rope_dim = 0;   // d_r
    arma::mat latents;
    arma::mat rope_keys;
    bool latent() const { return kv_rank != 0; }
    // Each position adds (d_k + d_v)·G·8 bytes to the caches (float64); with
    // mla (r + d_r)·8, against H·(d_n + d_r + d_v)·8 for every head's keys and
    // values (bytes_per_token_unabsorbed, 0 without mla).
    std::uint64_t bytes_per_token = 0;
    std::uint64_t bytes_per_token_unabsorbed = 0;
    // The positions the caches hold after position t: t, or at most W.
    arma::uword cached_after(arma::uword t) const;
    // The caches' size after position t, and after the last token.
    std::uint64_t bytes_after(arma::uword t) const { return bytes_per_token * cached_after(t); }
    std::uint64_t bytes() const { return bytes_after(n); }

    // The keys and values in the cache that `row` read (c × d_k and c × d_v).
    arma::mat cache_keys(const DecodeRow& row) const;
    arma::mat cache_values(const DecodeRow& row) const;
    // mla: the latents and rope keys in the cache that `row` read (c × r and c × d_r).
    arma::mat cache_latent(const DecodeRow& row) const;
    arma::mat cache_rope_keys(const DecodeRow& row) const;
};

// Decodes every token of the model, one at a time, through one KeyValueCache
// per key/value head (with mla, one cache of latents and rope keys). `round:` rounds each value as the full computation
// rounds its step. Throws std::invalid_argument when decode_obstacles() is
// not empty.
DecodeTrace decode(const Model& model);

}  // namespace qkv
