// The check report in text, Markdown, LaTeX, HTML and JSON. Text, Markdown, LaTeX and HTML
// show each answered step as a table of the learner's numbers, each marked right (✓),
// wrong (✗, with the true value in brackets, in parentheses in Markdown, LaTeX and HTML) or
// following from their earlier answers (→); JSON is the auto-grading contract
// of the check command in man/qkv.1.in, written by report_json.cpp.
#include "check/report.hpp"
#include "base/numbers.hpp"

#include "check/report_parts.hpp"

#include "render/html.hpp"
#include "render/latex.hpp"
#include "render/palette.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <nlohmann/json.hpp>

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

std::string wrong_cell_sentence(const Trace& trace, const CheckReport& report, const StepCheck& step,
                                const CellCheck& cell, const RenderOptions& options) {
    std::string text = cell_name(trace, step, cell) + ": you wrote " + cell.answer->text;
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

WrongCells wrong_cells(const Trace& trace, const CheckReport& report, const StepCheck& step,
                       const RenderOptions& options) {
    WrongCells result;
    for (const auto& cell : step.cells) {
        if (cell.verdict == Verdict::wrong && result.sentences.size() < k_details_per_step) {
            result.sentences.push_back(wrong_cell_sentence(trace, report, step, cell, options));
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

// "✓", "✗" or "→" (with ascii "ok", "X" or "->").
std::string verdict_symbol(Verdict verdict, bool ascii) {
    switch (verdict) {
        case Verdict::right:
            return ascii ? "ok" : "✓";
        case Verdict::wrong:
            return ascii ? "X" : "✗";
        case Verdict::consistent:
            return ascii ? "->" : "→";
    }
    return "";
}

const char* verdict_color(Verdict verdict) {
    switch (verdict) {
        case Verdict::right:
            return k_green;
        case Verdict::wrong:
            return k_red;
        case Verdict::consistent:
            return k_yellow;
    }
    return nullptr;
}

// The learner's numbers in the layout of the step's own table (its labels,
// large matrices summarised), each marked with its verdict and a wrong one
// followed by the true value between `open` and `close`; ~ where no number
// was given. Only for an answer of the step's shape.
Table answer_table(const CheckReport& report, const StepCheck& step, const RenderOptions& options,
                   const std::string& open, const std::string& close) {
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
                mark.symbol = verdict_symbol(cell->verdict, options.ascii);
                mark.color = options.color ? verdict_color(cell->verdict) : nullptr;
                if (cell->verdict == Verdict::wrong) {
                    mark.detail = " " + open + symbols(expected_text(report, *cell, options)) + close;
                }
            }
        }
    }
    return table;
}

// ── text ────────────────────────────────────────────────────────────────────

class CheckTextWriter {
public:
    CheckTextWriter(const Trace& trace, const CheckReport& report, const RenderOptions& options, std::ostream& out)
        : m_trace(trace), m_report(report), m_options(options), m_out(out) {}

    void write(const std::string& example) {
        const std::string title = m_trace.title.empty() ? example : m_trace.title;
        line(styled("Checking answers · " + title, k_bold));
        line("Answers from " + m_report.answers_source + ". " + rule_sentence(m_report));
        line(mark(Verdict::right) + " right   " + mark(Verdict::wrong) + " wrong, the true value in brackets   " +
             mark(Verdict::consistent) + " follows from your earlier answers   ~ not answered");
        for (const auto& step : m_report.steps) {
            if (!m_options.brief || step.has_mistake()) {
                write_step(step);
            }
        }
        m_out << '\n';
        line(styled("Summary: " + summary_sentence(m_trace, m_report), k_bold));
        const StepCheck* first = nullptr;
        if (const CellCheck* cell = first_wrong_cell(m_report, first); cell != nullptr && example != "-") {
            line("To see how the true value is worked out: qkv explain " + example + " '" +
                 cell_name(m_trace, *first, *cell) + "'");
        }
    }

private:
    const Trace& m_trace;
    const CheckReport& m_report;
    const RenderOptions& m_options;
    std::ostream& m_out;

    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }
    std::string styled(const std::string& text, const char* style) const {
        return qkv::styled(text, style, m_options.color);
    }
    void line(const std::string& text) { m_out << symbols(text) << '\n'; }

    std::string mark(Verdict verdict) const {
        return styled(verdict_symbol(verdict, m_options.ascii), verdict_color(verdict));
    }
    void write_step(const StepCheck& step) {
        const Step& trace_step = *step.step;
        const std::string heading = step_heading(m_trace, trace_step) + "  [" + step_text(trace_step.id) + "]";
        m_out << '\n' << styled(symbols(heading), k_heading) << '\n';
        line("  " + formula_text(trace_step.formula, m_options.ascii) + "    (" + shape_text(trace_step.values.n_rows, trace_step.values.n_cols) + ")");
        m_out << '\n';
        if (step.shape_ok) {
            // numbers right-aligned among themselves, each with its mark after it
            m_out << draw_table(answer_table(m_report, step, m_options, "[", "]"),
                                TextTableSkin(m_options.ascii, 2, Align::left));
            line("  " + counts_sentence(step));
            const WrongCells wrong = wrong_cells(m_trace, m_report, step, m_options);
            for (const auto& sentence : wrong.sentences) {
                m_out << "  " << mark(Verdict::wrong) << ' ' << symbols(sentence) << '\n';
            }
            if (!wrong.more.empty()) {
                line("  " + wrong.more);
            }
        } else {
            line("  " + shape_sentence(step));
        }
        if (step.diagnosis) {
            m_out << "  " << styled(symbols("Mistake:"), k_red) << ' ' << symbols(mistake_sentence(m_report, step)) << '\n';
            line("  Correct: " + formula_text(correct_sentence(step), m_options.ascii));
        }
    }
};

