// The mistakes of check's catalogue (catalogue.cpp), step by step: for each
// step, the values it takes when it is done in each wrong way, worked out from
// the learner's own earlier values (diagnose.cpp searches them for the one
// that explains an answer). The forward pass's are made here, the backward
// pass's in mistakes_backward.cpp. Rows are tokens throughout: Q = X·W_Q.
#include "check/mistakes_parts.hpp"
#include "attention/divisor.hpp"

#include "check/catalogue.hpp"

#include "attention/attention.hpp"
#include "attention/step_handlers.hpp"
#include "render/table.hpp"

#include <cmath>
#include <cstdio>

namespace qkv::checking {

namespace {


// Softmax down each column (a classic mistake); a column of −∞ only gives NaN.
arma::mat softmax_columns(const arma::mat& S) { return softmax_rows(S.t()).t(); }

// ── projections: queries, keys, values ──────────────────────────────────────

struct Projection {
    StepId id;           // its name is the plural the messages use: "queries"
    const char* letter;  // "Q"
};

constexpr Projection k_projections[] = {{StepId::queries, "Q"}, {StepId::keys, "K"}, {StepId::values, "V"}};

const arma::mat& weight_of(const HeadWeights& head, const std::string& letter) {
    return letter == "Q" ? head.W_Q : letter == "K" ? head.W_K : head.W_V;
}

const std::optional<arma::rowvec>& bias_of(const HeadWeights& head, const std::string& letter) {
    return letter == "Q" ? head.b_Q : letter == "K" ? head.b_K : head.b_V;
}

// One projection of one head, as its mistakes name it: Q = (X + P)·W_Q + b_Q.
struct ProjectionParts {
    const Projection* projection = nullptr;
    StepKey key;
    const HeadWeights* head = nullptr;
    std::string letter;        // "Q"
    bool is_query = false;
    const arma::mat* source = nullptr;  // what it reads
    std::string source_name;   // "X", "(X + P)" or "C"
    const arma::mat* W = nullptr;
    const std::optional<arma::rowvec>* b = nullptr;
    std::string W_name;        // "W_Q"
    std::string bias_part;     // " + b_Q", or empty without a bias
    std::string correct;       // the correct operation, for every mistake in it
};

ProjectionParts projection_parts(const Model& model, const LearnerValues& L, const StepKey& key) {
    ProjectionParts p;
    for (const auto& candidate : k_projections) {
        p.projection = candidate.id == key.id ? &candidate : p.projection;
    }
    p.key = key;
    // keys and values are numbered by key/value head
    p.head = is_per_kv_head(key.id) ? &model.kv_weights(key.head) : &model.heads[static_cast<std::size_t>(key.head - 1)];
    p.letter = p.projection->letter;
    p.is_query = p.letter == "Q";
    p.source = p.is_query ? &L.query_source() : &L.key_source();
    const SourceNames names = source_names(model);
    p.source_name = p.is_query ? names.queries : names.keys;
    p.W = &weight_of(*p.head, p.letter);
    p.b = &bias_of(*p.head, p.letter);
    p.W_name = "W_" + p.letter;
    p.bias_part = *p.b ? " + b_" + p.letter : "";
    p.correct = p.letter + " = " + p.source_name + "·" + p.W_name + p.bias_part + ": each token's row times " +
                p.W_name + " (" + shape_text(p.W->n_rows, p.W->n_cols) + ")";
    return p;
}

// ── W·x: the column-vector convention ───────────────────────────────────────

// How many parts a projection's weights are split into: the query heads for
// W_Q, the key/value heads for W_K and W_V.
int parts_of(const Model& model, const std::string& letter) {
    return static_cast<int>(letter == "Q" ? model.n_heads() : model.n_kv_heads());
}

// Part i (1-based) of a projection's weights: query head i's, or key/value head i's.
const HeadWeights& part_weights(const Model& model, const std::string& letter, int i) {
    return letter == "Q" ? model.heads[static_cast<std::size_t>(i - 1)] : model.kv_weights(i);
}

// The one block a `weights:` or `pytorch:` file splits by columns into the
// heads (d_model × parts·d_k), rebuilt by putting the heads' matrices side by
// side, with its bias the same way; nullopt for a `heads:` list, which gives
// each head its own matrix and has no block.
struct WeightBlock {
    arma::mat W;
    std::optional<arma::rowvec> b;
};

std::optional<WeightBlock> weight_block(const Model& model, const std::string& letter) {
    if (model.weight_form == WeightForm::head_list) {
        return std::nullopt;
    }
    WeightBlock block;
    const int parts = parts_of(model, letter);
    for (int i = 1; i <= parts; ++i) {
        const HeadWeights& head = part_weights(model, letter, i);
        block.W = arma::join_rows(block.W, weight_of(head, letter));
        if (bias_of(head, letter)) {
            block.b = arma::rowvec(arma::join_rows(block.b.value_or(arma::rowvec()), *bias_of(head, letter)));
        }
    }
    return block;
}

// Part i's projection worked as W·x for each token, which is source·Wᵀ: with
// the part's own W when that is square, else, when the file splits one square
// block into heads, part i's columns of source·W_blockᵀ (the learner applies
// the whole block, then splits the result). nullopt when W·x cannot be formed
// (a `heads:` list of d_model × d_k matrices with d_k ≠ d_model).
std::optional<arma::mat> w_x_projection(const Model& model, const std::string& letter, int i, const arma::mat& source) {
    const HeadWeights& head = part_weights(model, letter, i);
    const arma::mat& W = weight_of(head, letter);
    if (W.is_square()) {
        return project(source, W.t(), bias_of(head, letter));
    }
    const auto block = weight_block(model, letter);
    if (!block || !block->W.is_square()) {
        return std::nullopt;
    }
    // the block in parts of W.n_cols columns each; part i is columns (i − 1)·w … i·w − 1
    const arma::mat whole = project(source, block->W.t(), block->b);
    const arma::uword width = W.n_cols;
    const auto first = static_cast<arma::uword>(i - 1) * width;
    return arma::mat(whole.cols(first, first + width - 1));
}

// The right inputs in the wrong arrangement: W·x instead of x·W, or another
// of the head's weight matrices.
void wrong_matrix_mistakes(const Model& model, const ProjectionParts& p, std::vector<Mistake>& out) {
    const std::string& letter = p.letter;
    const arma::mat& W = *p.W;
    // W·x: the column-vector convention applied to weights stored for x·W
    if (auto w_x = w_x_projection(model, letter, p.key.head, *p.source)) {
        // a head's W that is not square is part of a block split into heads: W·x was worked with the block
        const bool block = !W.is_square();
        const std::string whole = " the whole " + shape_text(W.n_rows, W.n_rows) + " " + p.W_name;
        if (model.layout == Layout::x_w) {
            out.push_back(one("projection_w_x",
                              "The " + step_text(p.projection->id) + " were computed as " + p.W_name +
                                  "·x for each token (the column-vector convention)" +
                                  (block ? " with" + whole + " before it was split into heads" : "") + ", which is " +
                                  p.source_name + "·" + p.W_name + "ᵀ.",
                              p.correct, p.key, std::move(*w_x)));
        } else {
            out.push_back(one("projection_w_x",
                              (block ? "The" + whole + " was used as written before it was split into heads"
                                     : p.W_name + " was used as written") +
                                  ", but this file writes weights out × in (layout: pytorch).",
                              letter + " = " + p.source_name + "·" + p.W_name + "ᵀ" + p.bias_part + " with " +
                                  p.W_name + " as written: the same as " +
                                  std::string(1, static_cast<char>(letter[0] + 32)) + " = " + p.W_name +
                                  "·x for each token",
                              p.key, std::move(*w_x)));
        }
    }
    // the wrong weight matrix: W_K for the queries, W_Q for the keys, ...
    for (const auto& other : k_projections) {
        const std::string other_letter = other.letter;
        if (other_letter == letter) {
            continue;
        }
        const arma::mat& W_other = weight_of(*p.head, other_letter);
        if (W_other.n_cols != W.n_cols) {
            continue;
        }
        const bool swapped = (letter == "Q" && other_letter == "K") || (letter == "K" && other_letter == "Q");
        out.push_back(one(swapped ? "weights_swapped" : "wrong_weight",
                          "The " + step_text(p.projection->id) + " were computed with W_" + other_letter +
                              " instead of " + p.W_name + (swapped ? ": the query and key weights are swapped." : "."),
                          p.correct, p.key, project(*p.source, W_other, bias_of(*p.head, other_letter))));
        // swapped weights whose biases stay where they were: Q = X·W_K + b_Q, K = X·W_Q + b_K
        const auto& b_other = bias_of(*p.head, other_letter);
        if (swapped && (*p.b || b_other)) {
            out.push_back(one("weights_swapped",
                              "The " + step_text(p.projection->id) + " were computed with W_" + other_letter +
                                  " instead of " + p.W_name +
                                  (*p.b ? ", keeping b_" + letter : ", without b_" + other_letter) +
                                  ": the query and key weights are swapped, but not their biases.",
                              p.correct, p.key, project(*p.source, W_other, *p.b)));
        }
    }
}

// A part of the projection left out or taken from the wrong place: the bias,
// the positions, the source of cross-attention, the head's own weights.
void wrong_part_mistakes(const Model& model, const LearnerValues& L, const ProjectionParts& p,
                         std::vector<Mistake>& out) {
    const std::string& letter = p.letter;
    const arma::mat& W = *p.W;
    if (*p.b) {
        out.push_back(one("bias_forgotten", "The bias b_" + letter + " was not added.",
                          letter + " = " + p.source_name + "·" + p.W_name + " + b_" + letter + ": b_" + letter +
                              " is added to every row",
                          p.key, project(*p.source, W, std::nullopt)));
    }
    if (model.P && !(model.C && !p.is_query)) {
        out.push_back(one("positions_forgotten",
                          "The positional encodings were left out: this is X·" + p.W_name + " instead of (X + P)·" +
                              p.W_name + ".",
                          p.correct, p.key, project(L(StepId::inputs), W, *p.b)));
    }
    if (model.C) {
        if (p.is_query) {
            out.push_back(one("cross_source_swapped",
                              "The queries were computed from the context C; in cross-attention the queries come "
                              "from the inputs and the keys and values from the context.",
                              p.correct, p.key, project(L(StepId::context), W, *p.b)));
        } else {
            out.push_back(one("cross_source_swapped",
                              "The " + step_text(p.projection->id) +
                                  " were computed from the inputs; in cross-attention the keys and values come from "
                                  "the context C.",
                              p.correct, p.key, project(L.query_source(), W, *p.b)));
        }
    }
    // another head's weights (another key/value head's, for keys and values)
    const int h = p.key.head;
    const bool kv = is_per_kv_head(p.key.id);
    const int heads = static_cast<int>(kv ? model.n_kv_heads() : model.n_heads());
    for (int other = 1; other <= heads; ++other) {
        if (other == h) {
            continue;
        }
        const HeadWeights& other_head = kv ? model.kv_weights(other) : model.heads[static_cast<std::size_t>(other - 1)];
        out.push_back(one("other_head_weights",
                          "The " + step_text(p.projection->id) + " of head " + std::to_string(h) +
                              " were computed with head " + std::to_string(other) + "'s " + p.W_name + ".",
                          "each head has its own weights: " + p.correct, p.key,
                          project(*p.source, weight_of(other_head, letter), bias_of(other_head, letter))));
    }
}

// Mistakes made in all of head h's projections at once, found from a later
// step (e.g. the scores) when the projections themselves are not answered.
void head_projection_mistakes(const Model& model, const LearnerValues& L, int h, std::vector<Mistake>& out) {
    const HeadWeights& head = model.heads[static_cast<std::size_t>(h - 1)];
    // the key/value head query head h reads: h itself unless heads share keys and values
    const int g = model.kv_head_of(h);
    const auto head_of = [&](StepId id) { return is_per_kv_head(id) ? g : h; };
    const arma::mat& source = L.query_source();
    const arma::mat& kv_source = L.key_source();
    const std::string source_name = source_names(model).queries;
    // the projection of each letter reads the queries' source or the keys'
    const auto source_of = [&](const std::string& letter) -> const arma::mat& {
        return letter == "Q" ? source : kv_source;
    };
    Mistake w_x{mistake_id("projection_w_x"),
                model.layout == Layout::x_w
                    ? "The projections were computed as W·x for each token (the column-vector convention), which is "
                      "X·Wᵀ."
                    : "The weights were used as written, but this file writes them out × in (layout: pytorch).",
                model.layout == Layout::x_w ? "Q = X·W_Q, K = X·W_K, V = X·W_V: each token's row times the weights"
                                            : "Q = X·W_Qᵀ, K = X·W_Kᵀ, V = X·W_Vᵀ with the weights as written",
                {},
                true};
    for (const auto& q : k_projections) {
        const std::string letter = q.letter;
        if (auto w_x_value = w_x_projection(model, letter, head_of(q.id), source_of(letter))) {
            w_x.values.emplace_back(StepKey{q.id, head_of(q.id)}, std::move(*w_x_value));
        }
    }
    if (w_x.values.size() > 1) {
        out.push_back(std::move(w_x));
    }
    Mistake swapped{mistake_id("weights_swapped"), "The query and key weights are swapped: Q was computed with W_K and K with W_Q.",
                    "Q = " + source_name + "·W_Q and K = " + (model.C ? std::string("C") : source_name) + "·W_K",
                    {},
                    true};
    swapped.values.emplace_back(StepKey{StepId::queries, h}, project(source, head.W_K, head.b_K));
    swapped.values.emplace_back(StepKey{StepId::keys, g}, project(kv_source, head.W_Q, head.b_Q));
    out.push_back(std::move(swapped));
    // the same with each bias left with its own projection: Q = X·W_K + b_Q, K = X·W_Q + b_K
    if (head.b_Q || head.b_K) {
        Mistake kept = out.back();
        kept.mistake = "The query and key weights are swapped: Q was computed with W_K and K with W_Q, each keeping its "
                       "own bias.";
        kept.values = {{StepKey{StepId::queries, h}, project(source, head.W_K, head.b_Q)},
                       {StepKey{StepId::keys, g}, project(kv_source, head.W_Q, head.b_K)}};
        out.push_back(std::move(kept));
    }
    if (int(head.b_Q.has_value()) + int(head.b_K.has_value()) + int(head.b_V.has_value()) > 1) {
        Mistake no_bias{mistake_id("bias_forgotten"), "The biases were not added to the projections.",
                        "Q = X·W_Q + b_Q, and the same for K and V: each bias is added to every row", {}, true};
        for (const auto& q : k_projections) {
            if (bias_of(head, q.letter)) {
                no_bias.values.emplace_back(StepKey{q.id, head_of(q.id)},
                                            project(source_of(q.letter), weight_of(head, q.letter), std::nullopt));
            }
        }
        out.push_back(std::move(no_bias));
    }
    if (model.C) {
        Mistake from_inputs{mistake_id("cross_source_swapped"),
                            "The keys and values were computed from the inputs; in cross-attention they come from the "
                            "context C.",
                            "K = C·W_K and V = C·W_V", {}, true};
        from_inputs.values.emplace_back(StepKey{StepId::keys, g}, project(source, head.W_K, head.b_K));
        from_inputs.values.emplace_back(StepKey{StepId::values, g}, project(source, head.W_V, head.b_V));
        out.push_back(std::move(from_inputs));
    }
    // (with shared key/value heads, another query head may rightly read the same keys)
    for (int other = 1; other <= static_cast<int>(model.n_heads()) && model.n_kv_heads() == model.n_heads(); ++other) {
        if (other == h) {
            continue;
        }
        const HeadWeights& other_head = model.heads[static_cast<std::size_t>(other - 1)];
        Mistake wrong_head{mistake_id("other_head_weights"),
                           "Head " + std::to_string(h) + " was computed with head " + std::to_string(other) + "'s weights.",
                           "each head has its own W_Q, W_K and W_V", {}, true};
        wrong_head.values.emplace_back(StepKey{StepId::queries, h}, project(source, other_head.W_Q, other_head.b_Q));
        wrong_head.values.emplace_back(StepKey{StepId::keys, h}, project(kv_source, other_head.W_K, other_head.b_K));
        wrong_head.values.emplace_back(StepKey{StepId::values, h}, project(kv_source, other_head.W_V, other_head.b_V));
        out.push_back(std::move(wrong_head));
    }
}

void projection_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const ProjectionParts parts = projection_parts(model, L, key);
    wrong_matrix_mistakes(model, parts, out);
    wrong_part_mistakes(model, L, parts, out);
    // the mistakes of all three projections are listed once, with the queries
    if (parts.is_query) {
        head_projection_mistakes(model, L, key.head, out);
    }
}

// ── RoPE ────────────────────────────────────────────────────────────────────

// Each pair turned by −p·θ_k instead of p·θ_k (the sines' signs swapped).
arma::mat rotate_backwards(const arma::mat& X, const Rope& rope) {
    arma::mat result = X;
    const arma::uword d = X.n_cols;
    for (arma::uword k = 0; k < d / 2; ++k) {
        const auto [a, b] = rope_pair(rope.style, k, d);
        for (arma::uword p = 0; p < X.n_rows; ++p) {
            const double angle = static_cast<double>(p) * rope_frequency(rope, k, d);
            result(p, a) = X(p, a) * std::cos(angle) + X(p, b) * std::sin(angle);
            result(p, b) = X(p, b) * std::cos(angle) - X(p, a) * std::sin(angle);
        }
    }
    return result;
}

void rope_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const StepKey read = step_inputs(model, key).front();
    const arma::mat& X = L(read.id, read.head);
    const Rope& rope = *model.rope;
    const std::string letter = key.id == StepId::rotated_queries ? "Q" : "K";
    const std::string correct = letter + "_rot: row p (from 0) turned pair by pair by p·θ_k, pairs " +
                                (rope.style == RopeStyle::half ? "(k, k + d_k/2) (style half)" : "(2k, 2k + 1) (style interleaved)");
    out.push_back(one("rope_not_applied", "RoPE was not applied: these are the " + step_text(read.id) + " as they were.",
                      correct, key, X));
    Rope other = rope;
    other.style = rope.style == RopeStyle::half ? RopeStyle::interleaved : RopeStyle::half;
    out.push_back(one("rope_other_style",
                      rope.style == RopeStyle::half
                          ? "The pairs were taken as (2k, 2k + 1), the interleaved style; this example pairs k with "
                            "k + d_k/2 (style half)."
                          : "The pairs were taken as (k, k + d_k/2), the half style; this example pairs 2k with 2k + 1 "
                            "(style interleaved).",
                      correct, key, rotate(X, other)));
    // positions counted from 1: row p turned by (p + 1)·θ_k
    arma::mat shifted(X.n_rows + 1, X.n_cols, arma::fill::zeros);
    shifted.rows(1, X.n_rows) = X;
    out.push_back(one("rope_positions_from_one", "The positions were counted from 1; the first token is at position 0.",
                      correct, key, arma::mat(rotate(shifted, rope).rows(1, X.n_rows))));
    out.push_back(one("rope_turned_backwards", "The pairs were turned the wrong way (by −p·θ_k): the signs of the sines are swapped.",
                      correct, key, rotate_backwards(X, rope)));
}

