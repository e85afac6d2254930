#include "render/render.hpp"

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
        if (options.head != 0 && step.head != 0 && step.head != options.head) {
            continue;
        }
        chosen.push_back(&step);
    }
    return chosen;
}

std::string round_trip(double value) {
    if (std::isinf(value)) {
        return value < 0 ? "-inf" : "inf";
    }
    if (std::isnan(value)) {
        return "nan";
    }
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    std::string text(buffer, result.ptr);
    if (text.find_first_of(".e") == std::string::npos) {
        text += ".0";
    }
    return text;
}

int step_number(const Trace& trace, StepId id) { return trace.number(id); }

int step_number(const Trace& trace, const Step& step) { return step_number(trace, step.id); }

void render(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    switch (options.format) {
        case Format::text:
            render_text(trace, options, out);
            return;
        case Format::markdown:
            render_markdown(trace, options, out);
            return;
        case Format::latex:
            render_latex(trace, options, out);
            return;
        case Format::csv:
            render_csv(trace, options, out);
            return;
        case Format::json:
            render_json(trace, options, out);
            return;
        case Format::svg:
            render_svg(trace, options, out);
            return;
    }
    throw std::logic_error("unknown output format");
}

}  // namespace qkv
