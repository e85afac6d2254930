// A learner's answers for `qkv check`: the values written under `answers:` (in
// the example file, or in a separate answer file), cell by cell. Each number
// keeps its text as written, because the number of decimals decides what counts
// as right (0.5 means "rounded to one decimal"). io/answers.hpp reads them.
#pragma once

#include "attention/step_id.hpp"

#include <armadillo>

#include <cstddef>
#include <string>
#include <vector>

namespace qkv {

struct AnswerCell {
    bool given = false;   // false for ~ (not answered)
    double value = 0.0;   // may be −∞ (masked_scores); never NaN
    int decimals = 0;     // digits after the point as written: "0.50" → 2, "6.03e-06" → 8
    std::string text;     // as written, e.g. "0.50" or "2/10"
    bool expression = false;  // written as arithmetic (2/10), not as a number: graded as its value
};

// One step's answer, as written: n_rows × n_cols cells, row-major. n_cols is
// the length of the answered rows (0 when every row is ~).
struct StepAnswer {
    StepId id = StepId::inputs;
    int head = 0;           // 1-based for per-head steps, 0 for the others
    arma::uword n_rows = 0;
    arma::uword n_cols = 0;
    std::vector<AnswerCell> cells;
    std::string where;      // "FILE:LINE:COL" of the answer, for messages

    const AnswerCell& at(arma::uword row, arma::uword col) const { return cells[row * n_cols + col]; }
    std::size_t answered() const;
};

// A step named in the answers with no number given: `scores: ~`, or rows of ~
// alone (an untouched template of qkv worksheet -f yaml).
struct BlankStep {
    StepId id = StepId::inputs;
    int head = 0;
};

struct Answers {
    std::string source;             // where they were read from, as shown to the user
    std::vector<StepAnswer> steps;  // in the order of the trace
    std::vector<BlankStep> blank;   // each cell of these counts as blank
};

}  // namespace qkv
