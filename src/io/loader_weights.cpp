// The example loader's weights (see loader_parts.hpp), in their four ways of
// writing: `weights:` split by columns into `heads: H`, `heads:` as a list of
// weight sets, either in `layout: pytorch`, or a `pytorch:` block as
// nn.MultiheadAttention holds it; then the output projection. Every weight is
// kept in the x·W layout (d_model × d_k): Q = X·W_Q.
#include "io/loader_parts.hpp"

#include <utility>

namespace qkv::loading {

namespace {

const std::vector<std::string> k_weight_keys = {"query", "key", "value", "output"};
const std::vector<std::string> k_head_keys = {"query", "key", "value", "bias"};
const std::vector<std::string> k_head_bias_keys = {"query", "key", "value"};
const std::vector<std::string> k_pytorch_keys = {"num_heads", "in_proj_weight", "in_proj_bias", "out_proj_weight",
                                                 "out_proj_bias"};

// "expected 4 rows (d_model …)" phrased in the layout the user wrote.
std::string expected_in(Layout layout, arma::uword count, const std::string& why) {
    const char* dimension = layout == Layout::pytorch ? " columns" : " rows";
    return "expected " + std::to_string(count) + dimension + " (" + why + ")";
}
std::string expected_out(Layout layout, arma::uword count, const std::string& why) {
    const char* dimension = layout == Layout::pytorch ? " rows" : " columns";
    return "expected " + std::to_string(count) + dimension + " (" + why + ")";
}

std::string layout_hint(Layout layout) {
    return layout == Layout::pytorch
               ? "with layout: pytorch a weight is out × in, as nn.Linear.weight"
               : "with the default layout a weight is in × out, so that Q = X·W; write `layout: pytorch` for out × in";
}

// A bias of `width` numbers (any width when 0), or nullopt when it is absent or wrong.
std::optional<arma::rowvec> read_bias(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                      arma::uword width, const std::string& what_width) {
    if (!node) {
        return std::nullopt;
    }
    auto b = yaml.vector(node, path);
    if (!b) {
        return std::nullopt;
    }
    if (width != 0 && b->n_elem != width) {
        yaml.error(node, path + " has " + numbers(b->n_elem) + "; expected " + std::to_string(width) + " (" +
                             what_width + ")",
                   "a bias holds one number per column of its projection");
        return std::nullopt;
    }
    return b;
}

// W has d_model rows (the width of the inputs; any when the inputs are unknown).
bool fits_d_model(YamlReader& yaml, const ReadMatrix& W, const Model& model, Layout layout) {
    const arma::uword d_model = model.X.n_cols;
    if (d_model == 0 || W.value.n_rows == d_model) {
        return true;
    }
    yaml.error(W.node, W.path + " is " + shape_text(W.as_written) + "; " +
                           expected_in(layout, d_model, "d_model: inputs is " + shape_text(model.X)),
               layout_hint(layout));
    return false;
}

// The keys are as wide as the queries.
bool fits_d_k(YamlReader& yaml, const ReadMatrix& W_Q, const ReadMatrix& W_K, Layout layout) {
    if (W_K.value.n_cols == W_Q.value.n_cols) {
        return true;
    }
    yaml.error(W_K.node, W_K.path + " is " + shape_text(W_K.as_written) + "; " +
                             expected_out(layout, W_Q.value.n_cols,
                                          "d_k: " + W_Q.path + " is " + shape_text(W_Q.as_written)),
               "queries and keys must have the same width to take their dot product");
    return false;
}

// The biases of `bias: {query, key, value}`, each as wide as its weight.
struct Biases {
    std::optional<arma::rowvec> b_Q;
    std::optional<arma::rowvec> b_K;
    std::optional<arma::rowvec> b_V;
};

Biases read_split_biases(YamlReader& yaml, const YAML::Node& bias_node, const std::optional<ReadMatrix>& W_Q,
                         const std::optional<ReadMatrix>& W_K, const std::optional<ReadMatrix>& W_V) {
    Biases biases;
    if (!bias_node) {
        return biases;
    }
    if (!bias_node.IsMap()) {
        yaml.error(bias_node, "bias is not a map", "write bias: {query: [...], key: [...], ...}");
        return biases;
    }
    yaml.check_keys(bias_node, "bias", k_weight_keys);
    biases.b_Q = read_bias(yaml, bias_node["query"], "bias.query", W_Q ? W_Q->value.n_cols : 0,
                           "the width of weights.query");
    biases.b_K = read_bias(yaml, bias_node["key"], "bias.key", W_K ? W_K->value.n_cols : 0, "the width of weights.key");
    biases.b_V = read_bias(yaml, bias_node["value"], "bias.value", W_V ? W_V->value.n_cols : 0,
                           "the width of weights.value");
    return biases;
}

// head h (1-based) uses columns (h−1)·d_k … h·d_k − 1, as PyTorch and nanoGPT
// split them; with n_kv key/value heads, W_K and W_V split into n_kv heads,
// and query head h takes those of key/value head ⌈h·n_kv/n_heads⌉.
void split_into_heads(Model& model, const arma::mat& W_Q, const arma::mat& W_K, const arma::mat& W_V,
                      const Biases& biases, long n_heads, long n_kv) {
    const arma::uword d_k = W_Q.n_cols / n_heads;
    const arma::uword d_v = W_V.n_cols / n_kv;
    const long group = n_heads / n_kv;  // query heads per key/value head
    for (long h = 0; h < n_heads; ++h) {
        const long g = h / group;
        HeadWeights head;
        head.W_Q = W_Q.cols(h * d_k, (h + 1) * d_k - 1);
        head.W_K = W_K.cols(g * d_k, (g + 1) * d_k - 1);
        head.W_V = W_V.cols(g * d_v, (g + 1) * d_v - 1);
        if (biases.b_Q) {
            head.b_Q = biases.b_Q->cols(h * d_k, (h + 1) * d_k - 1);
        }
        if (biases.b_K) {
            head.b_K = biases.b_K->cols(g * d_k, (g + 1) * d_k - 1);
        }
        if (biases.b_V) {
            head.b_V = biases.b_V->cols(g * d_v, (g + 1) * d_v - 1);
        }
        model.heads.push_back(head);
    }
    if (n_kv != n_heads) {
        model.kv_head_count = static_cast<arma::uword>(n_kv);
    }
}

}  // namespace

std::optional<ReadMatrix> ModelLoader::weight(const YAML::Node& node, const std::string& path, Layout layout) {
    if (!node) {
        return std::nullopt;
    }
    auto M = matrix(node, path);
    if (!M) {
        return std::nullopt;
    }
    ReadMatrix read;
    read.as_written = *M;
    read.value = layout == Layout::pytorch ? arma::mat(M->t()) : *M;
    read.node = node;
    read.path = path;
    return read;
}

Layout ModelLoader::read_layout() {
    const YAML::Node node = root()["layout"];
    if (!node) {
        return Layout::x_w;
    }
    auto text = m_yaml.string(node, "layout");
    if (text == "x_w") {
        return Layout::x_w;
    }
    if (text == "pytorch") {
        return Layout::pytorch;
    }
    if (text) {
        m_yaml.error(node, "layout is \"" + *text + "\"; expected x_w or pytorch",
                     "x_w: W is in × out and Q = X·W; pytorch: W is out × in and Q = X·Wᵀ");
    }
    return Layout::x_w;
}

void ModelLoader::read_weights(Model& model, const KeyRow&) {
    if (const YAML::Node mla = root()["mla"]) {
        read_mla(model, mla);
        return;
    }
    const YAML::Node pytorch = root()["pytorch"];
    if (pytorch) {
        for (const char* key : {"weights", "bias", "heads", "layout"}) {
            if (root()[key]) {
                m_yaml.error(root()[key], std::string(key) + " is given together with pytorch",
                             "the pytorch block holds every weight and bias; remove " + std::string(key));
            }
        }
        check_kv_heads_alone();
        read_pytorch_block(model, pytorch);
        return;
    }
    model.layout = read_layout();
    const YAML::Node heads = root()["heads"];
    if (heads && heads.IsSequence()) {
        check_kv_heads_alone();
        read_head_list(model, heads);
    } else {
        read_split_weights(model, heads);
    }
    read_output_weight(model);
}

// ── weights: {query, key, value} split into heads ──────────────────────────

// `weights: {query, key, value}` with `heads: H` (default 1): split by columns.
void ModelLoader::read_split_weights(Model& model, const YAML::Node& heads_node) {
    const Layout layout = model.layout;
    const YAML::Node weights = root()["weights"];
    if (!split_weights_given(weights)) {
        return;
    }
    long n_heads = 1;
    if (heads_node) {
        auto count = m_yaml.integer(heads_node, "heads", 1, k_max_heads);
        if (!count) {
            return;
        }
        n_heads = *count;
    }
    const std::optional<std::int64_t> kv_heads = read_kv_heads(n_heads);
    if (root()["kv_heads"] && !kv_heads) {
        return;
    }
    const long n_kv = kv_heads.value_or(n_heads);
    auto W_Q = weight(weights["query"], "weights.query", layout);
    auto W_K = weight(weights["key"], "weights.key", layout);
    auto W_V = weight(weights["value"], "weights.value", layout);
    bool ok = W_Q && W_K && W_V;
    for (auto* W : {&W_Q, &W_K, &W_V}) {
        if (*W && !fits_d_model(m_yaml, **W, model, layout)) {
            ok = false;
        }
    }
    if (W_Q && W_K && n_kv == n_heads && !fits_d_k(m_yaml, *W_Q, *W_K, layout)) {
        ok = false;
    }
    for (auto* W : {&W_Q, &W_V}) {
        const long parts = W == &W_Q ? n_heads : n_kv;
        if (*W && (*W)->value.n_cols % parts != 0) {
            m_yaml.error((*W)->node, (*W)->path + " has " + std::to_string((*W)->value.n_cols) +
                                         " output columns, which do not split into " + std::to_string(parts) +
                                         (W == &W_Q || n_kv == n_heads ? " equal heads" : " equal key/value heads"),
                         "make the width a multiple of heads, or give each head its own weights as a list");
            ok = false;
        }
    }
    if (W_Q && W_K && n_kv != n_heads && W_Q->value.n_cols % n_heads == 0) {
        // the keys have kv_heads heads of d_k columns each
        const arma::uword d_k = W_Q->value.n_cols / n_heads;
        if (W_K->value.n_cols != d_k * n_kv) {
            m_yaml.error(W_K->node, W_K->path + " has " + std::to_string(W_K->value.n_cols) + " output columns; expected " +
                                        std::to_string(d_k * n_kv) + " (kv_heads · d_k = " + std::to_string(n_kv) +
                                        " · " + std::to_string(d_k) + ")",
                         "with kv_heads, W_K and W_V hold only the key/value heads: kv_heads blocks of d_k (and d_v) "
                         "columns");
            ok = false;
        }
    }
    const Biases biases = read_split_biases(m_yaml, root()["bias"], W_Q, W_K, W_V);
    if (!ok) {
        return;
    }
    split_into_heads(model, W_Q->value, W_K->value, W_V->value, biases, n_heads, n_kv);
}

// `weights:` is a map; reports it missing, not a map, or without query, key or value.
bool ModelLoader::split_weights_given(const YAML::Node& weights) {
    if (!weights) {
        if (m_yaml.has_misspelling_of(m_root, "weights", k_top_keys)) {
            return false;
        }
        // a module's weights under their own names have an error of their own, which says where they go
        for (const char* pasted : {"W_query", "W_key", "W_value", "in_proj_weight"}) {
            if (root()[pasted]) {
                return false;
            }
        }
        m_yaml.error(m_root, "weights is missing",
                     "add `weights:` with query, key and value matrices (d_model rows each)");
        return false;
    }
    if (!weights.IsMap()) {
        m_yaml.error(weights, "weights is not a map", "write weights: {query: ..., key: ..., value: ...}");
        return false;
    }
    m_yaml.check_keys(weights, "weights", k_weight_keys);
    for (const char* key : {"query", "key", "value"}) {
        if (!weights[key] && !m_yaml.has_misspelling_of(weights, key, k_weight_keys)) {
            m_yaml.error(weights, std::string("weights.") + key + " is missing",
                         "query, key and value are all needed; output is optional");
        }
    }
    return true;
}

// ── heads: [{query, key, value, bias}, ...] ─────────────────────────────────

// `heads: [{query, key, value, bias}, ...]`: one weight set per head.
void ModelLoader::read_head_list(Model& model, const YAML::Node& heads) {
    model.weight_form = WeightForm::head_list;
    if (heads.size() == 0) {
        m_yaml.error(heads, "heads is an empty list", "give at least one head, or write heads: 1");
        return;
    }
    if (heads.size() > static_cast<std::size_t>(k_max_heads)) {
        m_yaml.error(heads, "heads has " + std::to_string(heads.size()) + " entries; the limit is " +
                                std::to_string(k_max_heads),
                     "");
        return;
    }
    reject_shared_weights();
    std::optional<arma::uword> d_k, d_v;  // head 1's, which every head must have
    bool ok = true;
    for (std::size_t h = 0; h < heads.size(); ++h) {
        const bool head_ok = read_listed_head(model, heads[h], h, d_k, d_v);
        ok = ok && head_ok;
    }
    if (!ok) {
        model.heads.clear();
    }
}

// With heads as a list, `weights:` and `bias:` keep only their output.
void ModelLoader::reject_shared_weights() {
    // each shared map, and where a list of heads wants its query, key and value
    const std::pair<const char*, const char*> k_shared[] = {
        {"weights", "with heads as a list, each head holds its own query, key and value; keep only weights.output"},
        {"bias", "with heads as a list, put each head's biases under its own bias: key"},
    };
    for (const auto& [name, hint] : k_shared) {
        const YAML::Node node = root()[name];
        if (!node || !node.IsMap()) {
            continue;
        }
        m_yaml.check_keys(node, name, k_weight_keys);
        for (const char* key : {"query", "key", "value"}) {
            if (node[key]) {
                m_yaml.error(node[key], std::string(name) + "." + key + " is given together with a list of heads",
                             hint);
            }
        }
    }
}

// Head `index` (0-based) of the list, added to model.heads when its weights
// could be read; false when anything in it is wrong. The first head read sets
// d_k and d_v.
bool ModelLoader::read_listed_head(Model& model, const YAML::Node& head_node, std::size_t index,
                                   std::optional<arma::uword>& d_k, std::optional<arma::uword>& d_v) {
    const Layout layout = model.layout;
    const std::string prefix = "heads[" + std::to_string(index + 1) + "]";
    if (!head_node.IsMap()) {
        m_yaml.error(head_node, prefix + " is not a map", "write each head as {query: ..., key: ..., value: ...}");
        return false;
    }
    m_yaml.check_keys(head_node, prefix, k_head_keys);
    for (const char* key : {"query", "key", "value"}) {
        if (!head_node[key] && !m_yaml.has_misspelling_of(head_node, key, k_head_keys)) {
            m_yaml.error(head_node, prefix + "." + key + " is missing", "each head needs query, key and value");
        }
    }
    auto W_Q = weight(head_node["query"], prefix + ".query", layout);
    auto W_K = weight(head_node["key"], prefix + ".key", layout);
    auto W_V = weight(head_node["value"], prefix + ".value", layout);
    if (!W_Q || !W_K || !W_V) {
        return false;
    }
    bool head_ok = true;
    for (auto* W : {&W_Q, &W_K, &W_V}) {
        if (!fits_d_model(m_yaml, **W, model, layout)) {
            head_ok = false;
        }
    }
    if (!fits_d_k(m_yaml, *W_Q, *W_K, layout)) {
        head_ok = false;
    }
    if (!d_k) {
        d_k = W_Q->value.n_cols;
        d_v = W_V->value.n_cols;
    } else if (W_Q->value.n_cols != *d_k || W_V->value.n_cols != *d_v) {
        m_yaml.error(head_node, prefix + " has d_k = " + std::to_string(W_Q->value.n_cols) + ", d_v = " +
                                    std::to_string(W_V->value.n_cols) + "; head 1 has d_k = " + std::to_string(*d_k) +
                                    ", d_v = " + std::to_string(*d_v),
                     "every head must have the same widths");
        head_ok = false;
    }
    HeadWeights head;
    head.W_Q = W_Q->value;
    head.W_K = W_K->value;
    head.W_V = W_V->value;
    const YAML::Node head_bias = head_node["bias"];
    if (head_bias) {
        if (!head_bias.IsMap()) {
            m_yaml.error(head_bias, prefix + ".bias is not a map", "write bias: {query: [...], key: [...], value: [...]}");
            head_ok = false;
        } else {
            m_yaml.check_keys(head_bias, prefix + ".bias", k_head_bias_keys);
            head.b_Q = read_bias(m_yaml, head_bias["query"], prefix + ".bias.query", head.W_Q.n_cols, "d_k");
            head.b_K = read_bias(m_yaml, head_bias["key"], prefix + ".bias.key", head.W_K.n_cols, "d_k");
            head.b_V = read_bias(m_yaml, head_bias["value"], prefix + ".bias.value", head.W_V.n_cols, "d_v");
        }
    }
    model.heads.push_back(head);
    return head_ok;
}

// ── the output projection ───────────────────────────────────────────────────

void ModelLoader::read_output_weight(Model& model) {
    const YAML::Node weights = root()["weights"];
    const YAML::Node bias_node = root()["bias"];
    const YAML::Node output = weights && weights.IsMap() ? weights["output"] : YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node output_bias =
        bias_node && bias_node.IsMap() ? bias_node["output"] : YAML::Node(YAML::NodeType::Undefined);
    if (output) {
        auto W_O = weight(output, "weights.output", model.layout);
        if (W_O && !model.heads.empty()) {
            const arma::uword d_v = model.heads.front().W_V.n_cols;
            const arma::uword concat_width = model.heads.size() * d_v;
            if (W_O->value.n_rows != concat_width) {
                m_yaml.error(output, "weights.output is " + shape_text(W_O->as_written) + "; " +
                                         expected_in(model.layout, concat_width,
                                                     "heads × d_v = " + std::to_string(model.heads.size()) + " × " +
                                                         std::to_string(d_v) + ", the width of the concatenated heads"),
                             layout_hint(model.layout));
            } else {
                model.W_O = W_O->value;
            }
        }
    }
    if (output_bias) {
        if (!output) {
            m_yaml.error(output_bias, "bias.output is given without weights.output",
                         "the output bias is added after the output projection; add weights.output or remove "
                         "bias.output");
            return;
        }
        if (model.W_O) {
            model.b_O = read_bias(m_yaml, output_bias, "bias.output", model.W_O->n_cols,
                                  "d_out, the width of weights.output");
        }
    }
}

// ── pytorch: the state of nn.MultiheadAttention ─────────────────────────────

// `pytorch: {num_heads, in_proj_weight, ...}` as nn.MultiheadAttention holds it.
void ModelLoader::read_pytorch_block(Model& model, const YAML::Node& block) {
    model.layout = Layout::pytorch;
    model.weight_form = WeightForm::pytorch_block;
    if (!block.IsMap()) {
        m_yaml.error(block, "pytorch is not a map",
                     "write pytorch: {num_heads: H, in_proj_weight: ..., out_proj_weight: ...}");
        return;
    }
    m_yaml.check_keys(block, "pytorch", k_pytorch_keys);
    for (const char* key : {"num_heads", "in_proj_weight"}) {
        if (!block[key] && !m_yaml.has_misspelling_of(block, key, k_pytorch_keys)) {
            m_yaml.error(block, std::string("pytorch.") + key + " is missing",
                         "copy num_heads and in_proj_weight from the module's state_dict");
        }
    }
    if (!block["num_heads"] || !block["in_proj_weight"]) {
        return;
    }
    auto n_heads = m_yaml.integer(block["num_heads"], "pytorch.num_heads", 1, k_max_heads);
    auto in_proj = matrix(block["in_proj_weight"], "pytorch.in_proj_weight");
    if (!n_heads || !in_proj) {
        return;
    }
    const arma::uword E = model.X.n_cols;
    if (E == 0) {
        return;
    }
    if (in_proj->n_rows != 3 * E || in_proj->n_cols != E) {
        m_yaml.error(block["in_proj_weight"], "pytorch.in_proj_weight is " + shape_text(*in_proj) + "; expected " +
                                                  std::to_string(3 * E) + " × " + std::to_string(E) +
                                                  " (3·E × E, with E = d_model = " + std::to_string(E) + ")",
                     "pytorch: is nn.MultiheadAttention's state, whose in_proj_weight stacks the query, key and "
                     "value weights, each E × E; for another module's weights, of any shapes, write weights: "
                     "{query, key, value} with layout: pytorch");
        return;
    }
    if (E % *n_heads != 0) {
        m_yaml.error(block["num_heads"], "pytorch.num_heads is " + std::to_string(*n_heads) +
                                             ", which does not divide the embedding width " + std::to_string(E),
                     "nn.MultiheadAttention needs embed_dim divisible by num_heads");
        return;
    }
    std::optional<arma::rowvec> in_bias;
    if (block["in_proj_bias"]) {
        in_bias = read_bias(m_yaml, block["in_proj_bias"], "pytorch.in_proj_bias", 3 * E, "3·E");
        if (!in_bias) {
            return;
        }
    }
    // rows 0…E−1 hold W_q, E…2E−1 W_k, 2E…3E−1 W_v (each out × in)
    const arma::mat W_q = in_proj->rows(0, E - 1).t();
    const arma::mat W_k = in_proj->rows(E, 2 * E - 1).t();
    const arma::mat W_v = in_proj->rows(2 * E, 3 * E - 1).t();
    const arma::uword d = E / *n_heads;
    for (long h = 0; h < *n_heads; ++h) {
        HeadWeights head;
        head.W_Q = W_q.cols(h * d, (h + 1) * d - 1);
        head.W_K = W_k.cols(h * d, (h + 1) * d - 1);
        head.W_V = W_v.cols(h * d, (h + 1) * d - 1);
        if (in_bias) {
            head.b_Q = in_bias->cols(h * d, (h + 1) * d - 1);
            head.b_K = in_bias->cols(E + h * d, E + (h + 1) * d - 1);
            head.b_V = in_bias->cols(2 * E + h * d, 2 * E + (h + 1) * d - 1);
        }
        model.heads.push_back(head);
    }
    read_pytorch_output(model, block, E);
}

// `out_proj_weight` (out × in) and `out_proj_bias` of the pytorch block.
void ModelLoader::read_pytorch_output(Model& model, const YAML::Node& block, arma::uword E) {
    if (block["out_proj_weight"]) {
        auto out = matrix(block["out_proj_weight"], "pytorch.out_proj_weight");
        if (out && out->n_cols != E) {
            m_yaml.error(block["out_proj_weight"], "pytorch.out_proj_weight is " + shape_text(*out) + "; expected " +
                                                       std::to_string(E) + " columns (E = d_model: inputs is " +
                                                       shape_text(model.X) + ")",
                         "out_proj_weight is out × in, as nn.Linear.weight");
        } else if (out) {
            model.W_O = arma::mat(out->t());
        }
    }
    if (block["out_proj_bias"]) {
        if (!block["out_proj_weight"]) {
            m_yaml.error(block["out_proj_bias"], "pytorch.out_proj_bias is given without pytorch.out_proj_weight",
                         "add out_proj_weight, or remove out_proj_bias");
        } else if (model.W_O) {
            model.b_O = read_bias(m_yaml, block["out_proj_bias"], "pytorch.out_proj_bias", model.W_O->n_cols, "E");
        }
    }
}

}  // namespace qkv::loading
