// What the writers of check's report share (report.cpp: text, Markdown,
// LaTeX and HTML; report_json.cpp: JSON and Gradescope's results.json): the
// sentences a report is made of.
#pragma once

#include "check/report.hpp"

#include <string>
#include <vector>

namespace qkv::report_parts {

// The wrong cells explained in words: the first k_details_per_step, then how
// many more (an empty `more` when there are none).
struct WrongCells {
    std::vector<std::string> sentences;
    std::string more;  // "… and 2 more wrong cells."
};

WrongCells wrong_cells(const Trace& trace, const CheckReport& report, const StepCheck& step,
                       const RenderOptions& options);

struct Totals {
    std::size_t steps = 0;
    std::size_t cells = 0;       // answered, in answers of the right shape or not
    std::size_t right = 0;
    std::size_t wrong = 0;
    std::size_t consistent = 0;
    std::size_t blank = 0;
    std::size_t wrong_shapes = 0;
    bool rounding_only = true;   // every consistent cell follows from rounding alone
};

Totals totals_of(const CheckReport& report);

// VALUE with DECIMALS decimals, as a learner would write it.
std::string rounded_text(double value, int decimals);
// "2 of 3 cells right, 1 wrong"
std::string counts_sentence(const StepCheck& step);
// What is wrong with an answer of the wrong shape.
std::string shape_sentence(const StepCheck& step);
// The diagnosis of a step's mistake, in one sentence.
std::string mistake_sentence(const CheckReport& report, const StepCheck& step);
// The correct form of a diagnosed step, as a sentence.
std::string correct_sentence(const StepCheck& step);
// A wrong cell's own diagnosis, what was done and the correct form, in one
// line ("" when it has none).
std::string cell_diagnosis_line(const CellCheck& cell);
// How a number is marked: rounding-aware at the exercise's decimals, or within a tolerance.
std::string rule_sentence(const CheckReport& report);

}  // namespace qkv::report_parts
