// The YAML loader of example files: load() reads a document's parts in order
// (loader_parts.hpp lists the files that read each part) into a validated
// Model, reporting every problem with its FILE:LINE:COL; read_source finds
// the text of a file, standard input or a built-in example.
#include "io/loader.hpp"

#include "builtin/builtin.hpp"
#include "io/loader_parts.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace qkv {

namespace loading {

std::string shape_text(const arma::mat& M) { return std::to_string(M.n_rows) + " × " + std::to_string(M.n_cols); }

void ModelLoader::read_titles(Model& model, const KeyRow&) {
    model.title = m_yaml.string(root()["title"], "title").value_or("");
    model.description = m_yaml.string(root()["description"], "description").value_or("");
}

Model ModelLoader::load() {
    YAML::Node root = m_yaml.parse_document();
    m_diagnostics.throw_if_any();
    return load(root);
}

Model ModelLoader::load(const YAML::Node& root) {
    if (!root.IsMap()) {
        m_yaml.error(root, root.IsNull() ? "the file is empty" : "the top level is not a map of keys",
                     "start from `qkv init`, or see `man qkv` for the keys an example file takes");
        m_diagnostics.throw_if_any();
    }
    m_yaml.check_keys(root, "", k_top_keys, k_pasted_keys);
    m_root = root;

    // the reader of each key, in the order of keys.def
    struct Reader {
        KeyStage stage;
        void (ModelLoader::*read)(Model&, const KeyRow&);
    };
    static constexpr Reader readers[] = {
#define QKV_KEY(name, kind, stage, read, json, sheet, feeds, form, italic, meaning) \
    {KeyStage::stage, &ModelLoader::read},
#include "model/keys.def"
    };
    Model model;
    bool valid = false;
    for (const KeyStage stage : {KeyStage::always, KeyStage::sized, KeyStage::valid}) {
        // shapes that depend on several keys are checked only when each part was readable
        const bool sizes_known = !model.X.is_empty() && (!root["context"] || (model.C && !model.C->is_empty()));
        valid = m_diagnostics.empty();
        if ((stage == KeyStage::sized && !sizes_known) || (stage == KeyStage::valid && !valid)) {
            continue;
        }
        for (std::size_t k = 0; k < std::size(readers); ++k) {
            if (readers[k].stage == stage) {
                (this->*readers[k].read)(model, key_row(static_cast<Key>(k)));
            }
        }
    }
    if (valid) {
        check_memory(model);
    }
    m_diagnostics.throw_if_any();
    return model;
}

}  // namespace loading

namespace {

// The text of `source` with the settings in place: the lines of each top-level
// key a setting replaces turned into comments (so that every other line keeps
// its number), then one line "key: value" for each setting, after the text's
// own lines. `first_line[k]` is the line setting k starts on.
std::string with_settings(const Source& source, const YAML::Node& root, const std::vector<KeySetting>& settings,
                          std::vector<int>& first_line) {
    // lines as YAML counts them: a bare CR ends one, as does LF or CR LF
    std::vector<std::string> lines;
    std::string text;
    for (std::size_t i = 0; i < source.text.size(); ++i) {
        const char c = source.text[i];
        if (c != '\r' || i + 1 == source.text.size() || source.text[i + 1] != '\n') {
            text += c == '\r' ? '\n' : c;
        }
    }
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        lines.push_back(text.substr(at, end - at));
        // the settings follow the document, so its end marker goes
        if (!settings.empty() && lines.back().starts_with("...")) {
            lines.back().insert(0, "# ");
        }
        at = end + 1;
    }
    // each top-level key's lines: from its own to the line before the next key's
    std::vector<std::pair<int, std::string>> starts;
    for (const auto& entry : root.IsMap() ? root : YAML::Node()) {
        starts.emplace_back(entry.first.Mark().line, entry.first.Scalar());
    }
    std::sort(starts.begin(), starts.end());
    for (std::size_t k = 0; k < starts.size(); ++k) {
        const bool replaced = std::any_of(settings.begin(), settings.end(),
                                          [&](const KeySetting& setting) { return setting.key == starts[k].second; });
        const int last = k + 1 < starts.size() ? starts[k + 1].first : static_cast<int>(lines.size());
        for (int line = starts[k].first; replaced && line < last && line < static_cast<int>(lines.size()); ++line) {
            lines[static_cast<std::size_t>(line)].insert(0, "# ");
        }
    }
    std::string result;
    for (const std::string& line : lines) {
        result += line + "\n";
    }
    int line = static_cast<int>(lines.size()) + 1;
    for (std::size_t k = 0; k < settings.size(); ++k) {
        first_line.push_back(line);
        const bool later = std::any_of(settings.begin() + static_cast<std::ptrdiff_t>(k) + 1, settings.end(),
                                       [&](const KeySetting& setting) { return setting.key == settings[k].key; });
        // a value of several lines goes on, indented, under its key
        std::string value = settings[k].value;
        for (std::size_t at = value.find('\n'); at != std::string::npos; at = value.find('\n', at + 3)) {
            value.insert(at + 1, "  ");
            ++line;
        }
        result += (later ? "# " : "") + settings[k].key + ": " + value + "\n";
        ++line;
    }
    return result;
}

}  // namespace

