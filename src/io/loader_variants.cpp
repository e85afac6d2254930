// The example loader's keys for the attention of today's language models
// (see loader_parts.hpp): grouped-query heads (kv_heads:), rotary position
// embeddings (rope:), ALiBi's position bias (alibi:) and attention sinks
// (sinks:). The sliding window is a mask (loader_settings.cpp).
#include "io/loader_parts.hpp"

#include "attention/attention.hpp"
#include "base/numbers.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::loading {

namespace {

std::string heads_text(arma::uword heads) { return std::to_string(heads) + (heads == 1 ? " head" : " heads"); }

// "1, 2, 4 or 8": the divisors of H, for hints
std::string divisors_text(long heads) {
    std::vector<long> divisors;
    for (long g = 1; g <= heads; ++g) {
        if (heads % g == 0) {
            divisors.push_back(g);
        }
    }
    std::string text;
    for (std::size_t k = 0; k < divisors.size(); ++k) {
        text += (k == 0 ? "" : k + 1 == divisors.size() ? " or " : ", ") + std::to_string(divisors[k]);
    }
    return text;
}

}  // namespace

// kv_heads: G beside heads: H (a number) and one weights: block; G divides H.
std::optional<std::int64_t> ModelLoader::read_kv_heads(std::int64_t n_heads) {
    const YAML::Node node = root()["kv_heads"];
    if (!node) {
        return std::nullopt;
    }
    auto count = m_yaml.integer(node, "kv_heads", 1, k_max_heads,
                                "kv_heads is how many key/value heads the query heads share: 1 is multi-query attention");
    if (!count) {
        return std::nullopt;
    }
    if (n_heads % *count != 0) {
        m_yaml.error(node, "kv_heads is " + std::to_string(*count) + ", which does not divide heads (" +
                               std::to_string(n_heads) + "); expected " + divisors_text(n_heads),
                     "each key/value head is shared by heads / kv_heads query heads, so kv_heads must divide heads");
        return std::nullopt;
    }
    return count;
}

// kv_heads where the weights are not split from one block: a list of heads or a pytorch: block.
void ModelLoader::check_kv_heads_alone() {
    const YAML::Node node = root()["kv_heads"];
    if (!node) {
        return;
    }
    if (root()["pytorch"]) {
        m_yaml.error(node, "kv_heads is given together with pytorch",
                     "nn.MultiheadAttention has one key and value head per query head; for grouped-query attention "
                     "write weights: with heads: H and kv_heads: G");
    } else if (root()["heads"] && root()["heads"].IsSequence()) {
        m_yaml.error(node, "kv_heads is given with a list of heads; expected heads: H as a number",
                     "grouped-query attention splits one weights: block into H query heads and kv_heads key/value "
                     "heads; a list gives every head its own keys and values");
    }
}

// rope: true | false | {base: B, style: half|interleaved, …}, then what mla needs of it
void ModelLoader::read_rope(Model& model, const KeyRow&) {
    read_rope_node(model);
    check_mla_rope(model);
}

