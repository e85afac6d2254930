// The YAML loader: the only file that includes yaml-cpp. It turns a document
// into a validated Model, reporting every problem with its FILE:LINE:COL.
#include "io/loader.hpp"

#include "builtin/builtin.hpp"
#include "io/yaml_util.hpp"
#include "attention/attention.hpp"
#include "attention/engine.hpp"
#include "attention/steps.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>

namespace qkv {

namespace {

const std::vector<std::string> k_top_keys = {
    "title",      "description", "tokens",  "inputs",  "weights", "bias",           "heads",
    "layout",     "pytorch",     "scale",   "mask",    "padding", "context",        "context_tokens",
    "embeddings", "sentence",    "positional", "round", "answers",
};
const std::vector<std::string> k_weight_keys = {"query", "key", "value", "output"};
const std::vector<std::string> k_head_keys = {"query", "key", "value", "bias"};
const std::vector<std::string> k_head_bias_keys = {"query", "key", "value"};
const std::vector<std::string> k_pytorch_keys = {"num_heads", "in_proj_weight", "in_proj_bias", "out_proj_weight",
                                                 "out_proj_bias"};

std::string shape_text(const arma::mat& M) { return std::to_string(M.n_rows) + " × " + std::to_string(M.n_cols); }

std::vector<std::string> default_labels(const std::string& prefix, arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword i = 1; i <= count; ++i) {
        labels.push_back(prefix + std::to_string(i));
    }
    return labels;
}

// A weight as read, with the node it came from for error positions.
struct ReadMatrix {
    arma::mat value;      // in the x·W layout (transposed when the file uses layout: pytorch)
    arma::mat as_written;
    YAML::Node node;
    std::string path;     // "weights.query"
};

class Loader {
public:
    Loader(const Source& source, const LoadOptions& options)
        : m_yaml(source, m_diagnostics), m_source(source), m_options(options) {}

    Model load() {
        YAML::Node root = m_yaml.parse_document();
        m_diagnostics.throw_if_any();
        return load(root);
    }

    // A document parsed elsewhere (a lesson's inline model): positions are the document's.
    Model load(const YAML::Node& root) {
        if (!root.IsMap()) {
            m_yaml.error(root, root.IsNull() ? "the file is empty" : "the top level is not a map of keys",
                         "start from `qkv init`, or see `man qkv` for the keys an example file takes");
            m_diagnostics.throw_if_any();
        }
        m_yaml.check_keys(root, "", k_top_keys);
        m_root = root;

        Model model;
        model.title = m_yaml.string(root["title"], "title").value_or("");
        model.description = m_yaml.string(root["description"], "description").value_or("");
        read_inputs(model);
        read_context(model);
        read_positional(model);
        read_weights(model);
        read_scale(model);
        // Shapes that depend on several keys are checked only when each part was readable.
        const bool sizes_known = !model.X.is_empty() && (!root["context"] || (model.C && !model.C->is_empty()));
        if (sizes_known) {
            read_mask(model);
        }
        if (m_diagnostics.empty()) {
            read_round(model);
            check_memory(model);
        }
        m_diagnostics.throw_if_any();
        return model;
    }

private:
    YamlReader m_yaml;
    Diagnostics m_diagnostics;
    const Source& m_source;
    const LoadOptions& m_options;
    YAML::Node m_root;

    // Read-only access: yaml-cpp's non-const operator[] would add missing keys.
    const YAML::Node& root() const { return m_root; }

    std::optional<arma::mat> matrix(const YAML::Node& node, const std::string& path) {
        return read_matrix(m_yaml, node, path, m_source, m_options);
    }

    // ── inputs, tokens, embeddings ─────────────────────────────────────────

