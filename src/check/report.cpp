// The check report for people to read, built as a document (render/document.hpp)
// that every document format writes: each answered step as a table of the
// learner's numbers, each marked right (✓), wrong (✗, with the true value) or
// following from their earlier answers (→), the wrong cells in words, the
// diagnosis, and a summary; and the sentences the JSON report
// (report_json.cpp) shares.
#include "check/report.hpp"
#include "base/numbers.hpp"

#include "check/report_parts.hpp"

#include "render/document.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace qkv {

namespace report_parts {

constexpr std::size_t k_details_per_step = 3;  // wrong cells explained in words under a table

std::string plural(std::size_t count, const std::string& one, const std::string& many) {
    return std::to_string(count) + " " + (count == 1 ? one : many);
}


// `value` rounded to `decimals` ("-0.0" written 0.0).
std::string rounded_text(double value, int decimals) {
    std::string text = fixed(value, std::min(decimals, 300));
    if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) {
        text.erase(0, 1);
    }
    return text;
}

// The true value as the learner should have written it: rounded to their
// decimals (at least those the exercise asks for, unless theirs is exact), or
// (with --tolerance) at --precision.
std::string expected_text(const CheckReport& report, const CellCheck& cell, const RenderOptions& options) {
    const double value = cell.expected;
    if (std::isinf(value)) {
        return value < 0 ? "−∞" : "∞";
    }
    if (report.options.tolerance) {
        return format_number(value, options.precision, std::floor(value) == value, false);
    }
    return rounded_text(value, cell.decimals);
}

std::string true_value_text(double value, const RenderOptions& options) {
    return format_number(value, options.precision, std::isfinite(value) && std::floor(value) == value, false);
}

// The true value of a wrong cell, for "the true value X rounds to Y": with more
// decimals than the learner's k (and at least --precision), and more again
// until X itself plainly rounds to Y. At --precision alone the sentence could
// contradict itself: 0.640456 shown as 0.6405 "rounds to 0.64046".
std::string true_value_rounding_text(const CheckReport& report, const CellCheck& cell, const RenderOptions& options) {
    const double value = cell.expected;
    const int k = std::min(cell.decimals, 300);
    const double rounded = std::stod(expected_text(report, cell, options));
    const double half_unit = 0.5 * std::pow(10.0, -k);
    std::string text;
    for (int d = std::max(options.precision, k + 1); d <= std::max(options.precision, k + 1) + 17; ++d) {
        text = fixed(value, d);
        // strictly inside Y's rounding interval: not a tie either way, whatever the reader's rule
        if (std::fabs(std::stod(text) - rounded) < half_unit * (1 - 1e-9)) {
            break;
        }
    }
    return text;
}

// "3 answered: 2 right, 1 follows from your weights."
std::string counts_sentence(const StepCheck& step) {
    const std::size_t right = step.count(Verdict::right);
    const std::size_t wrong = step.count(Verdict::wrong);
    const std::size_t consistent = step.count(Verdict::consistent);
    std::vector<std::string> parts;
    if (right > 0) {
        parts.push_back(std::to_string(right) + " right");
    }
    if (wrong > 0) {
        parts.push_back(std::to_string(wrong) + " wrong");
    }
    if (consistent > 0 && step.follows_rounding_only) {
        parts.push_back(std::to_string(consistent) + (consistent == 1 ? " follows" : " follow") +
                        " from the rounding in your " + join_list(step.follows_from, " and "));
    } else if (consistent > 0) {
        parts.push_back(std::to_string(consistent) + (consistent == 1 ? " follows" : " follow") + " from your " +
                        join_list(step.follows_from, " and ") + " (error carried forward)");
    }
    return std::to_string(step.cells.size()) + " answered: " + join_list(parts, ", ") + ".";
}

std::string shape_sentence(const StepCheck& step) {
    const StepAnswer& answer = *step.answer;
    std::string text = "Your answer is " + shape_text(answer.n_rows, answer.n_cols) + "; " + step_text(answer.id) + " is " +
                       shape_text(step.step->values.n_rows, step.step->values.n_cols) + ".";
    const arma::mat& truth = step.step->values;
    if (answer.n_rows == truth.n_cols && answer.n_cols == truth.n_rows) {
        text += step.token_rows ? " Rows are tokens: write one row per token."
                                : " Its rows are not tokens: write it in the weight's own shape.";
    } else if (answer.n_rows < truth.n_rows && answer.n_cols == truth.n_cols) {
        text += " Write ~ for a row you leave out.";
    }
    return text;
}

