// Cells of the trace: parsing STEP[ROW,COL]@HEAD and finding the cell's step,
// with every way a cell can miss explained.
#include "attention/cell.hpp"

#include "attention/steps.hpp"
#include "base/diagnostics.hpp"

#include <algorithm>
#include <cctype>

namespace qkv {

namespace {

Diagnostic cell_error(const std::string& what, const std::string& hint) { return {"", 0, 0, what, hint}; }

const char* const k_cell_syntax = "write a cell as STEP[ROW,COL] or STEP[ROW], optionally followed by @HEAD, "
                                  "e.g. scores[1,2], output[1] or weights[2,3]@2";

// A positive whole number, or -1 when `text` is not one.
int parse_index(const std::string& text) {
    if (text.empty() || text.size() > 9) {
        return -1;
    }
    for (const char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
            return -1;
        }
    }
    return std::stoi(text);
}

std::string valid_cells(const Step& step, int n_rows, int n_cols, int heads) {
    const std::string id = step_text(step.id);
    std::string text = "valid cells: " + id + "[ROW,COL] with ROW 1 to " + std::to_string(n_rows) +
                       " and COL 1 to " + std::to_string(n_cols) + ", or " + id + "[ROW] for a whole row";
    if (step.head != 0 && heads > 1) {
        text += ", then @1 to @" + std::to_string(heads) + " for the head";
    }
    return text;
}


// The ids of the steps this example has, each once, in order; only the
// per-head ones when per_head_only.
std::string step_ids(const Trace& trace, bool per_head_only) {
    std::vector<StepId> ids;
    for (const auto& step : trace.steps) {
        if ((!per_head_only || step.head != 0) && std::find(ids.begin(), ids.end(), step.id) == ids.end()) {
            ids.push_back(step.id);
        }
    }
    std::string text;
    for (const auto id : ids) {
        text += (text.empty() ? "" : ", ") + step_text(id);
    }
    return text;
}

// A row, column or head written as 0: what the example numbers from 1.
Diagnostic from_zero_error(const CellRef& cell, const Step& step, int heads) {
    const int n_rows = static_cast<int>(step.values.n_rows);
    const int n_cols = static_cast<int>(step.values.n_cols);
    // a column 0 is written with its comma ("scores[1,0]"); a whole row has none
    const bool column_zero = cell.col == 0 && cell.text.find(',') != std::string::npos;
    if (cell.row != 0 && !column_zero) {
        // only the head is 0
        return cell_error("cell " + cell.text + " counts from 0; heads are numbered from 1, and this example has " +
                              std::to_string(heads) + (heads == 1 ? " head" : " heads"),
                          heads == 1 ? "leave out @HEAD: there is only head 1"
                                     : "heads are numbered @1 to @" + std::to_string(heads));
    }
    return cell_error("cell " + cell.text + " counts from 0; " + step_text(step.id) + " has " + std::to_string(n_rows) +
                          (n_rows == 1 ? " row" : " rows") + " and " + std::to_string(n_cols) +
                          (n_cols == 1 ? " column" : " columns") + ", numbered from 1 as in a_ij",
                      valid_cells(step, n_rows, n_cols, heads));
}

}  // namespace

CellRef cell_at(const Trace& trace, const Step& step, arma::uword row, arma::uword col) {
    CellRef cell;
    cell.step = step.id;
    cell.row = static_cast<int>(row) + 1;
    cell.col = static_cast<int>(col) + 1;
    cell.head = step.head == 0 ? 1 : step.head;
    cell.head_given = step.head != 0 && trace.dims.heads > 1;
    cell.text = step_text(step.id) + "[" + std::to_string(cell.row) + "," + std::to_string(cell.col) + "]" +
                (cell.head_given ? "@" + std::to_string(cell.head) : "");
    return cell;
}

