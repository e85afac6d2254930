// A cell of the trace as users write it: STEP[ROW,COL], STEP[ROW] (a whole
// row), either optionally followed by @HEAD, all numbers 1-based. Used by
// `qkv explain`, the lessons' placeholders and questions.
#pragma once

#include "attention/step_id.hpp"
#include "attention/trace.hpp"

#include <string>

namespace qkv {

struct CellRef {
    StepId step = StepId::inputs;
    int row = 0;              // 1-based
    int col = 0;              // 1-based; 0 = the whole row
    int head = 1;             // 1-based (1 for steps that are not per head)
    std::string text;         // as written, for messages
    bool head_given = false;  // @HEAD was written (an error on a step that is not per head)
    bool from_zero = false;   // a row, column or head was written as 0: cell_step rejects it
};

// Parses "scores[1,2]", "output[1]", "weights[2,3]@2". Throws InputError (with the
// expected syntax as hint) when it does not parse or names an unknown step.
// A 0 for the row, column or head ("scores[0,1]") is an error too, unless
// keep_zero: then the cell parses with from_zero set, so that cell_step can
// name the valid ranges of the example.
CellRef parse_cell(const std::string& text, bool keep_zero = false);

// The cell at 0-based `row` and `col` of a step, as users write it:
// "scores[1,2]", or "scores[1,2]@2" on a per-head step of several heads.
CellRef cell_at(const Trace& trace, const Step& step, arma::uword row, arma::uword col);

// The step of the trace that holds the cell, after checking the cell against
// it: the step exists in this example, @HEAD only on a per-head step, no index
// 0, row, column and head in range. Throws InputError naming the valid ranges.
const Step& cell_step(const Trace& trace, const CellRef& cell);

}  // namespace qkv
