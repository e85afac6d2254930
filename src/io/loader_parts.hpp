// The example loader's parts, shared by the files of src/io/ that make it up
// (nothing outside src/io/ includes this):
//   loader.cpp           load: each row's reader (model/keys.def) by stage; load_model, read_source
//   loader_inputs.cpp    inputs, tokens, embeddings with a sentence, context, positions
//   loader_weights.cpp   the weights in their four ways of writing, the output projection
//   loader_settings.cpp  scale, mask and padding, grad_output:, round:, the memory estimate
//   rubric.cpp           decimals: and rubric: for qkv check, and the file of --rubric
//   loader_variants.cpp  the attention of today's models: kv_heads, rope, alibi, sinks
//   loader_mla.cpp       multi-head latent attention: mla: and its weights under the state dict's names
// Every reader records its problems as positioned diagnostics and goes on, so
// that one run reports every problem of a file, in the order of the file.
#pragma once

#include "io/loader.hpp"
#include "io/yaml_util.hpp"
#include "model/keys.hpp"

#include <armadillo>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

namespace qkv::loading {

// The keys an example file may have at the top level (model/keys.def).
inline const std::vector<std::string>& k_top_keys = key_names();

// What people paste from PyTorch's modules and functions at the top level,
// and what qkv reads instead.
inline const std::vector<ForeignKey> k_pasted_keys = {
    {"dropout", "qkv computes attention as in evaluation (model.eval()), where dropout is the identity",
     "remove dropout: qkv's numbers are PyTorch's in eval mode, or in training with dropout 0"},
    {"qkv_bias", "qkv reads the bias vectors themselves; expected bias: {query, key, value}",
     "remove qkv_bias for no biases (qkv_bias=False), or give them: bias: {query: [...], key: [...], value: [...]}"},
    {"num_heads", "qkv's key is heads", "write heads: N to split the weights into N heads (num_heads belongs inside "
                                        "a pytorch: block, nn.MultiheadAttention's state)"},
    {"context_length", "qkv takes the sequence's length from the rows of inputs",
     "remove context_length; for the causal mask that PyTorch sizes by it, write mask: causal"},
    {"d_in", "qkv reads the widths from the matrices' shapes",
     "remove d_in: d_model is the number of columns of inputs"},
    {"d_out", "qkv reads the widths from the matrices' shapes",
     "remove d_out: d_k and d_v are the numbers of columns of the weights"},
    {"attn_mask", "qkv's key is mask, in which 1 = may attend and 0 = blocked",
     "write mask: causal, or mask: with 1 where nn.MultiheadAttention's boolean attn_mask has False"},
    {"is_causal", "qkv's key is mask", "write mask: causal"},
    {"key_padding_mask", "qkv's key is padding, in which 1 = a real token and 0 = padding",
     "write padding: [1, 1, 0], with 0 for each key that key_padding_mask marks True"},
    {"in_proj_weight", "nn.MultiheadAttention's weights go in a pytorch: block",
     "write pytorch: {num_heads: H, in_proj_weight: ..., out_proj_weight: ...}"},
    {"W_query", "a module's weights go in weights: {query, key, value}",
     "write weights: {query: ..., key: ..., value: ...}, and layout: pytorch for nn.Linear's weight (out × in)"},
    {"W_key", "a module's weights go in weights: {query, key, value}",
     "write weights: {query: ..., key: ..., value: ...}, and layout: pytorch for nn.Linear's weight (out × in)"},
    {"W_value", "a module's weights go in weights: {query, key, value}",
     "write weights: {query: ..., key: ..., value: ...}, and layout: pytorch for nn.Linear's weight (out × in)"},
};

// "3 × 2"
std::string shape_text(const arma::mat& M);

// The step a key of a map by step id (round:, rubric:) names, checked against
// the model: nullopt, with the error recorded, for an unknown step or one the
// example does not have.
std::optional<StepId> read_step_key(YamlReader& yaml, const YAML::Node& key, const std::string& path,
                                    const Model& model);

// Reads a map of step ids to points (rubric: in an example, or the file of
// --rubric) into `rubric`; `path` names it in messages ("rubric").
void parse_rubric(YamlReader& yaml, const YAML::Node& node, const std::string& path, const Model& model,
                  std::map<std::string, double>& rubric);

// A weight as read, with the node it came from for error positions.
struct ReadMatrix {
    arma::mat value;      // in the x·W layout (transposed when the file uses layout: pytorch)
    arma::mat as_written;
    YAML::Node node;
    std::string path;     // "weights.query"
};

class ModelLoader {
public:
    ModelLoader(const Source& source, const LoadOptions& options)
        : m_yaml(source, m_diagnostics), m_source(source), m_options(options) {
        // a vector may be {file: …} too, read from the example's folder within its limits
        m_yaml.set_file_reader([this](const YAML::Node& node, const std::string& path) {
            return read_matrix(m_yaml, node, path, m_source, m_options);
        });
    }
    // the reader above holds `this`
    ModelLoader(const ModelLoader&) = delete;
    ModelLoader& operator=(const ModelLoader&) = delete;

