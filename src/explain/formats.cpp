// The ways `qkv explain` writes its explanations: text (the heading in bold,
// the working indented), Markdown (a heading and a fenced block per cell), an
// HTML page (render/html.hpp) and JSON ({"schema_version": 1, "cells": [...]});
// LaTeX is in latex.cpp.
#include "explain/explain.hpp"

#include "base/diagnostics.hpp"
#include "render/palette.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace qkv {

namespace {

void render_text(const std::vector<Explanation>& explanations, const RenderOptions& options, std::ostream& out) {
    for (std::size_t k = 0; k < explanations.size(); ++k) {
        const Explanation& e = explanations[k];
        out << (k == 0 ? "" : "\n");
        out << styled(e.heading, k_bold, options.color) << '\n';
        for (const auto& line : e.lines) {
            out << "  " << line << '\n';
        }
    }
}

void render_markdown(const std::vector<Explanation>& explanations, std::ostream& out) {
    for (std::size_t k = 0; k < explanations.size(); ++k) {
        const Explanation& e = explanations[k];
        // (a label may hold backticks: the block's fence is longer than any of them)
        out << (k == 0 ? "" : "\n") << "### " << e.heading_markdown << "\n\n" << markdown_code_block(e.lines);
    }
}

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

void render_html(const std::vector<Explanation>& explanations, const RenderOptions& options, std::ostream& out) {
    const auto symbols = [&](const std::string& text) { return options.ascii ? to_ascii(text) : text; };
    std::vector<std::string> names;
    for (const auto& e : explanations) {
        names.push_back(e.cell.text);
    }
    html_begin(out, "The arithmetic of " + join_list(names, " and "));
    for (const auto& e : explanations) {
        HtmlWorking working{symbols(e.heading), {}};
        for (const auto& line : e.lines) {
            working.lines.push_back(symbols(line));
        }
        out << "<section class=\"explained\">\n" << html_working(working) << "</section>\n";
    }
    html_end(out);
}

}  // namespace

CellWorkings html_workings(const Model& model, const Trace& trace, const RenderOptions& options) {
    return [&model, &trace, options](const Step& step, arma::uword row, arma::uword col) {
        const Explanation e = explain_cell(model, trace, cell_at(trace, step, row, col), options);
        return HtmlWorking{e.heading, e.lines};
    };
}

void render_explanations(const std::vector<Explanation>& explanations, const RenderOptions& options,
                         std::ostream& out) {
    switch (options.format) {
        case Format::text:
            render_text(explanations, options, out);
            return;
        case Format::markdown:
            render_markdown(explanations, out);
            return;
        case Format::latex:
            render_explanations_latex(explanations, options, out);
            return;
        case Format::json:
            render_json(explanations, out);
            return;
        case Format::html:
            render_html(explanations, options, out);
            return;
        case Format::csv:
        case Format::svg:
        case Format::yaml:
        case Format::gradescope:
            break;
    }
    throw std::logic_error("explain does not write " + format_name(options.format));
}

}  // namespace qkv