std::string mistake_sentence(const CheckReport& report, const StepCheck& step) {
    const Diagnosis& d = *step.diagnosis;
    std::string text = d.mistake;
    if (!d.carried.empty()) {
        const auto& left_out = report.not_graded;
        const bool graded_out = std::find(left_out.begin(), left_out.end(), d.carried) != left_out.end();
        text += " This was in " + d.carried +
                (graded_out ? ", which --steps and --head leave out of the grading"
                            : ", which is not among your answers") +
                "; your " + step_text(step.answer->id) + " answer follows from it.";
    }
    return text;
}

std::string correct_sentence(const StepCheck& step) { return step.diagnosis->correct + "."; }

std::string cell_diagnosis_line(const CellCheck& cell) {
    if (!cell.diagnosis) {
        return "";
    }
    const Diagnosis& d = *cell.diagnosis;
    std::string text = d.mistake;
    if (!d.carried.empty()) {
        text += " This was in " + d.carried + ".";
    }
    return text + " Correct: " + d.correct + ".";
}

std::string wrong_cell_sentence(const Trace& trace, const CheckReport& report, const StepCheck& step,
                                const CellCheck& cell, const RenderOptions& options) {
    std::string text = cell_name(trace, step, cell) + ": you wrote " + cell.answer->text;
    if (cell.answer->expression) {
        text += " = " + trimmed(cell.answer->value, std::max(options.precision, 4));
    }
    // too few decimals is worth a word only when the number, at its own
    // decimals, rounds right: 1 for 0.6405, not 4 for 2.3094
    const double own_unit = std::pow(10.0, -std::min(cell.answer->decimals, 300));
    const bool rounds_right_as_written =
        std::isfinite(cell.expected) && std::fabs(cell.expected - cell.answer->value) <= 0.5 * own_unit * (1 + 1e-12);
    if (cell.decimals > cell.answer->decimals && rounds_right_as_written) {
        text += ", but the exercise asks for at least " +
                plural(static_cast<std::size_t>(cell.decimals), "decimal", "decimals");
    }
    text += "; ";
    const bool exact_at_decimals =
        std::isfinite(cell.expected) && std::stod(expected_text(report, cell, options)) == cell.expected;
    if (report.options.tolerance || !std::isfinite(cell.expected)) {
        return text + "the true value is " + true_value_text(cell.expected, options) + ".";
    }
    if (exact_at_decimals) {
        // exact at the learner's decimals: show them all (0.640625, not 0.6406)
        RenderOptions enough = options;
        enough.precision = std::max(options.precision, cell.decimals);
        return text + "the true value is " + true_value_text(cell.expected, enough) + ".";
    }
    // exactly halfway between two numbers of the learner's decimals (0.25 at one decimal): both count
    const int k = std::min(cell.decimals, 300);
    const std::string tie_text = fixed(cell.expected, k + 1);
    if (tie_text.back() == '5' && std::stod(tie_text) == cell.expected) {
        const double unit = std::pow(10.0, -k);
        const double low = std::stod(tie_text.substr(0, tie_text.size() - 1)) - (cell.expected < 0 ? unit : 0.0);
        return text + "the true value is " + tie_text + ", exactly halfway between " + fixed(low, k) + " and " +
               fixed(low + unit, k) +
               " (either counts).";
    }
    return text + "the true value " + true_value_rounding_text(report, cell, options) + " rounds to " +
           expected_text(report, cell, options) + ".";
}

// A wrong cell's sentence, with the cell's own diagnosis where the step's does
// not already say it (too few decimals, wrong_cell_sentence says itself).
std::string wrong_cell_text(const Trace& trace, const CheckReport& report, const StepCheck& step,
                            const CellCheck& cell, const RenderOptions& options) {
    std::string text = wrong_cell_sentence(trace, report, step, cell, options);
    const bool own = cell.diagnosis && cell.diagnosis->key != "too_few_decimals" &&
                     !(step.diagnosis && step.diagnosis->key == cell.diagnosis->key);
    return own ? text + " " + cell_diagnosis_line(cell) : text;
}

WrongCells wrong_cells(const Trace& trace, const CheckReport& report, const StepCheck& step,
                       const RenderOptions& options) {
    WrongCells result;
    for (const auto& cell : step.cells) {
        if (cell.verdict == Verdict::wrong && result.sentences.size() < k_details_per_step) {
            result.sentences.push_back(wrong_cell_text(trace, report, step, cell, options));
        }
    }
    const std::size_t wrong = step.count(Verdict::wrong);
    if (wrong > result.sentences.size()) {
        result.more =
            "… and " + plural(wrong - result.sentences.size(), "more wrong cell", "more wrong cells") + ".";
    }
    return result;
}