// ── ALiBi ───────────────────────────────────────────────────────────────────

void alibi_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const double slope = (*model.alibi)(static_cast<arma::uword>(key.head - 1));
    const arma::mat bias = position_bias(model.n(), model.m(), slope);
    if (key.id == StepId::position_bias) {
        out.push_back(one("alibi_sign", "The bias was added as +m·|i − j|; ALiBi lowers the scores of distant keys.",
                          "B[i,j] = −m·|i − j|", key, -bias));
        return;
    }
    const std::string correct = "S' + B: the scaled scores plus the position bias";
    out.push_back(one("alibi_bias_forgotten", "The position bias was not added.", correct, key,
                      L(StepId::scaled_scores, key.head)));
    if (model.scale() != 1.0) {
        out.push_back(one("alibi_bias_scaled", "The bias was added before scaling, so it was divided by " +
                                                   divisor_of(model).named + " too.",
                          correct + "; the bias is added after the scaling", key,
                          (L(StepId::scores, key.head) + L(StepId::position_bias, key.head)) / model.scale()));
    }
}

// ── scores, scaling, mask ───────────────────────────────────────────────────

void score_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const int h = key.head;
    // the queries and keys the scores read: rotated with RoPE, and the key/value head's keys
    const std::vector<StepKey> reads = step_inputs(model, key);
    const arma::mat& Q = L(reads[0].id, reads[0].head);
    const arma::mat& K = L(reads[1].id, reads[1].head);
    const std::string correct = "S = Q·Kᵀ: entry (i, j) is query i dotted with key j (row i of Q with row j of K)";
    if (model.n_kv_heads() > 1 && model.n_kv_heads() < model.n_heads()) {
        // the key/value heads taken in turn (torch's repeat) instead of in consecutive groups (repeat_interleave)
        const int tiled = (h - 1) % static_cast<int>(model.n_kv_heads()) + 1;
        if (tiled != reads[1].head) {
            out.push_back(one("kv_heads_in_turn",
                              "Query head " + std::to_string(h) + " was paired with key/value head " +
                                  std::to_string(tiled) + ", taking the key/value heads in turn (as torch's repeat "
                                  "does); they are shared by consecutive query heads.",
                              "query head h reads key/value head ⌈h·G/H⌉ (repeat_interleave): here key/value head " +
                                  std::to_string(reads[1].head),
                              key, Q * L(reads[1].id, tiled).t()));
        }
    }
    if (model.rope) {
        out.push_back(one("rope_forgotten", "The scores were computed from the queries and keys before RoPE rotated them.",
                          "S = Q_rot·K_rotᵀ: the rotated queries and keys", key,
                          L(StepId::queries, h) * L(StepId::keys, reads[1].head).t()));
    }
    if (Q.n_cols == K.n_rows) {
        out.push_back(one("scores_no_transpose", "The scores were computed as Q·K, without transposing K.", correct, key,
                          Q * K));
    }
    out.push_back(one("scores_k_qt",
                      "The scores were computed as K·Qᵀ, keys and queries the wrong way round: row i holds key i "
                      "against every query.",
                      correct, key, K * Q.t()));
    if (Q.n_rows == K.n_rows) {
        out.push_back(one("scores_qt_k", "The scores were computed as Qᵀ·K, which pairs up dimensions instead of tokens.",
                          correct, key, Q.t() * K));
    }
    if (model.scale() != 1.0) {
        out.push_back(one("scores_already_scaled",
                          "These scores are already divided by " + divisor_of(model).named +
                              "; the scores step is Q·Kᵀ alone.",
                          "S = Q·Kᵀ; the next step divides it: S' = " + divided(model, "S"), key,
                          Q * K.t() / model.scale()));
    }
    const arma::mat& V = L(StepId::values, model.kv_head_of(h));
    if (V.n_cols == Q.n_cols) {
        out.push_back(one("scores_used_values", "The scores were computed with the values instead of the keys: Q·Vᵀ.",
                          correct, key, Q * V.t()));
    }
}

