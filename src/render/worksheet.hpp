// Worksheets (qkv worksheet): a printable exercise for pencil and paper. The
// sheet gives what a learner starts from — the inputs, the weights as the file
// writes them, the mask, the scale — and, for each step asked, its heading,
// formula and shape and an empty table with the labels `qkv run` uses. With
// `key` the tables hold the true values: the answer key. `-f yaml` writes the
// answers template that `qkv check --answers` reads, `~` in every cell (or
// the true values with `key`).
//
// worksheet.cpp decides what is on a sheet and builds it as a document
// (document.hpp), which each document format writes; worksheet_yaml.cpp
// writes the template.
#pragma once

#include "attention/trace.hpp"
#include "render/document.hpp"
#include "render/formats.hpp"
#include "render/table.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

struct Model;  // model/model.hpp

// A sheet is for pencil and paper: no table on it has more rows or columns.
inline constexpr arma::uword k_worksheet_limit = 32;

struct WorksheetOptions {
    Format format = Format::markdown;  // one of formats_of(Writer::worksheet); yaml is the answers template
    std::vector<StepId> steps;   // the steps asked; empty = the steps a learner works out (worksheet_steps)
    int head = 0;                // 1-based head; 0 = every head
    bool backward = false;       // by default, the backward pass's steps too
    bool key = false;            // the true values in the tables
    int decimals = 2;            // digits after the point of the key's values
    bool standalone = false;     // LaTeX: a whole document
    bool ascii = false;          // Markdown and HTML: ASCII only (LaTeX always is)
    std::string check_command;   // "qkv check illustrated --answers answers.yaml", for the template's header
};

// inputs, positional, context and grad_output: what a sheet gives, never asks.
bool is_given(StepId id);

// The steps on the sheet, in the order of the trace, each head's apart. The
// steps asked, or by default every step after the givens of the forward pass
// (and of the backward pass with `backward`); with `head` on an example of
// several heads, that head's steps. Throws InputError for a given step, a
// step the example does not have, and a table larger than k_worksheet_limit.
std::vector<const Step*> worksheet_steps(const Trace& trace, const WorksheetOptions& options);

// The notes under a step's table: the step's own ("each row sums to 1"), and
// for masked scores and weights which cells the mask blocks (left for the
// learner to fill in, as every other cell).
std::vector<std::string> worksheet_notes(const Model& model, const Step& step);

// The sheet of the steps worksheet_steps() chooses, as a document: the
// givens, each in a group with its label, and each step in a group with its
// heading, formula, table (blank, or the key's) and notes. Throws InputError
// as worksheet_steps() does, and for a given matrix too large for a sheet.
Document worksheet_document(const Model& model, const Trace& trace, const WorksheetOptions& options);

// Writes the sheet (or, for yaml, the answers template) of the steps
// worksheet_steps() chooses. Throws InputError as worksheet_steps() does.
void render_worksheet(const Model& model, const Trace& trace, const WorksheetOptions& options, std::ostream& out);

// The answers template (worksheet_yaml.cpp): `answers:` with a list of rows
// for each step, per-head steps under `answers.heads` when there are several
// heads, as io/answers.cpp reads them.
void render_answers_template(const Model& model, const Trace& trace, const std::vector<const Step*>& steps,
                             const WorksheetOptions& options, std::ostream& out);

}  // namespace qkv
