// `qkv explain`: the arithmetic behind one cell of the trace, with the real
// numbers — a projection or score as a dot product written out term by term,
// a weight as exp(s − max) over its row's sum, an output row as the weighted
// value vectors and their sum.
#pragma once

#include "explain/operands.hpp"
#include "attention/cell.hpp"
#include "attention/trace.hpp"
#include "model/model.hpp"
#include "render/document.hpp"
#include "render/html.hpp"
#include "render/render.hpp"

#include <armadillo>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace qkv {

// One block of keys in the online softmax (FlashAttention): the running
// maximum m, sum ℓ and unnormalised output o after keys first … last (1-based).
struct OnlineBlock {
    arma::uword first = 0;
    arma::uword last = 0;
    double max = 0.0;
    double sum = 0.0;
    std::vector<double> output;  // o for the cell's columns; head_output cells only
    std::optional<double> sink;  // the head's sink logit, joined last as a block of its own
};

struct Explanation {
    std::string heading;              // "scores[1,2] = 4" (with head when there are several)
    std::vector<HeadingPart> heading_parts;  // the same with the example's labels marked (none: a sentence)
    std::vector<std::string> lines;   // the worked arithmetic, one line each
    std::string latex;                // the step's formula in LaTeX math, as the trace holds it: "S = QK^\top"
    CellRef cell;                     // the cell explained (head 0 for steps that are not per head)
    std::vector<double> values;       // the cell's value, or the whole row's, as the trace holds them
    std::vector<OnlineBlock> blocks;  // with a block size: the online softmax, block by block
    std::vector<Operand> operands;    // what the cell is worked from (cell_operands), where JSON is written
};

// The steps whose cells the online softmax explains: weights and head_output.
bool has_online_form(StepId id);

// Checks the cell against the trace (cell_step) and writes out its
// arithmetic with numbers at options.precision. With a block size (a weights
// or head_output cell), the row's softmax is also written out the way
// FlashAttention computes it: keys in blocks of block_size, with a running
// maximum, sum and output (online.cpp).
Explanation explain_cell(const Model& model, const Trace& trace, const CellRef& cell, const RenderOptions& options,
                         arma::uword block_size = 0);

// The workings of run's HTML page (render_html): each cell's heading and
// lines as explain_cell() writes them at options.precision.
CellWorkings html_workings(const Model& model, const Trace& trace, const RenderOptions& options);

// Writes explanations in options.format (formats.cpp): text (heading, then the
// working indented), markdown (an escaped heading and a fenced block per cell),
// latex (a fragment, or with options.standalone a document), html (a page
// with a section per cell): each a document of workings (render/document.hpp);
// or json ({"schema_version": 1, "cells": [...]}). Other formats throw std::logic_error.
void render_explanations(const std::vector<Explanation>& explanations, const RenderOptions& options,
                         std::ostream& out);

}  // namespace qkv
