// The example loader's settings of the computation (see loader_parts.hpp):
// the scale, the mask and the padding, the hand rounding of round:, and the
// memory the computation will need, held against --max-memory.
#include "io/loader_parts.hpp"
#include "base/numbers.hpp"

#include "attention/engine.hpp"
#include "attention/steps.hpp"
#include "model/keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace qkv::loading {

void ModelLoader::read_scale(Model& model, const KeyRow&) {
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

// A number key of keys.def (softcap: c, …): a positive number.
void ModelLoader::read_number(Model& model, const KeyRow& row) {
    const YAML::Node node = root()[std::string(row.name)];
    if (!node) {
        return;
    }
    const auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
    const std::optional<std::string> problem = value ? number_key_problem(*value) : std::nullopt;
    if (!value || problem) {
        m_yaml.error(node, std::string(row.name) + " is " + m_yaml.describe(node) +
                               "; expected a positive number from 1e-30 to 1e30",
                     std::string(row.number->help));
        return;
    }
    model.*row.number->member = *value;
}

// Whether every entry of M is 0 or 1; otherwise an error naming the first other value and its cell.
bool ModelLoader::zeros_and_ones(const arma::mat& M, const YAML::Node& node, const std::string& path,
                                 const std::string& hint) {
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
            m_yaml.error(where, path + cell + " is " + shortest(value) + "; expected 0 or 1", hint);
            return false;
        }
    }
    return true;
}

namespace {

// The first cell of a list, or of a list of lists, written true or false (as
// a boolean mask prints): a mask of them gets one error, not one a cell.
std::optional<YAML::Node> first_boolean(const YAML::Node& node) {
    const auto boolean = [](const YAML::Node& cell) {
        static const std::vector<std::string> k_words = {"true", "True", "TRUE", "false", "False", "FALSE"};
        return cell.IsScalar() && cell.Tag() != "!" &&
               std::find(k_words.begin(), k_words.end(), cell.Scalar()) != k_words.end();
    };
    if (!node.IsSequence()) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < node.size() && i < k_max_dimension; ++i) {
        const YAML::Node row = node[i];
        if (boolean(row)) {
            return row;
        }
        for (std::size_t j = 0; row.IsSequence() && j < row.size() && j < k_max_dimension; ++j) {
            if (boolean(row[j])) {
                return row[j];
            }
        }
    }
    return std::nullopt;
}

// torch.triu(torch.ones(n, n), diagonal=1): PyTorch's causal mask, whose 1s
// (above the diagonal) are the blocked keys.
bool pytorch_causal(const arma::mat& M) {
    if (M.n_rows != M.n_cols || M.n_rows < 2) {
        return false;
    }
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        for (arma::uword j = 0; j < M.n_cols; ++j) {
            if (M(i, j) != (j > i ? 1.0 : 0.0)) {
                return false;
            }
        }
    }
    return true;
}

}  // namespace

