// The trace: every intermediate matrix of one attention computation, with the
// labels, formula and notes that describe it. It is computed once (compute.hpp)
// and then only read, by the renderers, `explain`, `check` and the lessons.
#pragma once

#include <armadillo>

#include <string>
#include <string_view>
#include <vector>

namespace qkv {

// The step ids of the contract, in order (SPEC §3).
inline constexpr std::string_view k_step_ids[] = {
    "inputs",  "positional",    "encoded",       "context", "queries",
    "keys",    "values",        "scores",        "scaled_scores",
    "masked_scores", "weights", "head_output",   "concat",  "output",
};

bool is_step_id(std::string_view id);
bool is_per_head_step(std::string_view id);
// 1-based position of a step id in k_step_ids (0 when unknown).
int step_order(std::string_view id);
std::vector<std::string> step_id_names();
// "inputs, positional, …" for hints.
std::string step_id_list();

struct Step {
    std::string id;         // a step id from k_step_ids
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
};

struct Trace {
    std::string title;
    std::string description;
    std::vector<std::string> tokens;
    std::vector<std::string> context_tokens;  // empty unless cross-attention
    bool cross = false;
    Dims dims;
    double scale = 1.0;        // the divisor of the scores
    std::vector<Step> steps;   // in the order of k_step_ids, heads ascending

    // The step with this id and head (0 for steps that are not per head), or
    // nullptr when the trace does not hold it.
    const Step* find(std::string_view id, int head = 0) const;
};

}  // namespace qkv