void scaling_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const arma::mat& S = L(StepId::scores, key.head);
    const double d_k = static_cast<double>(model.d_k());
    const double d_model = static_cast<double>(model.d_model());
    const std::string dk = std::to_string(model.d_k());
    if (model.scale_kind == ScaleKind::none) {
        if (model.d_k() > 1) {
            out.push_back(one("scaled_without_scale",
                              "The scores were divided by √d_k = √" + dk +
                                  ", but this example does not scale them (scale: none).",
                              "S' = S: with scale: none the scores pass through unchanged", key, S / std::sqrt(d_k)));
        }
        return;
    }
    const Divisor divisor = divisor_of(model);
    const std::string correct = "S' = " + divided(model, "S") + (divisor.root ? " (" + divisor.exact + ")" : "");
    if (model.scale() != 1.0) {
        out.push_back(one("scaling_forgotten", "Scaling forgotten: the scores were not divided by " + divisor.named + ".",
                          correct, key, S));
    }
    const bool by_root = divisor.root;
    const std::string d_model_text = std::to_string(model.d_model());
    if (by_root && model.d_k() > 1 && model.d_model() == model.d_k() * model.d_k()) {
        // √d_model = d_k (d_model 4 split into heads of d_k 2): dividing by either
        // gives the same numbers, so one diagnosis names both, under the key scaled_by_dk
        out.push_back(one("scaled_by_dk",
                          "The scores were divided by d_k = " + dk + " instead of " + divisor.named +
                              " — or by √d_model = √" + d_model_text + " = " + dk +
                              "; the two are the same here and cannot be told apart.",
                          correct, key, S / d_k));
    } else {
        if (by_root && model.d_k() > 1) {
            out.push_back(one("scaled_by_dk",
                              "The scores were divided by d_k = " + dk + " instead of " + divisor.named + ".", correct,
                              key, S / d_k));
        }
        if (by_root && model.d_model() != model.d_k()) {
            out.push_back(one("scaled_by_sqrt_d_model",
                              "The scores were divided by √d_model = √" + d_model_text + " instead of " + divisor.named +
                                  ": d_k is the width of a query or key, not of the inputs.",
                              correct, key, S / std::sqrt(d_model)));
        }
    }
    if (model.scale() != 1.0) {
        out.push_back(one("scale_multiplied",
                          "The scores were multiplied by " + divisor.named + " instead of divided by it.", correct,
                          key, S * model.scale()));
    }
}

