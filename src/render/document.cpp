// What every document format shares: run's document, a step's heading and
// formula as blocks, and the choice of a writer by format.
#include "render/document.hpp"

#include "attention/cell.hpp"
#include "attention/steps.hpp"
#include "render/latex.hpp"
#include "render/render.hpp"

#include <cmath>
#include <stdexcept>

namespace qkv {

Document run_header(const Trace& trace, const RenderOptions& options) {
    Document document;
    document.title = trace.title.empty() ? "Self-attention, step by step" : trace.title;
    document.purpose = "self-attention step by step";
    if (!options.brief) {
        document.blocks.push_back(Prose{trace.description});
    }
    document.blocks.push_back(Sizes{trace.dims, trace.cross});
    return document;
}

Document run_document(const Trace& trace, const RenderOptions& options, const RunExtras& extras) {
    Document document = run_header(trace, options);
    if (extras.workings) {
        document.blocks.push_back(Aside{"Select any number to see how it was worked out."});
    }
    for (Block& part : run_steps(trace, options, extras)) {
        document.blocks.push_back(std::move(part));
    }
    return document;
}

namespace {

// Each kept cell's working, by the table's row and column.
std::vector<std::vector<CellWorking>> cell_workings(const Trace& trace, const Step& step, const Table& table,
                                                    const CellWorkings& workings) {
    std::vector<std::vector<CellWorking>> cells(table.rows.size(), std::vector<CellWorking>(table.cols.size()));
    for (std::size_t i = 0; i < table.rows.size(); ++i) {
        for (std::size_t j = 0; j < table.cols.size(); ++j) {
            if (table.rows[i] != k_gap && table.cols[j] != k_gap) {
                cells[i][j] = {cell_at(trace, step, table.rows[i], table.cols[j]).text,
                               workings(step, table.rows[i], table.cols[j])};
            }
        }
    }
    return cells;
}

// The weights' cells whose score the mask made −∞ (none when the trace has
// no masked scores of the weights' shape).
std::vector<std::vector<bool>> blocked_cells(const Trace& trace, const Step& weights, const Table& table) {
    const Step* masked = trace.find(StepId::masked_scores, weights.head);
    if (masked == nullptr || masked->values.n_rows != weights.values.n_rows ||
        masked->values.n_cols != weights.values.n_cols) {
        return {};
    }
    std::vector<std::vector<bool>> blocked(table.rows.size(), std::vector<bool>(table.cols.size(), false));
    for (std::size_t i = 0; i < table.rows.size(); ++i) {
        for (std::size_t j = 0; j < table.cols.size(); ++j) {
            blocked[i][j] = table.rows[i] != k_gap && table.cols[j] != k_gap &&
                            std::isinf(masked->values(table.rows[i], table.cols[j]));
        }
    }
    return blocked;
}

// "Scores, head 2" with "S = Q K^\top", labelled PREFIX:scores:head2; the
// head is named where there are several
Numbered numbered(const Trace& trace, const Step& step, const RenderOptions& options) {
    const bool several = step.head > 0 && trace.dims.heads > 1;
    const std::string head = several ? std::to_string(step.head) : "";
    return {.name = step.title + (several ? ", head " + head : ""),
            .formula = step.latex,
            .label = options.label_prefix + ":" + step_text(step.id) + (several ? ":head" + head : "")};
}

}  // namespace

std::vector<Block> run_steps(const Trace& trace, const RenderOptions& options, const RunExtras& extras) {
    std::vector<Block> parts;
    for (const Step* step : select_steps(trace, options)) {
        Part part;
        part.id = extras.id_prefix + step_text(step->id) + (step->head != 0 ? "-h" + std::to_string(step->head) : "");
        part.blocks.push_back(step_heading_of(trace, *step));
        part.blocks.push_back(formula_of(*step));
        if (!options.brief) {
            part.blocks.push_back(Prose{step->explanation});
            if (extras.model != nullptr) {
                std::string equations = latex_working(*extras.model, trace, *step, options);
                if (!equations.empty()) {
                    part.blocks.push_back(Equations{std::move(equations)});
                }
            }
        }
        TableBlock table{.table = build_table(*step, options),
                         .shaded = step->id == StepId::weights,
                         .row_shaded = step->id != StepId::weights && step_row(step->id).square &&
                                       !is_gradient(step->id)};
        if (extras.workings) {
            table.workings = cell_workings(trace, *step, table.table, extras.workings);
        }
        if (table.shaded) {
            table.blocked = blocked_cells(trace, *step, table.table);
        }
        if (options.floats) {
            table.numbered = numbered(trace, *step, options);
        }
        part.blocks.push_back(std::move(table));
        // made in place: GCC 12 takes a moved temporary's vector for one maybe uninitialized
        part.blocks.emplace_back(std::in_place_type<Notes>, Notes{step->notes});
        parts.push_back(std::move(part));
    }
    return parts;
}

StepHeading step_heading_of(const Trace& trace, const Step& step) {
    StepHeading heading;
    // the example's weights are given, not a step of the computation: they have no number; a
    // lesson numbers no step
    const int number = trace.number(step.id);
    heading.number = step_row(step.id).parameter ? "Given" : number == 0 ? "" : "Step " + std::to_string(number);
    heading.title = step.title;
    if (step.head != 0 && trace.dims.heads > 1) {
        // with grouped-query attention, keys and values have heads of their own
        const bool shared = is_per_kv_head(step.id) && trace.dims.kv_heads != trace.dims.heads;
        heading.head = (shared ? "key/value head " : "head ") + std::to_string(step.head);
    }
    heading.id = step_text(step.id);
    heading.head_index = step.head;
    return heading;
}

std::string joined_heading(const StepHeading& heading, std::string_view separator, std::string_view head_separator) {
    std::string text = heading.number.empty() ? heading.title : heading.number + std::string(separator) + heading.title;
    if (!heading.head.empty()) {
        text += std::string(head_separator) + heading.head;
    }
    return text;
}

std::string joined(const std::vector<HeadingPart>& parts) {
    std::string text;
    for (const auto& part : parts) {
        text += part.text;
    }
    return text;
}

Statement statement_of(const VerdictBlock& verdict) {
    std::string said;
    for (const auto& sentence : verdict.sentences) {
        said += (said.empty() ? "" : " ") + sentence;
    }
    return {{{.label = verdict.label, .spans = {{said}}, .tone = verdict.tone}}};
}

std::string full_title(const Document& document, std::string_view separator) {
    return document.subject.empty() ? document.title : document.title + std::string(separator) + document.subject;
}

// text draws a table's true values in brackets, which read apart from its
// parenthesised shapes; the formats that typeset use parentheses
std::string_view true_value_open(Format format) { return format == Format::text ? "[" : "("; }
std::string_view true_value_close(Format format) { return format == Format::text ? "]" : ")"; }
std::string true_value_words(Format format) { return format == Format::text ? "in brackets" : "in parentheses"; }

Formula formula_of(const Step& step) { return {step.latex, step.formula, step.values.n_rows, step.values.n_cols}; }

bool is_document_format(Format format) { return document_writer(format) != nullptr; }

void write_document(const Document& document, Format format, const DocumentStyle& style, std::ostream& out) {
    const DocumentWriter writer = document_writer(format);
    if (writer == nullptr) {
        throw std::logic_error(format_name(format) + " is not a document format");
    }
    writer(document, style, out);
}

}  // namespace qkv
