// A lesson's models computed, its steps numbered alike, and the cells its
// script names checked against the traces.
#include "lesson/lesson.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <cmath>

namespace qkv {

namespace {

// A lesson heads its tables with the steps' names alone: it shows a few of
// the steps, in the order its story needs, so `run`'s numbers would skip
// ("Step 2", then "Step 7") and a story's own would run backwards when a
// later page goes back to an earlier step.
void unnumber_steps(Lesson& lesson) {
    for (auto& entry : lesson.models) {
        entry.trace.numbering.clear();
    }
}

// The problem with a mention, or nullopt when its cell is in the trace (and,
// for an answer, finite).
std::optional<Diagnostic> mention_problem(const Lesson& lesson, const CellMention& mention) {
    const Trace& trace = lesson.models.at(static_cast<std::size_t>(mention.model)).trace;
    Diagnostic problem = mention.where;
    try {
        // names the valid ranges when the cell is not there
        cell_step(trace, mention.cell);
    } catch (const InputError& error) {
        const Diagnostic& first = error.diagnostics().front();
        problem.what += first.what;
        problem.hint = first.hint;
        return problem;
    }
    if (!mention.answer.empty() && mention.cell.col != 0 && !std::isfinite(cell_value(trace, mention.cell))) {
        problem.what = mention.answer + " " + mention.cell.text + " is −∞; a learner types a finite number";
        problem.hint = "ask about a cell that is not blocked, or about its weight";
        return problem;
    }
    return std::nullopt;
}

// A choice by a row (`choose: weights[2]`) offers the row's keys, by their
// labels in the trace; and every choice must have one right option: two
// options that tie for it are a problem of the lesson file.
std::optional<Diagnostic> prepare_choice(Lesson& lesson, Question& question) {
    if (question.kind != Question::Kind::choice) {
        return std::nullopt;
    }
    if (question.row.is_cell) {
        const Trace& trace = lesson.models.at(static_cast<std::size_t>(question.row.model)).trace;
        const Step& step = cell_step(trace, question.row.cell);
        for (arma::uword j = 0; j < step.values.n_cols; ++j) {
            ValueRef value = question.row;
            value.cell.col = static_cast<int>(j + 1);
            // weights[2] → weights[2,1], weights[2]@2 → weights[2,1]@2
            std::string text = question.row.cell.text;
            text.insert(text.rfind(']'), "," + std::to_string(j + 1));
            value.cell.text = text;
            const std::string label = j < step.col_labels.size() ? step.col_labels[j] : std::to_string(j + 1);
            question.options.push_back({label, value});
        }
    }
    std::vector<double> values;
    for (const auto& option : question.options) {
        values.push_back(resolve(lesson, option.value).front());
    }
    const std::size_t best = right_option(lesson, question);
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i != best && std::fabs(values[i] - values[best]) <= 1e-12 * std::max(1.0, std::fabs(values[best]))) {
            Diagnostic problem = question.where;
            problem.what += "the options " + question.options[best].label + " and " + question.options[i].label +
                            " tie for the " + (question.smallest ? "smallest" : "largest") + " value";
            problem.hint = "a choice has one right option: choose among values that differ";
            return problem;
        }
    }
    return std::nullopt;
}

}  // namespace

Lesson prepare_lesson(LessonFile file) {
    Lesson& lesson = file.lesson;
    for (auto& entry : lesson.models) {
        entry.trace = compute(entry.model);
    }
    unnumber_steps(lesson);

    for (const auto& mention : file.mentions) {
        if (auto problem = mention_problem(lesson, mention)) {
            file.problems.add(std::move(*problem));
        }
    }
    if (file.problems.empty()) {
        for (auto& page : lesson.pages) {
            if (page.ask) {
                if (auto problem = prepare_choice(lesson, *page.ask)) {
                    file.problems.add(std::move(*problem));
                }
            }
        }
    }
    // with the file's own problems, in the order of the file
    file.problems.throw_if_any();
    return std::move(file.lesson);
}

}  // namespace qkv