void mask_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const StepKey read = step_inputs(model, key).front();
    const arma::mat& S = L(read.id, read.head);
    const arma::mat allowed = model.allowed();
    if (model.mask_kind == MaskKind::window) {
        // Hugging Face's Mistral let one key more through
        Model wider = model;
        wider.window += 1;
        out.push_back(one("window_one_too_wide",
                          "The window let " + std::to_string(model.window + 1) + " keys through instead of " +
                              std::to_string(model.window) + ": a window of W counts the query's own key.",
                          "query i sees keys i − " + std::to_string(model.window - 1) + " … i, W = " +
                              std::to_string(model.window) + " keys with itself",
                          key, apply_mask(S, wider.allowed())));
    }
    const std::string correct = std::string("cells the mask blocks become −∞") +
                                (model.mask_kind == MaskKind::causal ? " (causal: query i sees keys 1 … i)" : "") +
                                ", so that the softmax gives them a weight of exactly 0";
    arma::mat zeroed = S;
    zeroed.elem(arma::find(allowed == 0.0)).zeros();
    out.push_back(one("mask_zero",
                      "Blocked cells were set to 0 instead of −∞; exp(0) = 1, so they would still get weight.", correct,
                      key, zeroed));
    out.push_back(one("mask_ignored", "The mask was not applied: blocked cells still hold their scores.", correct, key, S));
    if (allowed.is_square() && !arma::approx_equal(allowed, allowed.t(), "absdiff", 0.0)) {
        out.push_back(one("mask_transposed",
                          model.mask_kind == MaskKind::causal
                              ? "The causal mask was applied the wrong way round: query i was let see keys i … n "
                                "instead of 1 … i."
                              : "The mask was applied transposed: its row i was used for key i instead of query i.",
                          correct, key, apply_mask(S, allowed.t())));
    }
    out.push_back(one("mask_inverted",
                      "The mask was read the other way round (1 = blocked, as PyTorch's boolean attn_mask); in qkv 1 "
                      "means may attend.",
                      correct, key, apply_mask(S, 1.0 - allowed)));
}

