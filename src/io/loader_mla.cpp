// The example loader's multi-head latent attention (see loader_parts.hpp):
// `mla: {kv_rank, rope_dim, nope_dim, v_dim, q_rank}` with its weights under
// the state dict's names in `weights:` (q_proj, or q_a_proj, q_a_layernorm and
// q_b_proj; kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj; o_proj), in the
// example's layout. Each head's blocks of the up-projections become its
// HeadWeights: W_Q, W_K = W_UK and W_V = W_UV (model.hpp's Mla).
#include "io/loader_parts.hpp"

namespace qkv::loading {

namespace {

const std::vector<std::string> k_mla_keys = {"kv_rank", "rope_dim", "nope_dim", "v_dim", "q_rank"};
// a config.json's names, pasted into mla:
const std::vector<ForeignKey> k_mla_config_keys = {
    {"kv_lora_rank", "qkv's key is kv_rank", "write kv_rank: (config.json's kv_lora_rank)"},
    {"qk_rope_head_dim", "qkv's key is rope_dim", "write rope_dim: (config.json's qk_rope_head_dim)"},
    {"qk_nope_head_dim", "qkv's key is nope_dim", "write nope_dim: (config.json's qk_nope_head_dim)"},
    {"v_head_dim", "qkv's key is v_dim", "write v_dim: (config.json's v_head_dim)"},
    {"q_lora_rank", "qkv's key is q_rank", "write q_rank: (config.json's q_lora_rank)"},
};
const std::vector<std::string> k_mla_weight_keys = {"q_proj",   "q_a_proj",           "q_a_layernorm",
                                                     "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm",
                                                     "kv_b_proj", "o_proj"};
const std::vector<ForeignKey> k_mla_foreign_weights = {
    {"query", "with mla the queries come from q_proj (or q_a_proj and q_b_proj)",
     "name the weights as the state dict does: q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj"},
    {"key", "with mla the keys come from the latent, through kv_a_proj_with_mqa and kv_b_proj",
     "name the weights as the state dict does: q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj"},
    {"value", "with mla the values come from the latent, through kv_a_proj_with_mqa and kv_b_proj",
     "name the weights as the state dict does: q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj"},
    {"output", "with mla the output projection is o_proj", "write weights.o_proj"},
};

std::string layout_words(Layout layout, arma::uword in, arma::uword out) {
    return layout == Layout::pytorch ? std::to_string(out) + " × " + std::to_string(in)
                                     : std::to_string(in) + " × " + std::to_string(out);
}

}  // namespace

// The sizes of mla:, each a whole number from 1 (rope_dim even); false when one is wrong.
bool ModelLoader::read_mla_sizes(const YAML::Node& node, Mla& mla) {
    if (!node.IsMap()) {
        m_yaml.error(node, "mla is " + m_yaml.describe(node) + "; expected a map",
                     "write mla: {kv_rank: r, rope_dim: d_r, nope_dim: d_n, v_dim: d_v}, and q_rank: r_q for a "
                     "query latent");
        return false;
    }
    m_yaml.check_keys(node, "mla", k_mla_keys, k_mla_config_keys);
    bool ok = true;
    const auto size = [&](const char* key, const std::string& hint) -> arma::uword {
        if (!node[key]) {
            if (!m_yaml.has_misspelling_of(node, key, k_mla_keys)) {
                m_yaml.error(node, std::string("mla.") + key + " is missing", hint);
            }
            ok = false;
            return 0;
        }
        auto value = m_yaml.integer(node[key], std::string("mla.") + key, 1, 1 << 20, hint);
        ok = ok && value.has_value();
        return value ? static_cast<arma::uword>(*value) : 0;
    };
    mla.kv_rank = size("kv_rank", "the width r of the latent a cache keeps (DeepSeek-V3: 512)");
    mla.rope_dim = size("rope_dim", "the width d_r of the rope part of each query and key head (DeepSeek-V3: 64)");
    mla.nope_dim = size("nope_dim", "the width d_n of the part of each query and key head without positions "
                                    "(DeepSeek-V3: 128)");
    mla.v_dim = size("v_dim", "the width d_v of each value head (DeepSeek-V3: 128)");
    if (node["q_rank"]) {
        auto value = m_yaml.integer(node["q_rank"], "mla.q_rank", 1, 1 << 20,
                                    "the width r_q of the query latent (DeepSeek-V3: 1536)");
        ok = ok && value.has_value();
        if (value) {
            mla.q_rank = static_cast<arma::uword>(*value);
        }
    }
    if (mla.rope_dim % 2 != 0) {
        m_yaml.error(node["rope_dim"], "mla.rope_dim is " + std::to_string(mla.rope_dim) + "; expected an even number",
                     "RoPE turns the rope part's elements in pairs");
        ok = false;
    }
    return ok;
}

// A weight of mla's, `in` × `out` in the x·W layout, or nullopt (with the error recorded).
std::optional<arma::mat> ModelLoader::mla_weight(const YAML::Node& weights, const char* key, Layout layout,
                                                 arma::uword in, arma::uword out, const std::string& why) {
    const std::string path = std::string("weights.") + key;
    if (!weights[key]) {
        if (!m_yaml.has_misspelling_of(weights, key, k_mla_weight_keys)) {
            m_yaml.error(weights, path + " is missing", "with mla, " + path + " is " + why);
        }
        return std::nullopt;
    }
    auto W = weight(weights[key], path, layout);
    if (!W) {
        return std::nullopt;
    }
    if (W->value.n_rows != in || W->value.n_cols != out) {
        m_yaml.error(W->node, path + " is " + shape_text(W->as_written) + "; expected " + layout_words(layout, in, out) +
                                  " (" + why + ")",
                     layout == Layout::pytorch ? "with layout: pytorch a weight is out × in, as the state dict holds it"
                                               : "with the default layout a weight is in × out; write `layout: "
                                                 "pytorch` for the state dict's out × in");
        return std::nullopt;
    }
    return W->value;
}

// A latent norm's γ of `width` numbers: ones when not given.
std::optional<arma::rowvec> ModelLoader::mla_gamma(const YAML::Node& weights, const char* key, arma::uword width,
                                                   bool& given) {
    const std::string path = std::string("weights.") + key;
    given = static_cast<bool>(weights[key]);
    if (!given) {
        return arma::rowvec(width, arma::fill::ones);
    }
    auto gamma = m_yaml.vector(weights[key], path);
    if (gamma && gamma->n_elem != width) {
        m_yaml.error(weights[key], path + " has " + std::to_string(gamma->n_elem) + " numbers; expected " +
                                       std::to_string(width),
                     "γ has one number per element of the latent it norms");
        return std::nullopt;
    }
    return gamma;
}

// mla: its sizes, then its weights under the state dict's names.
void ModelLoader::read_mla(Model& model, const YAML::Node& node) {
    model.layout = read_layout();
    for (const char* key : {"pytorch", "kv_heads", "bias", "context", "qk_norm"}) {
        if (root()[key]) {
            const std::string k(key);
            m_yaml.error(root()[key], k + " is given together with mla",
                         k == "kv_heads"  ? "with mla every head has keys and values of its own, made from one shared "
                                            "latent; remove kv_heads"
                         : k == "bias"    ? "DeepSeek's latent attention has no biases (attention_bias: false); remove "
                                            "bias"
                         : k == "context" ? "mla is self-attention: its keys and values come from the inputs' latent"
                         : k == "qk_norm" ? "mla norms its latents (q_a_layernorm, kv_a_layernorm), not the queries "
                                            "and keys; remove qk_norm"
                                          : "with mla, write the weights under weights: with the state dict's names");
        }
    }
    Mla mla;
    const bool sizes_ok = read_mla_sizes(node, mla);
    const YAML::Node heads_node = root()["heads"];
    long n_heads = 1;
    if (heads_node) {
        if (heads_node.IsSequence()) {
            m_yaml.error(heads_node, "heads is a list together with mla; expected heads: H as a number",
                         "with mla the heads are blocks of q_proj and kv_b_proj; write heads: H");
            return;
        }
        auto count = m_yaml.integer(heads_node, "heads", 1, k_max_heads);
        if (!count) {
            return;
        }
        n_heads = *count;
    }
    const YAML::Node weights = root()["weights"];
    if (!weights || !weights.IsMap()) {
        m_yaml.error(weights ? weights : m_root, weights ? "weights is not a map" : "weights is missing",
                     "with mla write weights: {q_proj: ..., kv_a_proj_with_mqa: ..., kv_b_proj: ...}");
        return;
    }
    m_yaml.check_keys(weights, "weights", k_mla_weight_keys, k_mla_foreign_weights);
    if (!sizes_ok || model.X.is_empty()) {
        return;
    }
    const Layout layout = model.layout;
    const auto H = static_cast<arma::uword>(n_heads);
    const arma::uword d_model = model.d_model();
    const arma::uword d_k = mla.nope_dim + mla.rope_dim;
    const arma::uword r = mla.kv_rank;
    const std::string heads = std::to_string(H) + (H == 1 ? " head" : " heads");
    bool ok = true;
    // the queries: q_proj, or q_a_proj, q_a_layernorm and q_b_proj with q_rank
    std::optional<arma::mat> W_q;
    if (mla.q_rank) {
        if (weights["q_proj"]) {
            m_yaml.error(weights["q_proj"], "weights.q_proj is given with mla.q_rank",
                         "with q_rank the queries come from q_a_proj, q_a_layernorm and q_b_proj; remove q_proj or "
                         "q_rank");
            ok = false;
        }
        mla.W_qa = mla_weight(weights, "q_a_proj", layout, d_model, *mla.q_rank, "d_model × r_q: the query latent");
        auto gamma = mla_gamma(weights, "q_a_layernorm", *mla.q_rank, mla.q_norm_given);
        W_q = mla_weight(weights, "q_b_proj", layout, *mla.q_rank, H * d_k,
                         "r_q × H·(d_n + d_r): each head's q_nope and q_rope, " + heads);
        ok = ok && mla.W_qa && gamma && W_q;
        if (gamma) {
            mla.q_norm = *gamma;
        }
    } else {
        for (const char* key : {"q_a_proj", "q_a_layernorm", "q_b_proj"}) {
            if (weights[key]) {
                m_yaml.error(weights[key], std::string("weights.") + key + " is given without mla.q_rank",
                             "a query latent needs its width: add q_rank: r_q to mla, or give q_proj alone");
                ok = false;
            }
        }
        W_q = mla_weight(weights, "q_proj", layout, d_model, H * d_k,
                         "d_model × H·(d_n + d_r): each head's q_nope and q_rope, " + heads);
        ok = ok && W_q;
    }
    auto W_kva = mla_weight(weights, "kv_a_proj_with_mqa", layout, d_model, r + mla.rope_dim,
                            "d_model × (r + d_r): the latent, then the rope key");
    auto gamma = mla_gamma(weights, "kv_a_layernorm", r, mla.kv_norm_given);
    auto W_kvb = mla_weight(weights, "kv_b_proj", layout, r, H * (mla.nope_dim + mla.v_dim),
                            "r × H·(d_n + d_v): each head's k_nope and value, " + heads);
    ok = ok && W_kva && gamma && W_kvb;
    if (weights["o_proj"]) {
        auto W_O = weight(weights["o_proj"], "weights.o_proj", layout);
        if (W_O && W_O->value.n_rows != H * mla.v_dim) {
            m_yaml.error(W_O->node, "weights.o_proj is " + shape_text(W_O->as_written) + "; expected " +
                                        std::to_string(H * mla.v_dim) + (layout == Layout::pytorch ? " columns" : " rows") +
                                        " (H·d_v = " + std::to_string(H) + " × " + std::to_string(mla.v_dim) + ")",
                         "o_proj reads the heads' outputs side by side");
            ok = false;
        } else if (W_O) {
            model.W_O = W_O->value;
        } else {
            ok = false;
        }
    }
    if (!ok) {
        return;
    }
    mla.W_kva = *W_kva;
    mla.kv_norm = *gamma;
    for (arma::uword h = 0; h < H; ++h) {
        HeadWeights head;
        head.W_Q = W_q->cols(h * d_k, (h + 1) * d_k - 1);
        const arma::uword first = h * (mla.nope_dim + mla.v_dim);
        head.W_K = W_kvb->cols(first, first + mla.nope_dim - 1);
        head.W_V = W_kvb->cols(first + mla.nope_dim, first + mla.nope_dim + mla.v_dim - 1);
        model.heads.push_back(head);
    }
    model.mla = std::move(mla);
}

// After rope: mla needs rope: (read_rope turns the rope parts alone).
void ModelLoader::check_mla_rope(const Model& model) {
    const YAML::Node rope = root()["rope"];
    if (!model.mla || model.rope || (rope && !(rope.IsScalar() && rope.Scalar() == "false"))) {
        return;  // rope: read, or its own error recorded
    }
    m_yaml.error(rope ? rope : root()["mla"], rope ? "rope is false together with mla" : "mla is given without rope",
                 "mla turns the rope parts of its queries and keys: write rope: true, or DeepSeek-V3's rope: "
                 "{base: 10000, style: interleaved}");
}

}  // namespace qkv::loading
