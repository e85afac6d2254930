// The catalogue's rows for the weighted sum, the heads and the output
// (catalogue.hpp). Rows are tokens: Z = A·V, O = concat·W_O + b_O.
#include "check/mistakes_parts.hpp"

#include "attention/attention.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::checking {

namespace {

using A = const Attempt&;
using M = const Made&;

// ── the weighted sum ────────────────────────────────────────────────────────

// Head h's weighted sum is the step head_output, or the output itself when the
// example has one head and no W_O.
bool is_weighted_sum(A a) {
    return a.key.id == StepId::head_output || (!a.model.W_O && a.model.n_heads() == 1);
}

int weighted_head(A a) { return a.key.id == StepId::head_output ? a.key.head : 1; }

const char* const k_weighted_sum_correct =
    "Z = A·V: row i is Σ_j a_ij · v_j, the value rows weighted by query i's attention weights";

// ── the online softmax ──────────────────────────────────────────────────────

// The keys read in blocks (Working::block_size), as FlashAttention reads them,
// into a weights or head_output step; not with sinks, whose block joins last.
bool read_in_blocks(A a) {
    return a.working.block_size > 0 && !a.model.sinks &&
           (a.key.id == StepId::weights || a.key.id == StepId::head_output);
}

// The step as each row's recurrence gives it: `of` turns a row's x and its end state into the row.
template <typename Of>
void online_step(A a, M made, bool rescale, const std::string& what, const std::string& correct, Of of) {
    const int h = std::max(a.key.head, 1);
    const StepKey read = step_inputs(a.model, {StepId::weights, h}).front();
    const arma::mat& x = a.L(read.id, read.head);
    const arma::mat& V = a.L(StepId::values, a.model.kv_head_of(h));
    if (x.n_cols != V.n_rows) {
        return;
    }
    const arma::uword width = a.key.id == StepId::weights ? x.n_cols : V.n_cols;
    arma::mat value(x.n_rows, width);
    for (arma::uword i = 0; i < x.n_rows; ++i) {
        const arma::rowvec row = x.row(i);
        value.row(i) = of(row, online_softmax(row, V, static_cast<arma::uword>(a.working.block_size), std::nullopt, rescale));
    }
    made(what, correct, std::move(value));
}

const char* const k_rescaled =
    "when a block raises m, multiply ℓ and o by exp(m_old − m_new) before adding the block's own terms";

// ── the heads put together ──────────────────────────────────────────────────

// The concatenation is the step concat, or the output itself when the example
// has several heads and no W_O.
bool is_concat(A a) { return a.key.id == StepId::concat || (!a.model.W_O && a.model.n_heads() > 1); }

// "concat = [Z_1 Z_2]: the heads side by side, …", for every mistake in it; the
// text report writes the subscripts as Z₁ Z₂.
std::string concat_correct(A a) {
    const int heads = static_cast<int>(a.model.n_heads());
    const arma::uword width = static_cast<arma::uword>(heads) * a.model.d_v();
    return "concat = " + concat_formula(heads) + ": the heads side by side, one block of d_v columns each (" +
           shape_text(a.model.n(), width) + ")";
}

// Averaged or added up, from the learner's own head outputs (their answers, or
// worked out from their earlier ones) and from the true ones, for a learner
// whose written head outputs are not the ones they combined. Averaging the Z_h
// rounded to k decimals, as a learner does by hand, can move the result by up
// to half a unit in the k-th decimal; adding them, by H halves.
void heads_added(A a, M made, bool average) {
    const int heads = static_cast<int>(a.model.n_heads());
    arma::mat sum = a.L(StepId::head_output, 1);
    arma::mat true_sum = a.trace.find(StepId::head_output, 1)->values;
    for (int h = 2; h <= heads; ++h) {
        sum += a.L(StepId::head_output, h);
        true_sum += a.trace.find(StepId::head_output, h)->values;
    }
    const double by = average ? static_cast<double>(heads) : 1.0;
    const double slack = average ? 0.5 : 0.5 * static_cast<double>(heads);
    const std::string what = average ? "The heads were averaged instead of concatenated."
                                     : "The heads were added up instead of concatenated.";
    made(what, concat_correct(a), sum / by, slack);
    if (!arma::approx_equal(true_sum, sum, "absdiff", 0.0)) {
        made(what, concat_correct(a), true_sum / by, slack);
    }
}

// ── the output projection ───────────────────────────────────────────────────

bool has_w_o(A a) { return a.model.W_O.has_value(); }

// What W_O is applied to, and its name: the concatenation, or Z with one head.
const arma::mat& output_source(A a) {
    return a.model.n_heads() > 1 ? a.L(StepId::concat) : a.L(StepId::head_output, 1);
}

std::string output_source_name(A a) { return a.model.n_heads() > 1 ? "concat" : "Z"; }

std::string output_correct(A a) { return "O = " + output_source_name(a) + "·W_O" + (a.model.b_O ? " + b_O" : ""); }

constexpr MistakeRow k_rows[] = {
    // ── the weighted sum ──
    {.id = "output_at_v", .steps = {StepId::head_output, StepId::output}, .classic = true,
     .man = R"roff(Z = A^T\(pcV.)roff",
     .applies = &is_weighted_sum,
     .make = [](A a, M made) {
         const int h = weighted_head(a);
         const arma::mat& weights = a.L(StepId::weights, h);
         const arma::mat& V = a.L(StepId::values, a.model.kv_head_of(h));
         if (weights.n_rows == V.n_rows) {
             made("The weighted sum was computed as Aᵀ·V: the weights were transposed.", k_weighted_sum_correct,
                  weights.t() * V);
         }
     }},
    {.id = "output_scores_v", .steps = {StepId::head_output, StepId::output},
     .man = R"roff(Z = S\(pcV: the softmax skipped.)roff",
     .applies = &is_weighted_sum,
     .make = [](A a, M made) {
         const int h = weighted_head(a);
         made("V was multiplied by the scores, not by the weights: the softmax was skipped.", k_weighted_sum_correct,
              a.L(StepId::scaled_scores, h) * a.L(StepId::values, a.model.kv_head_of(h)));
     }},
    {.id = "kv_heads_in_turn", .steps = {StepId::head_output, StepId::output},
     .applies = &is_weighted_sum,
     .make = [](A a, M made) {
         // the key/value heads taken in turn (torch's repeat), as in the scores
         const int h = weighted_head(a);
         const int g = a.model.kv_head_of(h);
         const int tiled = (h - 1) % static_cast<int>(a.model.n_kv_heads()) + 1;
         if (tiled != g) {
             made("Query head " + std::to_string(h) + " weighed the values of key/value head " +
                      std::to_string(tiled) +
                      ", taking the key/value heads in turn (as torch's repeat does); they are shared by consecutive "
                      "query heads.",
                  "Z = A·V with the values of key/value head ⌈h·G/H⌉ (repeat_interleave): here key/value head " +
                      std::to_string(g),
                  a.L(StepId::weights, h) * a.L(StepId::values, tiled));
         }
     }},
    {.id = "output_weighted_inputs", .steps = {StepId::head_output, StepId::output},
     .man = R"roff(The weights applied to the inputs instead of the values.)roff",
     .applies = &is_weighted_sum,
     .make = [](A a, M made) {
         const arma::mat& weights = a.L(StepId::weights, weighted_head(a));
         const arma::mat& source = a.L.key_source();
         if (source.n_rows == weights.n_cols) {
             made("The weights were applied to the inputs instead of the values.", k_weighted_sum_correct,
                  weights * source);
         }
     }},

    // ── the online softmax, with Working::block_size ──
    {.id = "online_not_rescaled", .steps = {StepId::weights, StepId::head_output},
     .man = R"roff(In the online softmax (\fBcheck \-\-block\-size\fR, a lesson's blocks), \(*l, or \(*l and o, not rescaled by exp(m_old \- m_new) when a block raises the maximum.)roff",
     .applies = &read_in_blocks,
     .make = [](A a, M made) {
         if (a.key.id == StepId::weights) {
             online_step(a, made, false, "ℓ was not rescaled when a block raised the maximum m.", k_rescaled,
                         [](const arma::rowvec& x, const OnlineState& r) { return arma::rowvec(arma::exp(x - r.max) / r.sum); });
         } else {
             online_step(a, made, false, "ℓ and o were not rescaled when a block raised the maximum m.", k_rescaled,
                         [](const arma::rowvec&, const OnlineState& r) { return arma::rowvec(r.output / r.sum); });
         }
     }},
    {.id = "online_not_divided", .steps = {StepId::head_output},
     .man = R"roff(In the online softmax, o not divided by \(*l at the end.)roff",
     .applies = &read_in_blocks,
     .make = [](A a, M made) {
         online_step(a, made, true, "o was not divided by ℓ at the end.", "the output is o / ℓ, with the last block's ℓ",
                     [](const arma::rowvec&, const OnlineState& r) { return r.output; });
     }},

    // ── the heads put together ──
    {.id = "heads_averaged", .steps = {StepId::concat, StepId::output}, .classic = true,
     .man = R"roff(The heads averaged instead of concatenated.)roff",
     .applies = &is_concat,
     .make = [](A a, M made) { heads_added(a, made, true); }},
    {.id = "heads_summed", .steps = {StepId::concat, StepId::output},
     .man = R"roff(The heads added up instead of concatenated.)roff",
     .applies = &is_concat,
     .make = [](A a, M made) { heads_added(a, made, false); }},
    {.id = "heads_reversed", .steps = {StepId::concat, StepId::output},
     .man = R"roff(The heads concatenated in reverse order.)roff",
     .applies = &is_concat,
     .make = [](A a, M made) {
         // the learner's Z_h side by side, the last first
         const int heads = static_cast<int>(a.model.n_heads());
         arma::mat reversed = a.L(StepId::head_output, heads);
         for (int h = heads - 1; h >= 1; --h) {
             reversed = arma::join_rows(reversed, a.L(StepId::head_output, h));
         }
         made("The heads were concatenated in reverse order.", concat_correct(a), std::move(reversed));
     }},
    {.id = "heads_stacked", .steps = {StepId::concat, StepId::output},
     .man = R"roff(The heads stacked as rows.)roff",
     .applies = &is_concat,
     .make = [](A a, M made) {
         // the learner's Z_h one under another
         arma::mat stacked = a.L(StepId::head_output, 1);
         for (int h = 2; h <= static_cast<int>(a.model.n_heads()); ++h) {
             stacked = arma::join_cols(stacked, a.L(StepId::head_output, h));
         }
         made("The heads were stacked as rows instead of side by side.", concat_correct(a), std::move(stacked));
     }},

    // ── the output projection ──
    {.id = "output_projection_forgotten", .steps = {StepId::output},
     .man = R"roff(W_O not applied.)roff",
     .applies = &has_w_o,
     .make = [](A a, M made) {
         if (output_source(a).n_cols == a.model.W_O->n_cols) {
             made("W_O was not applied.", output_correct(a), output_source(a));
         }
     }},
    {.id = "bias_forgotten", .steps = {StepId::output},
     .applies = [](A a) { return a.model.W_O && a.model.b_O; },
     .make = [](A a, M made) {
         made("The bias b_O was not added.", output_correct(a) + ": b_O is added to every row",
              project(output_source(a), *a.model.W_O, std::nullopt));
     }},
    {.id = "projection_w_x", .steps = {StepId::output},
     .applies = [](A a) { return a.model.W_O && a.model.W_O->is_square(); },
     .make = [](A a, M made) {
         made(a.model.layout == Layout::x_w
                  ? "The output was computed as W_O·x for each token (the column-vector convention), which is " +
                        output_source_name(a) + "·W_Oᵀ."
                  : "W_O was used as written, but this file writes weights out × in (layout: pytorch).",
              output_correct(a), project(output_source(a), a.model.W_O->t(), a.model.b_O));
     }},
};

}  // namespace

std::span<const MistakeRow> output_mistakes() { return k_rows; }

}  // namespace qkv::checking
