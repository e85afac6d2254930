// The step table: every step of attention written once, as one row each —
// its id and title, whether it is computed per head (and per which kind of
// head), when an example has it, which steps it reads, the arithmetic that
// computes it and the words that describe it. compute(), the large-input
// engine's results, `check`'s recomputation from a learner's answers, `explain`,
// the loader's `round:` check, the `--steps` hints, the step numbers and the
// lessons all read this table. Adding a step is adding a row, its functions in
// steps.cpp (steps_backward.cpp for a gradient), and its explanation in explain/.
#pragma once

#include "attention/step_id.hpp"
#include "attention/trace.hpp"
#include "model/keys.hpp"
#include "model/model.hpp"

#include <armadillo>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

// Which heads a step is computed for: none, every query head, every key/value
// head (fewer with grouped-query attention), or, for the weights' gradients,
// every query head when the file writes one weight set per head (a `heads:`
// list) and none otherwise.
enum class HeadKind { none, query, key_value, weight_set };

// The values of steps, by step and head; shared pointers so that a variant of
// a whole set (a learner's answers with one step changed) costs only pointers.
using StepValues = std::map<StepKey, std::shared_ptr<const arma::mat>>;

// The steps a step reads, in the order its arithmetic takes them.
using StepInputs = std::span<const arma::mat* const>;

// What names the projections use for their sources: "X", "(X + P)", "C".
struct SourceNames {
    std::string queries;  // what the queries read
    std::string keys;     // what the keys and values read
};
SourceNames source_names(const Model& model);

class StepContext;

// Where `run --decode`'s new token and its cache are (0-based positions): the
// token at `token` reads the cached keys first_key … token.
struct TokenPositions {
    arma::uword token = 0;
    arma::uword first_key = 0;
    arma::uword keys() const { return token - first_key + 1; }
};

// How `run --decode` computes a step for one new token (attention/decode.cpp),
// which decodes the rows before concat, one head at a time:
// - by_row: compute() itself, on the token's row (a step it reads per
//   key/value head is that head's cache, a row per cached position);
// - at_positions: the row's `decode` function, which is told the positions;
// - none: it has no one-token form, and decode_obstacles() names the step
//   when an example has it, so that decoding never leaves a step out.
enum class OneToken { none, by_row, at_positions };

// Writes a number as the reader shows numbers (explain's decimals).
using NumberText = std::function<std::string(double)>;

// How an elementwise step of the scores (k_elementwise_steps) computes: one
// function f of each number, the way back through it, and the words for one cell.
// compute(), decoding, the large-input engine's blocks, the backward pass
// (the gradient of its input is that of its output times f′) and explain all
// apply the step through these, with no code of their own for it.
struct Elementwise {
    // f(x) in place, for each of the `count` numbers at x, in head `head`
    void (*apply)(const Model& model, int head, double* x, std::size_t count) = nullptr;
    // the way back: `grad`, the gradient of each output y = f(x), becomes that
    // of its input, grad·f′(x) (f′ may be worked from x or from y)
    void (*back)(const Model& model, int head, const double* x, const double* y, double* grad,
                 std::size_t count) = nullptr;
    std::string_view symbol = {};  // its values in formulas, a query head's symbol: "S_c"
    std::string_view symbol_latex = {};
    // f and f′ as formulas, {} standing for the input ("c·tanh({}/c)")
    std::string_view formula = {};
    std::string_view formula_latex = {};
    std::string_view slope_formula = {};
    std::string_view slope_latex = {};
    std::string_view why = {};           // the step's explanation
    std::string_view gradient_title = {};  // the title of its input's gradient: "Gradient through the cap"
    std::string_view gradient_why = {};    // that gradient's explanation
    // f and f′ worked on the number x, up to the last form before the result
    // ("50·tanh(1.2/50) = 50·tanh(0.024)"), and what f is in this head, said
    // once above the cells ("c = 50 (softcap:)"), for explain
    std::string (*working)(const Model& model, int head, double x, const NumberText& number) = nullptr;
    std::string (*slope_working)(const Model& model, int head, double x, const NumberText& number) = nullptr;
    std::string (*about)(const Model& model, int head, const NumberText& number) = nullptr;
};
// An Elementwise formula with `input` in place of {}.
std::string elementwise_formula(std::string_view formula, const std::string& input);

// One row of the step table.
struct StepRow {
    StepId id = StepId::inputs;
    std::string_view name = {};       // the id users write: "scaled_scores"
    std::string_view title = {};      // the heading: "Scaled scores"
    std::string_view man = {};        // its line in the man page's STEPS (roff): what it is, and when there is one
    HeadKind heads = HeadKind::none;  // per head, and per which kind
    std::string_view needs = {};      // what an example needs for the step to exist; empty: always there
    bool (*exists)(const Model& model) = nullptr;
    bool square = false;              // an n × m matrix (per head): what dominates memory
    bool engine = false;              // the large-input engine computes it (attention/engine.hpp); compute()
                                      // hands over to it only when it computes every step that is left
    bool online = false;              // has a block-by-block form: explain --block-size, a lesson's block_size
    bool parameter = false;           // one of the example's weights or biases: given, shown unnumbered
                                      // before the step that uses it, and left out of json and csv unless asked for
    // The steps it reads, for head `head` (0 when not per head).
    std::vector<StepKey> (*reads)(const Model& model, int head) = nullptr;
    // Its value from the values of `reads`, in that order: the textbook arithmetic.
    arma::mat (*compute)(const Model& model, int head, StepInputs inputs) = nullptr;
    // How `run --decode` computes it for one token, and the function for at_positions.
    OneToken token = OneToken::none;
    arma::mat (*decode)(const Model& model, int head, const TokenPositions& at, StepInputs inputs) = nullptr;
    // Its formulas, explanation, labels and notes (the id, head and title are set already).
    void (*describe)(const StepContext& context, Step& step) = nullptr;
    // For a per-head step that only some heads have (a bias's gradient when a
    // `heads:` list gives the bias to some heads): whether head `head` has it.
    bool (*has_head)(const Model& model, int head) = nullptr;
    // For an elementwise step (k_elementwise_steps): its function; its
    // `compute` is then elementwise_compute<id> and its reads its input alone.
    const Elementwise* elementwise = nullptr;
};