void ModelLoader::read_mask(Model& model, const KeyRow&) {
    const YAML::Node mask = root()["mask"];
    const YAML::Node padding = root()["padding"];
    const arma::uword n = model.n();
    const arma::uword m = model.m();
    bool readable = true;  // both parts valid, so that blocked rows can be checked
    if (mask) {
        if (mask.IsScalar() && mask.Scalar() == "causal") {
            model.mask_kind = MaskKind::causal;
        } else if (mask.IsScalar()) {
            m_yaml.error(mask, "mask is \"" + mask.Scalar() + "\"; expected causal, {window: W} or a 0/1 matrix",
                         "write mask: causal, mask: {window: 3}, or an n × m matrix with 1 = may attend and 0 = "
                         "blocked");
            readable = false;
        } else if (mask.IsMap()) {
            read_window(model, mask);
            readable = model.mask_kind == MaskKind::window;
        } else if (const auto cell = first_boolean(mask)) {
            m_yaml.error(*cell, "mask holds true and false; expected 1 (may attend) and 0 (blocked)",
                         "PyTorch's boolean masks mean either: True = blocked in nn.MultiheadAttention and "
                         "masked_fill, True = may attend in scaled_dot_product_attention; or write mask: causal");
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
            } else if (pytorch_causal(*M)) {
                // read as qkv reads a mask, each query would see only the keys after it
                m_yaml.error(mask, "mask is torch.triu(ones, diagonal=1), PyTorch's causal mask, in which 1 = "
                                   "blocked; expected qkv's sense, in which 1 = may attend",
                             "write mask: causal (or 1 − mask: ones on and below the diagonal)");
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
        const auto cell = first_boolean(padding);
        auto p = cell ? std::nullopt : m_yaml.vector(padding, "padding");
        if (cell) {
            m_yaml.error(*cell, "padding holds true and false; expected 1 (a real token) and 0 (padding)",
                         "PyTorch's key_padding_mask is the opposite, True = padding: write 0 where it has True");
            readable = false;
        } else if (!p) {
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
    if (!model.masked() || model.sinks) {
        // with a sink, a row whose keys are all blocked is defined (as in
        // gpt-oss): all of its weight goes to the sink and its output is 0
        return;
    }
    // row by row, without building the n × m mask: a query's own position
    // first, the key a causal mask or a window is surest to let through
    const auto attends_somewhere = [&](arma::uword i) {
        if (i < m && model.allows(i, i)) {
            return true;
        }
        for (arma::uword j = 0; j < m; ++j) {
            if (model.allows(i, j)) {
                return true;
            }
        }
        return false;
    };
    const YAML::Node where = mask ? mask : padding;
    std::vector<arma::uword> blocked;
    for (arma::uword i = 0; i < n; ++i) {
        if (!attends_somewhere(i)) {
            blocked.push_back(i);
        }
    }
    // a matrix in PyTorch's sense (1 = blocked, 0 on the diagonal: each
    // token may see itself) blocks a row where its opposite blocks none:
    // one error that says so, not one a row
    const auto opposite_attends = [&](arma::uword i) {
        for (arma::uword j = 0; j < m; ++j) {
            if (model.mask(i, j) == 0.0 && (!model.padding || (*model.padding)(j) != 0.0)) {
                return true;
            }
        }
        return false;
    };
    if (!blocked.empty() && model.mask_kind == MaskKind::matrix) {
        bool opposite = true;
        for (arma::uword i = 0; i < std::min(n, m) && opposite; ++i) {
            opposite = model.mask(i, i) == 0.0;
        }
        for (arma::uword i = 0; i < n && opposite; ++i) {
            opposite = opposite_attends(i);
        }
        if (opposite) {
            const arma::uword i = blocked.front();
            const std::string label = i < model.tokens.size() ? " (" + model.tokens[i] + ")" : "";
            m_yaml.error(mask, "mask blocks every key of query " + std::to_string(i + 1) + label +
                                   ", as a mask in PyTorch's sense would (1 = blocked); expected qkv's sense, "
                                   "1 = may attend and 0 = blocked",
                         "write 1 − mask (each 1 as 0, each 0 as 1): PyTorch's boolean attn_mask is the opposite "
                         "of qkv's");
            return;
        }
    }
    for (const arma::uword i : blocked) {
        const std::string label = i < model.tokens.size() ? " (" + model.tokens[i] + ")" : "";
        m_yaml.error(where, "query " + std::to_string(i + 1) + label +
                                " may attend to no key: the mask and padding block its whole row",
                     "softmax of a row of −∞ is 0/0; let every query attend to at least one key, or give each head a "
                     "sink (sinks:), which then takes the whole row");
    }
}

// mask: {window: W}: causal, and at most W keys, the query's own included.
void ModelLoader::read_window(Model& model, const YAML::Node& mask) {
    m_yaml.check_keys(mask, "mask", {"window"});
    const YAML::Node window = mask["window"];
    if (!window) {
        if (!m_yaml.has_misspelling_of(mask, "window", {"window"})) {
            m_yaml.error(mask, "mask.window is missing", "write mask: {window: W}, W the keys each query sees");
        }
        return;
    }
    if (auto W = m_yaml.integer(window, "mask.window", 1, static_cast<long>(k_max_dimension),
                                "W counts the keys each query sees, itself included: 1 lets a token see only itself")) {
        model.mask_kind = MaskKind::window;
        model.window = static_cast<arma::uword>(*W);
    }
}

// grad_output: ones | MATRIX (n × d_out): the gradient the backward pass starts from.
void ModelLoader::read_grad_output(Model& model, const KeyRow&) {
    const YAML::Node node = root()["grad_output"];
    if (!node) {
        if (m_options.backward) {
            model.grad_output = arma::mat(model.n(), model.d_out(), arma::fill::ones);
            model.grad_output_ones = true;
        }
        return;
    }
    const std::string hint = "grad_output is ∂L/∂O, one row per token and one column per output value; write "
                             "grad_output: ones for L = the sum of every output value";
    if (node.IsNull()) {
        m_yaml.error(node, "grad_output is empty; expected ones or a matrix", hint);
        return;
    }
    if (node.IsScalar()) {
        if (node.Scalar() != "ones") {
            m_yaml.error(node, "grad_output is \"" + node.Scalar() + "\"; expected ones or a matrix", hint);
            return;
        }
        model.grad_output = arma::mat(model.n(), model.d_out(), arma::fill::ones);
        model.grad_output_ones = true;
        return;
    }
    auto dO = matrix(node, "grad_output");
    if (!dO) {
        return;
    }
    if (dO->n_rows != model.n() || dO->n_cols != model.d_out()) {
        m_yaml.error(node, "grad_output is " + shape_text(*dO) + "; expected " + std::to_string(model.n()) + " × " +
                               std::to_string(model.d_out()) + " (n × d_out, as the output)",
                     hint);
        return;
    }
    model.grad_output = std::move(*dO);
}

std::optional<StepId> read_step_key(YamlReader& yaml, const YAML::Node& key, const std::string& path,
                                    const Model& model) {
    const std::string step = key_text(key);
    const auto id = find_step(step);
    if (!id) {
        yaml.error(key, path + "." + step + " is not a step id",
                   did_you_mean(step, step_names()) + "valid step ids: " + step_name_list());
        return std::nullopt;
    }
    if (step_row(*id).parameter) {
        yaml.error(key, path + "." + step + " is one of the example's weights, given and not worked out; expected a "
                   "step that is computed",
                   path + " is for the steps a learner works out, from queries on; the weights are used as written");
        return std::nullopt;
    }
    if (!step_exists(model, *id)) {
        yaml.error(key, path + "." + step + ": this example has no " + step + " step", step_absence(*id));
        return std::nullopt;
    }
    return id;
}

void ModelLoader::read_round(Model& model, const KeyRow&) {
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
        if (!read_step_key(m_yaml, entry.first, "round", model)) {
            continue;
        }
        if (auto decimals = m_yaml.integer(entry.second, "round." + step, 0, 15)) {
            model.round[step] = static_cast<int>(*decimals);
        }
    }
}

void ModelLoader::check_memory(const Model& model) {
    if (model.heads.empty() || model.X.is_empty()) {
        return;
    }
    // only the n × m matrices of the steps that will be kept count in full
    std::uint64_t square_steps = 0;
    for (const StepId id : all_steps()) {
        const auto& kept = m_options.kept_steps;
        const bool keeps = kept.empty() || std::find(kept.begin(), kept.end(), id) != kept.end();
        square_steps += step_row(id).square && keeps && step_exists(model, id) ? 1 : 0;
    }
    const std::uint64_t kept_heads = m_options.kept_head > 0 ? 1 : model.n_heads();
    const std::uint64_t bytes = estimate_memory(model, square_steps, kept_heads);
    if (bytes > m_options.max_memory) {
        const std::string what = "the computation needs about " + size_text(bytes) + "; the limit is " +
                                 size_text(m_options.max_memory);
        m_yaml.error(root()["inputs"] ? root()["inputs"] : m_root, what,
                     "use fewer tokens or narrower weights, or raise the limit with --max-memory");
    }
    // the process's own limit (ulimit -v, ulimit -d), with what it has mapped already
    if (const std::uint64_t room = memory_room(); bytes > room) {
        const std::string what = "the computation needs about " + size_text(bytes) +
                                 "; the memory limit of this process leaves " + size_text(room);
        m_yaml.error(root()["inputs"] ? root()["inputs"] : m_root, what,
                     "use fewer tokens or narrower weights, or raise the limit (ulimit -v, ulimit -d)");
    }
}

}  // namespace qkv::loading