    void read_inputs(Model& model) {
        const YAML::Node inputs = root()["inputs"];
        const YAML::Node embeddings = root()["embeddings"];
        const YAML::Node sentence = root()["sentence"];
        if (inputs && embeddings) {
            m_yaml.error(embeddings, "both inputs and embeddings are given",
                         "give X either as inputs, or as embeddings plus a sentence, not both");
            return;
        }
        if (embeddings || sentence) {
            read_embeddings(model, embeddings, sentence);
            return;
        }
        if (!inputs) {
            if (m_yaml.has_misspelling_of(m_root, "inputs", k_top_keys)) {
                return;
            }
            m_yaml.error(m_root, "inputs is missing",
                         "add `inputs:` with one row of numbers per token, e.g. inputs: [[1, 0], [0, 1]]");
            return;
        }
        if (auto X = matrix(inputs, "inputs")) {
            model.X = *X;
        }
        const YAML::Node tokens = root()["tokens"];
        if (tokens) {
            if (auto labels = m_yaml.labels(tokens, "tokens")) {
                if (!model.X.is_empty() && labels->size() != model.X.n_rows) {
                    m_yaml.error(tokens, "tokens has " + std::to_string(labels->size()) + " labels; inputs has " +
                                             std::to_string(model.X.n_rows) + " rows",
                                 "give one label per row of inputs");
                } else {
                    model.tokens = *labels;
                }
            }
        }
        if (model.tokens.empty()) {
            model.tokens = default_labels("x", model.X.n_rows);
        }
    }

    void read_embeddings(Model& model, const YAML::Node& embeddings, const YAML::Node& sentence) {
        if (!embeddings) {
            m_yaml.error(sentence, "sentence is given without embeddings",
                         "add `embeddings:` mapping each word of the sentence to its vector");
            return;
        }
        if (!sentence) {
            m_yaml.error(embeddings, "embeddings is given without a sentence",
                         "add `sentence: \"...\"` with the words to look up");
            return;
        }
        if (root()["tokens"]) {
            m_yaml.error(root()["tokens"], "tokens is given together with a sentence",
                         "the words of the sentence are the token labels; remove tokens");
        }
        if (!embeddings.IsMap() || embeddings.size() == 0) {
            m_yaml.error(embeddings, "embeddings is not a map of words to vectors",
                         "write e.g. embeddings: {sky: [1, 0], blue: [0, 1]}");
            return;
        }
        std::map<std::string, arma::rowvec> table;
        std::vector<std::string> known;  // in the order written, for the hint
        std::set<std::string> given;
        arma::uword width = 0;
        bool ok = true;
        for (const auto& entry : embeddings) {
            const std::string word = key_text(entry.first);
            const std::string path = "embeddings." + word;
            if (!given.insert(word).second) {
                m_yaml.error(entry.first, path + " is given twice", "give each word one vector");
                ok = false;
                continue;
            }
            known.push_back(word);
            auto vec = m_yaml.vector(entry.second, path);
            if (!vec) {
                ok = false;
                continue;
            }
            if (width == 0) {
                width = vec->n_elem;
            } else if (vec->n_elem != width) {
                m_yaml.error(entry.second, path + " has " + numbers(vec->n_elem) + "; the first embedding has " +
                                               std::to_string(width),
                             "every word vector must have the same width (d_model)");
                ok = false;
                continue;
            }
            table[word] = *vec;
        }
        auto text = m_yaml.string(sentence, "sentence");
        if (!text) {
            return;
        }
        std::istringstream words(*text);
        std::vector<std::string> tokens{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
        if (tokens.empty()) {
            m_yaml.error(sentence, "sentence has no words", "write the words to look up, separated by spaces");
            return;
        }
        if (tokens.size() > k_max_dimension) {
            m_yaml.error(sentence, "sentence has " + std::to_string(tokens.size()) + " words; the limit is 65536", "");
            return;
        }
        // unknown words are reported even when a vector was bad; X is built only when all is well
        arma::mat X(tokens.size(), width);
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (given.count(tokens[i]) == 0) {
                const std::size_t k_max_listed = 20;
                std::string list;
                for (std::size_t k = 0; k < known.size() && k < k_max_listed; ++k) {
                    list += (list.empty() ? "" : ", ") + known[k];
                }
                if (known.size() > k_max_listed) {
                    list += ", … (" + std::to_string(known.size()) + " in all)";
                }
                const std::string near = closest_match(tokens[i], known);
                m_yaml.error_at(word_mark(sentence, tokens, i),
                                "word " + std::to_string(i + 1) + " of sentence, \"" + tokens[i] +
                                    "\", is not in embeddings",
                                (near.empty() ? "" : "did you mean \"" + near + "\"? ") + "known words: " + list);
                ok = false;
                continue;
            }
            if (ok) {
                X.row(i) = table.at(tokens[i]);
            }
        }
        if (ok) {
            model.X = X;
            model.tokens = tokens;
        }
    }

