// The trace: every intermediate matrix of one attention computation, with the
// labels, formula and notes that describe it. It is computed once (compute()
// in attention.hpp) and then only read, by the renderers, `explain`, `check`
// and the lessons.
#pragma once

#include "attention/step_id.hpp"

#include <armadillo>

#include <string>
#include <string_view>
#include <vector>

namespace qkv {

struct Step {
    StepId id = StepId::inputs;
    int head = 0;           // 1-based head; 0 for steps that are not per head
    std::string title;      // "Scores"
    std::string formula;    // plain text with Unicode: "S = Q·Kᵀ"
    std::string latex;      // the same formula in LaTeX math: "S = QK^\top"
    std::string explanation;         // what happened and why, one or two sentences
    std::vector<std::string> notes;  // facts about this instance ("each row sums to 1")
    std::vector<std::string> row_labels;
    std::vector<std::string> col_labels;
    arma::mat values;       // −∞ marks a blocked cell in masked_scores
};

struct Dims {
    arma::uword n = 0;        // queries (tokens)
    arma::uword m = 0;        // keys and values (context tokens for cross-attention)
    arma::uword d_model = 0;
    arma::uword heads = 1;
    arma::uword d_k = 0;
    arma::uword d_v = 0;
    arma::uword d_out = 0;
    arma::uword kv_heads = 1; // key/value heads: heads, or fewer with grouped-query attention
    bool weight_sets = false; // the file writes one weight set per head (its weights' gradients are per head)

    // The key/value head (1-based) that query head h (1-based) reads: ⌈h·G/H⌉.
    int kv_head_of(int h) const {
        return static_cast<int>((static_cast<arma::uword>(h) * kv_heads + heads - 1) / heads);
    }
};

struct Trace {
    std::string title;
    std::string description;
    std::vector<std::string> tokens;
    std::vector<std::string> context_tokens;  // empty unless cross-attention
    bool cross = false;
    Dims dims;
    double scale = 1.0;        // the divisor of the scores
    std::vector<Step> steps;   // in the order of the step table, heads ascending
    // The steps that printed step numbers count, in order: the computed ones
    // this trace holds (not the example's weights); empty in a lesson, whose
    // tables are headed by the steps' names alone.
    std::vector<StepId> numbering;

    // The step with this id and head (0 for steps that are not per head), or
    // nullptr when the trace does not hold it.
    const Step* find(StepId id, int head = 0) const;
    // The same by the id as users write it ("scores"); nullptr for a name that is no step.
    const Step* find(std::string_view name, int head = 0) const;
    // 1-based "Step N" number of a step id (0 when it is not numbered).
    int number(StepId id) const;
    // The same trace without its steps: its title, description, tokens and sizes.
    Trace header() const;
};

}  // namespace qkv
