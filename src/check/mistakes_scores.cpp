// The catalogue's rows for the scores, scaling, ALiBi, the mask and the
// softmax (catalogue.hpp). Rows are tokens: S = Q·Kᵀ.
#include "check/mistakes_parts.hpp"

#include "attention/attention.hpp"
#include "attention/divisor.hpp"
#include "base/numbers.hpp"

#include <cmath>

namespace qkv::checking {

namespace {

using A = const Attempt&;
using M = const Made&;

// ── the scores ──────────────────────────────────────────────────────────────

// The queries and keys the scores read: rotated with RoPE, and the key/value head's keys.
struct ScoreReads {
    StepKey k;
    const arma::mat& Q;
    const arma::mat& K;
};

ScoreReads score_reads(A a) {
    const std::vector<StepKey> reads = step_inputs(a.model, a.key);
    return {reads[1], a.L(reads[0].id, reads[0].head), a.L(reads[1].id, reads[1].head)};
}

const char* const k_scores_correct =
    "S = Q·Kᵀ: entry (i, j) is query i dotted with key j (row i of Q with row j of K)";

// Query head h's key/value head when the key/value heads are taken in turn
// (torch's repeat) instead of in consecutive groups (repeat_interleave).
int head_in_turn(const Model& model, int h) { return (h - 1) % static_cast<int>(model.n_kv_heads()) + 1; }

bool scaled(A a) { return a.model.scale() != 1.0; }
bool divides(A a) { return a.model.scale_kind != ScaleKind::none; }
bool divides_by_root(A a) { return divides(a) && divisor_of(a.model).root; }

// S' = S / √d_k (√3 ≈ 1.7321)
std::string scaling_correct(A a) {
    const Divisor divisor = divisor_of(a.model);
    return "S' = " + divided(a.model, "S") + (divisor.root ? " (" + divisor.exact + ")" : "");
}

// √d_model = d_k (d_model 4 split into heads of d_k 2): dividing by either
// gives the same numbers, so one diagnosis names both, under scaled_by_dk.
bool root_is_d_k(const Model& model) { return model.d_k() > 1 && model.d_model() == model.d_k() * model.d_k(); }

// ── the mask and the softmax ─────────────────────────────────────────────────

// What a step reads first: the scores the mask blocks, the logits the softmax takes.
const arma::mat& first_read(A a) {
    const StepKey read = step_inputs(a.model, a.key).front();
    return a.L(read.id, read.head);
}

std::string mask_correct(const Model& model) {
    return std::string("cells the mask blocks become −∞") +
           (model.mask_kind == MaskKind::causal ? " (causal: query i sees keys 1 … i)" : "") +
           ", so that the softmax gives them a weight of exactly 0";
}

const char* const k_softmax_correct =
    "A = softmax of each row: a_ij = exp(s'_ij) / Σ_k exp(s'_ik), so that each row sums to 1";

constexpr MistakeRow k_rows[] = {
    // ── the scores ──
    {.id = "kv_heads_in_turn", .steps = {StepId::scores},
     .man = R"roff(Key/value heads taken in turn instead of in groups.)roff",
     .applies = [](A a) { return a.model.n_kv_heads() > 1 && a.model.n_kv_heads() < a.model.n_heads(); },
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         const int tiled = head_in_turn(a.model, a.key.head);
         if (tiled != r.k.head) {
             made("Query head " + std::to_string(a.key.head) + " was paired with key/value head " +
                      std::to_string(tiled) +
                      ", taking the key/value heads in turn (as torch's repeat does); they are shared by consecutive "
                      "query heads.",
                  "query head h reads key/value head ⌈h·G/H⌉ (repeat_interleave): here key/value head " +
                      std::to_string(r.k.head),
                  r.Q * a.L(r.k.id, tiled).t());
         }
     }},
    {.id = "rope_forgotten", .steps = {StepId::scores},
     .man = R"roff(The scores computed from queries and keys before RoPE.)roff",
     .applies = [](A a) { return a.model.rope.has_value(); },
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         made("The scores were computed from the queries and keys before RoPE rotated them.",
              "S = Q_rot·K_rotᵀ: the rotated queries and keys",
              a.L(StepId::queries, a.key.head) * a.L(StepId::keys, r.k.head).t());
     }},
    {.id = "scores_no_transpose", .steps = {StepId::scores}, .classic = true,
     .man = R"roff(S = Q\(pcK, without the transpose.)roff",
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         if (r.Q.n_cols == r.K.n_rows) {
             made("The scores were computed as Q·K, without transposing K.", k_scores_correct, r.Q * r.K);
         }
     }},
    {.id = "scores_k_qt", .steps = {StepId::scores}, .classic = true,
     .man = R"roff(S = K\(pcQ^T.)roff",
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         made("The scores were computed as K·Qᵀ, keys and queries the wrong way round: row i holds key i against "
              "every query.",
              k_scores_correct, r.K * r.Q.t());
     }},
    {.id = "scores_qt_k", .steps = {StepId::scores},
     .man = R"roff(S = Q^T\(pcK.)roff",
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         if (r.Q.n_rows == r.K.n_rows) {
             made("The scores were computed as Qᵀ·K, which pairs up dimensions instead of tokens.", k_scores_correct,
                  r.Q.t() * r.K);
         }
     }},
    {.id = "scores_already_scaled", .steps = {StepId::scores},
     .man = R"roff(The scores step answered already divided by the scale.)roff",
     .applies = &scaled,
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         made("These scores are already divided by " + divisor_of(a.model).named + "; the scores step is Q·Kᵀ alone.",
              "S = Q·Kᵀ; the next step divides it: S' = " + divided(a.model, "S"), r.Q * r.K.t() / a.model.scale());
     }},
    {.id = "scores_used_values", .steps = {StepId::scores},
     .man = R"roff(S = Q\(pcV^T.)roff",
     .make = [](A a, M made) {
         const ScoreReads r = score_reads(a);
         const arma::mat& V = a.L(StepId::values, a.model.kv_head_of(a.key.head));
         if (V.n_cols == r.Q.n_cols) {
             made("The scores were computed with the values instead of the keys: Q·Vᵀ.", k_scores_correct,
                  r.Q * V.t());
         }
     }},

    // ── scaling ──
    {.id = "scaling_forgotten", .steps = {StepId::scaled_scores}, .classic = true,
     .man = R"roff(The scores not divided by \(sr\fId_k\fR.)roff",
     .applies = [](A a) { return divides(a) && scaled(a); },
     .make = [](A a, M made) {
         made("Scaling forgotten: the scores were not divided by " + divisor_of(a.model).named + ".",
              scaling_correct(a), a.L(StepId::scores, a.key.head));
     }},
    {.id = "scaled_by_dk", .steps = {StepId::scaled_scores}, .classic = true,
     .man = R"roff(Divided by d_k instead of \(sr\fId_k\fR; also where d_k = \(sr\fId_model\fR,
as the two mistakes cannot be told apart there.)roff",
     .applies = [](A a) { return divides_by_root(a) && a.model.d_k() > 1; },
     .make = [](A a, M made) {
         const std::string dk = std::to_string(a.model.d_k());
         const std::string named = divisor_of(a.model).named;
         made(root_is_d_k(a.model) ? "The scores were divided by d_k = " + dk + " instead of " + named +
                                         " — or by √d_model = √" + std::to_string(a.model.d_model()) + " = " + dk +
                                         "; the two are the same here and cannot be told apart."
                                   : "The scores were divided by d_k = " + dk + " instead of " + named + ".",
              scaling_correct(a), a.L(StepId::scores, a.key.head) / static_cast<double>(a.model.d_k()));
     }},
    {.id = "scaled_by_sqrt_d_model", .steps = {StepId::scaled_scores}, .classic = true,
     .man = R"roff(Divided by \(sr\fId_model\fR instead of \(sr\fId_k\fR.)roff",
     .applies = [](A a) {
         return divides_by_root(a) && a.model.d_model() != a.model.d_k() && !root_is_d_k(a.model);
     },
     .make = [](A a, M made) {
         made("The scores were divided by √d_model = √" + std::to_string(a.model.d_model()) + " instead of " +
                  divisor_of(a.model).named + ": d_k is the width of a query or key, not of the inputs.",
              scaling_correct(a),
              a.L(StepId::scores, a.key.head) / std::sqrt(static_cast<double>(a.model.d_model())));
     }},
    {.id = "scaled_without_scale", .steps = {StepId::scaled_scores},
     .man = R"roff(Scaled by \(sr\fId_k\fR though the example says scale: none.)roff",
     .applies = [](A a) { return !divides(a) && a.model.d_k() > 1; },
     .make = [](A a, M made) {
         made("The scores were divided by √d_k = √" + std::to_string(a.model.d_k()) +
                  ", but this example does not scale them (scale: none).",
              "S' = S: with scale: none the scores pass through unchanged",
              a.L(StepId::scores, a.key.head) / std::sqrt(static_cast<double>(a.model.d_k())));
     }},
    {.id = "scale_multiplied", .steps = {StepId::scaled_scores},
     .man = R"roff(Multiplied by the scale instead of divided.)roff",
     .applies = [](A a) { return divides(a) && scaled(a); },
     .make = [](A a, M made) {
         made("The scores were multiplied by " + divisor_of(a.model).named + " instead of divided by it.",
              scaling_correct(a), a.L(StepId::scores, a.key.head) * a.model.scale());
     }},

    {.id = "mla_scaled_by_nope", .steps = {StepId::scaled_scores},
     .man = R"roff(With \fBmla\fR, divided by \(sr\fId_n\fR, the part without positions, where d_k = d_n + d_r.)roff",
     .applies = [](A a) {
         return a.model.mla && divides_by_root(a) && (a.model.mla->nope_dim > 1 || a.model.mscale() != 1.0);
     },
     .make = [](A a, M made) {
         const double mscale = a.model.mscale();
         const std::string d_n = std::to_string(a.model.mla->nope_dim);
         made("The scores were divided by √d_n = √" + d_n + (mscale != 1.0 ? " over mscale²" : "") +
                  ": with mla a query and a key are d_k = d_n + d_r = " + std::to_string(a.model.d_k()) +
                  " long, their rope parts included.",
              scaling_correct(a),
              a.L(StepId::scores, a.key.head) /
                  (std::sqrt(static_cast<double>(a.model.mla->nope_dim)) / (mscale * mscale)));
     }},
    {.id = "mla_mscale_forgotten", .steps = {StepId::scaled_scores},
     .man = R"roff(With \fBmla\fR and YaRN's \fBmscale_all_dim\fR, divided by \(sr\fId_k\fR without dividing that by mscale^2.)roff",
     .applies = [](A a) { return a.model.mla && divides_by_root(a) && a.model.mscale() != 1.0; },
     .make = [](A a, M made) {
         made("The scores were divided by √d_k = √" + std::to_string(a.model.d_k()) +
                  "; with rope.scaling's mscale_all_dim the divisor is √d_k / mscale², mscale = " +
                  fixed(a.model.mscale(), 4) + ", as DeepSeek-V3's softmax_scale is multiplied by mscale².",
              scaling_correct(a),
              a.L(StepId::scores, a.key.head) / std::sqrt(static_cast<double>(a.model.d_k())));
     }},

    // ── soft-capping ──
    {.id = "softcap_before_scaling", .steps = {StepId::capped_scores},
     .man = R"roff(The cap applied to the scores before scaling, then divided by the scale.)roff",
     .applies = &scaled,
     .make = [](A a, M made) {
         const double c = *a.model.softcap;
         made("The cap was applied before scaling: c·tanh(S/c) was then divided by " + divisor_of(a.model).named +
                  ", so the scores were capped at ±c before the division shrank them.",
              "S_c = c·tanh(S'/c): the cap comes after the scaling, on the scaled scores",
              c * arma::tanh(a.L(StepId::scores, a.key.head) / c) / a.model.scale());
     }},
    {.id = "softcap_outer_c_forgotten", .steps = {StepId::capped_scores},
     .man = R"roff(tanh(s/c) without the factor c, so every score lies between \-1 and 1.)roff",
     .make = [](A a, M made) {
         const double c = *a.model.softcap;
         made("The result of tanh was not multiplied by c = " + readable(c) + ", so every score lies between −1 and 1.",
              "S_c = c·tanh(S'/c)", arma::tanh(first_read(a) / c));
     }},
    {.id = "softcap_forgotten", .steps = {StepId::capped_scores},
     .man = R"roff(The cap left out: the scaled scores passed on unchanged.)roff",
     .make = [](A a, M made) {
         made("The cap was left out: these are the scaled scores as they were.", "S_c = c·tanh(S'/c)", first_read(a));
     }},

    // ── ALiBi ──
    {.id = "alibi_sign", .steps = {StepId::position_bias},
     .man = R"roff(ALiBi's bias added with the wrong sign.)roff",
     .make = [](A a, M made) {
         const double slope = (*a.model.alibi)(static_cast<arma::uword>(a.key.head - 1));
         made("The bias was added as +m·|i − j|; ALiBi lowers the scores of distant keys.", "B[i,j] = −m·|i − j|",
              -position_bias(a.model.n(), a.model.m(), slope));
     }},
    {.id = "alibi_bias_forgotten", .steps = {StepId::biased_scores},
     .man = R"roff(ALiBi's bias left out.)roff",
     .make = [](A a, M made) {
         made("The position bias was not added.", "S' + B: the scaled scores plus the position bias",
              first_read(a));
     }},
    {.id = "alibi_bias_scaled", .steps = {StepId::biased_scores},
     .man = R"roff(ALiBi's bias added before scaling.)roff",
     // (with a soft cap between the scaling and the bias, the numbers would be the cap's too)
     .applies = [](A a) { return scaled(a) && !a.model.softcap; },
     .make = [](A a, M made) {
         made("The bias was added before scaling, so it was divided by " + divisor_of(a.model).named + " too.",
              "S' + B: the scaled scores plus the position bias; the bias is added after the scaling",
              (a.L(StepId::scores, a.key.head) + a.L(StepId::position_bias, a.key.head)) / a.model.scale());
     }},

    // ── the mask ──
    {.id = "window_one_too_wide", .steps = {StepId::masked_scores},
     .man = R"roff(A sliding window one key too wide.)roff",
     .applies = [](A a) { return a.model.mask_kind == MaskKind::window; },
     .make = [](A a, M made) {
         // Hugging Face's Mistral let one key more through
         Model wider = a.model;
         wider.window += 1;
         const int window = a.model.window;
         made("The window let " + std::to_string(window + 1) + " keys through instead of " + std::to_string(window) +
                  ": a window of W counts the query's own key.",
              "query i sees keys i − " + std::to_string(window - 1) + " … i, W = " + std::to_string(window) +
                  " keys with itself",
              apply_mask(first_read(a), wider.allowed()));
     }},
    {.id = "mask_zero", .steps = {StepId::masked_scores}, .classic = true,
     .man = R"roff(Blocked scores set to 0 instead of \-\(if.)roff",
     .make = [](A a, M made) {
         arma::mat zeroed = first_read(a);
         zeroed.elem(arma::find(a.model.allowed() == 0.0)).zeros();
         made("Blocked cells were set to 0 instead of −∞; exp(0) = 1, so they would still get weight.",
              mask_correct(a.model), std::move(zeroed));
     }},
    {.id = "mask_ignored", .steps = {StepId::masked_scores},
     .man = R"roff(The mask not applied.)roff",
     .make = [](A a, M made) {
         made("The mask was not applied: blocked cells still hold their scores.", mask_correct(a.model),
              first_read(a));
     }},
    {.id = "mask_transposed", .steps = {StepId::masked_scores},
     .man = R"roff(The mask applied the wrong way round (a causal mask letting each query see later keys).)roff",
     .make = [](A a, M made) {
         const arma::mat allowed = a.model.allowed();
         if (!allowed.is_square() || arma::approx_equal(allowed, allowed.t(), "absdiff", 0.0)) {
             return;
         }
         made(a.model.mask_kind == MaskKind::causal
                  ? "The causal mask was applied the wrong way round: query i was let see keys i … n instead of 1 … i."
                  : "The mask was applied transposed: its row i was used for key i instead of query i.",
              mask_correct(a.model), apply_mask(first_read(a), allowed.t()));
     }},
    {.id = "mask_inverted", .steps = {StepId::masked_scores},
     .man = R"roff(The mask read the other way round (1 = blocked).)roff",
     .make = [](A a, M made) {
         made("The mask was read the other way round (1 = blocked, as PyTorch's boolean attn_mask); in qkv 1 means "
              "may attend.",
              mask_correct(a.model), apply_mask(first_read(a), 1.0 - a.model.allowed()));
     }},

    // ── the softmax ──
    {.id = "sink_forgotten", .steps = {StepId::weights},
     .man = R"roff(The sink left out of the softmax.)roff",
     .applies = [](A a) { return a.model.sinks.has_value(); },
     .make = [](A a, M made) {
         made("The sink was left out of the softmax, so each row sums to 1.",
              "the sink logit s joins each row's sum: a_ij = exp(s'_ij) / (Σ_k exp(s'_ik) + exp(s))",
              softmax_rows(first_read(a)));
     }},
    {.id = "softmax_columns", .steps = {StepId::weights}, .classic = true,
     .man = R"roff(The softmax taken down the columns.)roff",
     .make = [](A a, M made) {
         // a column of −∞ only gives NaN
         made("The softmax was taken down each column instead of along each row.", k_softmax_correct,
              softmax_rows(first_read(a).t()).t());
     }},
    {.id = "softmax_no_exp", .steps = {StepId::weights}, .classic = true,
     .man = R"roff(Each row divided by its sum without exponentiating.)roff",
     .make = [](A a, M made) {
         // each row divided by its plain sum, blocked cells counting as 0; a row that
         // sums to 0 has no such value (NaN matches no answer), but the other rows can
         // still show the mistake, so a row left blank does not hide it
         arma::mat ratios = first_read(a);
         ratios.elem(arma::find_nonfinite(ratios)).zeros();
         for (arma::uword i = 0; i < ratios.n_rows; ++i) {
             const double sum = arma::accu(ratios.row(i));
             if (sum == 0.0) {
                 ratios.row(i).fill(arma::datum::nan);
             } else {
                 ratios.row(i) /= sum;
             }
         }
         made("Each row was divided by its sum without exponentiating first.", k_softmax_correct, std::move(ratios));
     }},
    {.id = "softmax_not_normalised", .steps = {StepId::weights},
     .man = R"roff(The exponentials not divided by their row's sum.)roff",
     .make = [](A a, M made) {
         made("The exponentials were not divided by their row's sum.", k_softmax_correct, arma::exp(first_read(a)));
     }},
    {.id = "mask_after_softmax", .steps = {StepId::weights}, .classic = true,
     .man = R"roff(The mask applied after the softmax.)roff",
     .applies = [](A a) { return a.model.masked(); },
     .make = [](A a, M made) {
         const StepKey unmasked = step_inputs(a.model, {StepId::masked_scores, a.key.head}).front();
         arma::mat after = softmax_rows(a.L(unmasked.id, unmasked.head));
         after.elem(arma::find(a.model.allowed() == 0.0)).zeros();
         made("The mask was applied after the softmax: blocked weights were set to 0, and the rows no longer sum "
              "to 1.",
              "mask first (blocked scores become −∞), then take the softmax of each row", std::move(after));
     }},
    {.id = "softmax_whole_matrix", .steps = {StepId::weights},
     .man = R"roff(The softmax taken over the whole matrix.)roff",
     .make = [](A a, M made) {
         const arma::mat& logits = first_read(a);
         arma::mat whole = arma::exp(logits - logits.max());
         whole /= arma::accu(whole);
         made("The softmax was taken over the whole matrix instead of each row.", k_softmax_correct,
              std::move(whole));
     }},
};

}  // namespace

std::span<const MistakeRow> score_mistakes() { return k_rows; }

}  // namespace qkv::checking
