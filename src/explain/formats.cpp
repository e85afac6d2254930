// The ways `qkv explain` writes its explanations: as a document of workings
// (render/document.hpp), which text (the heading in bold, the working
// indented), Markdown (a heading and a fenced block per cell), LaTeX and HTML
// write; and as JSON ({"schema_version": 1, "cells": [...]}).
#include "explain/explain.hpp"

#include "base/diagnostics.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace qkv {

namespace {

void render_json(const std::vector<Explanation>& explanations, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["schema_version"] = 1;
    doc["cells"] = nlohmann::ordered_json::array();
    for (const auto& e : explanations) {
        nlohmann::ordered_json cell;
        cell["cell"] = e.cell.text;
        cell["step"] = step_text(e.cell.step);
        cell["head"] = e.cell.head == 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.cell.head);
        cell["row"] = e.cell.row;
        cell["col"] = e.cell.col == 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.cell.col);
        nlohmann::ordered_json values = nlohmann::ordered_json::array();
        for (const double value : e.values) {
            if (std::isinf(value)) {
                values.push_back(value < 0 ? "-inf" : "inf");
            } else {
                values.push_back(value);
            }
        }
        cell["values"] = values;
        cell["heading"] = e.heading;
        cell["lines"] = e.lines;
        // what it is worked from: a row (col null), a column (row null), a cell, a whole step, or a named number
        nlohmann::ordered_json operands = nlohmann::ordered_json::array();
        for (const auto& operand : e.operands) {
            nlohmann::ordered_json entry;
            if (!operand.name.empty()) {
                entry["name"] = operand.name;
            } else {
                entry["step"] = step_text(operand.step.id);
                entry["head"] = operand.step.head == 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(operand.step.head);
                entry["row"] = operand.row == 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(operand.row);
                entry["col"] = operand.col == 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(operand.col);
            }
            operands.push_back(entry);
        }
        cell["operands"] = operands;
        if (!e.blocks.empty()) {
            const auto number = [](double value) {
                return std::isinf(value) ? nlohmann::ordered_json(value < 0 ? "-inf" : "inf")
                                         : nlohmann::ordered_json(value);
            };
            nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
            for (const auto& block : e.blocks) {
                nlohmann::ordered_json entry;
                if (block.sink) {
                    entry["sink"] = *block.sink;
                } else {
                    entry["keys"] = {block.first, block.last};
                }
                entry["max"] = number(block.max);
                entry["sum"] = block.sum;
                if (e.cell.step == StepId::head_output) {
                    entry["output"] = block.output;
                }
                blocks.push_back(entry);
            }
            cell["blocks"] = blocks;
        }
        doc["cells"].push_back(cell);
    }
    out << doc.dump(1) << '\n';
}

// The cells as a document of workings, titled "The arithmetic of scores[1,2]
// and output[1]" where it is a whole document.
Document explanations_document(const std::vector<Explanation>& explanations) {
    std::vector<std::string> names;
    for (const auto& e : explanations) {
        names.push_back(e.cell.text);
    }
    Document document;
    document.purpose = "the arithmetic of " + join_list(names, " and ");
    document.title = "The arithmetic of " + join_list(names, " and ");
    document.title_in_fragment = false;
    for (const auto& e : explanations) {
        document.blocks.push_back(Working{e.heading_parts, e.latex, e.lines});
    }
    return document;
}

}  // namespace

CellWorkings html_workings(const Model& model, const Trace& trace, const RenderOptions& options) {
    return [&model, &trace, options](const Step& step, arma::uword row, arma::uword col) {
        const Explanation e = explain_cell(model, trace, cell_at(trace, step, row, col), options);
        return Working{e.heading_parts, e.latex, e.lines};
    };
}

void render_explanations(const std::vector<Explanation>& explanations, const RenderOptions& options,
                         std::ostream& out) {
    if (options.format == Format::json) {
        render_json(explanations, out);
        return;
    }
    if (is_document_format(options.format)) {
        write_document(explanations_document(explanations), options.format,
                       {.ascii = options.ascii, .standalone = options.standalone, .color = options.color}, out);
        return;
    }
    throw std::logic_error("explain does not write " + format_name(options.format));
}

}  // namespace qkv
