#include "lesson/lesson.hpp"
#include "base/numbers.hpp"

#include "render/table.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace qkv {

namespace {

const Step& step_of(const Trace& trace, const CellRef& cell) {
    const int head = is_per_head(cell.step, trace.dims) ? cell.head : 0;
    const Step* step = trace.find(cell.step, head);
    if (step == nullptr) {
        throw std::out_of_range(cell.text + ": the trace holds no such step");
    }
    if (cell.row < 1 || static_cast<arma::uword>(cell.row) > step->values.n_rows || cell.col < 0 ||
        static_cast<arma::uword>(cell.col) > step->values.n_cols) {
        throw std::out_of_range(cell.text + ": outside the step's table");
    }
    return *step;
}

}  // namespace

const std::vector<std::string>& lesson_dimension_names() {
    static const std::vector<std::string> k_names = {"n",     "m",        "d_model", "d_k",
                                                       "d_v",   "d_out",    "heads",   "kv_heads",
                                                       "scale", "bytes_per_token"};
    return k_names;
}

double cell_value(const Trace& trace, const CellRef& cell) {
    const Step& step = step_of(trace, cell);
    if (cell.col == 0) {
        throw std::out_of_range(cell.text + ": a whole row, not one cell");
    }
    return step.values(cell.row - 1, cell.col - 1);
}

std::vector<double> cell_values(const Trace& trace, const CellRef& cell) {
    const Step& step = step_of(trace, cell);
    if (cell.col != 0) {
        return {step.values(cell.row - 1, cell.col - 1)};
    }
    std::vector<double> row;
    for (arma::uword j = 0; j < step.values.n_cols; ++j) {
        row.push_back(step.values(cell.row - 1, j));
    }
    return row;
}

double dimension_value(const Trace& trace, const std::string& name) {
    const Dims& d = trace.dims;
    if (name == "n") {
        return static_cast<double>(d.n);
    }
    if (name == "m") {
        return static_cast<double>(d.m);
    }
    if (name == "d_model") {
        return static_cast<double>(d.d_model);
    }
    if (name == "d_k") {
        return static_cast<double>(d.d_k);
    }
    if (name == "d_v") {
        return static_cast<double>(d.d_v);
    }
    if (name == "d_out") {
        return static_cast<double>(d.d_out);
    }
    if (name == "heads") {
        return static_cast<double>(d.heads);
    }
    if (name == "kv_heads") {
        return static_cast<double>(d.kv_heads);
    }
    if (name == "scale") {
        return trace.scale;
    }
    if (name == "bytes_per_token") {
        // what a key/value cache holds per token: a key and a value per key/value head, 8 bytes a number;
        // with mla the normed latent and the rope key, as run --decode caches them
        const Step* latent = trace.find(StepId::normed_kv_latent);
        const Step* rope = trace.find(StepId::rope_keys);
        if (latent != nullptr && rope != nullptr) {
            return static_cast<double>((latent->values.n_cols + rope->values.n_cols) * 8);
        }
        return static_cast<double>((d.d_k + d.d_v) * d.kv_heads * 8);
    }
    throw std::out_of_range("no size called " + name);
}

std::string format_value(const std::vector<double>& values, const NumberStyle& style, int precision, bool ascii) {
    // one rule for the whole row, so that its numbers line up as in a table
    const bool whole = !style.decimals && !style.scientific && all_whole_numbers(arma::rowvec(values));
    const int decimals = style.decimals.value_or(style.scientific ? 2 : precision);
    std::string text;
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::string number;
        if (style.scientific && std::isfinite(values[i])) {
            number = scientific(values[i], decimals);
        } else {
            number = format_number(values[i], decimals, whole, ascii);
        }
        text += (i == 0 ? "" : ", ") + number;
    }
    return values.size() == 1 ? text : "[" + text + "]";
}

std::vector<double> resolve(const Lesson& lesson, const ValueRef& ref) {
    const Trace& trace = lesson.models.at(static_cast<std::size_t>(ref.model)).trace;
    if (ref.is_cell) {
        return cell_values(trace, ref.cell);
    }
    return {dimension_value(trace, ref.dimension)};
}

int question_decimals(const Lesson& lesson, const Question& question) {
    if (question.decimals) {
        return *question.decimals;
    }
    const double value = resolve(lesson, question.answer).front();
    return std::isfinite(value) && value == std::round(value) ? 0 : 2;
}

std::size_t right_option(const Lesson& lesson, const Question& question) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < question.options.size(); ++i) {
        const double value = resolve(lesson, question.options[i].value).front();
        const double held = resolve(lesson, question.options[best].value).front();
        if (question.smallest ? value < held : value > held) {
            best = i;
        }
    }
    return best;
}

const LessonModel& model_of(const Lesson& lesson, const ValueRef& ref) {
    return lesson.models.at(static_cast<std::size_t>(ref.model));
}

const Page* page_of(const Lesson& lesson, const Question& question) {
    for (const auto& page : lesson.pages) {
        if (page.ask && &*page.ask == &question) {
            return &page;
        }
    }
    return nullptr;
}

const Step& shape_step(const Lesson& lesson, const Question& question) {
    return step_of(lesson.models.at(static_cast<std::size_t>(question.answer.model)).trace, question.answer.cell);
}

}  // namespace qkv