void ModelLoader::read_rope_node(Model& model) {
    const YAML::Node node = root()["rope"];
    if (!node) {
        return;
    }
    Rope rope;
    if (node.IsMap()) {
        m_yaml.check_keys(node, "rope", {"base", "style", "partial_rotary_factor", "max_position_embeddings", "scaling"});
        if (const YAML::Node base = node["base"]) {
            auto value = m_yaml.number(base, "rope.base");
            if (!value) {
                return;
            }
            if (*value <= 0.0) {
                m_yaml.error(base, "rope.base is " + m_yaml.describe(base) + "; expected a positive number",
                             "θ_k = base^(−2k/d_k); models use 10000 (the default), Llama 3 uses 500000");
                return;
            }
            rope.base = *value;
        }
        if (const YAML::Node style = node["style"]) {
            if (style.IsScalar() && (style.Scalar() == "half" || style.Scalar() == "interleaved")) {
                rope.style = style.Scalar() == "half" ? RopeStyle::half : RopeStyle::interleaved;
            } else {
                m_yaml.error(style, "rope.style is " + m_yaml.describe(style) + "; expected half or interleaved",
                             "half pairs element k with k + d_k/2 (Hugging Face's rotate_half); interleaved pairs "
                             "2k with 2k + 1 (the RoFormer paper)");
                return;
            }
        }
    } else if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) {
        if (node.Scalar() == "false") {
            return;
        }
    } else {
        m_yaml.error(node, "rope is " + m_yaml.describe(node) + "; expected true, false or a map",
                     "write rope: true, or rope: {base: 10000, style: half}");
        return;
    }
    if (model.mla) {
        // mla turns the last rope_dim elements of each query and key head (an even number: read_mla checks)
        if (node.IsMap() && node["partial_rotary_factor"]) {
            m_yaml.error(node["partial_rotary_factor"], "rope.partial_rotary_factor is given together with mla",
                         "with mla the rope part is the last rope_dim elements of each head; remove "
                         "partial_rotary_factor");
            return;
        }
        rope.skip = model.mla->nope_dim;
    } else if (!model.heads.empty() && model.d_k() % 2 != 0 && !(node.IsMap() && node["partial_rotary_factor"])) {
        m_yaml.error(node, "rope needs an even d_k; this example's d_k is " + std::to_string(model.d_k()),
                     "RoPE turns each query's and key's elements in pairs; give each head an even number of query "
                     "and key columns");
        return;
    }
    // partial_rotary_factor: f, with d_rot = f·d_k a positive even whole number
    if (node.IsMap() && node["partial_rotary_factor"]) {
        const YAML::Node factor = node["partial_rotary_factor"];
        if (model.heads.empty()) {
            return;  // the weights could not be read: their error says so, and d_k is unknown
        }
        auto value = m_yaml.number(factor, "rope.partial_rotary_factor");
        if (!value) {
            return;
        }
        const double d_k = model.heads.empty() ? 0.0 : static_cast<double>(model.d_k());
        const double d_rot = *value * d_k;
        // a factor written in decimals (0.4 of 80) is the whole number it stands for
        const double whole = std::round(d_rot);
        if (*value <= 0.0 || *value > 1.0 || std::fabs(d_rot - whole) > 1e-9 * std::max(1.0, d_k) || whole < 2.0 ||
            std::fmod(whole, 2.0) != 0.0) {
            m_yaml.error(factor,
                         "rope.partial_rotary_factor is " + readable(*value) + ", which turns " +
                             readable(d_rot) + " of d_k = " + std::to_string(model.d_k()) +
                             " elements; expected a fraction in (0, 1] that turns a positive even whole number",
                         "the rotated width d_rot = f·d_k is taken in pairs: e.g. 0.25 or 0.5 of a head of 64");
            return;
        }
        rope.partial_rotary_factor = whole / d_k;
    }
    if (node.IsMap() && !read_rope_scaling(node, model, rope)) {
        return;
    }
    model.rope = rope;
}