Model load_model(const Source& source, const LoadOptions& options) {
    loading::ModelLoader loader(source, options);
    return loader.load();
}

Model load_model(const Source& source, const YAML::Node& root, const LoadOptions& options) {
    loading::ModelLoader loader(source, options);
    return loader.load(root);
}

Model load_model(const Source& source, const std::vector<KeySetting>& settings, const LoadOptions& options) {
    YAML::Node root;
    if (!source.text.empty()) {
        Diagnostics diagnostics;
        YamlReader yaml(source, diagnostics);
        root = yaml.parse_document();
        diagnostics.throw_if_any();
        if (!settings.empty() && root.IsMap() && root.Style() == YAML::EmitterStyle::Flow) {
            throw InputError(Diagnostic{source.name, 1, 1, "the example is one {...} map; expected a key on each line",
                                        "write the example's keys one per line to set them with --set"});
        }
    }
    std::vector<int> first_line;
    const Source combined{source.name, with_settings(source, root, settings, first_line), source.folder};
    try {
        return load_model(combined, options);
    } catch (const InputError& error) {
        // a problem on a setting's lines is the setting's
        std::vector<Diagnostic> diagnostics = error.diagnostics();
        for (Diagnostic& diagnostic : diagnostics) {
            for (std::size_t k = settings.size(); k-- > 0;) {
                if (diagnostic.file == source.name && diagnostic.line >= first_line[k]) {
                    diagnostic = {settings[k].origin, 0, 0, diagnostic.what, diagnostic.hint};
                    break;
                }
            }
        }
        throw InputError(std::move(diagnostics));
    }
}

namespace {

// The whole stream, or nullopt once it holds more than k_max_file_bytes
// (so that /dev/zero or a runaway pipe cannot fill the memory).
std::optional<std::string> read_bounded(std::istream& in) {
    std::string text;
    char buffer[65536];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        text.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (text.size() > k_max_file_bytes) {
            return std::nullopt;
        }
    }
    return text;
}

InputError too_large(const std::string& name) {
    return InputError(Diagnostic{name, 0, 0,
                                 "is larger than " + std::to_string(k_max_file_bytes >> 20) +
                                     " MiB; the limit for an example file",
                                 "put large matrices in CSV files and refer to them with {file: m.csv}"});
}

}  // namespace

Source read_source(const std::string& file_or_name) {
    if (file_or_name == "-") {
        auto text = read_bounded(std::cin);
        if (!text) {
            throw too_large("<stdin>");
        }
        return {"<stdin>", *text, ""};
    }
    if (file_or_name.empty()) {
        throw InputError(Diagnostic{"", 0, 0, "the example's file or name is empty",
                                    "give a YAML file, - for standard input, or a name that `qkv examples` lists"});
    }
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path path(file_or_name);
    if (fs::exists(path, error)) {
        if (fs::is_directory(path, error)) {
            throw InputError(Diagnostic{file_or_name, 0, 0, "is a folder, not an example file",
                                        "give the path of a .yaml file"});
        }
        std::ifstream in(path, std::ios::binary);
        auto text = in.is_open() ? read_bounded(in) : std::optional<std::string>("");
        if (!in.is_open() || in.bad()) {
            throw InputError(Diagnostic{file_or_name, 0, 0, "cannot be read", "check the file's permissions"});
        }
        if (!text) {
            throw too_large(file_or_name);
        }
        return {file_or_name, *text, path.parent_path().string()};
    }
    if (const BuiltinFile* builtin = find_builtin_example(file_or_name)) {
        return {"builtin:" + std::string(builtin->name), std::string(builtin->text), ""};
    }
    std::vector<std::string> names;
    for (const auto& example : builtin_examples()) {
        names.emplace_back(example.name);
    }
    throw InputError(Diagnostic{file_or_name, 0, 0, "no such file, and no built-in example by that name",
                                did_you_mean(file_or_name, names) + "built-in examples: " + comma_list(names)});
}

}  // namespace qkv