Totals totals_of(const CheckReport& report) {
    Totals t;
    t.blank = report.blank_cells;
    for (const auto& step : report.steps) {
        ++t.steps;
        t.cells += step.shape_ok ? step.cells.size() : step.answer->answered();
        t.right += step.count(Verdict::right);
        t.wrong += step.count(Verdict::wrong);
        t.consistent += step.count(Verdict::consistent);
        t.blank += step.blank();
        t.wrong_shapes += step.shape_ok ? 0 : 1;
        t.rounding_only = t.rounding_only && (step.count(Verdict::consistent) == 0 || step.follows_rounding_only);
    }
    return t;
}

// A number of points: at most two decimals, none when whole ("2", "1.5", "0.67").
std::string points_text(double points) {
    std::string text = rounded_text(points, 2);
    while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
        text.pop_back();
    }
    return text;
}

// "Score: 7.5 of 10." and the rubric's steps left out; empty without a rubric.
std::string score_sentence(const Trace& trace, const CheckReport& report) {
    if (report.options.rubric.empty()) {
        return "";
    }
    std::string text = "Score: " + points_text(report.score()) + " of " + points_text(report.max_score()) + ".";
    if (!report.unanswered.empty()) {
        std::vector<std::string> names;
        for (const auto& step : report.unanswered) {
            names.push_back(step_label(trace, step.id, step.head) + " (" + points_text(step.max_score) +
                            (step.max_score == 1.0 ? " point)" : " points)"));
        }
        text += " Not answered: " + join_list(names, ", ") + ".";
    }
    return text;
}

std::string rule_sentence(const CheckReport& report) {
    if (report.options.tolerance) {
        return "A number is right when it is within " + format_number(*report.options.tolerance, 6, false, false) +
               " of the true value.";
    }
    const int k = report.options.decimals;
    return "A number written with k decimals is right when it equals the true value rounded to k decimals; " +
           std::string(k == 0 ? "any number of decimals will do." :
                       "write at least " + plural(static_cast<std::size_t>(k), "decimal", "decimals") +
                           " unless the value is exact.");
}

}  // namespace report_parts

using namespace report_parts;

std::string summary_sentence(const Trace& trace, const CheckReport& report) {
    const Totals t = totals_of(report);
    if (report.steps.empty()) {
        const std::string score = score_sentence(trace, report);
        return "Nothing answered yet: write your values in place of the ~." + (score.empty() ? "" : " " + score);
    }
    std::vector<std::string> parts;
    parts.push_back(std::to_string(t.right) + " right");
    if (t.wrong > 0) {
        parts.push_back(std::to_string(t.wrong) + " wrong");
    }
    if (t.consistent > 0) {
        parts.push_back(std::to_string(t.consistent) + (t.consistent == 1 ? " follows" : " follow") +
                        (t.rounding_only ? " from the rounding in your earlier answers" : " from your earlier answers"));
    }
    if (t.wrong_shapes > 0) {
        parts.push_back(plural(t.wrong_shapes, "answer", "answers") + " of the wrong shape (" +
                        plural(t.cells - t.right - t.wrong - t.consistent, "cell", "cells") + ")");
    }
    std::string text = plural(t.cells, "answered cell", "answered cells") + " in " + plural(t.steps, "step", "steps") +
                       ": " + join_list(parts, ", ") + ".";
    if (const StepCheck* first = report.first_mistake()) {
        text += " First mistake: " + step_label(trace, first->answer->id, first->answer->head) + ".";
    } else if (t.consistent > 0) {
        text += " No mistakes.";
    } else {
        text += " All right.";
    }
    if (const std::string score = score_sentence(trace, report); !score.empty()) {
        text += " " + score;
    }
    return text;
}

namespace {

// The first wrong cell of the first mistake, for the `qkv explain` hint.
const CellCheck* first_wrong_cell(const CheckReport& report, const StepCheck*& step) {
    step = report.first_mistake();
    if (step == nullptr) {
        return nullptr;
    }
    for (const auto& cell : step->cells) {
        if (cell.verdict == Verdict::wrong) {
            return &cell;
        }
    }
    return nullptr;
}

Mark mark_of(Verdict verdict) {
    switch (verdict) {
        case Verdict::right:
            return Mark::right;
        case Verdict::wrong:
            return Mark::wrong;
        case Verdict::consistent:
            return Mark::carried;
    }
    return Mark::none;
}

// The learner's numbers in the layout of the step's own table (its labels,
// large matrices summarised), each marked with its verdict and a wrong one
// with the true value; ~ where no number was given. Only for an answer of
// the step's shape.
Table answer_table(const CheckReport& report, const StepCheck& step, const RenderOptions& options) {
    const auto symbols = [&options](const std::string& text) { return options.ascii ? to_ascii(text) : text; };
    const StepAnswer& answer = *step.answer;
    std::vector<const CellCheck*> checked(answer.n_rows * answer.n_cols, nullptr);
    for (const auto& cell : step.cells) {
        checked[cell.row * answer.n_cols + cell.col] = &cell;
    }
    Table table = build_table(*step.step, options);
    table.marks.assign(table.rows.size(), std::vector<CellMark>(table.cols.size()));
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        for (std::size_t c = 0; c < table.cols.size(); ++c) {
            const arma::uword i = table.rows[r];
            const arma::uword j = table.cols[c];
            if (i == k_gap || j == k_gap) {
                continue;
            }
            const CellCheck* cell = checked[i * answer.n_cols + j];
            table.cells[r][c] = cell == nullptr ? "~" : symbols(cell->answer->text);
            table.values[r][c] = cell == nullptr ? arma::datum::nan : cell->answer->value;
            if (cell != nullptr) {
                CellMark& mark = table.marks[r][c];
                mark.verdict = mark_of(cell->verdict);
                if (cell->verdict == Verdict::wrong) {
                    mark.true_value = expected_text(report, *cell, options);
                }
            }
        }
    }
    return table;
}

