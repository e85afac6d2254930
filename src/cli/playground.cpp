// qkv playground: one self-contained page that runs qkv itself in a browser,
// from the WebAssembly the build compiled from these same sources (web/),
// with MODEL in its editor and MODEL's steps already drawn for a reader
// without JavaScript.
#include "attention/attention.hpp"
#include "builtin/builtin.hpp"
#include "cli/commands.hpp"
#include "explain/explain.hpp"
#include "io/loader.hpp"
#include "io/lesson_loader.hpp"
#include "render/html.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qkv::cli {

namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_whole(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return in.bad() ? std::nullopt : std::optional(text.str());
}

// "/home/me/qkv/build/" as typed in a shell: the path, quoted where it needs it.
std::string shell_path(const fs::path& path) {
    const std::string text = path.string();
    return text.find_first_of(" \t'\"$`\\") == std::string::npos ? text : "'" + text + "'";
}

}  // namespace

PlaygroundAssets playground_assets() {
    std::error_code error;
    const fs::path command = fs::read_symlink("/proc/self/exe", error);
    const fs::path folder = command.parent_path();
    // the build folder's, then an installed qkv's (PREFIX/bin/qkv, PREFIX/share/qkv/playground/)
    const fs::path in_build = folder / "share/qkv/playground";
    const fs::path installed = (folder / "../share/qkv/playground").lexically_normal();
    for (const fs::path& pieces : {in_build, installed}) {
        if (!fs::exists(pieces / "qkv.wasm.gz.b64", error)) {
            continue;
        }
        auto page = read_whole(pieces / "page.html");
        auto script = read_whole(pieces / "page.js");
        auto module = read_whole(pieces / "qkv.js");
        auto wasm = read_whole(pieces / "qkv.wasm.gz.b64");
        if (!page || !script || !module || !wasm) {
            throw InputError(Diagnostic{pieces.string(), 0, 0, "the playground's files cannot be read",
                                        "check the files' permissions, or build them again: cmake --build BUILD "
                                        "--target playground"});
        }
        return {*page, *script, *module, *wasm};
    }
    const bool build_folder = fs::exists(folder / "CMakeCache.txt", error);
    const std::string build = build_folder ? shell_path(folder) : "build";
#ifdef QKV_PLAYGROUND_CONFIGURED
    if (build_folder) {
        throw InputError(usage_error("the playground is not built yet; expected its files in " + in_build.string(),
                                     "build it with: cmake --build " + build + " --target playground"));
    }
    throw InputError(usage_error("the playground's files are not installed; expected them in " + installed.string(),
                                 "build them with cmake --build build --target playground, then install again"));
#else
    throw InputError(usage_error(
        "this qkv was built without its playground (emscripten was not installed); expected a build with it",
        "./bootstrap run installs emscripten and yaml-cpp's source; then build it with: cmake --build " + build +
            " --target playground"));
#endif
}

namespace {

// Text placed inside a <script> element: "</" cannot end it early.
std::string script_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        out += text[i];
        if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
            out += '\\';
        }
    }
    return out;
}

std::string options_html(const std::vector<std::string>& values, const std::string& selected,
                         const std::string& first = "") {
    std::string html = first;
    for (const auto& value : values) {
        html += "<option value=\"" + xml_escape(value) + "\"" + (value == selected ? " selected" : "") + ">" +
                xml_escape(value) + "</option>";
    }
    return html;
}

// Replaces each @NAME@ of the template with its text, once each, in one pass.
std::string fill(std::string_view page, const std::vector<std::pair<std::string, std::string>>& values) {
    std::string out;
    std::size_t at = 0;
    while (at < page.size()) {
        const std::size_t mark = page.find('@', at);
        if (mark == std::string_view::npos) {
            break;
        }
        bool replaced = false;
        for (const auto& [name, text] : values) {
            if (page.substr(mark, name.size() + 2) == "@" + name + "@") {
                out.append(page.substr(at, mark - at));
                out += text;
                at = mark + name.size() + 2;
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            out.append(page.substr(at, mark + 1 - at));
            at = mark + 1;
        }
    }
    out.append(page.substr(std::min(at, page.size())));
    return out;
}

}  // namespace

CLI::App* setup_playground(CLI::App& app, PlaygroundOptions& options) {
    Bindings bindings;
    bindings.bind("file", &options.file)
        .bind("--output", &options.common.output)
        .bind("--force", &options.common.force);
    return add_command(app, CommandId::playground, bindings);
}

int run_playground(const PlaygroundOptions& options) {
    const PlaygroundAssets assets = playground_assets();
    // the model is read, checked and computed here, so that a bad file is
    // reported now, and the page opens on its steps
    const Source source = read_source(options.file);
    CommonOptions html = options.common;
    html.format = "html";
    const Model model = load_model(source, load_options(html));
    const Trace trace = compute(model);
    const RenderOptions rendering = render_options(html, trace);
    std::ostringstream steps;
    render_html(trace, rendering, steps, html_workings(model, trace, rendering));

    const BuiltinFile* builtin = find_builtin_example(options.file);
    std::vector<std::string> examples;
    nlohmann::json texts = nlohmann::json::object();
    for (const auto& example : builtin_examples()) {
        examples.emplace_back(example.name);
        texts[std::string(example.name)] = std::string(example.text);
    }
    // each lesson by its number and title: "2 · Why the scores are scaled"
    std::string lessons;
    for (std::size_t i = 0; i < builtin_lessons().size(); ++i) {
        const BuiltinFile& lesson = builtin_lessons()[i];
        const std::string name(lesson.name);
        const LessonFile file = read_lesson({"lesson:" + name, std::string(lesson.text), ""}, name);
        const std::string number = std::to_string(i + 1);
        lessons += "<option value=\"" + number + "\"" + (i == 0 ? " selected" : "") + ">" + number + " · " +
                   xml_escape(file.lesson.title) + "</option>";
    }
    // the steps this example shows, each id once; the page lists them again for each example it computes
    std::string datalist;
    std::vector<StepId> listed;
    for (const Step& step : trace.steps) {
        if (std::find(listed.begin(), listed.end(), step.id) == listed.end()) {
            listed.push_back(step.id);
            datalist += "<option value=\"" + step_text(step.id) + "\"></option>";
        }
    }
    const std::string initial = builtin != nullptr ? std::string(builtin->name) : "";
    const std::string page =
        fill(assets.page, {{"QKV_VERSION", QKV_VERSION},
                           {"QKV_TITLE", xml_escape(model.title)},
                           {"QKV_EXAMPLE_OPTIONS", options_html(examples, initial, "<option value=\"\">your own</option>")},
                           {"QKV_LESSON_OPTIONS", lessons},
                           {"QKV_STEP_OPTIONS", datalist},
                           {"QKV_MODEL_YAML", xml_escape(source.text)},
                           {"QKV_STEPS_HTML", xml_escape(steps.str())},
                           {"QKV_EXAMPLE_TEXTS", script_text(texts.dump())},
                           {"QKV_WASM", assets.wasm},
                           {"QKV_MODULE_JS", script_text(assets.module)},
                           {"QKV_INITIAL", initial},
                           {"QKV_PAGE_JS", script_text(assets.script)}});
    write_result(page, options.common);
    return 0;
}

}  // namespace qkv::cli
