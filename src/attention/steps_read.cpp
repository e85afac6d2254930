// The step table read against an example: how many heads a step has in it,
// the order its steps are computed in, why a step is absent, the rounding
// `round:` asks for, a step computed from the values it reads, and the words
// of a step with its heads' indices in its formulas; and the table's own
// names, kinds and the steps a key feeds. Rows are tokens throughout: X is
// n × d_model and Q = X·W_Q.
#include "attention/steps.hpp"
#include "base/numbers.hpp"

#include "attention/attention.hpp"
#include "attention/engine.hpp"
#include "attention/steps_parts.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace qkv {

// ── the table's names and kinds ───────────────────────────────────────────
std::vector<StepId> step_parameters(StepId id) {
    std::vector<StepId> used;
    const auto k = static_cast<std::size_t>(id);
    if (step_row(id).parameter) {
        return used;
    }
    for (std::size_t j = k; j > 0 && step_row(static_cast<StepId>(j - 1)).parameter; --j) {
        used.insert(used.begin(), static_cast<StepId>(j - 1));
    }
    return used;
}

std::string_view step_name(StepId id) { return step_row(id).name; }

std::string step_text(StepId id) { return std::string(step_name(id)); }

std::ostream& operator<<(std::ostream& out, StepId id) { return out << step_name(id); }

std::optional<StepId> find_step(std::string_view name) {
    for (std::size_t k = 0; k < k_step_count; ++k) {
        const StepRow& row = step_row(static_cast<StepId>(k));
        if (row.name == name) {
            return row.id;
        }
    }
    return std::nullopt;
}

std::vector<std::string> step_names() {
    std::vector<std::string> names;
    for (std::size_t k = 0; k < k_step_count; ++k) {
        const StepRow& row = step_row(static_cast<StepId>(k));
        names.emplace_back(row.name);
    }
    return names;
}

std::string step_name_list() {
    std::string list;
    for (std::size_t k = 0; k < k_step_count; ++k) {
        const StepRow& row = step_row(static_cast<StepId>(k));
        list += (list.empty() ? "" : ", ") + std::string(row.name);
    }
    return list;
}

bool is_per_head(StepId id) {
    const HeadKind heads = step_row(id).heads;
    return heads == HeadKind::query || heads == HeadKind::key_value;
}

bool is_per_head(StepId id, const Dims& dims) {
    return is_per_head(id) || (step_row(id).heads == HeadKind::weight_set && dims.weight_sets);
}

bool is_parameter(StepId id) { return step_row(id).parameter; }

bool is_per_kv_head(StepId id) { return step_row(id).heads == HeadKind::key_value; }

// ── the table read against an example ───────────────────────────────────────
bool step_exists(const Model& model, StepId id) { return step_row(id).exists(model); }

namespace {

// (StepId::a, StepId::b) in a row of keys.def: its steps as a list
template <class... Ids>
std::vector<StepId> step_list(Ids... ids) {
    return {ids...};
}

}  // namespace

std::span<const StepId> key_feeds(Key key) {
    // each key's steps, indexed by Key (a key's other forms feed what its first row does)
    static const std::vector<StepId> feeds[] = {
#define QKV_KEY(name, kind, stage, read, json, sheet, feeds, form, italic, meaning) step_list feeds,
#include "model/keys.def"
    };
    return feeds[static_cast<std::size_t>(key)];
}

StepSet steps_of(const Model& model) {
    StepSet steps;
    for (const StepId id : all_steps()) {
        steps.set(static_cast<std::size_t>(id), step_exists(model, id));
    }
    return steps;
}

int step_heads(const Model& model, StepId id) {
    switch (step_row(id).heads) {
        case HeadKind::none:
            return 0;
        case HeadKind::query:
            return static_cast<int>(model.n_heads());
        case HeadKind::key_value:
            return static_cast<int>(model.n_kv_heads());
        case HeadKind::weight_set:
            return model.weight_form == WeightForm::head_list ? static_cast<int>(model.n_heads()) : 0;
    }
    return 0;
}

bool step_per_head(const Model& model, StepId id) { return step_heads(model, id) > 0; }