// ── softmax ─────────────────────────────────────────────────────────────────

void softmax_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, std::vector<Mistake>& out) {
    const int h = key.head;
    const StepKey read = step_inputs(model, key).front();
    const arma::mat& M = L(read.id, read.head);
    if (model.sinks) {
        out.push_back(one("sink_forgotten",
                          "The sink was left out of the softmax, so each row sums to 1.",
                          "the sink logit s joins each row's sum: a_ij = exp(s'_ij) / (Σ_k exp(s'_ik) + exp(s))", key,
                          softmax_rows(M)));
    }
    const std::string correct = "A = softmax of each row: a_ij = exp(s'_ij) / Σ_k exp(s'_ik), so that each row sums to 1";
    out.push_back(one("softmax_columns", "The softmax was taken down each column instead of along each row.", correct,
                      key, softmax_columns(M)));
    // each row divided by its plain sum, blocked cells counting as 0; a row that
    // sums to 0 has no such value (NaN matches no answer), but the other rows can
    // still show the mistake, so a row left blank does not hide it
    arma::mat ratios = M;
    ratios.elem(arma::find_nonfinite(ratios)).zeros();
    for (arma::uword i = 0; i < ratios.n_rows; ++i) {
        const double sum = arma::accu(ratios.row(i));
        if (sum == 0.0) {
            ratios.row(i).fill(arma::datum::nan);
        } else {
            ratios.row(i) /= sum;
        }
    }
    out.push_back(one("softmax_no_exp", "Each row was divided by its sum without exponentiating first.", correct, key,
                      ratios));
    out.push_back(one("softmax_not_normalised", "The exponentials were not divided by their row's sum.", correct, key,
                      arma::exp(M)));
    if (model.masked()) {
        const StepKey unmasked = step_inputs(model, {StepId::masked_scores, h}).front();
        arma::mat after = softmax_rows(L(unmasked.id, unmasked.head));
        after.elem(arma::find(model.allowed() == 0.0)).zeros();
        out.push_back(one("mask_after_softmax",
                          "The mask was applied after the softmax: blocked weights were set to 0, and the rows no "
                          "longer sum to 1.",
                          "mask first (blocked scores become −∞), then take the softmax of each row", key, after));
    }
    arma::mat whole = arma::exp(M - M.max());
    whole /= arma::accu(whole);
    out.push_back(one("softmax_whole_matrix", "The softmax was taken over the whole matrix instead of each row.", correct,
                      key, whole));
}

