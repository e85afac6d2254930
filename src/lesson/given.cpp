// What a question is worked from, written beside it ("Given: queries[2] =
// [2, 2, 2]; keys[3] = [2, 3, 1]"), so that it can be answered from what is on
// the screen, however far the page's tables have scrolled.
#include "lesson/player.hpp"

#include "attention/cell.hpp"
#include "attention/steps.hpp"
#include "explain/operands.hpp"
#include "render/table.hpp"

#include <algorithm>

namespace qkv {

namespace {

// "The same four tokens, not scaled" for a number of another model than the page's own
std::string model_title(const Lesson& lesson, int model, int own) {
    if (model == own) {
        return "";
    }
    const LessonModel& entry = lesson.models.at(static_cast<std::size_t>(model));
    return entry.trace.title.empty() ? "the model " + entry.name : entry.trace.title;
}

// "@2" for a per-head step of a model with several heads
std::string head_suffix(const Trace& trace, const StepKey& key) {
    return key.head != 0 && trace.dims.heads > 1 ? "@" + std::to_string(key.head) : std::string();
}

// The lines of one operand: "queries[2] = [2, 2, 2]", "column 3 of values = [3, 0, 3]",
// "column 1 of W_Q = [1, 1, 0, 0]", "b_Q[2] = 0.5", "scale = 2"; a whole step a line per row.
std::vector<std::string> operand_lines(const Trace& trace, const Operand& operand, const RenderOptions& options) {
    const auto text = [&](const arma::mat& values) {
        return format_value(std::vector<double>(values.begin(), values.end()), NumberStyle{}, options.precision,
                            options.ascii);
    };
    if (!operand.name.empty()) {
        return {operand.name + " = " + text(operand.values)};
    }
    const Step* step = trace.find(operand.step.id, operand.step.head);
    const bool parameter = step_row(operand.step.id).parameter && step != nullptr;
    // a weight by its symbol (W_Q, b_Q^(2)), a step by its id, with @HEAD after the cell
    const std::string name = parameter ? step->formula : step_text(operand.step.id);
    const std::string head = parameter ? std::string() : head_suffix(trace, operand.step);
    const auto cell = [&](const std::string& index) { return name + "[" + index + "]" + head; };
    const std::string r = std::to_string(operand.row);
    const std::string c = std::to_string(operand.col);
    if (parameter && step->values.n_rows == 1) {  // a bias
        return {(operand.col > 0 ? cell(c) : name) + " = " + text(operand.values)};
    }
    if (operand.row > 0 && operand.col > 0) {
        return {cell(r + "," + c) + " = " + text(operand.values)};
    }
    if (operand.row > 0) {
        return {(parameter ? "row " + r + " of " + name : cell(r)) + " = " + text(operand.values)};
    }
    if (operand.col > 0) {
        return {"column " + c + " of " + name + head + " = " + text(operand.values)};
    }
    std::vector<std::string> lines;
    for (arma::uword i = 0; i < operand.values.n_rows; ++i) {
        const std::string row = std::to_string(i + 1);
        lines.push_back((parameter ? "row " + row + " of " + name : cell(row)) + " = " + text(operand.values.row(i)));
    }
    return lines;
}

// Adds each line, of `model`, unless the same numbers are there already (of
// any model: the same numbers need saying once).
void add_unique(std::vector<Given>& to, const std::vector<std::string>& lines, const std::string& model = "") {
    for (const auto& line : lines) {
        const bool seen =
            std::any_of(to.begin(), to.end(), [&line](const Given& given) { return given.numbers == line; });
        if (!seen) {
            to.push_back({line, model});
        }
    }
}

// The operands of a cell (or a whole row). A step that passes its input on
// unchanged (no scaling, say) is worked from a cell that holds the answer
// itself: what that cell is worked from is given instead, so that the Given
// line never holds the answer.
void add_cell(std::vector<Given>& to, const Lesson& lesson, const ValueRef& ref, int own, const RenderOptions& options) {
    const LessonModel& entry = lesson.models.at(static_cast<std::size_t>(ref.model));
    CellRef cell = ref.cell;
    std::vector<Operand> operands = cell_operands(entry.model, entry.trace, cell);
    const Step& answered = cell_step(entry.trace, cell);
    const arma::mat answer = cell.col > 0 ? arma::mat{answered.values(static_cast<arma::uword>(cell.row - 1),
                                                                      static_cast<arma::uword>(cell.col - 1))}
                                          : arma::mat(answered.values.row(static_cast<arma::uword>(cell.row - 1)));
    for (int passed = 0; passed < 8 && operands.size() == 1; ++passed) {
        const Operand& only = operands.front();
        if (!only.name.empty() || only.row != cell.row || only.col != cell.col ||
            only.values.n_elem != answer.n_elem || !arma::approx_equal(only.values, answer, "absdiff", 1e-12)) {
            break;
        }
        cell.step = only.step.id;
        cell.head = std::max(only.step.head, 1);
        operands = cell_operands(entry.model, entry.trace, cell);
    }
    for (const Operand& operand : operands) {
        add_unique(to, operand_lines(entry.trace, operand, options), model_title(lesson, ref.model, own));
    }
}

// One name for two vectors ("weights[1]" of two models): each is said with
// its model's title, the page's own model too.
void name_models(std::vector<Given>& lines, const Lesson& lesson, int own) {
    const auto name_of = [](const Given& given) { return given.numbers.substr(0, given.numbers.find(" = ")); };
    for (Given& given : lines) {
        const std::string name = name_of(given);
        const auto same = std::count_if(lines.begin(), lines.end(),
                                        [&](const Given& other) { return name_of(other) == name; });
        if (same > 1 && given.model.empty()) {
            given.model = model_title(lesson, own, -1);
        }
    }
}

}  // namespace

std::vector<Given> question_given(const Lesson& lesson, const Question& question, const RenderOptions& options) {
    // numbers of the page's own model are named plainly, others with their model's name
    const Page* page = page_of(lesson, question);
    const int own = page != nullptr ? page->model : question.answer.model;
    std::vector<Given> lines;
    switch (question.kind) {
        case Question::Kind::number:
            add_cell(lines, lesson, question.answer, own, options);
            break;
        case Question::Kind::shape: {
            // the shapes of what the step is worked from: "inputs is 3 × 4", "W_Q is 4 × 3"
            const LessonModel& entry = lesson.models.at(static_cast<std::size_t>(question.answer.model));
            const Step& step = shape_step(lesson, question);
            for (const Step* operand : shape_operands(entry.model, entry.trace, {step.id, step.head})) {
                const std::string name = step_row(operand->id).parameter
                                             ? operand->formula
                                             : step_text(operand->id) + head_suffix(entry.trace, {operand->id, operand->head});
                add_unique(lines, {name + " is " + shape_text(operand->values.n_rows, operand->values.n_cols, options.ascii)});
            }
            break;
        }
        case Question::Kind::choice:
            if (question.row.is_cell) {
                ValueRef row = question.row;
                row.cell.col = 0;
                add_cell(lines, lesson, row, own, options);
                break;
            }
            for (const Option& option : question.options) {
                add_cell(lines, lesson, option.value, own, options);
            }
            break;
    }
    name_models(lines, lesson, own);
    return lines;
}

}  // namespace qkv
