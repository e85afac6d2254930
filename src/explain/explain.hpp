// `qkv explain`: the arithmetic behind one cell of the trace, with the real
// numbers — a projection or score as a dot product written out term by term,
// a weight as exp(s − max) over its row's sum, an output row as the weighted
// value vectors and their sum.
#pragma once

#include "attention/trace.hpp"
#include "model/model.hpp"
#include "render/render.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace qkv {

// A cell as the user writes it: STEP[ROW,COL], STEP[ROW] (a whole row), either
// optionally followed by @HEAD. All numbers 1-based; head defaults to 1.
struct CellRef {
    StepId step = StepId::inputs;
    int row = 0;              // 1-based
    int col = 0;              // 1-based; 0 = the whole row
    int head = 1;             // 1-based (1 for steps that are not per head)
    std::string text;         // as written, for messages
    bool head_given = false;  // @HEAD was written (an error on a step that is not per head)
    bool from_zero = false;   // a row, column or head was written as 0: explain_cell rejects it
};

// Parses "scores[1,2]", "output[1]", "weights[2,3]@2". Throws InputError (with the
// expected syntax as hint) when it does not parse or names an unknown step.
// A 0 for the row, column or head ("scores[0,1]") is an error too, unless
// keep_zero: then the cell parses with from_zero set, so that explain_cell can
// name the valid ranges of the example.
CellRef parse_cell(const std::string& text, bool keep_zero = false);

struct Explanation {
    std::string heading;              // "scores[1,2] = 4" (with head when there are several)
    std::string heading_markdown;     // the same with its labels escaped for Markdown
    std::vector<std::string> lines;   // the worked arithmetic, one line each
    CellRef cell;                     // the cell explained (head 0 for steps that are not per head)
    std::vector<double> values;       // the cell's value, or the whole row's, as the trace holds them
};

// Checks the cell against the trace (the step exists in this example, @HEAD
// only on a per-head step, no index 0, row, column and head in range; throws
// InputError naming the valid ranges) and
// writes out its arithmetic with numbers at options.precision.
Explanation explain_cell(const Model& model, const Trace& trace, const CellRef& cell, const RenderOptions& options);

// Writes explanations in options.format: text (heading, then the working
// indented), markdown (an escaped heading and a fenced block per cell) or json
// ({"schema_version": 1, "cells": [...]}). Other formats throw InputError.
void render_explanations(const std::vector<Explanation>& explanations, const RenderOptions& options,
                         std::ostream& out);

}  // namespace qkv
