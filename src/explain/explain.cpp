// `qkv explain`: one cell's arithmetic written out with the numbers of the
// trace. Every operand is read from the trace (or, for a projection's weights,
// from the model), so an explanation shows exactly what `qkv run` computed;
// only the intermediate terms (products, exponentials, sums) are worked here.
#include "explain/explainer.hpp"

namespace qkv {

namespace explaining {

Explanation Explainer::run() {
    const Step& step = cell_step(m_trace, m_cell);
    m_step = &step;
    m_row = static_cast<arma::uword>(m_cell.row - 1);
    m_whole_row = m_cell.col == 0;
    m_col = m_whole_row ? 0 : static_cast<arma::uword>(m_cell.col - 1);

    Explanation result;
    result.cell = m_cell;
    result.cell.head = step.head;
    if (m_whole_row) {
        const arma::rowvec row = step.values.row(m_row);
        result.values.assign(row.begin(), row.end());
    } else {
        result.values.push_back(step.values(m_row, m_col));
    }
    result.heading_parts = heading(result.values);
    result.heading = joined(result.heading_parts);

    // a gradient's cell is explained by explain_gradient (backward.cpp)
    static constexpr auto k_explain = step_handlers<void (Explainer::*)()>(
        {
            {StepId::positional, &Explainer::positional},
            {StepId::w_query, &Explainer::weight},
            {StepId::w_key, &Explainer::weight},
            {StepId::w_value, &Explainer::weight},
            {StepId::w_output, &Explainer::weight},
            {StepId::w_q_a, &Explainer::weight},
            {StepId::w_kv_a, &Explainer::weight},
            {StepId::b_query, &Explainer::bias},
            {StepId::b_key, &Explainer::bias},
            {StepId::b_value, &Explainer::bias},
            {StepId::b_output, &Explainer::bias},
            {StepId::encoded, &Explainer::encoded},
            {StepId::q_latent, &Explainer::latent},
            {StepId::kv_latent, &Explainer::latent},
            {StepId::rope_keys, &Explainer::latent},
            {StepId::normed_q_latent, &Explainer::normed_latent},
            {StepId::normed_kv_latent, &Explainer::normed_latent},
            {StepId::queries, &Explainer::projection},
            {StepId::keys, &Explainer::keys},
            {StepId::values, &Explainer::projection},
            {StepId::normed_queries, &Explainer::normed},
            {StepId::normed_keys, &Explainer::normed},
            {StepId::rotated_queries, &Explainer::rotated},
            {StepId::rotated_keys, &Explainer::rotated},
            {StepId::scores, &Explainer::scores},
            {StepId::scaled_scores, &Explainer::scaled_scores},
            {StepId::position_bias, &Explainer::position_bias},
            {StepId::biased_scores, &Explainer::biased_scores},
            {StepId::masked_scores, &Explainer::masked_scores},
            {StepId::weights, &Explainer::weights},
            {StepId::head_output, &Explainer::head_output},
            {StepId::concat, &Explainer::concat},
            {StepId::output, &Explainer::output},
        },
        {.given = &Explainer::given, .gradient = &Explainer::explained_elsewhere,
         .elementwise = &Explainer::elementwise});
    (this->*k_explain[step_index(step.id)])();
    result.lines = std::move(m_lines);
    return result;
}

// "scores[1,2] = 4    (Scores, row 1 "Input 1", column 2 "Input 2")", the
// example's labels marked as such.
std::vector<HeadingPart> Explainer::heading(const std::vector<double>& values) const {
    std::vector<HeadingPart> parts;
    parts.push_back({symbols(name() + " = " + (m_whole_row ? m_num.vector(values) : m_num(values[0])) + "    (" +
                             m_step->title + ", row " + std::to_string(m_cell.row) + " \""),
                     false});
    parts.push_back({symbols(m_step->row_labels[m_row]), true});
    if (m_whole_row) {
        parts.push_back({"\")", false});
        return parts;
    }
    parts.push_back({"\", column " + std::to_string(m_cell.col) + " \"", false});
    parts.push_back({symbols(m_step->col_labels[m_col]), true});
    parts.push_back({"\")", false});
    return parts;
}

void Explainer::given() {
    const bool inputs = m_step->id == StepId::inputs;
    const std::string matrix = inputs ? "X" : "C";
    if (inputs) {
        line("given by the example: row " + std::to_string(m_row + 1) + " of the inputs X is token \"" +
             m_step->row_labels[m_row] + "\"'s vector");
    } else {
        line("given by the example: row " + std::to_string(m_row + 1) + " of the context C is context token \"" +
             m_step->row_labels[m_row] + "\"'s vector");
    }
    line("nothing is computed for " + matrix + "; every later step starts from it");
}

// What a weight's numbers make: "query" for W_Q and b_Q, and so on.
std::string Explainer::made() const {
    const StepId id = m_step->id;
    if (id == StepId::w_query || id == StepId::b_query) {
        return "query";
    }
    if (id == StepId::w_key || id == StepId::b_key) {
        return "key";
    }
    if (id == StepId::w_q_a) {
        return "query latent";
    }
    if (id == StepId::w_kv_a) {
        // its first r columns make the latent, its last d_r the rope key (in PyTorch's layout, its rows)
        const arma::uword out = m_model.layout == Layout::pytorch ? m_row : m_col;
        return m_whole_row || out < m_model.mla->kv_rank ? "latent" : "rope key";
    }
    return id == StepId::w_value || id == StepId::b_value ? "value" : "output";
}

// A weight of the example, W[r, c]: from number r of the row it reads to
// number c of what it makes (the other way round in PyTorch's layout).
void Explainer::weight() {
    const std::string name = symbols(m_step->formula);
    const bool output = m_step->id == StepId::w_output;
    // with mla, the keys and values (and the queries, with q_rank) read a token's latent
    const bool from_latent = m_model.mla && (m_step->id == StepId::w_key || m_step->id == StepId::w_value ||
                                             (m_step->id == StepId::w_query && m_model.mla->q_rank));
    const std::string source = output       ? (m_model.n_heads() > 1 ? "the concatenated heads' row" : "Z's row")
                               : from_latent ? (m_step->id == StepId::w_query ? "a token's normed query latent"
                                                                              : "a token's normed latent")
                                             : "a token's row";
    const bool pytorch = m_model.layout == Layout::pytorch;
    // kv_a_proj_with_mqa's rope key is counted from its own first number
    const arma::uword skip = m_step->id == StepId::w_kv_a && made() == "rope key" ? m_model.mla->kv_rank : 0;
    const std::string r = std::to_string(m_row + 1 - (pytorch ? skip : 0));
    const std::string c = std::to_string(m_col + 1 - (pytorch ? 0 : skip));
    if (m_whole_row) {
        line("given by the example: row " + std::to_string(m_row + 1) + " of " + name + ", as the file writes it");
    } else if (m_model.layout == Layout::pytorch) {
        line("given by the example, in PyTorch's layout (out × in): the weight from number " + c + " of " + source +
             " to number " + r + " of its " + made());
    } else {
        line("given by the example: the weight from number " + r + " of " + source + " to number " + c + " of its " +
             made());
    }
    line("nothing is computed for " + name + "; it is used as written");
}

void Explainer::bias() {
    const std::string name = symbols(m_step->formula);
    line("given by the example: " + name + (m_whole_row ? " is" : "[" + std::to_string(m_col + 1) + "] is") +
         " added to every token's " + made() + (m_whole_row ? "" : ", to its number " + std::to_string(m_col + 1)));
    line("nothing is computed for " + name + "; it is used as written");
}

void Explainer::positional() {
    if (!m_model.P_sinusoidal) {
        line("given by the example (positional:): the vector added at position " + std::to_string(m_row + 1));
        return;
    }
    const double d_model = static_cast<double>(m_model.d_model());
    const auto p = static_cast<double>(m_row);
    line("sinusoidal: P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(p / 10000^(2i/d_model)), "
         "positions p from 0, d_model = " + m_num(d_model));
    for (const arma::uword c : columns()) {
        const auto two_i = static_cast<double>(c - c % 2);
        const double angle = p / std::pow(10000.0, two_i / d_model);
        const std::string function = c % 2 == 0 ? "sin" : "cos";
        line(cell_name(StepId::positional, m_row, static_cast<long>(c), 0) + " = " + function + "(" + m_num(p) +
             " / 10000^(" + m_num(two_i) + "/" + m_num(d_model) + ")) = " + function + "(" + m_num(angle) +
             ") = " + result_of(c % 2 == 0 ? std::sin(angle) : std::cos(angle), m_step->values(m_row, c)));
    }
}

void Explainer::encoded() {
    const Step& inputs = step_of(StepId::inputs, 0);
    const Step& positions = step_of(StepId::positional, 0);
    for (const arma::uword c : columns()) {
        const double x = inputs.values(m_row, c);
        const double p = positions.values(m_row, c);
        line(cell_name(StepId::encoded, m_row, static_cast<long>(c), 0) + " = " +
             cell_name(StepId::inputs, m_row, static_cast<long>(c), 0) + " + " +
             cell_name(StepId::positional, m_row, static_cast<long>(c), 0) + " = " + m_num(x) + " + " + m_num.factor(p) +
             " = " + result_of(x + p, m_step->values(m_row, c)));
    }
}

void Explainer::projection() {
    const bool kv = is_per_kv_head(m_step->id);
    const HeadWeights& weights =
        kv ? m_model.kv_weights(m_step->head) : m_model.heads[static_cast<std::size_t>(m_step->head - 1)];
    // what this projection reads: X, X + P, or the context C
    const StepKey read = step_inputs(m_model, {m_step->id, m_step->head}).front();
    const Step& source = step_of(read.id, read.head);
    const std::string source_name = source_words(read.id);
    const std::string letter = m_step->id == StepId::queries ? "Q" : m_step->id == StepId::keys ? "K" : "V";
    const arma::mat& W = letter == "Q" ? weights.W_Q : letter == "K" ? weights.W_K : weights.W_V;
    const auto& b = letter == "Q" ? weights.b_Q : letter == "K" ? weights.b_K : weights.b_V;
    // with mla, a head's blocks of the up-projections: W_UQ (or q_proj's W_Q), W_UK, W_UV
    std::string w_name = "W_" + (m_model.mla && (letter != "Q" || m_model.mla->q_rank) ? "U" + letter : letter);
    if (m_trace.dims.heads > 1) {
        const bool shared = kv && m_model.n_kv_heads() != m_model.n_heads();
        w_name += std::string(shared ? " (key/value head " : " (head ") + std::to_string(m_step->head) + ")";
    }
    project_row(source, source_name, W, w_name, b, "b_" + letter);
}

// what a projection reads, in words
std::string Explainer::source_words(StepId id) {
    switch (id) {
        case StepId::context:
            return "the context C";
        case StepId::encoded:
            return "X + P";
        case StepId::normed_q_latent:
            return "the normed query latent C_Q,norm";
        case StepId::normed_kv_latent:
            return "the normed latent C";
        default:
            return "X";
    }
}

// mla: the query latent, the key/value latent and the rope keys, each x times its columns of a weight
void Explainer::latent() {
    const Mla& mla = *m_model.mla;
    const StepKey read = step_inputs(m_model, {m_step->id, 0}).front();
    const Step& source = step_of(read.id, read.head);
    if (m_step->id == StepId::q_latent) {
        project_row(source, source_words(read.id), *mla.W_qa, "W_DQ (q_a_proj)", std::nullopt, "");
    } else if (m_step->id == StepId::kv_latent) {
        project_row(source, source_words(read.id), mla.W_kva.head_cols(mla.kv_rank),
                    "W_DKV (the first r columns of kv_a_proj_with_mqa)", std::nullopt, "");
    } else {
        project_row(source, source_words(read.id), mla.W_kva.tail_cols(mla.rope_dim),
                    "W_KR (the last d_r columns of kv_a_proj_with_mqa)", std::nullopt, "");
    }
}

// mla: a latent row divided by its root mean square, times γ
void Explainer::normed_latent() {
    const Mla& mla = *m_model.mla;
    const bool queries = m_step->id == StepId::normed_q_latent;
    const StepKey read = step_inputs(m_model, {m_step->id, 0}).front();
    const Step& source = step_of(read.id, read.head);
    if (!queries) {
        const std::string token = std::to_string(m_row + 1);
        line("run --decode caches row " + token + " with rope_keys[" + token + "], turned at position " +
             std::to_string(m_row));
    }
    norm_row(source.values.row(m_row), cell_name(read.id, m_row, -1, 0), "c", m_model.rms_eps(),
             queries ? mla.q_norm : mla.kv_norm, 0.0, 0, "");
}

// mla: a head's key is [c·W_UK, k_rope]; its rope part is the rope key every head shares
void Explainer::keys() {
    if (!m_model.mla) {
        projection();
        return;
    }
    const int g = m_step->head;
    const std::vector<StepKey> reads = step_inputs(m_model, {m_step->id, g});
    const Step& latent = step_of(reads[0].id, reads[0].head);
    const Step& rope = step_of(reads[1].id, reads[1].head);
    const arma::uword d_n = m_model.mla->nope_dim;
    const arma::mat& W = m_model.kv_weights(g).W_K;
    const arma::rowvec c = latent.values.row(m_row);
    const bool pytorch = m_model.layout == Layout::pytorch;
    const std::string w_name = "W_UK" + (m_trace.dims.heads > 1 ? " (head " + std::to_string(g) + ")" : "");
    bool shown = false;
    for (const arma::uword j : columns()) {
        const std::string here = cell_name(m_step->id, m_row, static_cast<long>(j), g);
        if (j >= d_n) {
            const auto r = static_cast<long>(j - d_n);
            line("element " + std::to_string(j + 1) + " is past d_n = " + std::to_string(d_n) +
                 ": it is the rope key every head shares");
            line(here + " = " + cell_name(StepId::rope_keys, m_row, r, 0) + " = " +
                 result_of(rope.values(m_row, j - d_n), m_step->values(m_row, j)));
            continue;
        }
        if (!shown) {
            line("c = " + row_name(latent, m_row) + " = " + m_num.vector(c) + "    (row " +
                 std::to_string(m_row + 1) + " of the normed latent C)");
            shown = true;
        }
        const arma::rowvec w = W.col(j).t();
        line("w = " + (pytorch ? "row " + std::to_string(j + 1) + " of " + w_name + " as written"
                               : "column " + std::to_string(j + 1) + " of " + w_name) +
             " = " + m_num.vector(w));
        line(here + " = c·w = " + m_num.dot_terms(c, w) + " = " + result_of(arma::dot(c, w), m_step->values(m_row, j)));
    }
}

// A row x over its root mean square: r = 1/√(mean(x²) + eps), then each
// cell (element first + c of x) times r and its gain, offset + γ.
void Explainer::norm_row(const arma::rowvec& x, const std::string& parts, const std::string& letter, double eps,
              const arma::rowvec& gamma, double offset, arma::uword first, const std::string& note) {
    line(letter + " = " + parts + " = " + m_num.vector(x) + note);
    std::string squares;
    for (arma::uword k = 0; k < x.n_elem; ++k) {
        squares += (k == 0 ? "" : " + ") + m_num.factor(x(k)) + "²";
    }
    const double width = static_cast<double>(x.n_elem);
    const double mean = arma::dot(x, x) / width;
    const double r = 1.0 / std::sqrt(mean + eps);
    line("mean(" + letter + "²) = (" + squares + ") / " + m_num(width) + " = " + m_num(mean));
    line("r = 1/√(mean(" + letter + "²) + eps) = 1/√(" + m_num(mean) + " + " + readable(eps) + ") = " + m_num(r));
    for (const arma::uword c : columns()) {
        const arma::uword k = first + c;
        const double g = gamma(k);
        const std::string gamma_name = "γ[" + std::to_string(k + 1) + "]";
        const std::string gain = offset != 0.0 ? "(1 + " + gamma_name + ")" : gamma_name;
        const std::string gain_number = offset != 0.0 ? "(1 + " + m_num(g) + ")" : m_num.factor(g);
        line(cell_name(m_step->id, m_row, static_cast<long>(c), m_step->head) + " = " + letter + "[" +
             std::to_string(k + 1) + "]·r·" + gain + " = " + m_num(x(k)) + " · " + m_num.factor(r) + " · " +
             gain_number + " = " + result_of(x(k) * r * (offset + g), m_step->values(m_row, c)));
    }
}

// QK-norm: the row divided by its root mean square, times offset + γ
void Explainer::normed() {
    const QkNorm& norm = *m_model.qk_norm;
    const bool queries = m_step->id == StepId::normed_queries;
    const int h = m_step->head;
    const std::string letter = queries ? "q" : "k";
    // the numbers the mean runs over: the head's row, or over: all the token's every head
    arma::rowvec x;
    std::string parts;
    for (const StepKey& read : step_inputs(m_model, {m_step->id, h})) {
        const Step& source = step_of(read.id, read.head);
        x = arma::join_rows(x, arma::rowvec(source.values.row(m_row)));
        parts += (parts.empty() ? "" : ", ") + cell_name(read.id, m_row, -1, read.head);
    }
    // over: all, head h's elements are the h-th run of d_k in the whole row
    norm_row(x, parts, letter, m_model.qk_norm_eps(), queries ? norm.query : norm.key, norm.offset,
             norm.over_all ? static_cast<arma::uword>(h - 1) * m_model.d_k() : 0,
             norm.over_all ? "    (over: all: the token's whole projection, every head)" : "");
}

// RoPE: each element is one of a pair, and the pair turns by p·θ_k
void Explainer::rotated() {
    const Rope& rope = *m_model.rope;
    const StepKey read = step_inputs(m_model, {m_step->id, m_step->head}).front();
    const Step& source = step_of(read.id, read.head);
    const arma::uword d = m_step->values.n_cols;
    const auto p = static_cast<double>(m_row);
    const bool half = rope.style == RopeStyle::half;
    // the convention first: the last line is the cell's value
    const std::string half_width = rope.skip > 0 ? "d_r/2" : rope.rotated(d) == d ? "d_k/2" : "d_rot/2";
    if (half) {
        line("style half (Hugging Face's rotate_half): element j pairs with element j + " + half_width);
        line("interleaved (RoFormer, Meta's Llama code) would pair 2j − 1 with 2j instead;");
    } else {
        line("style interleaved (RoFormer, Meta's Llama code): element 2j − 1 pairs with element 2j");
        line("half (Hugging Face's rotate_half) would pair j with j + " + half_width + " instead;");
    }
    line("permuting W_Q's and W_K's output columns turns one style into the other");
    const arma::uword d_rot = rope.rotated(d);
    if (const std::string factor = explaining::attention_factor_text(m_model, m_num); !factor.empty()) {
        line(factor);
    }
    line("position p = " + m_num(p) + " (row " + std::to_string(m_row + 1) + ", counted from 0); θ_k = " +
         m_num(rope.base) +
         (rope.skip > 0 ? "^(−2k/d_r), d_r = " + std::to_string(d_rot) + ", the last elements of d_k = " +
                              std::to_string(d) + " (mla's rope part)"
          : d_rot == d ? "^(−2k/d_k), d_k = " + std::to_string(d)
                     : "^(−2k/d_rot), d_rot = " + std::to_string(d_rot) + " of d_k = " + std::to_string(d) +
                           " (partial_rotary_factor " + readable(rope.partial_rotary_factor) + ")"));
    for (const arma::uword c : columns()) {
        const std::string here = cell_name(m_step->id, m_row, static_cast<long>(c), m_step->head);
        if (rope.skip > 0 ? c < rope.skip : c >= d_rot) {
            // outside the rotated part: the element passes unchanged
            const std::string name = cell_name(read.id, m_row, static_cast<long>(c), read.head);
            line(rope.skip > 0 ? "element " + std::to_string(c + 1) + " is in the first d_n = " +
                                     std::to_string(rope.skip) + ", which do not turn: it passes unchanged"
                               : "element " + std::to_string(c + 1) + " is past the first " +
                                     std::to_string(d_rot) + ", which turn: it passes unchanged");
            line(here + " = " + name + " = " + result_of(source.values(m_row, c), m_step->values(m_row, c)));
            continue;
        }
        const arma::uword k = half ? (c - rope.skip) % (d_rot / 2) : (c - rope.skip) / 2;
        const auto [a, b] = rope_pair(rope, k, d);
        const double theta = rope_frequency(rope, k, d, m_model.n());
        const double angle = p * theta;
        const double factor = rope_attention_factor(rope);
        const double cosine = factor * std::cos(angle);
        const double sine = factor * std::sin(angle);
        line("pair k = " + std::to_string(k) + ": elements " + std::to_string(a + 1) + " and " +
             std::to_string(b + 1) + "; " + explaining::frequency_text(m_model, k, d, m_num) + ", angle = " +
             m_num(p) + " · " + m_num(theta) + " = " + m_num(angle) + ", cos = " + m_num(cosine) +
             ", sin = " + m_num(sine));
        const double x_a = source.values(m_row, a);
        const double x_b = source.values(m_row, b);
        const std::string name_a = cell_name(read.id, m_row, static_cast<long>(a), read.head);
        const std::string name_b = cell_name(read.id, m_row, static_cast<long>(b), read.head);
        if (c == a) {
            line(here + " = " + name_a + "·cos − " + name_b + "·sin = " + m_num(x_a) + " · " + m_num.factor(cosine) +
                 " − " + m_num.factor(x_b) + " · " + m_num.factor(sine) + " = " +
                 result_of(x_a * cosine - x_b * sine, m_step->values(m_row, c)));
        } else {
            line(here + " = " + name_b + "·cos + " + name_a + "·sin = " + m_num(x_b) + " · " + m_num.factor(cosine) +
                 " + " + m_num.factor(x_a) + " · " + m_num.factor(sine) + " = " +
                 result_of(x_b * cosine + x_a * sine, m_step->values(m_row, c)));
        }
    }
}

}  // namespace explaining

namespace {

std::string symbols(const std::string& text, const RenderOptions& options) {
    return options.ascii ? to_ascii(text) : text;
}

}  // namespace

Explanation explain_cell(const Model& model, const Trace& trace, const CellRef& cell, const RenderOptions& options,
                         arma::uword block_size) {
    Explanation result = explaining::Explainer(model, trace, cell, options).run();
    if (is_gradient(cell.step)) {
        explaining::explain_gradient(model, trace, result, options);
    }
    if (block_size > 0 && has_online_form(cell.step)) {
        explaining::add_online_softmax(model, trace, result, options, block_size);
    }
    for (auto& line : result.lines) {
        line = symbols(line, options);
    }
    result.latex = cell_step(trace, cell).latex;
    return result;
}

}  // namespace qkv