// ── Markdown ────────────────────────────────────────────────────────────────

std::string markdown_cell(const std::string& text) {
    std::string escaped;
    for (const char c : text) {
        if (c == '|' || c == '*' || c == '_' || c == '`' || c == '\\' || c == '[' || c == ']' || c == '<') {
            escaped += '\\';
        }
        escaped += c;
    }
    return escaped;
}

// Check's Markdown tables: cells as written, not padded; an empty corner.
class CheckMarkdownSkin : public TableSkin {
public:
    Align align() const override { return Align::none; }
    std::string label(const std::string& text) const override { return markdown_cell(text); }
    std::string number(const std::string& text) const override { return markdown_cell(text); }

    std::string row(const std::string& label, const std::vector<std::string>& cells, int row) const override {
        std::string line = row < 0 ? "| |" : "| " + label + " |";
        for (const auto& cell : cells) {
            line += " " + cell + " |";
        }
        return line + "\n";
    }

    std::string divider(std::size_t, const std::vector<std::size_t>& widths) const override {
        std::string line = "|---|";
        for (std::size_t j = 0; j < widths.size(); ++j) {
            line += "---:|";
        }
        return line + "\n";
    }
};

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

void render_check_text(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                       const std::string& example, std::ostream& out) {
    CheckTextWriter(trace, report, options, out).write(example);
}

void render_check_markdown(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                           const std::string& example, std::ostream& out) {
    const auto symbols = [&options](const std::string& text) { return options.ascii ? to_ascii(text) : text; };
    const auto mark = [&options](Verdict verdict) { return verdict_symbol(verdict, options.ascii); };
    const std::string title = trace.title.empty() ? example : trace.title;
    const std::string separator = options.ascii ? "; " : " · ";
    out << "# Checking answers: " << markdown_cell(symbols(title)) << "\n\n";
    out << "Answers from `" << symbols(report.answers_source) << "`. " << symbols(rule_sentence(report)) << "\n\n";
    out << mark(Verdict::right) << " right" << separator << mark(Verdict::wrong) << " wrong, the true value in parentheses"
        << separator << mark(Verdict::consistent) << " follows from your earlier answers" << separator
        << "~ not answered\n";
    for (const auto& step : report.steps) {
        if (options.brief && !step.has_mistake()) {
            continue;
        }
        const Step& trace_step = *step.step;
        out << "\n## " << markdown_cell(symbols(step_heading(trace, trace_step))) << " `" << step_name(trace_step.id)
            << "`\n\n";
        out << markdown_math(trace_step.latex) << " ("
            << shape_text(trace_step.values.n_rows, trace_step.values.n_cols, options.ascii) << ")\n\n";
        if (step.shape_ok) {
            RenderOptions plain = options;
            plain.color = false;
            out << draw_table(answer_table(report, step, plain, "(", ")"), CheckMarkdownSkin());
            out << '\n' << symbols(counts_sentence(step)) << '\n';
            const WrongCells wrong = wrong_cells(trace, report, step, options);
            for (std::size_t i = 0; i < wrong.sentences.size(); ++i) {
                out << (i == 0 ? "\n" : "") << "- " << mark(Verdict::wrong) << ' '
                    << markdown_cell(symbols(wrong.sentences[i])) << '\n';
            }
            if (!wrong.more.empty()) {
                out << "- " << symbols(wrong.more) << '\n';
            }
        } else {
            out << symbols(shape_sentence(step)) << '\n';
        }
        if (step.diagnosis) {
            out << "\n**Mistake:** " << markdown_cell(symbols(mistake_sentence(report, step))) << "  \n";
            out << "**Correct:** " << markdown_cell(symbols(correct_sentence(step))) << '\n';
        }
    }
    out << "\n**Summary:** " << symbols(summary_sentence(trace, report)) << '\n';
}

