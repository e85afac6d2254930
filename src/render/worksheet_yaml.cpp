// The answers template of a worksheet (-f yaml): `answers:` with one list of
// rows per step asked, `~` in every cell (or the true values for the key), in
// the layout io/answers.cpp reads for `qkv check --answers`. Comments say what
// each step, row and column is, so the file can be filled in by hand.
#include "render/render.hpp"
#include "render/table.hpp"
#include "render/worksheet.hpp"

#include <algorithm>
#include <map>

namespace qkv {

namespace {

// One step's entry: a comment naming it, its columns and its notes, then a
// row per line with the row's label after it. `indent` is the key's.
void write_step(std::ostream& out, const Model& model, const Trace& trace, const Step& step,
                const WorksheetOptions& options, const std::string& indent, bool first_in_item) {
    const arma::mat& M = step.values;
    const bool whole = all_whole_numbers(M);
    const std::string inner = indent + "  ";
    const std::string shape = std::to_string(M.n_rows) + " × " + std::to_string(M.n_cols);
    // a map item starts "- id:" on the line of its dash
    out << (first_in_item ? "" : indent) << step_name(step.id) << ":\n";
    out << inner << "# " << one_line(step_heading(trace, step)) << " (" << shape << "): " << one_line(step.formula)
        << "\n";
    std::string columns;
    for (const auto& label : step.col_labels) {
        columns += (columns.empty() ? "" : ", ") + one_line(label);
    }
    out << inner << "# columns: " << columns << "\n";
    for (const auto& note : worksheet_notes(model, step)) {
        out << inner << "# " << one_line(note) << "\n";
    }
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        out << inner << "- [";
        for (arma::uword j = 0; j < M.n_cols; ++j) {
            out << (j == 0 ? "" : ", ")
                << (options.key ? format_number(M(i, j), options.decimals, whole, true) : std::string("~"));
        }
        out << "]  # " << one_line(step.row_labels.at(i)) << "\n";
    }
}

// "head 2", or with grouped-query attention, where heads[g] also holds the
// keys and values of key/value head g: "key/value head 2" or "head 2, and key/value head 2".
std::string item_name(const Trace& trace, const std::vector<const Step*>& steps, int h) {
    const std::string number = std::to_string(h);
    if (trace.dims.kv_heads == trace.dims.heads) {
        return "head " + number;
    }
    const auto shared = static_cast<std::size_t>(
        std::count_if(steps.begin(), steps.end(), [](const Step* step) { return is_per_kv_head(step->id); }));
    if (shared == 0) {
        return "head " + number;
    }
    return shared == steps.size() ? "key/value head " + number : "head " + number + ", and key/value head " + number;
}

}  // namespace

void render_answers_template(const Model& model, const Trace& trace, const std::vector<const Step*>& steps,
                             const WorksheetOptions& options, std::ostream& out) {
    const std::string title = trace.title.empty() ? "Self-attention, step by step" : trace.title;
    const std::string decimals = std::to_string(options.decimals) + (options.decimals == 1 ? " decimal" : " decimals");
    if (options.key) {
        out << "# Answer key: " << one_line(title) << "\n"
            << "# The true value of each cell, to " << decimals << "; qkv check grades every one right:\n";
    } else {
        out << "# Answers: " << one_line(title) << "\n"
            << "# Write the value of each cell in place of its ~, to " << decimals << ", and keep ~ for a\n"
            << "# cell you leave out; write -inf for a blocked score. Each row ends with the\n"
            << "# token it belongs to. Then check your answers:\n";
    }
    out << "#   " << one_line(options.check_command) << "\n"
        << "answers:\n";

    // per-head steps under heads: [{…}, {…}] with several heads, the others at the top
    const bool several = trace.dims.heads > 1;
    std::map<int, std::vector<const Step*>> by_head;
    std::vector<const Step*> before;  // the top-level steps before the first per-head one
    std::vector<const Step*> after;
    for (const Step* step : steps) {
        if (several && step->head != 0) {
            by_head[step->head].push_back(step);
        } else {
            (by_head.empty() ? before : after).push_back(step);
        }
    }
    for (const Step* step : before) {
        write_step(out, model, trace, *step, options, "  ", false);
    }
    if (!by_head.empty()) {
        out << "  heads:\n";
        const int last = by_head.rbegin()->first;
        for (int h = 1; h <= last; ++h) {
            const auto found = by_head.find(h);
            if (found == by_head.end()) {
                out << "    - ~  # head " << h << ": not on this sheet\n";
                continue;
            }
            out << "    # " << item_name(trace, found->second, h) << "\n    - ";
            bool first = true;
            for (const Step* step : found->second) {
                write_step(out, model, trace, *step, options, "      ", first);
                first = false;
            }
        }
    }
    for (const Step* step : after) {
        write_step(out, model, trace, *step, options, "  ", false);
    }
}

}  // namespace qkv