// ── weighted sum, heads, output ─────────────────────────────────────────────

// The weighted sum of head h; `key` is head_output, or the output when that is Z itself.
void weighted_sum_mistakes(const Model& model, const LearnerValues& L, const StepKey& key, int h,
                           std::vector<Mistake>& out) {
    const arma::mat& A = L(StepId::weights, h);
    const arma::mat& V = L(StepId::values, model.kv_head_of(h));
    const std::string correct =
        "Z = A·V: row i is Σ_j a_ij · v_j, the value rows weighted by query i's attention weights";
    if (A.n_rows == V.n_rows) {
        out.push_back(one("output_at_v", "The weighted sum was computed as Aᵀ·V: the weights were transposed.", correct,
                          key, A.t() * V));
    }
    out.push_back(one("output_scores_v", "V was multiplied by the scores, not by the weights: the softmax was skipped.",
                      correct, key, L(StepId::scaled_scores, h) * V));
    const int g = model.kv_head_of(h);
    const int tiled = (h - 1) % static_cast<int>(model.n_kv_heads()) + 1;
    if (tiled != g) {
        // the key/value heads taken in turn (torch's repeat), as in the scores
        out.push_back(one("kv_heads_in_turn",
                          "Query head " + std::to_string(h) + " weighed the values of key/value head " +
                              std::to_string(tiled) + ", taking the key/value heads in turn (as torch's repeat "
                              "does); they are shared by consecutive query heads.",
                          "Z = A·V with the values of key/value head ⌈h·G/H⌉ (repeat_interleave): here key/value "
                          "head " + std::to_string(g),
                          key, A * L(StepId::values, tiled)));
    }
    const arma::mat& source = L.key_source();
    if (source.n_rows == A.n_cols) {
        out.push_back(one("output_weighted_inputs", "The weights were applied to the inputs instead of the values.",
                          correct, key, A * source));
    }
}