void render_check_latex(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                        const std::string& example, std::ostream& out) {
    // LaTeX is ASCII whatever --ascii says: the marks are ✓ ✗ →, spelled as math
    RenderOptions plain = options;
    plain.color = false;
    plain.ascii = false;
    const auto mark = [](Verdict verdict) { return tex_escape(verdict_symbol(verdict, false)); };
    // a path breaks after its slashes
    const auto path = [](const std::string& text) {
        std::string tex = tex_escape(text);
        for (std::size_t at = tex.find('/'); at != std::string::npos; at = tex.find('/', at + 1)) {
            tex.insert(at + 1, "\\allowbreak{}");
        }
        return "\\texttt{" + tex + "}";
    };
    const std::string title = trace.title.empty() ? example : trace.title;
    out << latex_begin(options.standalone, to_ascii("checking answers: " + one_line(title)));
    out << "\\section*{\\raggedright " << tex_escape("Checking answers: " + title) << "}\n\n";
    // ragged right: a long path breaks only at its slashes
    out << "{\\raggedright Answers from " << path(report.answers_source) << ". " << tex_prose(rule_sentence(report))
        << "\\par}\n\n";
    out << "\\noindent " << mark(Verdict::right) << " right\\quad " << mark(Verdict::wrong)
        << " wrong, the true value in parentheses\\quad " << mark(Verdict::consistent)
        << " follows from your earlier answers\\quad \\textasciitilde{} not answered\n";
    for (const auto& step : report.steps) {
        if (options.brief && !step.has_mistake()) {
            continue;
        }
        const Step& trace_step = *step.step;
        out << "\n\\subsection*{\\raggedright " << tex_escape(step_heading(trace, trace_step, ": ", ", ")) << " (\\texttt{"
            << tex_escape(step_text(trace_step.id)) << "})}\n";
        out << latex_display({trace_step.latex + " \\qquad (" + std::to_string(trace_step.values.n_rows) +
                              " \\times " + std::to_string(trace_step.values.n_cols) + ")",
                              trace_step.latex});
        if (step.shape_ok) {
            // latex_table spells the marks; what it leaves as it is is spelled here
            out << latex_table(answer_table(report, step, plain, "(", ")"));
            out << tex_break_underscores(tex_prose(counts_sentence(step))) << "\n";
            const WrongCells wrong = wrong_cells(trace, report, step, plain);
            if (!wrong.sentences.empty() || !wrong.more.empty()) {
                out << "\\begin{itemize}\n";
                for (const auto& sentence : wrong.sentences) {
                    out << "  \\item[" << mark(Verdict::wrong) << "] " << tex_break_underscores(tex_escape(sentence)) << "\n";
                }
                if (!wrong.more.empty()) {
                    out << "  \\item[] " << tex_escape(wrong.more) << "\n";
                }
                out << "\\end{itemize}\n";
            }
        } else {
            out << tex_prose(shape_sentence(step)) << "\n";
        }
        if (step.diagnosis) {
            out << "\n\\noindent\\textbf{Mistake:} " << tex_prose(mistake_sentence(report, step)) << "\n\n";
            out << "\\noindent\\textbf{Correct:} " << tex_prose(correct_sentence(step)) << "\n";
        }
    }
    out << "\n\\bigskip\n\\noindent\\textbf{Summary:} " << tex_prose(summary_sentence(trace, report)) << "\n";
    const StepCheck* first = nullptr;
    if (const CellCheck* cell = first_wrong_cell(report, first); cell != nullptr && example != "-") {
        out << "\n{\\raggedright\\noindent To see how the true value is worked out: \\texttt{qkv explain}~"
            << path(example) << "~\\texttt{'" << tex_escape(cell_name(trace, *first, *cell)) << "'}\\par}\n";
    }
    out << latex_end(options.standalone);
}