// rope.max_position_embeddings and rope.scaling: a config.json's rope_scaling
// as it is, {rope_type: linear|dynamic|yarn|llama3, factor: F, …}, with the
// keys each rope_type reads in transformers' modeling_rope_utils
bool ModelLoader::read_rope_scaling(const YAML::Node& node, const Model& model, Rope& rope) {
    // a positive number, or nullopt with its error
    const auto positive = [&](const YAML::Node& value, const std::string& path, const std::string& hint) {
        auto number = m_yaml.number(value, path);
        if (number && *number <= 0.0) {
            m_yaml.error(value, path + " is " + m_yaml.describe(value) + "; expected a positive number", hint);
            return std::optional<double>();
        }
        return number;
    };
    if (const YAML::Node positions = node["max_position_embeddings"]) {
        const auto value = positive(positions, "rope.max_position_embeddings",
                                    "the context length the scaled model is for, as config.json's "
                                    "max_position_embeddings");
        if (!value) {
            return false;
        }
        rope.max_position_embeddings = *value;
    }
    const YAML::Node node_scaling = node["scaling"];
    if (!node_scaling || node_scaling.IsNull()) {
        return true;
    }
    if (!node_scaling.IsMap()) {
        m_yaml.error(node_scaling, "rope.scaling is " + m_yaml.describe(node_scaling) + "; expected a map",
                     "paste a config.json's rope_scaling, e.g. {rope_type: linear, factor: 4}");
        return false;
    }
    // rope_type (or an older config's type): which scaling
    const YAML::Node type_node = node_scaling["rope_type"] ? node_scaling["rope_type"] : node_scaling["type"];
    const std::string type_hint = "transformers' rope_type of the scalings qkv computes: linear, dynamic, yarn or llama3 "
                                  "(longrope and the others are not computed here)";
    if (!type_node) {
        m_yaml.error(node_scaling, "rope.scaling has no rope_type; expected linear, dynamic, yarn or llama3", type_hint);
        return false;
    }
    const std::string type = type_node.IsScalar() ? type_node.Scalar() : "";
    RopeScaling scaling;
    std::vector<std::string> keys = {"rope_type", "type", "factor"};
    if (type == "default") {
        m_yaml.check_keys(node_scaling, "rope.scaling", {"rope_type", "type"});
        return true;  // plain RoPE
    } else if (type == "linear") {
        scaling.type = RopeScalingType::linear;
    } else if (type == "dynamic") {
        scaling.type = RopeScalingType::dynamic;
        keys.push_back("original_max_position_embeddings");
    } else if (type == "yarn") {
        scaling.type = RopeScalingType::yarn;
        for (const char* key : {"original_max_position_embeddings", "beta_fast", "beta_slow", "mscale",
                                "mscale_all_dim", "attention_factor", "truncate"}) {
            keys.emplace_back(key);
        }
    } else if (type == "llama3") {
        scaling.type = RopeScalingType::llama3;
        for (const char* key : {"original_max_position_embeddings", "low_freq_factor", "high_freq_factor"}) {
            keys.emplace_back(key);
        }
    } else {
        m_yaml.error(type_node, "rope.scaling.rope_type is " + m_yaml.describe(type_node) +
                                    "; expected linear, dynamic, yarn or llama3",
                     type_hint);
        return false;
    }
    // a key another rope_type reads is named as such
    std::vector<ForeignKey> others;
    for (const char* key : {"original_max_position_embeddings", "low_freq_factor", "high_freq_factor", "beta_fast",
                            "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"}) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            others.push_back({key, "rope_type " + type + " does not read it",
                              "remove it, or write the rope_type that reads it (yarn or llama3)"});
        }
    }
    m_yaml.check_keys(node_scaling, "rope.scaling", keys, others);
    // each number the rope_type reads: required, or optional
    bool ok = true;
    const auto read = [&](const char* key, bool required, const std::string& hint) -> std::optional<double> {
        const YAML::Node value = node_scaling[key];
        if (!value) {
            if (required) {
                m_yaml.error(node_scaling, std::string("rope.scaling has no ") + key + "; rope_type " + type +
                                               " needs it",
                             hint);
                ok = false;
            }
            return std::nullopt;
        }
        auto number = positive(value, std::string("rope.scaling.") + key, hint);
        ok = ok && number.has_value();
        return number;
    };
    scaling.factor = read("factor", true, "how many times longer the context is than the one trained on, e.g. 8")
                         .value_or(1.0);
    scaling.original_max_position_embeddings =
        read("original_max_position_embeddings", type == "llama3", "the context length the model was trained on");
    if (type == "llama3") {
        scaling.low_freq_factor = read("low_freq_factor", true, "Llama 3.1 uses 1").value_or(1.0);
        scaling.high_freq_factor = read("high_freq_factor", true, "Llama 3.1 uses 4").value_or(4.0);
        if (ok && scaling.high_freq_factor <= scaling.low_freq_factor) {
            m_yaml.error(node_scaling["high_freq_factor"],
                         "rope.scaling.high_freq_factor is " + readable(scaling.high_freq_factor) +
                             ", not above low_freq_factor " + readable(scaling.low_freq_factor) +
                             "; expected a larger number",
                         "the band between the two is blended; Llama 3.1 uses 1 and 4");
            ok = false;
        }
    }
    if (type == "yarn") {
        scaling.beta_fast = read("beta_fast", false, "transformers' default is 32").value_or(32.0);
        scaling.beta_slow = read("beta_slow", false, "transformers' default is 1").value_or(1.0);
        scaling.mscale = read("mscale", false, "DeepSeek-V3 uses 1.0");
        scaling.mscale_all_dim = read("mscale_all_dim", false, "DeepSeek-V3 uses 1.0");
        scaling.attention_factor = read("attention_factor", false, "the factor on cos and sin, e.g. 1.2");
        if (const YAML::Node truncate = node_scaling["truncate"]) {
            if (!truncate.IsScalar() || (truncate.Scalar() != "true" && truncate.Scalar() != "false")) {
                m_yaml.error(truncate, "rope.scaling.truncate is " + m_yaml.describe(truncate) +
                                           "; expected true or false",
                             "false keeps YaRN's ramp ends where they fall (gpt-oss); true rounds them out");
                ok = false;
            } else {
                scaling.truncate = truncate.Scalar() == "true";
            }
        }
    }
    if (!ok) {
        return false;
    }
    rope.scaling = scaling;
    // yarn and dynamic read a context length: the original, or max_position_embeddings
    if ((type == "yarn" || type == "dynamic") && rope_max_positions(rope) <= 0.0) {
        m_yaml.error(node_scaling, "rope.scaling (" + type + ") has no context length; expected "
                                   "original_max_position_embeddings in it, or rope.max_position_embeddings",
                     "the context length the model was trained on, e.g. original_max_position_embeddings: 4096");
        return false;
    }
    // dynamic raises the base to the power d_rot/(d_rot − 2)
    if (type == "dynamic" && !model.heads.empty() && rope.rotated(model.d_k()) <= 2) {
        m_yaml.error(node_scaling, "rope.scaling is dynamic with a rotated width of 2; expected a width of 4 or more",
                     "dynamic scaling raises the base to the power d_rot/(d_rot − 2)");
        return false;
    }
    return true;
}