void head_mistakes(const Model& model, const Trace& trace, const LearnerValues& L, const StepKey& key,
                   std::vector<Mistake>& out) {
    const int n_heads = static_cast<int>(model.n_heads());
    arma::mat sum = L(StepId::head_output, 1);
    arma::mat true_sum = trace.find(StepId::head_output, 1)->values;
    arma::mat stacked = sum;
    arma::mat reversed = L(StepId::head_output, n_heads);
    for (int h = 2; h <= n_heads; ++h) {
        sum += L(StepId::head_output, h);
        true_sum += trace.find(StepId::head_output, h)->values;
        stacked = arma::join_cols(stacked, L(StepId::head_output, h));
        reversed = arma::join_rows(reversed, L(StepId::head_output, n_heads + 1 - h));
    }
    const arma::uword width = static_cast<arma::uword>(n_heads) * model.d_v();
    // the notation of the formulas, [Z_1 Z_2] or [Z_1 … Z_H]; the text report writes the subscripts as Z₁ Z₂
    const std::string correct = "concat = " + concat_formula(n_heads) + ": the heads side by side, one block of d_v columns each (" +
                                shape_text(model.n(), width) + ")";
    const std::string averaged = "The heads were averaged instead of concatenated.";
    const std::string summed = "The heads were added up instead of concatenated.";
    // Averaging the Z_h rounded to k decimals, as a learner does by hand, can
    // move the result by up to half a unit in the k-th decimal; adding them, by H halves.
    const double h_halves = 0.5 * static_cast<double>(n_heads);
    // the learner's own head outputs (their answers, or worked out from their earlier ones) ...
    out.push_back(one("heads_averaged", averaged, correct, key, sum / static_cast<double>(n_heads), 0.5));
    out.push_back(one("heads_summed", summed, correct, key, sum, h_halves));
    // ... and the true ones, for a learner whose written head outputs are not the ones they combined
    if (!arma::approx_equal(true_sum, sum, "absdiff", 0.0)) {
        out.push_back(one("heads_averaged", averaged, correct, key, true_sum / static_cast<double>(n_heads), 0.5));
        out.push_back(one("heads_summed", summed, correct, key, true_sum, h_halves));
    }
    out.push_back(one("heads_reversed", "The heads were concatenated in reverse order.", correct, key, reversed));
    out.push_back(one("heads_stacked", "The heads were stacked as rows instead of side by side.", correct, key, stacked));
}

void output_mistakes(const Model& model, const Trace& trace, const LearnerValues& L, const StepKey& key,
                     std::vector<Mistake>& out) {
    if (!model.W_O) {
        // with no W_O the output is the concatenation, or the one head's weighted sum
        if (model.n_heads() > 1) {
            head_mistakes(model, trace, L, key, out);
        } else {
            weighted_sum_mistakes(model, L, key, 1, out);
        }
        return;
    }
    const arma::mat& source = model.n_heads() > 1 ? L(StepId::concat) : L(StepId::head_output, 1);
    const std::string source_name = model.n_heads() > 1 ? "concat" : "Z";
    const std::string bias_part = model.b_O ? " + b_O" : "";
    const std::string correct = "O = " + source_name + "·W_O" + bias_part;
    if (source.n_cols == model.W_O->n_cols) {
        out.push_back(one("output_projection_forgotten", "W_O was not applied.", correct, key, source));
    }
    if (model.b_O) {
        out.push_back(one("bias_forgotten", "The bias b_O was not added.", correct + ": b_O is added to every row", key,
                          project(source, *model.W_O, std::nullopt)));
    }
    if (model.W_O->is_square()) {
        out.push_back(one("projection_w_x",
                          model.layout == Layout::x_w
                              ? "The output was computed as W_O·x for each token (the column-vector convention), "
                                "which is " + source_name + "·W_Oᵀ."
                              : "W_O was used as written, but this file writes weights out × in (layout: pytorch).",
                          correct, key, project(source, model.W_O->t(), model.b_O)));
    }
}