namespace {

// Whether a per-head row's step of one head reads another head's step of the
// same kind (qk_norm over: all normalises a token's every head together): the
// steps before it must then be there for every head first.
bool reads_across_heads(const Model& model, const StepRow& row) {
    for (int h = 1; h <= step_heads(model, row.id); ++h) {
        for (const StepKey& input : row.reads(model, h)) {
            if (input.head != 0 && input.head != h && step_row(input.id).heads == row.heads) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace

std::vector<StepKey> step_sequence(const Model& model) {
    std::vector<StepKey> sequence;
    // a run of per-head rows is taken head by head
    std::vector<StepId> run;
    const auto flush = [&]() {
        int heads = 0;
        for (const StepId id : run) {
            heads = std::max(heads, step_heads(model, id));
        }
        for (int h = 1; h <= heads; ++h) {
            for (const StepId id : run) {
                const StepRow& row = step_row(id);
                if (row.heads == HeadKind::key_value) {
                    // a shared key/value head comes with the first query head that reads it; its
                    // gradient, which sums over all of them, with the last
                    const int g = model.kv_head_of(h);
                    const int with = is_gradient(id) ? model.first_query_head(g + 1) - 1 : model.first_query_head(g);
                    if (with == h && (row.has_head == nullptr || row.has_head(model, g))) {
                        sequence.push_back({id, g});
                    }
                } else if (h <= step_heads(model, id) && (row.has_head == nullptr || row.has_head(model, h))) {
                    sequence.push_back({id, h});
                }
            }
        }
        run.clear();
    };
    for (const StepId row_id : all_steps()) {
        const StepRow& row = step_row(row_id);
        if (!row.exists(model)) {
            continue;
        }
        if (step_heads(model, row.id) > 0) {
            if (reads_across_heads(model, row)) {
                flush();
            }
            run.push_back(row.id);
            continue;
        }
        flush();
        sequence.push_back({row.id, 0});
    }
    flush();
    return sequence;
}

std::vector<StepKey> step_inputs(const Model& model, const StepKey& key) { return step_row(key.id).reads(model, key.head); }

std::string step_requirements() {
    // "positional and encoded need positional:, context needs context:, …": the rows that need the same thing
    // together, in the order of their first row
    std::vector<std::pair<std::string_view, std::vector<std::string>>> groups;
    for (const StepId row_id : all_steps()) {
        const StepRow& row = step_row(row_id);
        if (row.needs.empty() || is_gradient(row.id)) {
            continue;
        }
        auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == row.needs; });
        if (group == groups.end()) {
            groups.push_back({row.needs, {}});
            group = std::prev(groups.end());
        }
        group->second.emplace_back(row.name);
    }
    std::string text;
    for (const auto& [needs, names] : groups) {
        std::string list;
        for (std::size_t k = 0; k < names.size(); ++k) {
            list += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
        }
        text += (text.empty() ? "" : ", ") + list + (names.size() > 1 ? " need " : " needs ") + std::string(needs);
    }
    // the backward pass's steps in one clause: each also needs what it is the gradient of
    return text + ", and the grad_ steps need grad_output: or --backward";
}

std::string step_absence(StepId id) {
    const StepRow& row = step_row(id);
    if (row.needs.empty()) {
        return "";
    }
    return "this step exists only when the example sets " + std::string(row.needs) +
           (is_gradient(id) ? " (--backward stands for grad_output: ones)" : "");
}

std::string concat_formula(int heads, bool latex) {
    std::vector<std::string> blocks;
    for (int h = 1; h <= heads; ++h) {
        if (heads > 3 && h == 2) {
            blocks.push_back(latex ? "\\cdots" : "…");
            h = heads - 1;
            continue;
        }
        blocks.push_back(latex ? "Z_{" + std::to_string(h) + "}" : "Z_" + std::to_string(h));
    }
    std::string text;
    for (const auto& block : blocks) {
        text += (text.empty() ? "" : latex ? " & " : " ") + block;
    }
    return latex ? "\\begin{bmatrix} " + text + " \\end{bmatrix}" : "[" + text + "]";
}

std::optional<int> step_rounding(const Model& model, StepId id) {
    if (step_row(id).parameter) {
        return std::nullopt;  // the example's own weights, as written
    }
    if (const auto found = model.round.find(step_text(id)); found != model.round.end()) {
        return found->second;
    }
    if (const auto all = model.round.find("*"); all != model.round.end()) {
        return all->second;
    }
    return std::nullopt;
}

arma::mat compute_step(const Model& model, const StepKey& key, const StepValues& values) {
    const StepRow& row = step_row(key.id);
    std::vector<const arma::mat*> inputs;
    for (const StepKey& input : row.reads(model, key.head)) {
        const auto found = values.find(input);
        if (found == values.end() || !found->second) {
            throw std::logic_error(std::string(row.name) + " reads " + step_text(input.id) + ", which is missing");
        }
        inputs.push_back(found->second.get());
    }
    arma::mat result = row.compute(model, key.head, inputs);
    if (const auto decimals = step_rounding(model, key.id)) {
        result = round_to(result, *decimals);
    }
    return result;
}

// ── elementwise steps ───────────────────────────────────────────────────────
arma::mat elementwise_value(const Model& model, StepId id, int head, const arma::mat& input) {
    arma::mat result = input;
    step_row(id).elementwise->apply(model, head, result.memptr(), result.n_elem);
    return result;
}

arma::mat elementwise_gradient(const Model& model, StepId id, int head, const arma::mat& grad_output,
                               const arma::mat& input) {
    const arma::mat output = elementwise_value(model, id, head, input);
    arma::mat grad = grad_output;
    step_row(id).elementwise->back(model, head, input.memptr(), output.memptr(), grad.memptr(), grad.n_elem);
    return grad;
}

std::string elementwise_formula(std::string_view formula, const std::string& input) {
    std::string text(formula);
    for (std::size_t at = text.find("{}"); at != std::string::npos; at = text.find("{}", at + input.size())) {
        text.replace(at, 2, input);
    }
    return text;
}

std::optional<ElementwiseStep> elementwise_after(const Model& model, StepId id) {
    for (const ElementwiseStep& step : k_elementwise_steps) {
        if (step.id > id && step_exists(model, step.id)) {
            return step;
        }
    }
    return std::nullopt;
}

// ── descriptions ────────────────────────────────────────────────────────────
SourceNames source_names(const Model& model) {
    SourceNames names;
    names.queries = model.P ? "(X + P)" : "X";
    names.keys = model.C ? "C" : names.queries;
    return names;
}

StepContext::StepContext(const Model& model) : m_model(model), m_names(source_names(model)) {}

const std::vector<std::string>& StepContext::key_tokens() const {
    return m_model.cross() ? m_model.context_tokens : m_model.tokens;
}

arma::uword StepContext::blocked_cells() const {
    // counted once, without building the n × m mask
    if (!m_blocked) {
        const MaskView mask = mask_view(m_model);
        arma::uword count = 0;
        for (arma::uword j = 0; j < m_model.m(); ++j) {
            for (arma::uword i = 0; i < m_model.n(); ++i) {
                count += mask.blocked(i, j) ? 1 : 0;
            }
        }
        m_blocked = count;
    }
    return *m_blocked;
}

namespace {

// ── head indices in the formulas ────────────────────────────────────────────
// With several heads, a per-head step's formulas name the head of each
// symbol: "S_2 = Q_2·K_1ᵀ" (query head 2 reads key/value head 1), and a
// symbol that has a subscript already takes the head as a superscript:
// "Q_2 = X·W_Q^(2)", in LaTeX Q_{2} = X W_{Q}^{(2)}. Entry formulas
// (S'[i,j], B_{ij}) keep theirs.

// The symbols of a query head, and those of a key/value head ("d" before a
// symbol, its gradient, is the same head's).
constexpr std::string_view k_query_symbols[] = {"Q", "S", "S'", "A", "Z", "B", "s", "W_Q", "b_Q", "Q_rot", "Q_norm"};
constexpr std::string_view k_key_value_symbols[] = {"K", "V", "W_K", "W_V", "b_K", "b_V", "K_rot", "K_norm"};

// The head a symbol belongs to: query head h, its key/value head g, or 0 for none.
int symbol_head(std::string_view symbol, int h, int g) {
    if (symbol.size() > 1 && symbol.front() == 'd' && symbol_head(symbol.substr(1), h, g) != 0) {
        return symbol_head(symbol.substr(1), h, g);
    }
    for (const auto query : k_query_symbols) {
        if (symbol == query) {
            return h;
        }
    }
    for (const auto key_value : k_key_value_symbols) {
        if (symbol == key_value) {
            return g;
        }
    }
    // an elementwise step of the scores, a query head's like the scores
    for (const ElementwiseStep& step : k_elementwise_steps) {
        if (symbol == step_row(step.id).elementwise->symbol) {
            return h;
        }
    }
    return 0;
}

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_letter_or_digit(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// "Q·Kᵀ" → "Q_2·K_1ᵀ": each symbol (letters, a prime, "_" and a subscript)
// that belongs to a head, unless an entry's [i,j] follows it.
std::string index_text(const std::string& formula, int h, int g) {
    std::string out;
    std::size_t i = 0;
    while (i < formula.size()) {
        // a letter inside a word ("sink's") is no symbol
        const bool in_word = i > 0 && (is_letter_or_digit(formula[i - 1]) ||
                                       (formula[i - 1] == '\'' && i > 1 && is_letter(formula[i - 2]) &&
                                        i > 2 && is_letter(formula[i - 3])));
        if (!is_letter(formula[i]) || in_word) {
            out += formula[i++];
            continue;
        }
        std::size_t end = i;
        while (end < formula.size() && is_letter(formula[end])) {
            ++end;
        }
        std::string base = formula.substr(i, end - i);
        std::string subscript;
        if (end + 1 < formula.size() && formula[end] == '_' && is_letter_or_digit(formula[end + 1])) {
            std::size_t sub_end = end + 1;
            while (sub_end < formula.size() && is_letter_or_digit(formula[sub_end])) {
                ++sub_end;
            }
            subscript = formula.substr(end + 1, sub_end - end - 1);
            end = sub_end;
        }
        const bool prime = end < formula.size() && formula[end] == '\'';
        end += prime ? 1 : 0;
        const std::string symbol = base + (prime ? "'" : "") + (subscript.empty() ? "" : "_" + subscript);
        const int head = symbol_head(symbol, h, g);
        const bool entry = end < formula.size() && formula[end] == '[';
        out += symbol;
        if (head != 0 && !entry) {
            out += subscript.empty() ? "_" + std::to_string(head) : "^(" + std::to_string(head) + ")";
        }
        i = end;
    }
    return out;
}

// The same for LaTeX: "Q K^\top" → "Q_{2} K_{1}^\top", "W_{Q}" → "W_{Q}^{(2)}",
// "K_{\mathrm{rot}}^\top" → "K_{\mathrm{rot}}^{(1)\top}". Command names
// (\frac, \mathrm{…}, \text{…}) are left alone.
std::string index_latex(const std::string& formula, int h, int g) {
    std::string out;
    std::size_t i = 0;
    while (i < formula.size()) {
        if (formula[i] == '\\') {  // a command and, for \mathrm, \text and \operatorname, its argument
            std::size_t end = i + 1;
            while (end < formula.size() && is_letter(formula[end])) {
                ++end;
            }
            const std::string command = formula.substr(i, end - i);
            if ((command == "\\mathrm" || command == "\\text" || command == "\\operatorname") && end < formula.size() &&
                formula[end] == '{') {
                end = formula.find('}', end);
                end = end == std::string::npos ? formula.size() : end + 1;
            }
            out += formula.substr(i, std::max<std::size_t>(end - i, 1));
            i = std::max(end, i + 1);
            continue;
        }
        if (!is_letter(formula[i]) || (i > 0 && is_letter_or_digit(formula[i - 1]))) {
            out += formula[i++];
            continue;
        }
        std::size_t end = i;
        while (end < formula.size() && is_letter(formula[end])) {
            ++end;
        }
        const std::string base = formula.substr(i, end - i);
        const bool prime = end < formula.size() && formula[end] == '\'';
        end += prime ? 1 : 0;
        std::string subscript;       // as written: "_{Q}"
        std::string subscript_name;  // as a symbol names it: "Q", "rot"
        if (end + 1 < formula.size() && formula[end] == '_') {
            if (formula[end + 1] == '{') {
                std::size_t depth = 0;
                std::size_t at = end + 1;
                for (; at < formula.size(); ++at) {
                    depth += formula[at] == '{' ? 1 : 0;
                    if (formula[at] == '}' && --depth == 0) {
                        break;
                    }
                }
                subscript = formula.substr(end, at + 1 - end);
                subscript_name = formula.substr(end + 2, at - end - 2);
                if (subscript_name.rfind("\\mathrm{", 0) == 0 && subscript_name.back() == '}') {
                    subscript_name = subscript_name.substr(8, subscript_name.size() - 9);
                }
                end = at + 1;
            } else if (is_letter_or_digit(formula[end + 1])) {
                subscript = formula.substr(end, 2);
                subscript_name = formula.substr(end + 1, 1);
                end += 2;
            }
        }
        const std::string symbol =
            base + (prime ? "'" : "") + (subscript_name.empty() ? "" : "_" + subscript_name);
        const int head = symbol_head(symbol, h, g);
        out += base + (prime ? "'" : "") + subscript;
        i = end;
        if (head == 0) {
            continue;
        }
        const std::string index = std::to_string(head);
        if (subscript.empty()) {
            out += "_{" + index + "}";
        } else if (formula.compare(i, 6, "^\\top") == 0) {
            out += "^{(" + index + ")\\top}";
            i += 5;
        } else {
            out += "^{(" + index + ")}";
        }
    }
    return out;
}

}  // namespace

Step StepContext::describe(const StepKey& key) const {
    const StepRow& row = step_row(key.id);
    Step step;
    step.id = key.id;
    step.head = key.head;
    step.title = std::string(row.title);
    row.describe(*this, step);
    if (key.head > 0 && m_model.n_heads() > 1) {
        // a key/value step's head is its key/value head; a query step's reads that of its group
        const int kv_head = row.heads == HeadKind::key_value ? key.head : static_cast<int>(m_model.kv_head_of(key.head));
        const int query_head = row.heads == HeadKind::key_value ? 0 : key.head;
        step.formula = index_text(step.formula, query_head, kv_head);
        step.latex = index_latex(step.latex, query_head, kv_head);
    }
    return step;
}

}  // namespace qkv