// The row of a step.
const StepRow& step_row(StepId id);

// An elementwise step's value: its row's function applied to each number of its input.
arma::mat elementwise_value(const Model& model, StepId id, int head, const arma::mat& input);
template <StepId id>
arma::mat elementwise_compute(const Model& model, int head, StepInputs inputs) {
    return elementwise_value(model, id, head, *inputs[0]);
}
// The gradient of an elementwise step's input from that of its output:
// grad ∘ f′(input).
arma::mat elementwise_gradient(const Model& model, StepId id, int head, const arma::mat& grad_output,
                               const arma::mat& input);
// The elementwise step that reads step `id` in this example (the next one of
// k_elementwise_steps that it has), or nullopt.
std::optional<ElementwiseStep> elementwise_after(const Model& model, StepId id);
// The example's weights a step uses: the parameter rows just before its own
// (w_query and b_query for queries; none for a step that uses no weight).
std::vector<StepId> step_parameters(StepId id);

// The queries and keys the scores read: rotated with RoPE, else normed with
// qk_norm, else the projections themselves; and what RoPE turns: the normed
// ones with qk_norm, else the projections.
StepId scored_queries(const Model& model);
StepId scored_keys(const Model& model);
StepId unrotated_queries(const Model& model);
StepId unrotated_keys(const Model& model);

// True when this example has the step.
bool step_exists(const Model& model, StepId id);
// Every step this example has.
StepSet steps_of(const Model& model);
// The heads a step is computed for in this example (0 for a step that is not per head).
int step_heads(const Model& model, StepId id);
// True when the step is computed per head in this example.
bool step_per_head(const Model& model, StepId id);
// Every step of this example with its heads, in the order of the trace: the
// table's order, with the per-head steps of one head together (all of head
// 1's, then all of head 2's).
std::vector<StepKey> step_sequence(const Model& model);
// The steps `key` reads (none for the given ones: inputs, positional, context).
std::vector<StepKey> step_inputs(const Model& model, const StepKey& key);
// "positional and encoded need positional:, context needs context:, …": when
// the steps that are not always there exist, for hints.
std::string step_requirements();
// "this step exists only when the example sets a mask or padding": why an
// example lacks a step, for hints (empty for the steps that are always there).
std::string step_absence(StepId id);
// The steps a key of an example file feeds, in the order of its row in
// model/keys.def (the man page's "Steps:" after the key's meaning).
std::span<const StepId> key_feeds(Key key);

// The heads' outputs side by side, as formulas write them: [Z_1 Z_2] and
// [Z_1 Z_2 Z_3] in full, [Z_1 … Z_H] from four heads on; latex in LaTeX.
std::string concat_formula(int heads, bool latex = false);

// Where head `head`'s block of an mla up-projection sits in the weight the file writes (steps_mla.cpp):
// its columns of q_proj (q_b_proj with q_rank) for w_query, its W_UK or W_UV part of kv_b_proj for w_key
// and w_value; rows in the pytorch layout.
struct MlaBlock {
    std::string file;        // "kv_b_proj"
    std::string subscript;   // "UK": W_UK
    arma::uword first = 0;   // its first column (row in the pytorch layout), from 0
    arma::uword width = 0;
};
MlaBlock mla_block(const Model& model, StepId weight, int head);

// The decimals `round:` rounds this step to, if any.
std::optional<int> step_rounding(const Model& model, StepId id);

// The value of `key` from `values`, which must hold each step it reads, with
// the example's hand rounding (round:) applied. Throws std::logic_error when
// an input is missing or the inputs' shapes do not fit together (Armadillo's
// size errors are logic errors).
arma::mat compute_step(const Model& model, const StepKey& key, const StepValues& values);

// What the steps say about themselves: title, formulas, explanation, labels
// and notes, everything but their values. One context serves every step of an
// example, so that what all heads share (the blocked cells of a mask) is
// counted once.
class StepContext {
public:
    explicit StepContext(const Model& model);

    Step describe(const StepKey& key) const;

    const Model& model() const { return m_model; }
    const SourceNames& names() const { return m_names; }
    const std::vector<std::string>& key_tokens() const;
    arma::uword blocked_cells() const;

private:
    const Model& m_model;
    SourceNames m_names;
    mutable std::optional<arma::uword> m_blocked;
};

}  // namespace qkv