const Step& cell_step(const Trace& trace, const CellRef& cell) {
    const bool per_head = is_per_head(cell.step, trace.dims);
    // keys and values have their own heads with grouped-query attention
    const int heads = static_cast<int>(is_per_kv_head(cell.step) ? trace.dims.kv_heads : trace.dims.heads);
    const std::string step_id = step_text(cell.step);
    // the heads that have the step: all of them, or, for a bias's gradient in a
    // heads: list, those that give the bias
    std::vector<int> having;
    for (int h = per_head ? 1 : 0; h <= (per_head ? heads : 0); ++h) {
        if (trace.find(cell.step, h) != nullptr) {
            having.push_back(h);
        }
    }
    if (having.empty()) {
        throw InputError(cell_error("cell " + cell.text + ": this example has no " + step_id + " step",
                                    "its steps are " + step_ids(trace, false)));
    }
    // @HEAD only on the steps that are computed once per head
    if (!per_head && cell.head_given) {
        throw InputError(cell_error("cell " + cell.text + ": " + step_id +
                                        " is not per head, so it takes no @HEAD",
                                    "leave out @" + std::to_string(cell.head) +
                                        "; the steps per head are " + step_ids(trace, true)));
    }
    if (cell.from_zero) {
        throw InputError(from_zero_error(cell, *trace.find(cell.step, having.front()), heads));
    }
    // @HEAD must name a head of the example; keys and values of grouped-query
    // attention by their key/value head, which says which query heads read them
    const int query_heads = static_cast<int>(trace.dims.heads);
    if (heads != query_heads && is_per_kv_head(cell.step) && (cell.head < 1 || cell.head > heads)) {
        const bool query_head = cell.head >= 1 && cell.head <= query_heads;
        const int g = query_head ? trace.dims.kv_head_of(cell.head) : 0;
        throw InputError(cell_error(
            "cell " + cell.text + ": " + step_id + " are numbered by key/value head, and this example has " +
                std::to_string(heads) + " for its " + std::to_string(query_heads) + " query heads; expected @1 to @" +
                std::to_string(heads),
            query_head ? "query head " + std::to_string(cell.head) + " reads key/value head " + std::to_string(g) +
                             ": write " + cell.text.substr(0, cell.text.rfind('@')) + "@" + std::to_string(g)
                       : "query heads 1 to " + std::to_string(query_heads) + " read key/value heads 1 to " +
                             std::to_string(heads) + ", " + std::to_string(query_heads / heads) + " each"));
    }
    if (cell.head < 1 || cell.head > heads) {
        throw InputError(cell_error("cell " + cell.text + ": head " + std::to_string(cell.head) +
                                        " does not exist; this example has " + std::to_string(heads) +
                                        (heads == 1 ? " head" : " heads"),
                                    heads == 1 ? "leave out @HEAD: there is only head 1"
                                               : "heads are numbered @1 to @" + std::to_string(heads)));
    }
    const Step* found = trace.find(cell.step, per_head ? cell.head : 0);
    if (found == nullptr) {
        std::string list;
        for (std::size_t k = 0; k < having.size(); ++k) {
            list += (k == 0 ? "" : k + 1 == having.size() ? " and @" : ", @") + std::to_string(having[k]);
        }
        throw InputError(cell_error("cell " + cell.text + ": head " + std::to_string(cell.head) + " has no " +
                                        step_id + " step",
                                    "only the heads whose bias the example gives have it: @" + list));
    }
    const Step& step = *found;
    const int n_rows = static_cast<int>(step.values.n_rows);
    const int n_cols = static_cast<int>(step.values.n_cols);
    const std::string ranges = valid_cells(step, n_rows, n_cols, heads);
    if (cell.row < 1 || cell.row > n_rows) {
        throw InputError(cell_error("cell " + cell.text + ": row " + std::to_string(cell.row) + " is out of range; " +
                                        step_text(step.id) + " has " + std::to_string(n_rows) +
                                        (n_rows == 1 ? " row" : " rows"),
                                    ranges));
    }
    if (cell.col < 0 || cell.col > n_cols) {
        throw InputError(cell_error("cell " + cell.text + ": column " + std::to_string(cell.col) +
                                        " is out of range; " + step_text(step.id) + " has " + std::to_string(n_cols) +
                                        (n_cols == 1 ? " column" : " columns"),
                                    ranges));
    }
    return step;
}


CellRef parse_cell(const std::string& text, bool keep_zero) {
    CellRef cell;
    cell.text = text;
    std::string compact;
    for (const char c : text) {
        if (!std::isspace(static_cast<unsigned char>(c))) {
            compact += c;
        }
    }
    const auto open = compact.find('[');
    const auto close = compact.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open || open == 0) {
        throw InputError(cell_error("cell \"" + text + "\" is not STEP[ROW,COL] or STEP[ROW]", k_cell_syntax));
    }
    const std::string name = compact.substr(0, open);
    const auto step = find_step(name);
    if (!step) {
        throw InputError(cell_error("cell \"" + text + "\": unknown step \"" + name + "\"",
                                    did_you_mean(name, step_names()) + "valid steps: " + step_name_list()));
    }
    cell.step = *step;
    const std::string inside = compact.substr(open + 1, close - open - 1);
    const auto comma = inside.find(',');
    cell.row = parse_index(inside.substr(0, comma));
    cell.col = comma == std::string::npos ? 0 : parse_index(inside.substr(comma + 1));
    const std::string after = compact.substr(close + 1);
    if (!after.empty()) {
        cell.head = after[0] == '@' ? parse_index(after.substr(1)) : -1;
        cell.head_given = true;
    }
    if (cell.row < 0 || cell.col < 0 || cell.head < 0) {
        throw InputError(cell_error("cell \"" + text + "\" is not STEP[ROW,COL] or STEP[ROW]", k_cell_syntax));
    }
    cell.from_zero = cell.row == 0 || (comma != std::string::npos && cell.col == 0) || cell.head == 0;
    if (cell.from_zero && !keep_zero) {
        throw InputError(cell_error("cell \"" + text + "\" counts from 0",
                                    "rows, columns and heads are numbered from 1, as in a_ij"));
    }
    return cell;
}

}  // namespace qkv
