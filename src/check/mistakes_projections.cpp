// The catalogue's rows for the encoded inputs, the projections and RoPE
// (catalogue.hpp). Rows are tokens: Q = (X + P)·W_Q + b_Q.
#include "check/mistakes_parts.hpp"

#include "base/numbers.hpp"

#include "attention/attention.hpp"
#include "render/table.hpp"

#include <cmath>

namespace qkv::checking {

namespace {

// ── one projection as its mistakes name it ─────────────────────────────────

struct Projection {
    StepId id;           // its name is the plural the messages use: "queries"
    const char* letter;  // "Q"
};

constexpr Projection k_projections[] = {{StepId::queries, "Q"}, {StepId::keys, "K"}, {StepId::values, "V"}};
constexpr StepSet k_projection_steps = {StepId::queries, StepId::keys, StepId::values};

const arma::mat& weight_of(const HeadWeights& head, const std::string& letter) {
    return letter == "Q" ? head.W_Q : letter == "K" ? head.W_K : head.W_V;
}

const std::optional<arma::rowvec>& bias_of(const HeadWeights& head, const std::string& letter) {
    return letter == "Q" ? head.b_Q : letter == "K" ? head.b_K : head.b_V;
}

// One projection of one head: Q = (X + P)·W_Q + b_Q.
struct ProjectionParts {
    StepId id = StepId::queries;
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

ProjectionParts projection_parts(const Attempt& a) {
    ProjectionParts p;
    for (const auto& candidate : k_projections) {
        if (candidate.id == a.key.id) {
            p.letter = candidate.letter;
        }
    }
    p.id = a.key.id;
    // keys and values are numbered by key/value head
    p.head = is_per_kv_head(a.key.id) ? &a.model.kv_weights(a.key.head)
                                      : &a.model.heads[static_cast<std::size_t>(a.key.head - 1)];
    p.is_query = p.letter == "Q";
    p.source = p.is_query ? &a.L.query_source() : &a.L.key_source();
    const SourceNames names = source_names(a.model);
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

// The wrong weight matrix for a projection: W_K for the queries, W_Q for the
// keys (swapped), or any other of the head's matrices of the same width.
// `swapped` picks the pair Q and K; the others are wrong_weight's.
void other_weight_mistakes(const Attempt& a, const Made& made, bool swapped) {
    const ProjectionParts p = projection_parts(a);
    for (const auto& other : k_projections) {
        const std::string other_letter = other.letter;
        const bool pair = (p.letter == "Q" && other_letter == "K") || (p.letter == "K" && other_letter == "Q");
        if (other_letter == p.letter || pair != swapped) {
            continue;
        }
        const arma::mat& W_other = weight_of(*p.head, other_letter);
        if (W_other.n_cols != p.W->n_cols) {
            continue;
        }
        made("The " + step_text(p.id) + " were computed with W_" + other_letter + " instead of " + p.W_name +
                 (swapped ? ": the query and key weights are swapped." : "."),
             p.correct, project(*p.source, W_other, bias_of(*p.head, other_letter)));
        // swapped weights whose biases stay where they were: Q = X·W_K + b_Q, K = X·W_Q + b_K
        const auto& b_other = bias_of(*p.head, other_letter);
        if (swapped && (*p.b || b_other)) {
            made("The " + step_text(p.id) + " were computed with W_" + other_letter + " instead of " + p.W_name +
                     (*p.b ? ", keeping b_" + p.letter : ", without b_" + other_letter) +
                     ": the query and key weights are swapped, but not their biases.",
                 p.correct, project(*p.source, W_other, *p.b));
        }
    }
}

// ── all of a head's projections at once ────────────────────────────────────

// A mistake made in all of head h's projections, found from a later step (e.g.
// the scores) when the projections themselves are not answered; listed with
// the queries. What each projection reads and which head it belongs to:
struct HeadProjections {
    const HeadWeights& head;
    int h;
    int g;  // the key/value head query head h reads: h itself unless heads share keys and values
    const arma::mat& source;
    const arma::mat& kv_source;
    std::string source_name;

    explicit HeadProjections(const Attempt& a)
        : head(a.model.heads[static_cast<std::size_t>(a.key.head - 1)]),
          h(a.key.head),
          g(a.model.kv_head_of(a.key.head)),
          source(a.L.query_source()),
          kv_source(a.L.key_source()),
          source_name(source_names(a.model).queries) {}

    int head_of(StepId id) const { return is_per_kv_head(id) ? g : h; }
    const arma::mat& source_of(const std::string& letter) const { return letter == "Q" ? source : kv_source; }
};

bool has_bias(const Attempt& a) { return projection_parts(a).b->has_value(); }
bool has_context(const Attempt& a) { return a.model.C.has_value(); }

// ── RoPE ────────────────────────────────────────────────────────────────────

constexpr StepSet k_rotated_steps = {StepId::rotated_queries, StepId::rotated_keys};

// With mla the queries, keys and values are made from latents, and each key
// ends with the shared rope key: the projections' recipes, which project X
// (or C) through W_Q, W_K and W_V, do not fit them.
bool projects_x(const Attempt& a) { return !a.model.mla; }

// What RoPE turns: the queries or keys as projected.
const arma::mat& unrotated_of(const Attempt& a) {
    const StepKey read = step_inputs(a.model, a.key).front();
    return a.L(read.id, read.head);
}

std::string rope_correct(const Attempt& a) {
    const std::string letter = a.key.id == StepId::rotated_queries ? "Q" : "K";
    if (a.model.mla) {
        return letter + "_rot = [" + letter + "_nope  RoPE(" + letter + "_rope)]: only the last d_r = " +
               std::to_string(a.model.mla->rope_dim) + " elements turn, row p (from 0) by p·θ_k, θ_k = base^(−2k/d_r)";
    }
    const bool partial = a.model.rope->rotated(a.model.d_k()) < a.model.d_k();
    return letter + "_rot: row p (from 0) turned pair by pair by p·θ_k, pairs " +
           (a.model.rope->style == RopeStyle::half ? (partial ? "(k, k + d_rot/2) (style half)" : "(k, k + d_k/2) (style half)")
                                                   : "(2k, 2k + 1) (style interleaved)") +
           (partial ? ", the first d_rot = " + std::to_string(a.model.rope->rotated(a.model.d_k())) +
                          " elements only"
                    : "");
}

// RoPE as this example turns it, with another Rope: the same positions, and
// the length dynamic scaling sees
arma::mat rotate_as(const Attempt& a, const arma::mat& X, const Rope& rope) { return rotate(X, rope, 0, a.model.n()); }

using A = const Attempt&;
using M = const Made&;

// ── QK-norm ─────────────────────────────────────────────────────────────────

constexpr StepSet k_normed_steps = {StepId::normed_queries, StepId::normed_keys};

// The rows the norm reads, side by side (the head's own, or over: all every
// head's), normed with this gain over runs of `group` columns after `prepare`,
// then this head's columns.
template <class Prepare>
arma::mat normed_with(const Attempt& a, const arma::rowvec& gain, arma::uword group, const Prepare& prepare) {
    arma::mat rows;
    for (const StepKey& read : step_inputs(a.model, a.key)) {
        rows = arma::join_rows(rows, a.L(read.id, read.head));
    }
    const arma::uword d_k = a.model.d_k();
    if (rows.n_cols == 0 || group == 0 || rows.n_cols % group != 0 || gain.n_elem != group) {
        return {};
    }
    prepare(rows, group);
    rms_norm_columns(rows.memptr(), rows.n_rows, rows.n_cols, group, gain.memptr(), a.model.qk_norm_eps());
    const arma::uword first = a.model.qk_norm->over_all ? static_cast<arma::uword>(a.key.head - 1) * d_k : 0;
    return rows.cols(first, first + d_k - 1);
}
const auto k_as_read = [](arma::mat&, arma::uword) {};

bool normed_queries(const Attempt& a) { return a.key.id == StepId::normed_queries; }
// the run the mean of squares is over: a head's d_k, or over: all the whole row
arma::uword norm_group(const Attempt& a) {
    return a.model.qk_norm->over_all ? (normed_queries(a) ? a.model.n_heads() : a.model.n_kv_heads()) * a.model.d_k()
                                     : a.model.d_k();
}

std::string norm_correct(const Attempt& a) {
    const QkNorm& norm = *a.model.qk_norm;
    return std::string(normed_queries(a) ? "Q_norm" : "K_norm") + ": each row x / √(mean(x²) + eps) ∘ " +
           (norm.offset != 0.0 ? "(1 + γ)" : "γ") + ", the mean over " +
           (norm.over_all ? "the token's whole projection (over: all)" : "the head's d_k values");
}

// made with a result only when the learner's shapes allowed it
void made_if(const Made& made, const std::string& what, const std::string& correct, arma::mat value) {
    if (!value.is_empty()) {
        made(what, correct, std::move(value));
    }
}

constexpr MistakeRow k_rows[] = {
    // ── the encoded inputs ──
    {.id = "positions_not_added", .steps = {StepId::encoded},
     .man = R"roff(The encoded inputs written as X, without adding P.)roff",
     .make = [](A a, M made) {
         made("The positional encodings were not added: this is X, not X + P.",
              "X + P: each token's vector plus its position's vector", a.L(StepId::inputs));
     }},

    // ── each projection on its own ──
    {.id = "projection_w_x", .steps = k_projection_steps, .classic = true,
     .man = R"roff(The projections computed as W\(pcx (X\(pcW^T), or weights in PyTorch's layout used as written.)roff",
     .applies = &projects_x,
     .make = [](A a, M made) {
         const ProjectionParts p = projection_parts(a);
         auto w_x = w_x_projection(a.model, p.letter, a.key.head, *p.source);
         if (!w_x) {
             return;
         }
         // a head's W that is not square is part of a block split into heads: W·x was worked with the block
         const bool block = !p.W->is_square();
         const std::string whole = " the whole " + shape_text(p.W->n_rows, p.W->n_rows) + " " + p.W_name;
         if (a.model.layout == Layout::x_w) {
             made("The " + step_text(p.id) + " were computed as " + p.W_name +
                      "·x for each token (the column-vector convention)" +
                      (block ? " with" + whole + " before it was split into heads" : "") + ", which is " +
                      p.source_name + "·" + p.W_name + "ᵀ.",
                  p.correct, std::move(*w_x));
         } else {
             made((block ? "The" + whole + " was used as written before it was split into heads"
                         : p.W_name + " was used as written") +
                      ", but this file writes weights out × in (layout: pytorch).",
                  p.letter + " = " + p.source_name + "·" + p.W_name + "ᵀ" + p.bias_part + " with " + p.W_name +
                      " as written: the same as " + std::string(1, static_cast<char>(p.letter[0] + 32)) + " = " +
                      p.W_name + "·x for each token",
                  std::move(*w_x));
         }
     }},
    {.id = "weights_swapped", .steps = {StepId::queries, StepId::keys}, .classic = true,
     .man = R"roff(W_Q and W_K swapped (the biases with them or not).)roff",
     .applies = &projects_x,
     .make = [](A a, M made) { other_weight_mistakes(a, made, true); }},
    {.id = "wrong_weight", .steps = k_projection_steps,
     .man = R"roff(A projection computed with another of the head's weight matrices.)roff",
     .applies = &projects_x,
     .make = [](A a, M made) { other_weight_mistakes(a, made, false); }},
    {.id = "bias_forgotten", .steps = k_projection_steps,
     .man = R"roff(A bias left out.)roff",
     .applies = [](A a) { return projects_x(a) && has_bias(a); },
     .make = [](A a, M made) {
         const ProjectionParts p = projection_parts(a);
         made("The bias b_" + p.letter + " was not added.",
              p.letter + " = " + p.source_name + "·" + p.W_name + " + b_" + p.letter + ": b_" + p.letter +
                  " is added to every row",
              project(*p.source, *p.W, std::nullopt));
     }},
    {.id = "positions_forgotten", .steps = k_projection_steps,
     .man = R"roff(The positional encodings left out of a projection.)roff",
     // in cross-attention the keys and values read the context, which has no positions
     .applies = [](A a) { return projects_x(a) && a.model.P && (a.key.id == StepId::queries || !a.model.C); },
     .make = [](A a, M made) {
         const ProjectionParts p = projection_parts(a);
         made("The positional encodings were left out: this is X·" + p.W_name + " instead of (X + P)·" + p.W_name +
                  ".",
              p.correct, project(a.L(StepId::inputs), *p.W, *p.b));
     }},
    {.id = "cross_source_swapped", .steps = k_projection_steps,
     .man = R"roff(In cross-attention, the inputs and the context swapped.)roff",
     .applies = [](A a) { return projects_x(a) && has_context(a); },
     .make = [](A a, M made) {
         const ProjectionParts p = projection_parts(a);
         if (p.is_query) {
             made("The queries were computed from the context C; in cross-attention the queries come from the "
                  "inputs and the keys and values from the context.",
                  p.correct, project(a.L(StepId::context), *p.W, *p.b));
         } else {
             made("The " + step_text(p.id) +
                      " were computed from the inputs; in cross-attention the keys and values come from the "
                      "context C.",
                  p.correct, project(a.L.query_source(), *p.W, *p.b));
         }
     }},
    {.id = "other_head_weights", .steps = k_projection_steps,
     .man = R"roff(A head computed with another head's weights.)roff",
     .applies = &projects_x,
     .make = [](A a, M made) {
         // another head's weights (another key/value head's, for keys and values)
         const ProjectionParts p = projection_parts(a);
         const int h = a.key.head;
         const bool kv = is_per_kv_head(a.key.id);
         const int heads = static_cast<int>(kv ? a.model.n_kv_heads() : a.model.n_heads());
         for (int other = 1; other <= heads; ++other) {
             if (other == h) {
                 continue;
             }
             const HeadWeights& other_head =
                 kv ? a.model.kv_weights(other) : a.model.heads[static_cast<std::size_t>(other - 1)];
             made("The " + step_text(p.id) + " of head " + std::to_string(h) + " were computed with head " +
                      std::to_string(other) + "'s " + p.W_name + ".",
                  "each head has its own weights: " + p.correct,
                  project(*p.source, weight_of(other_head, p.letter), bias_of(other_head, p.letter)));
         }
     }},

    // ── all of a head's projections at once, listed with its queries ──
    {.id = "projection_w_x", .steps = {StepId::queries},
     .applies = &projects_x,
     .make = [](A a, M made) {
         const HeadProjections hp(a);
         std::vector<std::pair<StepKey, arma::mat>> values;
         for (const auto& q : k_projections) {
             if (auto w_x = w_x_projection(a.model, q.letter, hp.head_of(q.id), hp.source_of(q.letter))) {
                 values.emplace_back(StepKey{q.id, hp.head_of(q.id)}, std::move(*w_x));
             }
         }
         if (values.size() <= 1) {
             return;
         }
         const bool x_w = a.model.layout == Layout::x_w;
         made.several(x_w ? "The projections were computed as W·x for each token (the column-vector convention), "
                            "which is X·Wᵀ."
                          : "The weights were used as written, but this file writes them out × in (layout: pytorch).",
                      x_w ? "Q = X·W_Q, K = X·W_K, V = X·W_V: each token's row times the weights"
                          : "Q = X·W_Qᵀ, K = X·W_Kᵀ, V = X·W_Vᵀ with the weights as written",
                      std::move(values));
     }},
    {.id = "weights_swapped", .steps = {StepId::queries},
     .applies = &projects_x,
     .make = [](A a, M made) {
         const HeadProjections hp(a);
         const std::string correct = "Q = " + hp.source_name + "·W_Q and K = " +
                                     (a.model.C ? std::string("C") : hp.source_name) + "·W_K";
         made.several("The query and key weights are swapped: Q was computed with W_K and K with W_Q.", correct,
                      {{StepKey{StepId::queries, hp.h}, project(hp.source, hp.head.W_K, hp.head.b_K)},
                       {StepKey{StepId::keys, hp.g}, project(hp.kv_source, hp.head.W_Q, hp.head.b_Q)}});
         // the same with each bias left with its own projection: Q = X·W_K + b_Q, K = X·W_Q + b_K
         if (hp.head.b_Q || hp.head.b_K) {
             made.several("The query and key weights are swapped: Q was computed with W_K and K with W_Q, each "
                          "keeping its own bias.",
                          correct,
                          {{StepKey{StepId::queries, hp.h}, project(hp.source, hp.head.W_K, hp.head.b_Q)},
                           {StepKey{StepId::keys, hp.g}, project(hp.kv_source, hp.head.W_Q, hp.head.b_K)}});
         }
     }},
    {.id = "bias_forgotten", .steps = {StepId::queries},
     .applies = [](A a) {
         if (!projects_x(a)) {
             return false;
         }
         const HeadWeights& head = a.model.heads[static_cast<std::size_t>(a.key.head - 1)];
         return int(head.b_Q.has_value()) + int(head.b_K.has_value()) + int(head.b_V.has_value()) > 1;
     },
     .make = [](A a, M made) {
         const HeadProjections hp(a);
         std::vector<std::pair<StepKey, arma::mat>> values;
         for (const auto& q : k_projections) {
             if (bias_of(hp.head, q.letter)) {
                 values.emplace_back(StepKey{q.id, hp.head_of(q.id)},
                                     project(hp.source_of(q.letter), weight_of(hp.head, q.letter), std::nullopt));
             }
         }
         made.several("The biases were not added to the projections.",
                      "Q = X·W_Q + b_Q, and the same for K and V: each bias is added to every row", std::move(values));
     }},
    {.id = "cross_source_swapped", .steps = {StepId::queries},
     .applies = [](A a) { return projects_x(a) && has_context(a); },
     .make = [](A a, M made) {
         const HeadProjections hp(a);
         made.several("The keys and values were computed from the inputs; in cross-attention they come from the "
                      "context C.",
                      "K = C·W_K and V = C·W_V",
                      {{StepKey{StepId::keys, hp.g}, project(hp.source, hp.head.W_K, hp.head.b_K)},
                       {StepKey{StepId::values, hp.g}, project(hp.source, hp.head.W_V, hp.head.b_V)}});
     }},
    {.id = "other_head_weights", .steps = {StepId::queries},
     // with shared key/value heads, another query head may rightly read the same keys
     .applies = [](A a) { return projects_x(a) && a.model.n_kv_heads() == a.model.n_heads(); },
     .make = [](A a, M made) {
         const HeadProjections hp(a);
         for (int other = 1; other <= static_cast<int>(a.model.n_heads()); ++other) {
             if (other == hp.h) {
                 continue;
             }
             const HeadWeights& o = a.model.heads[static_cast<std::size_t>(other - 1)];
             made.several("Head " + std::to_string(hp.h) + " was computed with head " + std::to_string(other) +
                              "'s weights.",
                          "each head has its own W_Q, W_K and W_V",
                          {{StepKey{StepId::queries, hp.h}, project(hp.source, o.W_Q, o.b_Q)},
                           {StepKey{StepId::keys, hp.h}, project(hp.kv_source, o.W_K, o.b_K)},
                           {StepKey{StepId::values, hp.h}, project(hp.kv_source, o.W_V, o.b_V)}});
         }
     }},

    // ── RoPE ──
    {.id = "rope_not_applied", .steps = k_rotated_steps,
     .man = R"roff(RoPE not applied.)roff",
     .make = [](A a, M made) {
         const StepKey read = step_inputs(a.model, a.key).front();
         made("RoPE was not applied: these are the " + step_text(read.id) + " as they were.", rope_correct(a),
              unrotated_of(a));
     }},
    {.id = "rope_other_style", .steps = k_rotated_steps,
     .man = R"roff(RoPE in the other pairing (half or interleaved).)roff",
     .make = [](A a, M made) {
         Rope other = *a.model.rope;
         const bool half = other.style == RopeStyle::half;
         other.style = half ? RopeStyle::interleaved : RopeStyle::half;
         // the width the pairs are counted in: d_k, d_rot with partial rotation, mla's rope part d_r
         const Rope& rope = *a.model.rope;
         const std::string width = rope.skip > 0                             ? "d_r"
                                   : rope.rotated(a.model.d_k()) < a.model.d_k() ? "d_rot"
                                                                               : "d_k";
         const std::string where = rope.skip > 0 ? " within the rope part" : "";
         made(half ? "The pairs were taken as (2k, 2k + 1), the interleaved style; this example pairs k with k + " +
                         width + "/2" + where + " (style half)."
                   : "The pairs were taken as (k, k + " + width + "/2), the half style; this example pairs 2k with "
                     "2k + 1" + where + " (style interleaved).",
              rope_correct(a), rotate_as(a, unrotated_of(a), other));
     }},
    {.id = "rope_positions_from_one", .steps = k_rotated_steps,
     .man = R"roff(RoPE with positions counted from 1.)roff",
     .make = [](A a, M made) {
         // row p turned by (p + 1)·θ_k
         const arma::mat& X = unrotated_of(a);
         arma::mat shifted(X.n_rows + 1, X.n_cols, arma::fill::zeros);
         shifted.rows(1, X.n_rows) = X;
         made("The positions were counted from 1; the first token is at position 0.", rope_correct(a),
              arma::mat(rotate_as(a, shifted, *a.model.rope).rows(1, X.n_rows)));
     }},
    {.id = "rope_turned_backwards", .steps = k_rotated_steps,
     .man = R"roff(RoPE turned the wrong way.)roff",
     .make = [](A a, M made) {
         made("The pairs were turned the wrong way (by −p·θ_k): the signs of the sines are swapped.", rope_correct(a),
              rotate_back(unrotated_of(a), *a.model.rope, 0, a.model.n()));
     }},
    {.id = "rope_whole_head", .steps = k_rotated_steps,
     .man = R"roff(With \fBpartial_rotary_factor\fR, every element of the head turned, with \(*h_k over d_k, where only the first d_rot turn.)roff",
     .applies = [](A a) { return !a.model.mla && a.model.rope->rotated(a.model.d_k()) < a.model.d_k(); },
     .make = [](A a, M made) {
         Rope whole = *a.model.rope;
         whole.partial_rotary_factor = 1.0;
         made("Every element was turned, with θ_k over all d_k = " + std::to_string(a.model.d_k()) +
                  "; only the first d_rot = " + std::to_string(a.model.rope->rotated(a.model.d_k())) +
                  " turn, with θ_k = base^(−2k/d_rot), and the rest pass unchanged.",
              rope_correct(a), rotate_as(a, unrotated_of(a), whole));
     }},
    {.id = "rope_scaling_forgotten", .steps = k_rotated_steps,
     .man = R"roff(With \fBrope.scaling\fR, turned by the unscaled frequencies base^(\-2k/d).)roff",
     .applies = [](A a) { return a.model.rope->scaling.has_value(); },
     .make = [](A a, M made) {
         Rope plain = *a.model.rope;
         plain.scaling.reset();
         made("The pairs were turned by the unscaled θ_k = base^(−2k/d); rope.scaling changes the frequencies"
                  " (and for YaRN multiplies the turned pair by its attention factor).",
              rope_correct(a), rotate_as(a, unrotated_of(a), plain));
     }},
    {.id = "rope_llama3_every_frequency", .steps = k_rotated_steps,
     .man = R"roff(With \fBrope_type: llama3\fR, every frequency divided by the factor, where only the low ones are and the middle band is blended.)roff",
     .applies = [](A a) { return a.model.rope->scaling && a.model.rope->scaling->type == RopeScalingType::llama3; },
     .make = [](A a, M made) {
         Rope linear = *a.model.rope;
         linear.scaling->type = RopeScalingType::linear;
         made("Every frequency was divided by the factor; llama3 divides only those whose wavelength is longer than "
                  "original_max_position_embeddings/low_freq_factor, keeps those shorter than "
                  "original_max_position_embeddings/high_freq_factor, and blends the two between.",
              rope_correct(a), rotate_as(a, unrotated_of(a), linear));
     }},
    {.id = "rope_yarn_attention_factor_forgotten", .steps = k_rotated_steps,
     .man = R"roff(With \fBrope_type: yarn\fR, the turned pairs not multiplied by the attention factor.)roff",
     .applies = [](A a) { return rope_attention_factor(*a.model.rope) != 1.0; },
     .make = [](A a, M made) {
         Rope unscaled = *a.model.rope;
         unscaled.scaling->attention_factor = 1.0;
         made("The turned pairs were not multiplied by YaRN's attention factor " +
                  readable(rope_attention_factor(*a.model.rope)) + ", which multiplies cos and sin.",
              rope_correct(a), rotate_as(a, unrotated_of(a), unscaled));
     }},

    // ── multi-head latent attention ──
    {.id = "mla_rope_whole_key", .steps = k_rotated_steps,
     .man = R"roff(With \fBmla\fR, every element of a query or key head turned, with \(*h_k over d_k, where only the rope part, its last d_r elements, turns.)roff",
     .applies = [](A a) { return a.model.mla && a.model.d_k() % 2 == 0; },
     .make = [](A a, M made) {
         Rope whole = *a.model.rope;
         whole.skip = 0;
         made("Every element of the head was turned, with θ_k over d_k = " + std::to_string(a.model.d_k()) +
                  "; with mla only the rope part turns, the last d_r = " + std::to_string(a.model.mla->rope_dim) +
                  " elements, with θ_k over d_r, and the first d_n = " + std::to_string(a.model.mla->nope_dim) +
                  " pass unchanged.",
              rope_correct(a), rotate_as(a, unrotated_of(a), whole));
     }},
    {.id = "mla_rope_first_elements", .steps = k_rotated_steps,
     .man = R"roff(With \fBmla\fR, the first d_r elements of a head turned, as \fBpartial_rotary_factor\fR turns them, where the rope part is the last d_r.)roff",
     .applies = [](A a) { return a.model.mla.has_value(); },
     .make = [](A a, M made) {
         Rope first = *a.model.rope;
         first.skip = 0;
         first.partial_rotary_factor =
             static_cast<double>(a.model.mla->rope_dim) / static_cast<double>(a.model.d_k());
         made("The first d_r = " + std::to_string(a.model.mla->rope_dim) +
                  " elements were turned, as partial_rotary_factor turns them; with mla the rope part comes last, "
                  "after the d_n = " + std::to_string(a.model.mla->nope_dim) + " that do not turn.",
              rope_correct(a), rotate_as(a, unrotated_of(a), first));
     }},
    {.id = "mla_latent_norm_forgotten",
     .steps = {StepId::normed_q_latent, StepId::normed_kv_latent, StepId::queries, StepId::keys, StepId::values},
     .man = R"roff(With \fBmla\fR, a latent's RMSNorm left out: the latent passed on as it was, or the queries, keys or values made from it before its norm.)roff",
     .applies = [](A a) {
         return a.model.mla && (a.key.id != StepId::queries || a.model.mla->q_rank.has_value());
     },
     .make = [](A a, M made) {
         const bool query = a.key.id == StepId::normed_q_latent || a.key.id == StepId::queries;
         const arma::mat& latent = a.L(query ? StepId::q_latent : StepId::kv_latent);
         const std::string name = query ? "query latent C_Q" : "latent C_KV";
         const std::string correct = std::string(query ? "C_Q,norm" : "C") +
                                     " = each latent row over √(mean(c²) + eps), times γ; " +
                                     (a.key.id == StepId::queries  ? "Q = C_Q,norm·W_UQ"
                                      : a.key.id == StepId::keys   ? "K = [C·W_UK  K_R]"
                                      : a.key.id == StepId::values ? "V = C·W_UV"
                                                                   : "every head reads the normed rows");
         const HeadWeights& head = a.key.id == StepId::queries ? a.model.heads[static_cast<std::size_t>(a.key.head - 1)]
                                   : a.key.head > 0            ? a.model.kv_weights(a.key.head)
                                                               : a.model.heads.front();
         arma::mat value;
         switch (a.key.id) {
             case StepId::queries:
                 value = project(latent, head.W_Q, std::nullopt);
                 break;
             case StepId::keys:
                 value = arma::join_rows(project(latent, head.W_K, std::nullopt), a.L(StepId::rope_keys));
                 break;
             case StepId::values:
                 value = project(latent, head.W_V, std::nullopt);
                 break;
             default:
                 value = latent;
                 break;
         }
         made(a.key.id == StepId::normed_q_latent || a.key.id == StepId::normed_kv_latent
                  ? "The " + name + " was not normed: it was passed on as it was, not divided by its root mean "
                                    "square and multiplied by γ."
                  : "The " + step_text(a.key.id) + " were made from the " + name + " before its RMSNorm.",
              correct, std::move(value));
     }},

    {.id = "qk_norm_mean_subtracted", .steps = k_normed_steps,
     .man = R"roff(With \fBqk_norm\fR, each row's mean subtracted first, as LayerNorm does; RMSNorm divides by the root mean square alone.)roff",
     .make = [](const Attempt& a, const Made& made) {
         const arma::mat value = normed_with(a, a.model.qk_norm->gain(normed_queries(a)), norm_group(a),
                                             [](arma::mat& rows, arma::uword group) {
                                                 for (arma::uword c0 = 0; c0 < rows.n_cols; c0 += group) {
                                                     auto run = rows.cols(c0, c0 + group - 1);
                                                     run.each_col() -= arma::vec(arma::mean(run, 1));
                                                 }
                                             });
         made_if(made,
                 "Each row's mean was subtracted before dividing, as LayerNorm does; RMSNorm leaves the mean in "
                 "and divides by the root mean square alone.",
                 norm_correct(a), value);
     }},
    {.id = "qk_norm_offset_forgotten", .steps = k_normed_steps,
     .man = R"roff(With \fBqk_norm: {offset: 1}\fR, multiplied by \(*g instead of 1 + \(*g (Gemma's convention).)roff",
     .applies = [](const Attempt& a) { return a.model.qk_norm->offset != 0.0; },
     .make = [](const Attempt& a, const Made& made) {
         const arma::rowvec gamma = normed_queries(a) ? a.model.qk_norm->query : a.model.qk_norm->key;
         made_if(made,
                 "The rows were multiplied by γ, not by 1 + γ: with offset: 1 (Gemma's convention) γ holds how far "
                 "the gain is from 1.",
                 norm_correct(a), normed_with(a, gamma, norm_group(a), k_as_read));
     }},
    {.id = "qk_norm_gamma_forgotten", .steps = k_normed_steps,
     .man = R"roff(With \fBqk_norm\fR, divided by the root mean square but not multiplied by the gain.)roff",
     .applies = [](const Attempt& a) {
         const arma::rowvec gain = a.model.qk_norm->gain(normed_queries(a));
         return arma::any(gain != 1.0);
     },
     .make = [](const Attempt& a, const Made& made) {
         const arma::rowvec ones(norm_group(a), arma::fill::ones);
         made_if(made, "The rows were divided by their root mean square but not multiplied by the gain.",
                 norm_correct(a), normed_with(a, ones, norm_group(a), k_as_read));
     }},
    {.id = "qk_norm_wrong_span", .steps = k_normed_steps,
     .man = R"roff(With \fBqk_norm\fR, the mean of squares over each head where it is over the whole projection (\fBover: all\fR), or the other way round.)roff",
     .applies = [](const Attempt& a) { return (normed_queries(a) ? a.model.n_heads() : a.model.n_kv_heads()) > 1; },
     .make = [](const Attempt& a, const Made& made) {
         const QkNorm& norm = *a.model.qk_norm;
         const arma::uword d_k = a.model.d_k();
         const arma::uword heads = normed_queries(a) ? a.model.n_heads() : a.model.n_kv_heads();
         const arma::rowvec gain = norm.gain(normed_queries(a));
         if (norm.over_all) {
             // each head over its own d_k, with its part of γ, as if it were over: head
             arma::mat rows;
             for (const StepKey& read : step_inputs(a.model, a.key)) {
                 rows = arma::join_rows(rows, a.L(read.id, read.head));
             }
             if (rows.n_cols != heads * d_k || gain.n_elem != heads * d_k) {
                 return;
             }
             for (arma::uword h = 0; h < heads; ++h) {
                 rms_norm_columns(rows.colptr(h * d_k), rows.n_rows, d_k, d_k, gain.memptr() + h * d_k,
                                  a.model.qk_norm_eps());
             }
             const auto first = static_cast<arma::uword>(a.key.head - 1) * d_k;
             made("The mean of squares was taken over each head's d_k values; over: all takes it over the token's "
                  "whole projection, every head together.",
                  norm_correct(a), rows.cols(first, first + d_k - 1));
             return;
         }
         // every head's row together, the same γ in each head
         const auto count = static_cast<int>(heads);
         arma::mat rows;
         for (int h = 1; h <= count; ++h) {
             rows = arma::join_rows(rows, a.L(normed_queries(a) ? StepId::queries : StepId::keys, h));
         }
         if (rows.n_cols != heads * d_k || gain.n_elem != d_k) {
             return;
         }
         const arma::rowvec whole = arma::repmat(gain, 1, heads);
         rms_norm_columns(rows.memptr(), rows.n_rows, rows.n_cols, rows.n_cols, whole.memptr(), a.model.qk_norm_eps());
         const auto first = static_cast<arma::uword>(a.key.head - 1) * d_k;
         made("The mean of squares was taken over the token's whole projection, every head together; over: head "
              "takes it over each head's own d_k values.",
              norm_correct(a), rows.cols(first, first + d_k - 1));
     }},
    {.id = "qk_norm_forgotten", .steps = k_normed_steps,
     .man = R"roff(With \fBqk_norm\fR, the norm left out: the projections passed on unchanged.)roff",
     .make = [](const Attempt& a, const Made& made) {
         const StepId rows = normed_queries(a) ? StepId::queries : StepId::keys;
         made("The norm was left out: these are the " + std::string(normed_queries(a) ? "queries" : "keys") +
                  " as projected.",
              norm_correct(a), a.L(rows, a.key.head));
     }},
};

}  // namespace

std::span<const MistakeRow> projection_mistakes() { return k_rows; }

}  // namespace qkv::checking