    Model load();
    // A document parsed elsewhere (a lesson's inline model): positions are the document's.
    Model load(const YAML::Node& root);

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

    // The reader of each row of model/keys.def takes the row; `none` is the
    // reader of a row read by another key's reader (or not by this loader).
    void read_titles(Model& model, const KeyRow& row);
    void none(Model&, const KeyRow&) {}

    // ── loader_inputs.cpp ───────────────────────────────────────────────────
    void read_inputs(Model& model, const KeyRow& row);
    void read_embeddings(Model& model, const YAML::Node& embeddings, const YAML::Node& sentence);
    YAML::Mark word_mark(const YAML::Node& sentence, const std::vector<std::string>& words, std::size_t index) const;
    void read_context(Model& model, const KeyRow& row);
    void read_positional(Model& model, const KeyRow& row);

    // ── loader_weights.cpp ──────────────────────────────────────────────────
    std::optional<ReadMatrix> weight(const YAML::Node& node, const std::string& path, Layout layout);
    Layout read_layout();
    void read_weights(Model& model, const KeyRow& row);
    void read_split_weights(Model& model, const YAML::Node& heads_node);
    bool split_weights_given(const YAML::Node& weights);
    void read_head_list(Model& model, const YAML::Node& heads);
    void reject_shared_weights();
    bool read_listed_head(Model& model, const YAML::Node& head_node, std::size_t index,
                          std::optional<arma::uword>& d_k, std::optional<arma::uword>& d_v);
    void read_output_weight(Model& model);
    void read_pytorch_block(Model& model, const YAML::Node& block);
    void read_pytorch_output(Model& model, const YAML::Node& block, arma::uword E);

    // ── loader_mla.cpp ──────────────────────────────────────────────────────
    void read_mla(Model& model, const YAML::Node& node);
    bool read_mla_sizes(const YAML::Node& node, Mla& mla);
    std::optional<arma::mat> mla_weight(const YAML::Node& weights, const char* key, Layout layout, arma::uword in,
                                        arma::uword out, const std::string& why);
    std::optional<arma::rowvec> mla_gamma(const YAML::Node& weights, const char* key, arma::uword width, bool& given);
    void check_mla_rope(const Model& model);

    // ── loader_settings.cpp ─────────────────────────────────────────────────
    void read_scale(Model& model, const KeyRow& row);
    void read_number(Model& model, const KeyRow& row);
    bool zeros_and_ones(const arma::mat& M, const YAML::Node& node, const std::string& path, const std::string& hint);
    void read_mask(Model& model, const KeyRow& row);
    void read_round(Model& model, const KeyRow& row);
    void read_grading(Model& model, const KeyRow& row);
    void read_grad_output(Model& model, const KeyRow& row);
    void check_memory(const Model& model);
    void read_window(Model& model, const YAML::Node& mask);

    // ── loader_variants.cpp ─────────────────────────────────────────────────
    std::optional<std::int64_t> read_kv_heads(std::int64_t n_heads);
    void check_kv_heads_alone();
    void read_rope(Model& model, const KeyRow& row);
    void read_rope_node(Model& model);
    void read_qk_norm(Model& model, const KeyRow& row);
    bool read_rope_scaling(const YAML::Node& node, const Model& model, Rope& rope);
    void read_alibi(Model& model, const KeyRow& row);
    void read_sinks(Model& model, const KeyRow& row);
};

}  // namespace qkv::loading