// An answered step: its heading and formula, the marked table (or what is
// wrong with its shape), the counts, the wrong cells in words and the diagnosis.
Part step_part(const Trace& trace, const CheckReport& report, const StepCheck& step, const RenderOptions& options) {
    const Step& trace_step = *step.step;
    Part part;
    part.id = "check-" + step_text(trace_step.id) + (trace_step.head != 0 ? "-h" + std::to_string(trace_step.head) : "");
    part.blocks.push_back(step_heading_of(trace, trace_step));
    part.blocks.push_back(formula_of(trace_step));
    if (step.shape_ok) {
        part.blocks.push_back(TableBlock{.table = answer_table(report, step, options), .role = TableRole::answers});
        part.blocks.push_back(Statement{{{.spans = {{counts_sentence(step)}}}}});
        const WrongCells wrong = wrong_cells(trace, report, step, options);
        MarkedList list;
        for (const auto& sentence : wrong.sentences) {
            list.items.push_back({Mark::wrong, sentence});
        }
        if (!wrong.more.empty()) {
            list.items.push_back({Mark::none, wrong.more});
        }
        if (!list.items.empty()) {
            part.blocks.emplace_back(std::in_place_type<MarkedList>, std::move(list));
        }
    } else {
        part.blocks.push_back(Statement{{{.spans = {{shape_sentence(step)}}, .tone = Mark::wrong}}});
    }
    if (step.diagnosis) {
        part.blocks.push_back(
            Statement{{{.label = "Mistake:", .spans = {{mistake_sentence(report, step)}}, .tone = Mark::wrong},
                       {.label = "Correct:", .spans = {{correct_sentence(step), SpanKind::formula}}}}});
    }
    return part;
}

}  // namespace

std::string cell_name(const Trace& trace, const StepCheck& step, const CellCheck& cell) {
    std::string name = step_text(step.answer->id) + "[" + std::to_string(cell.row + 1) + "," + std::to_string(cell.col + 1) + "]";
    if (step.answer->head != 0 && trace.dims.heads > 1) {
        name += "@" + std::to_string(step.answer->head);
    }
    return name;
}

std::string diagnosis_line(const CheckReport& report, const StepCheck& step) {
    std::string text;
    if (!step.shape_ok) {
        text = shape_sentence(step);
    }
    if (step.diagnosis) {
        text += (text.empty() ? "" : " ") + mistake_sentence(report, step) + " Correct: " + correct_sentence(step);
    }
    return text;
}

Document check_document(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                        const std::string& example) {
    Document document;
    document.title = "Checking answers";
    document.subject = trace.title.empty() ? example : trace.title;
    document.purpose = "checking answers: " + document.subject;
    document.blocks.push_back(Statement{
        {{.spans = {{"Answers from "}, {report.answers_source, SpanKind::code}, {". " + rule_sentence(report)}}}}});
    document.blocks.push_back(Legend{{{Mark::right, "right"},
                                      {Mark::wrong, "wrong, the true value"},
                                      {Mark::carried, "follows from your earlier answers"},
                                      {Mark::none, "~ not answered"}}});
    for (const auto& step : report.steps) {
        if (!options.brief || step.has_mistake()) {
            document.blocks.push_back(step_part(trace, report, step, options));
        }
    }
    Summary summary{.label = "Summary:",
                    .text = summary_sentence(trace, report),
                    .tone = report.first_mistake() != nullptr ? Mark::wrong : Mark::right};
    const StepCheck* first = nullptr;
    if (const CellCheck* cell = first_wrong_cell(report, first); cell != nullptr && example != "-") {
        summary.next = {{"To see how the true value is worked out: "},
                        {"qkv explain " + example + " '" + cell_name(trace, *first, *cell) + "'", SpanKind::code}};
    }
    document.blocks.push_back(std::move(summary));
    return document;
}

}  // namespace qkv