// qk_norm: true | false | {over: head|all, query: [γ…], key: [γ…], eps: e, offset: 0|1}
void ModelLoader::read_qk_norm(Model& model, const KeyRow&) {
    const YAML::Node node = root()["qk_norm"];
    if (!node || model.heads.empty()) {
        return;
    }
    QkNorm norm;
    if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) {
        if (node.Scalar() == "false") {
            return;
        }
    } else if (!node.IsMap()) {
        m_yaml.error(node, "qk_norm is " + m_yaml.describe(node) + "; expected true, false or a map",
                     "write qk_norm: true, or qk_norm: {over: head, query: [...], key: [...]}");
        return;
    } else {
        m_yaml.check_keys(node, "qk_norm", {"over", "query", "key", "eps", "offset"});
        if (const YAML::Node over = node["over"]) {
            if (!over.IsScalar() || (over.Scalar() != "head" && over.Scalar() != "all")) {
                m_yaml.error(over, "qk_norm.over is " + m_yaml.describe(over) + "; expected head or all",
                             "head: over each head's d_k values (Qwen3, Gemma 3); all: over a token's whole "
                             "projection, every head together (OLMo 2)");
                return;
            }
            norm.over_all = over.Scalar() == "all";
        }
        if (const YAML::Node offset = node["offset"]) {
            const auto value = m_yaml.number(offset, "qk_norm.offset");
            if (!value) {
                return;
            }
            if (*value != 0.0 && *value != 1.0) {
                m_yaml.error(offset, "qk_norm.offset is " + m_yaml.describe(offset) + "; expected 0 or 1",
                             "1 multiplies by 1 + γ, as Gemma's norms do; 0 (the default) by γ");
                return;
            }
            norm.offset = *value;
        }
        if (const YAML::Node eps = node["eps"]) {
            const auto value = m_yaml.number(eps, "qk_norm.eps");
            if (!value) {
                return;
            }
            if (*value <= 0.0) {
                m_yaml.error(eps, "qk_norm.eps is " + m_yaml.describe(eps) + "; expected a positive number",
                             "eps is added to the mean of squares, so that a row of zeros is not divided by 0; "
                             "models use 1e-6");
                return;
            }
            norm.eps = *value;
        }
    }
    const arma::uword d_k = model.d_k();
    // γ of the queries and of the keys: d_k numbers, or over: all one per element of the whole projection
    const auto read_gamma = [&](const char* name, arma::uword heads, arma::rowvec& gamma, bool& given) {
        const arma::uword width = norm.over_all ? heads * d_k : d_k;
        if (!node.IsMap() || !node[name]) {
            gamma.set_size(width);
            gamma.fill(norm.offset != 0.0 ? 0.0 : 1.0);
            return true;
        }
        const YAML::Node values = node[name];
        const std::string path = std::string("qk_norm.") + name;
        auto read = m_yaml.vector(values, path);
        if (!read) {
            return false;
        }
        if (read->n_elem != width) {
            m_yaml.error(values,
                         path + " has " + std::to_string(read->n_elem) + (read->n_elem == 1 ? " number" : " numbers") +
                             "; expected " + std::to_string(width) +
                             (norm.over_all ? " (" + std::to_string(heads) + " heads × d_k " + std::to_string(d_k) +
                                                  ", over: all)"
                                            : " (d_k, shared by the heads)"),
                         norm.over_all ? "over: all scales each element of a token's whole projection by its own γ"
                                       : "over: head scales each of a head's d_k elements by its own γ, the same in "
                                         "every head; write over: all for one γ per element of every head");
            return false;
        }
        gamma = *read;
        given = true;
        return true;
    };
    if (!read_gamma("query", model.n_heads(), norm.query, norm.query_given) ||
        !read_gamma("key", model.n_kv_heads(), norm.key, norm.key_given)) {
        return;
    }
    model.qk_norm = norm;
}

