// The numbers a cell is worked from: the rows, columns and cells of the steps
// it reads (query 2 and key 3 for scores[2,3]), the weights it uses, and the
// single numbers of the example it takes (the scale, a position, a slope, a
// sink). A lesson shows them beside its question, so that the question can be
// answered from what is on the screen.
#pragma once

#include "attention/cell.hpp"
#include "attention/trace.hpp"
#include "model/model.hpp"

#include <armadillo>

#include <string>
#include <vector>

namespace qkv {

struct Operand {
    StepKey step;      // the step the numbers come from (unused for a named number)
    int row = 0;       // 1-based; 0: every row (a column, or the whole step)
    int col = 0;       // 1-based; 0: every column (a row, or the whole step)
    std::string name;  // a number that is no step's cell: "scale", "position p", "slope m", "sink"
    arma::mat values;  // a cell (1 × 1), a row or a column (as a row), or the whole step
};

// The operands of `cell` (a cell, or a whole row with col 0), in the order its
// arithmetic takes them, each once. Steps the trace does not hold are left out.
std::vector<Operand> cell_operands(const Model& model, const Trace& trace, const CellRef& cell);

// What a step of `key`'s shape is worked from: the steps it reads and the
// weights it uses, each as the trace holds it.
std::vector<const Step*> shape_operands(const Model& model, const Trace& trace, const StepKey& key);

}  // namespace qkv
