// The report of `qkv check`: in any document format (text, Markdown, LaTeX,
// an HTML page), or the JSON of the check command in man/qkv.1 for auto-grading.
#pragma once

#include "check/check.hpp"
#include "render/document.hpp"
#include "render/render.hpp"

#include <ostream>
#include <string>

namespace qkv {

// The example as the user named it (FILE, NAME or -), for the `qkv explain` hint.
void render_check(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                  const std::string& example, std::ostream& out);

// The report for people to read, as a document: the answers' file and the
// marking rule, the marks' legend, each answered step (all, or with
// options.brief those with a mistake) as a part, and the summary with the
// `qkv explain` command for the first wrong cell (none when `example` is -).
Document check_document(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                        const std::string& example);
// The JSON report; `file` (a learner's file in a class) is written first when given.
void render_check_json(const CheckReport& report, std::ostream& out, const std::string* file = nullptr);
// Gradescope's results.json: the score, the summary, and a test per step
// answered or given points by the rubric, with the feedback a learner needs.
void render_check_gradescope(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                             std::ostream& out);

// "12 answered cells in 3 steps: 10 right, 2 wrong. First mistake: weights (head 2)." and the score.
std::string summary_sentence(const Trace& trace, const CheckReport& report);

// The diagnosis in one line: the mistake, where it was made when that was in an
// earlier step, and the correct operation.
std::string diagnosis_line(const CheckReport& report, const StepCheck& step);

// "weights[1,2]", or "weights[1,2]@2" for head 2 of several: the CELL syntax of `qkv explain`.
std::string cell_name(const Trace& trace, const StepCheck& step, const CellCheck& cell);

}  // namespace qkv