void render_check_html(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                       const std::string& example, std::ostream& out) {
    const auto symbols = [&options](const std::string& text) { return options.ascii ? to_ascii(text) : text; };
    const auto text = [&symbols](const std::string& plain) { return xml_escape(symbols(plain)); };
    // a verdict's symbol in its colour: the page names the colour by a class
    const auto mark = [&options](Verdict verdict) {
        const std::string role = verdict == Verdict::right ? "right" : verdict == Verdict::wrong ? "wrong" : "carried";
        return "<span class=\"verdict-" + role + "\">" + xml_escape(verdict_symbol(verdict, options.ascii)) +
               "</span>";
    };
    const std::string title = trace.title.empty() ? example : trace.title;
    html_begin(out, symbols("Checking answers: " + title));

    // the summary first: on a page, the verdict is what a learner looks for
    const char* verdict = report.first_mistake() != nullptr ? "verdict-wrong" : "verdict-right";
    out << "<p class=\"" << verdict << "\"><strong>Summary:</strong> " << text(summary_sentence(trace, report))
        << "</p>\n";
    const StepCheck* first = nullptr;
    if (const CellCheck* cell = first_wrong_cell(report, first); cell != nullptr && example != "-") {
        out << "<p class=\"note\">To see how the true value is worked out: <code>qkv explain "
            << xml_escape(example) << " '" << xml_escape(cell_name(trace, *first, *cell)) << "'</code></p>\n";
    }
    out << "<p>Answers from <code>" << xml_escape(report.answers_source) << "</code>. " << text(rule_sentence(report))
        << "</p>\n";
    out << "<p class=\"note\">" << mark(Verdict::right) << " right · " << mark(Verdict::wrong)
        << " wrong, the true value in parentheses · " << mark(Verdict::consistent)
        << " follows from your earlier answers · ~ not answered</p>\n";

    // the table's cells are classed right, wrong or carried by their marks' colours
    RenderOptions marked = options;
    marked.color = true;
    for (const auto& step : report.steps) {
        if (options.brief && !step.has_mistake()) {
            continue;
        }
        const Step& trace_step = *step.step;
        const std::string id =
            "check-" + step_text(trace_step.id) + (trace_step.head != 0 ? "-h" + std::to_string(trace_step.head) : "");
        out << "<section id=\"" << id << "\">\n<h2>" << text(step_heading(trace, trace_step)) << " <code>"
            << step_text(trace_step.id) << "</code></h2>\n";
        out << "<p class=\"formula\"><span class=\"math\">"
            << html_formula(symbols(formula_text(trace_step.formula, options.ascii)))
            << "</span> <span class=\"shape\">("
            << text(shape_text(trace_step.values.n_rows, trace_step.values.n_cols)) << ")</span></p>\n";
        if (step.shape_ok) {
            out << html_table(answer_table(report, step, marked, "(", ")"));
            out << "<p>" << text(counts_sentence(step)) << "</p>\n";
            const WrongCells wrong = wrong_cells(trace, report, step, options);
            if (!wrong.sentences.empty() || !wrong.more.empty()) {
                out << "<ul>\n";
                for (const auto& sentence : wrong.sentences) {
                    out << "<li>" << mark(Verdict::wrong) << " " << text(sentence) << "</li>\n";
                }
                if (!wrong.more.empty()) {
                    out << "<li>" << text(wrong.more) << "</li>\n";
                }
                out << "</ul>\n";
            }
        } else {
            out << "<p class=\"verdict-wrong\">" << text(shape_sentence(step)) << "</p>\n";
        }
        if (step.diagnosis) {
            out << "<p><strong class=\"verdict-wrong\">Mistake:</strong> " << text(mistake_sentence(report, step))
                << "</p>\n";
            out << "<p><strong>Correct:</strong> " << text(formula_text(correct_sentence(step), options.ascii))
                << "</p>\n";
        }
        out << "</section>\n";
    }
    html_end(out);
}

}  // namespace qkv