namespace {

// A list of one number per query head, for alibi: and sinks:.
std::optional<arma::rowvec> read_per_head(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                          const Model& model, const std::string& what) {
    auto values = yaml.vector(node, path);
    if (!values) {
        return std::nullopt;
    }
    if (!model.heads.empty() && values->n_elem != model.n_heads()) {
        yaml.error(node, path + " has " + std::to_string(values->n_elem) + (values->n_elem == 1 ? " number" : " numbers") + "; expected " +
                             std::to_string(model.n_heads()) + " (one per query head)",
                   "this example has " + heads_text(model.n_heads()) + "; give one " + what + " for each");
        return std::nullopt;
    }
    return values;
}

}  // namespace

// alibi: true | false | [m_1, …, m_H]
void ModelLoader::read_alibi(Model& model, const KeyRow&) {
    const YAML::Node node = root()["alibi"];
    if (!node || model.heads.empty()) {
        return;
    }
    if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) {
        if (node.Scalar() == "true") {
            model.alibi = alibi_slopes(model.n_heads());
            model.alibi_press = true;
        }
        return;
    }
    if (!node.IsSequence()) {
        m_yaml.error(node, "alibi is " + m_yaml.describe(node) + "; expected true, false or a list of slopes",
                     "write alibi: true for the slopes of Press et al., or one slope per head: alibi: [0.5, 0.25]");
        return;
    }
    model.alibi = read_per_head(m_yaml, node, "alibi", model, "slope");
}

// sinks: [s_1, …, s_H]
void ModelLoader::read_sinks(Model& model, const KeyRow&) {
    const YAML::Node node = root()["sinks"];
    if (!node || model.heads.empty()) {
        return;
    }
    model.sinks = read_per_head(m_yaml, node, "sinks", model, "sink logit");
}

}  // namespace qkv::loading
