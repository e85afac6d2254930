// Renderers read a computed Trace and write it in one format. Nothing is
// recomputed for display: every number comes from the trace.
#pragma once

#include "attention/trace.hpp"
#include "render/formats.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

struct DecodeTrace;  // attention/decode.hpp
struct Model;        // model/model.hpp

struct RenderOptions {
    Format format = Format::text;
    int precision = 4;                // digits after the point
    std::vector<StepId> steps;        // steps to show; empty = all
    int head = 0;                     // 1-based head to show; 0 = every head
    bool full = false;                // no summarising of large matrices
    bool color = false;               // ANSI colour (already resolved from --color)
    bool ascii = false;               // no box-drawing or other non-ASCII symbols
    bool dark = false;                // SVG: for a dark page (dark background, light labels)
    bool brief = false;               // no prose: formulas, tables and notes only
    bool standalone = false;          // LaTeX: a whole document
    bool floats = false;              // LaTeX: each table in a table float with caption and label
    std::string label_prefix = "qkv"; // LaTeX: the floats' labels are PREFIX:STEP[:headN]
    int width = 0;                    // text: the columns a table may take (0: any); a wider one is drawn in blocks of columns
};

// The steps chosen by --steps and --head, in trace order.
std::vector<const Step*> select_steps(const Trace& trace, const RenderOptions& options);

// Write the trace in options.format. `model`, when given, is the example the
// trace was computed from: JSON writes its parameters ("params"), LaTeX each
// step's working as equations.
void render(const Trace& trace, const RenderOptions& options, std::ostream& out, const Model* model = nullptr);

void render_text(const Trace& trace, const RenderOptions& options, std::ostream& out);
// `model`, when given, adds its parameters ("params"); `more`, when set,
// writes further top-level keys (",\n \"key\": …") before the closing brace.
void render_json(const Trace& trace, const Model* model, const RenderOptions& options, std::ostream& out,
                 const std::function<void(std::ostream&)>& more = {});
// A matrix as JSON rows, [[…], …], in round-trip precision with −∞ as "-inf";
// one row of numbers as [a, b, c].
void write_json_rows(std::ostream& out, const arma::mat& M);
void write_json_row(std::ostream& out, const arma::rowvec& row);
void render_csv(const Trace& trace, const RenderOptions& options, std::ostream& out);
// Throws InputError when a panel is too large to draw.
void render_svg(const Trace& trace, const RenderOptions& options, std::ostream& out);

// Decoding with a key/value cache (run --decode): each document format
// walk through each position's cache, query, scores, weights and output row
// (the model gives their formulas); JSON is the run document of `trace` plus
// "decode" and "cache". --head chooses the heads shown. The formats it is
// written in are formats_of(Writer::decode); any other throws std::logic_error.
void render_decode(const Trace& trace, const DecodeTrace& decode, const Model& model, const RenderOptions& options,
                   std::ostream& out);
void render_decode_json(const Trace& trace, const DecodeTrace& decode, const Model& model, const RenderOptions& options,
                        std::ostream& out);

// Text for GitHub-flavoured Markdown, on one line: markup characters
// backslash-escaped (emphasis, code, tags, links, pipes, dollars, #), line
// breaks as spaces. Used by run and explain alike.
std::string markdown_escape(const std::string& text);

// Text as a Markdown code span: `text`, its delimiter a run of backticks
// longer than any inside it (``a`b``), with a space inside it when the text
// starts or ends with a backtick, so that the span holds the text exactly.
std::string markdown_code_span(const std::string& text);

// Lines as a fenced Markdown code block ("```text" … "```"), the fence
// longer than any run of backticks in them, so that no line can close it.
std::string markdown_code_block(const std::vector<std::string>& lines, const std::string& info = "text");

// A formula as Markdown math: "$S = Q K^\top$". The LaTeX is written so that
// GFM leaves every character to the math, as GitHub needs: no space inside
// the dollars, no backslash before punctuation (\, is \thinspace, \{ is
// \lbrace), and no _ or * that could open emphasis.
std::string markdown_math(const std::string& latex);

// "a, b and c": the items separated by commas, the last two by last_separator.
std::string join_list(const std::vector<std::string>& items, const std::string& last_separator);

// Shortest decimal text that reads back as the same double ("-inf" for −∞).
std::string round_trip(double value);
// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, its quotes doubled.
std::string csv_field(const std::string& text);

// "n = 3 tokens, d_model = 4, heads = 2, d_k = 2, d_v = 2, d_out = 4", with
// kv_heads when heads share keys and values.
std::string dims_line(const Trace& trace);
std::string dims_line(const Dims& dims, bool cross);

// "Step 6 · Scores · head 2": the step's number and title, and its head when
// the trace has several; LaTeX writes "Step 6: Scores, head 2".
std::string step_heading(const Trace& trace, const Step& step, std::string_view separator = " · ",
                         std::string_view head_separator = " · ");

}  // namespace qkv