// What a step's mistakes are made from: the example, the true trace and the
// learner's values of the steps before it.
struct MistakesOf {
    const Model& model;
    const Trace& trace;
    const LearnerValues& L;
    const Values& learner;
    const StepKey& key;
};

using MistakeMaker = void (*)(const MistakesOf&, std::vector<Mistake>&);

// given, not computed; or a product or a sum with no classic way to go wrong that the others do not name
void no_mistakes(const MistakesOf&, std::vector<Mistake>&) {}

void encoded_mistakes(const MistakesOf& m, std::vector<Mistake>& out) {
    out.push_back(one("positions_not_added", "The positional encodings were not added: this is X, not X + P.",
                      "X + P: each token's vector plus its position's vector", m.key, m.L(StepId::inputs)));
}

}  // namespace

std::vector<Mistake> mistakes_in(const Model& model, const Trace& trace, const StepKey& key, const Values& learner) {
    const LearnerValues L(model, learner);
    std::vector<Mistake> out;
    using M = const MistakesOf&;
    using Out = std::vector<Mistake>&;
    static constexpr auto k_makers = step_handlers<MistakeMaker>(
        {
            {StepId::encoded, &encoded_mistakes},
            {StepId::queries, [](M m, Out out) { projection_mistakes(m.model, m.L, m.key, out); }},
            {StepId::keys, [](M m, Out out) { projection_mistakes(m.model, m.L, m.key, out); }},
            {StepId::values, [](M m, Out out) { projection_mistakes(m.model, m.L, m.key, out); }},
            {StepId::rotated_queries, [](M m, Out out) { rope_mistakes(m.model, m.L, m.key, out); }},
            {StepId::rotated_keys, [](M m, Out out) { rope_mistakes(m.model, m.L, m.key, out); }},
            {StepId::scores, [](M m, Out out) { score_mistakes(m.model, m.L, m.key, out); }},
            {StepId::scaled_scores, [](M m, Out out) { scaling_mistakes(m.model, m.L, m.key, out); }},
            {StepId::position_bias, [](M m, Out out) { alibi_mistakes(m.model, m.L, m.key, out); }},
            {StepId::biased_scores, [](M m, Out out) { alibi_mistakes(m.model, m.L, m.key, out); }},
            {StepId::masked_scores, [](M m, Out out) { mask_mistakes(m.model, m.L, m.key, out); }},
            {StepId::weights, [](M m, Out out) { softmax_mistakes(m.model, m.L, m.key, out); }},
            {StepId::head_output, [](M m, Out out) { weighted_sum_mistakes(m.model, m.L, m.key, m.key.head, out); }},
            {StepId::concat, [](M m, Out out) { head_mistakes(m.model, m.trace, m.L, m.key, out); }},
            {StepId::output, [](M m, Out out) { output_mistakes(m.model, m.trace, m.L, m.key, out); }},
            {StepId::grad_head_output, [](M m, Out out) { grad_head_output_mistakes(m.model, m.L, m.key, out); }},
            {StepId::grad_scaled_scores, [](M m, Out out) { softmax_backward_mistakes(m.L, m.key, out); }},
            {StepId::grad_scores, [](M m, Out out) { grad_scale_mistakes(m.model, m.L, m.key, out); }},
            {StepId::grad_queries, [](M m, Out out) { grad_queries_mistakes(m.model, m.L, m.key, out); }},
            {StepId::grad_keys, [](M m, Out out) { grad_keys_mistakes(m.model, m.L, m.key, out); }},
            {StepId::grad_values, [](M m, Out out) { grad_values_mistakes(m.model, m.L, m.key, out); }},
            {StepId::grad_w_query, [](M m, Out out) { grad_weight_mistakes(m.model, m.learner, m.key, out); }},
            {StepId::grad_w_key, [](M m, Out out) { grad_weight_mistakes(m.model, m.learner, m.key, out); }},
            {StepId::grad_w_value, [](M m, Out out) { grad_weight_mistakes(m.model, m.learner, m.key, out); }},
            {StepId::grad_w_output, [](M m, Out out) { grad_weight_mistakes(m.model, m.learner, m.key, out); }},
            {StepId::grad_in_proj_weight, [](M m, Out out) { grad_weight_mistakes(m.model, m.learner, m.key, out); }},
            {StepId::grad_out_proj_weight, [](M m, Out out) { grad_weight_mistakes(m.model, m.learner, m.key, out); }},
            {StepId::grad_inputs, [](M m, Out out) { grad_inputs_mistakes(m.model, m.L, m.key, out); }},
        },
        {.given = &no_mistakes, .forward = &no_mistakes, .gradient = &no_mistakes});
    k_makers[step_index(key.id)](MistakesOf{model, trace, L, learner, key}, out);
    return out;
}

}  // namespace qkv::checking
