// The rules of a lesson's script: its keys, its limits, narration and its
// placeholders, and the steps and cells a page may name.
#include "lesson/script.hpp"

#include "attention/steps.hpp"

#include <algorithm>
#include <cctype>

namespace qkv {

namespace {

std::optional<int> model_index(const std::vector<std::string>& models, const std::string& name) {
    const auto found = std::find(models.begin(), models.end(), name);
    return found == models.end() ? std::nullopt : std::optional(static_cast<int>(found - models.begin()));
}

}  // namespace

const std::vector<std::string>& lesson_keys() {
    static const std::vector<std::string> keys = {"title", "summary", "try", "model", "models", "script"};
    return keys;
}

const std::vector<std::string>& page_keys() {
    static const std::vector<std::string> keys = {"say",  "model",  "show",     "head",      "explain", "block_size",
                                                  "then", "ask",    "predict",  "answer",    "shape",   "choose",
                                                  "decimals", "tolerance", "pick", "reading"};
    return keys;
}

const std::vector<std::pair<std::string, std::string>>& answer_details() {
    static const std::vector<std::pair<std::string, std::string>> details = {
        {"decimals", "answer"}, {"tolerance", "answer"}, {"pick", "choose"}};
    return details;
}

bool is_model_name(const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
               c == '-' || c == '_';
    });
}

std::vector<NarrationPart> split_narration(const std::string& text, const std::string& path) {
    std::vector<NarrationPart> parts;
    std::string literal;
    const auto flush = [&] {
        if (!literal.empty()) {
            parts.push_back({NarrationPart::Kind::text, literal, {}});
            literal.clear();
        }
    };
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
            literal += c;  // {{ and }} stand for the braces themselves
            i += 2;
            continue;
        }
        if (c == '}') {
            flush();
            parts.push_back({NarrationPart::Kind::unpaired, "}",
                             {path + ": a } without its {", "write }} for a brace in the text"}});
            return parts;
        }
        if (c != '{') {
            literal += c;
            ++i;
            continue;
        }
        const std::size_t close = text.find('}', i);
        if (close == std::string::npos) {
            flush();
            parts.push_back({NarrationPart::Kind::unpaired, text.substr(i, 20),
                             {path + ": a { without its }",
                              "close the placeholder, e.g. {scores[1,2]}, or write {{ for a brace in the text"}});
            return parts;
        }
        flush();
        parts.push_back({NarrationPart::Kind::placeholder, text.substr(i, close - i + 1), {}});
        i = close + 1;
    }
    flush();
    return parts;
}

// {[MODEL:]CELL-OR-SIZE[|STYLE]}, e.g. {scores[1,2]}, {article:scores[1]}, {weights[2,4]|e2}, {d_k}
std::variant<Segment, ScriptProblem> read_placeholder(const std::string& source, const std::string& path,
                                                      const std::vector<std::string>& models, int page_model) {
    const std::string syntax_hint =
        "write {CELL} or {MODEL:CELL} with an optional |DECIMALS or |eDIGITS, e.g. {scores[1,2]}, "
        "{weights[1]|2}, {other:keys[2,1]}; or a size: " + comma_list(lesson_dimension_names());
    std::string body = source.substr(1, source.size() - 2);
    Segment segment;
    segment.source = source;
    if (const auto bar = body.rfind('|'); bar != std::string::npos) {
        const std::string style = body.substr(bar + 1);
        body = body.substr(0, bar);
        std::string digits = style;
        if (!style.empty() && style[0] == 'e') {
            segment.style.scientific = true;
            digits = style.substr(1);
        }
        if (!digits.empty()) {
            const bool numeric = digits.size() <= 2 && std::all_of(digits.begin(), digits.end(), [](char d) {
                                     return std::isdigit(static_cast<unsigned char>(d));
                                 });
            if (!numeric || std::stoi(digits) > 17) {
                return ScriptProblem{path + ": " + source + " has the style \"" + style + "\"", syntax_hint};
            }
            segment.style.decimals = std::stoi(digits);
        } else if (!segment.style.scientific) {
            return ScriptProblem{path + ": " + source + " has an empty style after |", syntax_hint};
        }
    }
    ValueRef ref;
    ref.model = page_model;
    if (const auto colon = body.find(':'); colon != std::string::npos) {
        const std::string name = body.substr(0, colon);
        const auto model = model_index(models, name);
        if (!model) {
            return ScriptProblem{
                path + ": " + source + " names the model \"" + name + "\", which this lesson does not define",
                did_you_mean(name, models) + "models: " + comma_list(models)};
        }
        ref.model = *model;
        body = body.substr(colon + 1);
    }
    const auto& sizes = lesson_dimension_names();
    if (std::find(sizes.begin(), sizes.end(), body) != sizes.end()) {
        ref.dimension = body;
        segment.value = ref;
        return segment;
    }
    if (body.find('[') == std::string::npos) {
        return ScriptProblem{path + ": " + source + " is neither a cell nor a size", did_you_mean(body, sizes) + syntax_hint};
    }
    try {
        ref.cell = parse_cell(body);
    } catch (const InputError& error) {
        const Diagnostic& first = error.diagnostics().front();
        return ScriptProblem{path + ": " + source + ": " + first.what, first.hint};
    }
    ref.is_cell = true;
    segment.value = ref;
    return segment;
}

std::variant<StepId, ScriptProblem> shown_step(const std::string& name, const std::string& path, const Model& model,
                                               const std::string& model_name) {
    const auto id = find_step(name);
    if (!id) {
        return ScriptProblem{path + ": unknown step id \"" + name + "\"",
                             did_you_mean(name, step_names()) + "valid step ids: " + step_name_list()};
    }
    if (!step_exists(model, *id)) {
        return ScriptProblem{path + ": model " + model_name + " has no " + name + " step", step_absence(*id)};
    }
    return *id;
}

std::optional<ScriptProblem> block_size_problem(const std::string& written, const std::string& path) {
    const std::string text = written.substr(written.find(':') == std::string::npos ? 0 : written.find(':') + 1);
    CellRef parsed;
    try {
        parsed = parse_cell(text);
    } catch (const InputError&) {
        return std::nullopt;
    }
    if (step_row(parsed.step).online) {
        return std::nullopt;
    }
    return ScriptProblem{path + ".explain: " + text + " belongs to step " + step_text(parsed.step) +
                             "; block_size explains weights and head_output cells",
                         "explain a weights or head_output cell on this page, e.g. head_output[2], or move " + text +
                             " to a page without block_size"};
}

}  // namespace qkv