    // Where word `index` of a one-line sentence starts, so that an error can
    // point at the word itself; the sentence's own position when the words
    // cannot be found on its line as written (a block scalar, escapes, folding).
    YAML::Mark word_mark(const YAML::Node& sentence, const std::vector<std::string>& words, std::size_t index) const {
        const YAML::Mark start = sentence.Mark();
        if (start.line < 0 || start.pos < 0 || static_cast<std::size_t>(start.pos) > m_source.text.size()) {
            return start;
        }
        const std::string& text = m_source.text;
        const std::size_t line_end = std::min(text.find('\n', static_cast<std::size_t>(start.pos)), text.size());
        std::size_t at = static_cast<std::size_t>(start.pos);
        if (at < line_end && (text[at] == '"' || text[at] == '\'')) {
            ++at;
        }
        for (std::size_t k = 0; k <= index; ++k) {
            while (at < line_end && (text[at] == ' ' || text[at] == '\t')) {
                ++at;
            }
            if (text.compare(at, words[k].size(), words[k]) != 0 || at + words[k].size() > line_end) {
                return start;
            }
            if (k == index) {
                YAML::Mark mark = start;
                mark.column += static_cast<int>(at - static_cast<std::size_t>(start.pos));
                mark.pos = static_cast<int>(at);
                return mark;
            }
            at += words[k].size();
        }
        return start;
    }

    void read_context(Model& model) {
        const YAML::Node context = root()["context"];
        const YAML::Node context_tokens = root()["context_tokens"];
        if (!context) {
            if (context_tokens) {
                m_yaml.error(context_tokens, "context_tokens is given without context",
                             "add `context:` with the rows keys and values are read from");
            }
            return;
        }
        auto C = matrix(context, "context");
        if (!C) {
            return;
        }
        if (!model.X.is_empty() && C->n_cols != model.X.n_cols) {
            m_yaml.error(context, "context is " + shape_text(*C) + "; expected " + std::to_string(model.X.n_cols) +
                                      " columns (d_model: inputs is " + shape_text(model.X) + ")",
                         "context rows must have the same width as the input rows");
        }
        model.C = *C;
        if (context_tokens) {
            if (auto labels = m_yaml.labels(context_tokens, "context_tokens")) {
                if (labels->size() != C->n_rows) {
                    m_yaml.error(context_tokens, "context_tokens has " + std::to_string(labels->size()) +
                                                     " labels; context has " + std::to_string(C->n_rows) + " rows",
                                 "give one label per row of context");
                } else {
                    model.context_tokens = *labels;
                }
            }
        }
        if (model.context_tokens.empty()) {
            model.context_tokens = default_labels("c", C->n_rows);
        }
    }

    void read_positional(Model& model) {
        const YAML::Node positional = root()["positional"];
        if (!positional || model.X.is_empty()) {
            return;
        }
        if (positional.IsScalar()) {
            if (positional.Scalar() != "sinusoidal") {
                const std::string near = closest_match(positional.Scalar(), {"sinusoidal"});
                m_yaml.error(positional, "positional is " + m_yaml.describe(positional) +
                                             "; expected sinusoidal or a matrix",
                             (near.empty() ? "" : "did you mean sinusoidal? ") +
                                 std::string("write `positional: sinusoidal`, or give a matrix with one row per token"));
                return;
            }
            model.P = sinusoidal_positions(model.X.n_rows, model.X.n_cols);
            model.P_sinusoidal = true;
            return;
        }
        auto P = matrix(positional, "positional");
        if (!P) {
            return;
        }
        if (P->n_rows != model.X.n_rows || P->n_cols != model.X.n_cols) {
            m_yaml.error(positional, "positional is " + shape_text(*P) + "; expected " + shape_text(model.X) +
                                         " (the shape of inputs)",
                         "give one position vector per token, as wide as the inputs");
            return;
        }
        model.P = *P;
    }

    // ── weights: four ways of writing them ─────────────────────────────────

