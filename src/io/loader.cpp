// The YAML loader of example files: load() reads a document's parts in order
// (loader_parts.hpp lists the files that read each part) into a validated
// Model, reporting every problem with its FILE:LINE:COL; read_source finds
// the text of a file, standard input or a built-in example.
#include "io/loader.hpp"

#include "builtin/builtin.hpp"
#include "io/loader_parts.hpp"

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

Model load_model(const Source& source, const LoadOptions& options) {
    loading::ModelLoader loader(source, options);
    return loader.load();
}

Model load_model(const Source& source, const YAML::Node& root, const LoadOptions& options) {
    loading::ModelLoader loader(source, options);
    return loader.load(root);
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
