#include "render/render.hpp"
#include "render/document.hpp"
#include "base/numbers.hpp"
#include "render/html.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace qkv {

std::vector<const Step*> select_steps(const Trace& trace, const RenderOptions& options) {
    std::vector<const Step*> chosen;
    for (const auto& step : trace.steps) {
        if (!options.steps.empty() &&
            std::find(options.steps.begin(), options.steps.end(), step.id) == options.steps.end()) {
            continue;
        }
        if (options.steps.empty() && step_row(step.id).parameter && !read_by_people(options.format)) {
            continue;
        }
        // --head h: query head h's steps, and the key/value head it reads
        const int head = is_per_kv_head(step.id) ? trace.dims.kv_head_of(options.head) : options.head;
        if (options.head != 0 && step.head != 0 && step.head != head) {
            continue;
        }
        chosen.push_back(&step);
    }
    return chosen;
}

std::string join_list(const std::vector<std::string>& items, const std::string& last_separator) {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) {
            text += i + 1 == items.size() ? last_separator : ", ";
        }
        text += items[i];
    }
    return text;
}

std::string round_trip(double value) {
    std::string text = shortest(value);
    if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) {
        text += ".0";
    }
    return text;
}

std::string dims_line(const Dims& d, bool cross) {
    std::string text = "n = " + std::to_string(d.n) +
                       (cross ? " queries, m = " + std::to_string(d.m) + " keys" : " tokens") +
                       ", d_model = " + std::to_string(d.d_model) + ", heads = " + std::to_string(d.heads);
    if (d.kv_heads != d.heads) {
        text += ", kv_heads = " + std::to_string(d.kv_heads);
    }
    return text + ", d_k = " + std::to_string(d.d_k) + ", d_v = " + std::to_string(d.d_v) +
           ", d_out = " + std::to_string(d.d_out);
}

std::string dims_line(const Trace& trace) { return dims_line(trace.dims, trace.cross); }

std::string step_heading(const Trace& trace, const Step& step, std::string_view separator,
                         std::string_view head_separator) {
    return joined_heading(step_heading_of(trace, step), separator, head_separator);
}

void render(const Trace& trace, const RenderOptions& options, std::ostream& out, const Model* model) {
    switch (options.format) {
        case Format::text:
            render_text(trace, options, out);
            return;
        case Format::csv:
            render_csv(trace, options, out);
            return;
        case Format::json:
            render_json(trace, model, options, out);
            return;
        case Format::svg:
            render_svg(trace, options, out);
            return;
        case Format::html:
            // the tables alone; `qkv run` passes render_html() the workings of the cells
            render_html(trace, options, out);
            return;
        default:
            // Markdown, LaTeX, and any document format without a writer of run's own: run's document
            break;
    }
    if (is_document_format(options.format)) {
        // LaTeX sets each step's working as equations, from the example
        const RunExtras extras{.model = options.format == Format::latex ? model : nullptr};
        write_document(run_document(trace, options, extras), options.format,
                       {.ascii = options.ascii, .standalone = options.standalone, .color = options.color}, out);
        return;
    }
    throw std::logic_error("run does not write " + format_name(options.format));
}

}  // namespace qkv
