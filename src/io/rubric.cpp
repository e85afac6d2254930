// decimals: and rubric: — how `qkv check` marks answers to this example — and
// the file of --rubric, which holds a rubric on its own.
#include "io/rubric.hpp"

#include "attention/steps.hpp"
#include "io/loader_parts.hpp"

#include <cmath>

namespace qkv {

namespace loading {

namespace {

constexpr double k_max_points = 1e6;

const char* const k_rubric_hint = "write rubric: {scores: 2, weights: 3}: each step id with its points";

}  // namespace

void parse_rubric(YamlReader& yaml, const YAML::Node& node, const std::string& path, const Model& model,
                  std::map<std::string, double>& rubric) {
    if (!node.IsMap() || node.size() == 0) {
        yaml.error(node, path + " is " + yaml.describe(node) + "; expected a map from step ids to points",
                   k_rubric_hint);
        return;
    }
    for (const auto& entry : node) {
        const std::string step = key_text(entry.first);
        if (!read_step_key(yaml, entry.first, path, model)) {
            continue;
        }
        const auto points = yaml.number(entry.second, path + "." + step);
        if (!points) {
            continue;
        }
        if (!std::isfinite(*points) || *points < 0 || *points > k_max_points) {
            yaml.error(entry.second, path + "." + step + " is " + key_text(entry.second) +
                                         "; expected points from 0 to 1000000",
                       k_rubric_hint);
            continue;
        }
        rubric[step] = *points;
    }
}

void ModelLoader::read_grading(Model& model, const KeyRow&) {
    if (const YAML::Node node = root()["decimals"]) {
        if (auto decimals = m_yaml.integer(node, "decimals", 0, 15)) {
            model.decimals = static_cast<int>(*decimals);
        }
    }
    if (const YAML::Node node = root()["rubric"]) {
        parse_rubric(m_yaml, node, "rubric", model, model.rubric);
    }
}

}  // namespace loading

std::map<std::string, double> read_rubric(const Source& source, const Model& model) {
    Diagnostics diagnostics;
    YamlReader yaml(source, diagnostics);
    const YAML::Node root = yaml.parse_document();
    diagnostics.throw_if_any();
    if (root.IsNull()) {
        throw InputError(Diagnostic{source.name, 1, 1, "the rubric file is empty",
                                    "write each step id with its points, e.g. scores: 2"});
    }
    if (!root.IsMap()) {
        yaml.error(root, "the top level of the rubric file is not a map", "write each step id with its points, e.g. scores: 2");
        diagnostics.throw_if_any();
    }
    const YAML::Node wrapped = root["rubric"];
    std::map<std::string, double> rubric;
    loading::parse_rubric(yaml, wrapped ? wrapped : root, "rubric", model, rubric);
    diagnostics.throw_if_any();
    return rubric;
}

}  // namespace qkv