    std::optional<ReadMatrix> weight(const YAML::Node& node, const std::string& path, Layout layout) {
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

    std::optional<arma::rowvec> bias(const YAML::Node& node, const std::string& path, arma::uword width,
                                     const std::string& what_width) {
        if (!node) {
            return std::nullopt;
        }
        auto b = m_yaml.vector(node, path);
        if (!b) {
            return std::nullopt;
        }
        if (width != 0 && b->n_elem != width) {
            m_yaml.error(node, path + " has " + numbers(b->n_elem) + "; expected " +
                                   std::to_string(width) + " (" + what_width + ")",
                         "a bias holds one number per column of its projection");
            return std::nullopt;
        }
        return b;
    }

    Layout read_layout() {
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

    void read_weights(Model& model) {
        const YAML::Node pytorch = root()["pytorch"];
        if (pytorch) {
            for (const char* key : {"weights", "bias", "heads", "layout"}) {
                if (root()[key]) {
                    m_yaml.error(root()[key], std::string(key) + " is given together with pytorch",
                                 "the pytorch block holds every weight and bias; remove " + std::string(key));
                }
            }
            read_pytorch_block(model, pytorch);
            return;
        }
        model.layout = read_layout();
        const YAML::Node heads = root()["heads"];
        if (heads && heads.IsSequence()) {
            read_head_list(model, heads);
        } else {
            read_split_weights(model, heads);
        }
        read_output_weight(model);
    }

    // `weights: {query, key, value}` with `heads: H` (default 1): split by columns.
    void read_split_weights(Model& model, const YAML::Node& heads_node) {
        const Layout layout = model.layout;
        const YAML::Node weights = root()["weights"];
        if (!weights) {
            if (m_yaml.has_misspelling_of(m_root, "weights", k_top_keys)) {
                return;
            }
            m_yaml.error(m_root, "weights is missing",
                         "add `weights:` with query, key and value matrices (d_model rows each)");
            return;
        }
        if (!weights.IsMap()) {
            m_yaml.error(weights, "weights is not a map", "write weights: {query: ..., key: ..., value: ...}");
            return;
        }
        m_yaml.check_keys(weights, "weights", k_weight_keys);
        for (const char* key : {"query", "key", "value"}) {
            if (!weights[key] && !m_yaml.has_misspelling_of(weights, key, k_weight_keys)) {
                m_yaml.error(weights, std::string("weights.") + key + " is missing",
                             "query, key and value are all needed; output is optional");
            }
        }
        long n_heads = 1;
        if (heads_node) {
            auto count = m_yaml.integer(heads_node, "heads", 1, k_max_heads);
            if (!count) {
                return;
            }
            n_heads = *count;
        }
        auto W_Q = weight(weights["query"], "weights.query", layout);
        auto W_K = weight(weights["key"], "weights.key", layout);
        auto W_V = weight(weights["value"], "weights.value", layout);
        const arma::uword d_model = model.X.n_cols;
        bool ok = W_Q && W_K && W_V;
        for (auto* W : {&W_Q, &W_K, &W_V}) {
            if (*W && d_model != 0 && (*W)->value.n_rows != d_model) {
                m_yaml.error((*W)->node, (*W)->path + " is " + shape_text((*W)->as_written) + "; " +
                                             expected_in(layout, d_model, "d_model: inputs is " + shape_text(model.X)),
                             layout_hint(layout));
                ok = false;
            }
        }
        if (W_Q && W_K && W_K->value.n_cols != W_Q->value.n_cols) {
            m_yaml.error(W_K->node, "weights.key is " + shape_text(W_K->as_written) + "; " +
                                        expected_out(layout, W_Q->value.n_cols, "d_k: weights.query is " + shape_text(W_Q->as_written)),
                         "queries and keys must have the same width to take their dot product");
            ok = false;
        }
        for (auto* W : {&W_Q, &W_V}) {
            if (*W && (*W)->value.n_cols % n_heads != 0) {
                m_yaml.error((*W)->node, (*W)->path + " has " + std::to_string((*W)->value.n_cols) +
                                             " output columns, which do not split into " +
                                             std::to_string(n_heads) + " equal heads",
                             "make the width a multiple of heads, or give each head its own weights as a list");
                ok = false;
            }
        }
        const YAML::Node bias_node = root()["bias"];
        std::optional<arma::rowvec> b_Q, b_K, b_V;
        if (bias_node) {
            if (!bias_node.IsMap()) {
                m_yaml.error(bias_node, "bias is not a map", "write bias: {query: [...], key: [...], ...}");
            } else {
                m_yaml.check_keys(bias_node, "bias", k_weight_keys);
                b_Q = bias(bias_node["query"], "bias.query", W_Q ? W_Q->value.n_cols : 0, "the width of weights.query");
                b_K = bias(bias_node["key"], "bias.key", W_K ? W_K->value.n_cols : 0, "the width of weights.key");
                b_V = bias(bias_node["value"], "bias.value", W_V ? W_V->value.n_cols : 0, "the width of weights.value");
            }
        }
        if (!ok) {
            return;
        }
        // head h (1-based) uses columns (h−1)·d_k … h·d_k − 1, as PyTorch and nanoGPT split them
        const arma::uword d_k = W_Q->value.n_cols / n_heads;
        const arma::uword d_v = W_V->value.n_cols / n_heads;
        for (long h = 0; h < n_heads; ++h) {
            HeadWeights head;
            head.W_Q = W_Q->value.cols(h * d_k, (h + 1) * d_k - 1);
            head.W_K = W_K->value.cols(h * d_k, (h + 1) * d_k - 1);
            head.W_V = W_V->value.cols(h * d_v, (h + 1) * d_v - 1);
            if (b_Q) {
                head.b_Q = b_Q->cols(h * d_k, (h + 1) * d_k - 1);
            }
            if (b_K) {
                head.b_K = b_K->cols(h * d_k, (h + 1) * d_k - 1);
            }
            if (b_V) {
                head.b_V = b_V->cols(h * d_v, (h + 1) * d_v - 1);
            }
            model.heads.push_back(head);
        }
    }

    // `heads: [{query, key, value, bias}, ...]`: one weight set per head.
    void read_head_list(Model& model, const YAML::Node& heads) {
        const Layout layout = model.layout;
        if (heads.size() == 0) {
            m_yaml.error(heads, "heads is an empty list", "give at least one head, or write heads: 1");
            return;
        }
        if (heads.size() > static_cast<std::size_t>(k_max_heads)) {
            m_yaml.error(heads, "heads has " + std::to_string(heads.size()) + " entries; the limit is " + std::to_string(k_max_heads), "");
            return;
        }
        const YAML::Node weights = root()["weights"];
        if (weights && weights.IsMap()) {
            m_yaml.check_keys(weights, "weights", k_weight_keys);
            for (const char* key : {"query", "key", "value"}) {
                if (weights[key]) {
                    m_yaml.error(weights[key], std::string("weights.") + key + " is given together with a list of heads",
                                 "with heads as a list, each head holds its own query, key and value; keep only weights.output");
                }
            }
        }
        const YAML::Node bias_node = root()["bias"];
        if (bias_node && bias_node.IsMap()) {
            m_yaml.check_keys(bias_node, "bias", k_weight_keys);
            for (const char* key : {"query", "key", "value"}) {
                if (bias_node[key]) {
                    m_yaml.error(bias_node[key], std::string("bias.") + key + " is given together with a list of heads",
                                 "with heads as a list, put each head's biases under its own bias: key");
                }
            }
        }
        const arma::uword d_model = model.X.n_cols;
        std::optional<arma::uword> d_k, d_v;
        bool ok = true;
        for (std::size_t h = 0; h < heads.size(); ++h) {
            const YAML::Node head_node = heads[h];
            const std::string prefix = "heads[" + std::to_string(h + 1) + "]";
            if (!head_node.IsMap()) {
                m_yaml.error(head_node, prefix + " is not a map", "write each head as {query: ..., key: ..., value: ...}");
                ok = false;
                continue;
            }
            m_yaml.check_keys(head_node, prefix, k_head_keys);
            for (const char* key : {"query", "key", "value"}) {
                if (!head_node[key]) {
                    if (!m_yaml.has_misspelling_of(head_node, key, k_head_keys)) {
                        m_yaml.error(head_node, prefix + "." + key + " is missing",
                                     "each head needs query, key and value");
                    }
                    ok = false;
                }
            }
            auto W_Q = weight(head_node["query"], prefix + ".query", layout);
            auto W_K = weight(head_node["key"], prefix + ".key", layout);
            auto W_V = weight(head_node["value"], prefix + ".value", layout);
            if (!W_Q || !W_K || !W_V) {
                ok = false;
                continue;
            }
            bool head_ok = true;
            for (auto* W : {&W_Q, &W_K, &W_V}) {
                if (d_model != 0 && (*W)->value.n_rows != d_model) {
                    m_yaml.error((*W)->node, (*W)->path + " is " + shape_text((*W)->as_written) + "; " +
                                                 expected_in(layout, d_model, "d_model: inputs is " + shape_text(model.X)),
                                 layout_hint(layout));
                    head_ok = false;
                }
            }
            if (W_K->value.n_cols != W_Q->value.n_cols) {
                m_yaml.error(W_K->node, W_K->path + " is " + shape_text(W_K->as_written) + "; " +
                                            expected_out(layout, W_Q->value.n_cols, "d_k: " + W_Q->path + " is " + shape_text(W_Q->as_written)),
                             "queries and keys must have the same width to take their dot product");
                head_ok = false;
            }
            if (!d_k) {
                d_k = W_Q->value.n_cols;
                d_v = W_V->value.n_cols;
            } else if (W_Q->value.n_cols != *d_k || W_V->value.n_cols != *d_v) {
                m_yaml.error(head_node, prefix + " has d_k = " + std::to_string(W_Q->value.n_cols) + ", d_v = " +
                                            std::to_string(W_V->value.n_cols) + "; head 1 has d_k = " +
                                            std::to_string(*d_k) + ", d_v = " + std::to_string(*d_v),
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
                    head.b_Q = bias(head_bias["query"], prefix + ".bias.query", head.W_Q.n_cols, "d_k");
                    head.b_K = bias(head_bias["key"], prefix + ".bias.key", head.W_K.n_cols, "d_k");
                    head.b_V = bias(head_bias["value"], prefix + ".bias.value", head.W_V.n_cols, "d_v");
                }
            }
            ok = ok && head_ok;
            model.heads.push_back(head);
        }
        if (!ok) {
            model.heads.clear();
        }
    }

    void read_output_weight(Model& model) {
        const YAML::Node weights = root()["weights"];
        const YAML::Node bias_node = root()["bias"];
        const YAML::Node output = weights && weights.IsMap() ? weights["output"] : YAML::Node(YAML::NodeType::Undefined);
        const YAML::Node output_bias = bias_node && bias_node.IsMap() ? bias_node["output"] : YAML::Node(YAML::NodeType::Undefined);
        if (output) {
            auto W_O = weight(output, "weights.output", model.layout);
            if (W_O && !model.heads.empty()) {
                const arma::uword concat_width = model.heads.size() * model.heads.front().W_V.n_cols;
                if (W_O->value.n_rows != concat_width) {
                    m_yaml.error(output, "weights.output is " + shape_text(W_O->as_written) + "; " +
                                             expected_in(model.layout, concat_width, "heads × d_v = " + std::to_string(model.heads.size()) + " × " + std::to_string(model.heads.front().W_V.n_cols) + ", the width of the concatenated heads"),
                                 layout_hint(model.layout));
                } else {
                    model.W_O = W_O->value;
                }
            }
        }
        if (output_bias) {
            if (!output) {
                m_yaml.error(output_bias, "bias.output is given without weights.output",
                             "the output bias is added after the output projection; add weights.output or remove bias.output");
                return;
            }
            if (model.W_O) {
                model.b_O = bias(output_bias, "bias.output", model.W_O->n_cols, "d_out, the width of weights.output");
            }
        }
    }

    // `pytorch: {num_heads, in_proj_weight, ...}` as nn.MultiheadAttention holds it.
    void read_pytorch_block(Model& model, const YAML::Node& block) {
        model.layout = Layout::pytorch;
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
                         "in_proj_weight stacks the query, key and value weights, each E × E");
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
            in_bias = bias(block["in_proj_bias"], "pytorch.in_proj_bias", 3 * E, "3·E");
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
        if (block["out_proj_weight"]) {
            auto out = matrix(block["out_proj_weight"], "pytorch.out_proj_weight");
            if (out && out->n_cols != E) {
                m_yaml.error(block["out_proj_weight"], "pytorch.out_proj_weight is " + shape_text(*out) + "; expected " +
                                                           std::to_string(E) + " columns (E = d_model: inputs is " + shape_text(model.X) + ")",
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
                model.b_O = bias(block["out_proj_bias"], "pytorch.out_proj_bias", model.W_O->n_cols, "E");
            }
        }
    }

    // ── scale, mask, rounding ──────────────────────────────────────────────

    void read_scale(Model& model) {
        const YAML::Node node = root()["scale"];
        if (!node) {
            return;
        }
        if (node.IsScalar() && (node.Scalar() == "none" || node.Scalar() == "sqrt_dk")) {
            model.scale_kind = node.Scalar() == "none" ? ScaleKind::none : ScaleKind::sqrt_dk;
            return;
        }
        auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
        if (!value || !std::isfinite(*value) || *value < 1.0 / k_max_magnitude || *value > k_max_magnitude) {
            m_yaml.error(node, "scale is " + m_yaml.describe(node) + "; expected sqrt_dk, none or a positive number from 1e-30 to 1e30",
                         "scale is the divisor of the scores: sqrt_dk (the default) divides by √d_k, none by 1");
            return;
        }
        model.scale_kind = ScaleKind::divisor;
        model.scale_divisor = *value;
    }

    // Whether every entry of M is 0 or 1; otherwise an error naming the first other value and its cell.
    bool zeros_and_ones(const arma::mat& M, const YAML::Node& node, const std::string& path, const std::string& hint) {
        for (arma::uword i = 0; i < M.n_rows; ++i) {
            for (arma::uword j = 0; j < M.n_cols; ++j) {
                const double value = M(i, j);
                if (value == 0.0 || value == 1.0) {
                    continue;
                }
                // the cell's own node when the matrix is written out in the file
                YAML::Node where = node;
                if (node.IsSequence() && M.n_rows == 1 && node.size() == M.n_cols && node[j].IsScalar()) {
                    where = node[j];
                } else if (node.IsSequence() && node.size() == M.n_rows && node[i].IsSequence() &&
                           node[i].size() == M.n_cols) {
                    where = node[i][j];
                }
                const std::string cell = M.n_rows == 1
                                             ? "[" + std::to_string(j + 1) + "]"
                                             : "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]";
                m_yaml.error(where, path + cell + " is " + fmt::format("{:g}", value) + "; expected 0 or 1", hint);
                return false;
            }
        }
        return true;
    }

    void read_mask(Model& model) {
        const YAML::Node mask = root()["mask"];
        const YAML::Node padding = root()["padding"];
        const arma::uword n = model.n();
        const arma::uword m = model.m();
        bool readable = true;  // both parts valid, so that blocked rows can be checked
        if (mask) {
            if (mask.IsScalar() && mask.Scalar() == "causal") {
                model.mask_kind = MaskKind::causal;
            } else if (mask.IsScalar()) {
                m_yaml.error(mask, "mask is \"" + mask.Scalar() + "\"; expected causal or a 0/1 matrix",
                             "write mask: causal, or an n × m matrix with 1 = may attend and 0 = blocked");
                readable = false;
            } else if (auto M = matrix(mask, "mask")) {
                if (M->n_rows != n || M->n_cols != m) {
                    m_yaml.error(mask, "mask is " + shape_text(*M) + "; expected " + std::to_string(n) + " × " +
                                           std::to_string(m) + " (queries × keys)",
                                 "one row per query and one column per key");
                    readable = false;
                } else if (!zeros_and_ones(*M, mask, "mask",
                                           "1 = may attend, 0 = blocked (PyTorch's boolean attn_mask uses the "
                                           "opposite sense)")) {
                    readable = false;
                } else {
                    model.mask_kind = MaskKind::matrix;
                    model.mask = *M;
                }
            } else {
                readable = false;
            }
        }
        if (padding) {
            auto p = m_yaml.vector(padding, "padding");
            if (!p) {
                readable = false;
            } else if (p->n_elem != m) {
                m_yaml.error(padding, "padding has " + std::to_string(p->n_elem) + " entries; expected " +
                                          std::to_string(m) + " (one per key)",
                             "1 = real token, 0 = padding that no query may attend to");
                readable = false;
            } else if (!zeros_and_ones(arma::mat(*p), padding, "padding", "1 = real token, 0 = padding")) {
                readable = false;
            } else {
                model.padding = *p;
            }
        }
        if (!readable) {
            model.mask_kind = MaskKind::none;
            model.padding.reset();
            return;
        }
        if (!model.masked()) {
            return;
        }
        const arma::mat allowed = model.allowed();
        const YAML::Node where = mask ? mask : padding;
        for (arma::uword i = 0; i < n; ++i) {
            if (arma::accu(allowed.row(i)) == 0.0) {
                const std::string label = i < model.tokens.size() ? " (" + model.tokens[i] + ")" : "";
                m_yaml.error(where, "query " + std::to_string(i + 1) + label +
                                        " may attend to no key: the mask and padding block its whole row",
                             "softmax of a row of −∞ is 0/0; let every query attend to at least one key");
            }
        }
    }

    void read_round(Model& model) {
        const YAML::Node node = root()["round"];
        if (!node) {
            return;
        }
        if (node.IsScalar()) {
            if (auto decimals = m_yaml.integer(node, "round", 0, 15)) {
                model.round["*"] = static_cast<int>(*decimals);
            }
            return;
        }
        if (!node.IsMap()) {
            m_yaml.error(node, "round is " + m_yaml.describe(node) + "; expected a number of decimals or a map",
                         "write round: 2, or round: {weights: 1}");
            return;
        }
        for (const auto& entry : node) {
            const std::string step = key_text(entry.first);
            const auto id = find_step(step);
            if (!id) {
                const std::string near = closest_match(step, step_names());
                m_yaml.error(entry.first, "round." + step + " is not a step id",
                             (near.empty() ? "" : "did you mean " + near + "? ") + "valid step ids: " + step_name_list());
                continue;
            }
            if (!step_exists(model, *id)) {
                m_yaml.error(entry.first, "round." + step + ": this example has no " + step + " step",
                             step_requirements());
                continue;
            }
            if (auto decimals = m_yaml.integer(entry.second, "round." + step, 0, 15)) {
                model.round[step] = static_cast<int>(*decimals);
            }
        }
    }

    void check_memory(const Model& model) {
        if (model.heads.empty() || model.X.is_empty()) {
            return;
        }
        // only the n × m matrices of the steps that will be kept count in full
        std::uint64_t square_steps = 0;
        for (const StepId id : all_steps()) {
            const auto& kept = m_options.kept_steps;
            const bool keeps = kept.empty() || std::find(kept.begin(), kept.end(), id) != kept.end();
            square_steps += step_row(id).square && keeps ? 1 : 0;
        }
        const std::uint64_t kept_heads = m_options.kept_head > 0 ? 1 : model.n_heads();
        const std::uint64_t bytes = estimate_memory(model.n(), model.m(), model.d_model(), model.n_heads(),
                                                    model.d_k(), model.d_v(), model.d_out(), square_steps, kept_heads);
        if (bytes > m_options.max_memory) {
            const std::string what = "the computation needs about " + size_text(bytes) + "; the limit is " +
                                     size_text(m_options.max_memory);
            m_yaml.error(root()["inputs"] ? root()["inputs"] : m_root, what,
                         "use fewer tokens or narrower weights, or raise the limit with --max-memory");
        }
    }
};

}  // namespace

Model load_model(const Source& source, const LoadOptions& options) {
    Loader loader(source, options);
    return loader.load();
}

Model load_model(const Source& source, const YAML::Node& root, const LoadOptions& options) {
    Loader loader(source, options);
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
    const std::string near = closest_match(file_or_name, names);
    std::string list;
    for (const auto& name : names) {
        list += (list.empty() ? "" : ", ") + name;
    }
    throw InputError(Diagnostic{file_or_name, 0, 0, "no such file, and no built-in example by that name",
                                (near.empty() ? "" : "did you mean " + near + "? ") + "built-in examples: " + list});
}

}  // namespace qkv
