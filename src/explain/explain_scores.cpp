// `qkv explain`, continued (explainer.hpp): the cells from the scores on: a
// score as q·k (or from mla's latent with W_UK absorbed), its scaling, soft
// cap, position bias and mask, a weight as exp(s − max) over its row's sum,
// and an output row as the weighted value rows, then concat and W_O; and
// project_row, a row of any projection, which explain.cpp's projections use
// too, so that explain.cpp calls this file and this file calls nothing of its.
#include "explain/explainer.hpp"

namespace qkv::explaining {

// x (a source row) times each column of W, plus the bias: queries, keys,
// values and the output projection.
void Explainer::project_row(const Step& source, const std::string& source_name, const arma::mat& W, const std::string& w_name,
                 const std::optional<arma::rowvec>& b, const std::string& b_name) {
    const arma::rowvec x = source.values.row(m_row);
    line("x = " + row_name(source, m_row) + " = " + m_num.vector(x) + "    (row " + std::to_string(m_row + 1) +
         " of " + source_name + ")");
    const bool pytorch = m_model.layout == Layout::pytorch;
    for (const arma::uword j : columns()) {
        const arma::rowvec w = W.col(j).t();
        const std::string w_part = pytorch ? "row " + std::to_string(j + 1) + " of " + w_name + " as written"
                                           : "column " + std::to_string(j + 1) + " of " + w_name;
        line("w = " + w_part + " = " + m_num.vector(w));
        double computed = arma::dot(x, w);
        std::string working = "x·w = " + m_num.dot_terms(x, w);
        if (b) {
            const std::string bias = m_num((*b)(j));
            working = "x·w + " + b_name + "[" + std::to_string(j + 1) + "] = " + m_num.dot_terms(x, w) +
                      (bias[0] == '-' ? " − " + bias.substr(1) : " + " + bias);
            computed += (*b)(j);
        }
        line(cell_name(m_step->id, m_row, static_cast<long>(j), m_step->head) + " = " + working + " = " +
             result_of(computed, m_step->values(m_row, j)));
    }
    if (pytorch) {
        line("(layout: pytorch: the file's " + w_name + " is out × in, so x meets its rows: x·" + w_name + "ᵀ)");
    }
}

void Explainer::scores() {
    const int h = m_step->head;
    const std::vector<StepKey> reads = step_inputs(m_model, {StepId::scores, h});
    const Step& queries = step_of(reads[0].id, reads[0].head);
    const Step& keys = step_of(reads[1].id, reads[1].head);
    if (m_model.n_kv_heads() != m_model.n_heads()) {
        line("query head " + std::to_string(h) + " reads key/value head " + std::to_string(reads[1].head) +
             ", which it shares with other query heads");
    }
    const arma::rowvec q = queries.values.row(m_row);
    line("q = " + row_name(queries, m_row) + " = " + m_num.vector(q) + "    (query " +
         std::to_string(m_row + 1) + ")");
    for (const arma::uword j : columns()) {
        const arma::rowvec k = keys.values.row(j);
        line("k = " + row_name(keys, j) + " = " + m_num.vector(k) + "    (key " + std::to_string(j + 1) +
             ": column " + std::to_string(j + 1) + " of Kᵀ)");
        line(cell_name(StepId::scores, m_row, static_cast<long>(j), h) + " = q·k = " + m_num.dot_terms(q, k) + " = " +
             result_of(arma::dot(q, k), m_step->values(m_row, j)));
        if (m_model.mla) {
            absorbed_score(q, k, j);
        }
    }
}

// mla: the same score from the latent, as a cache of latents computes it: W_UK
// absorbed into the query, q_nope·W_UK·c + q_rope·k_rope
void Explainer::absorbed_score(const arma::rowvec& q, const arma::rowvec& k, arma::uword j) {
    const Mla& mla = *m_model.mla;
    const int h = m_step->head;
    const arma::uword d_n = mla.nope_dim;
    const arma::rowvec q_nope = q.head(d_n);
    const arma::rowvec q_rope = q.tail(mla.rope_dim);
    const arma::rowvec k_rope = k.tail(mla.rope_dim);
    const arma::rowvec absorbed = q_nope * m_model.kv_weights(h).W_K.t();  // 1 × r
    const arma::rowvec c = step_of(StepId::normed_kv_latent, 0).values.row(j);
    const double latent = arma::dot(absorbed, c);
    const double rope = arma::dot(q_rope, k_rope);
    line("or from the latent, with W_UK absorbed into the query: (q_nope·W_UKᵀ)·c + q_rope·k_rope");
    line("  q_nope·W_UKᵀ = " + m_num.vector(q_nope) + "·W_UKᵀ = " + m_num.vector(absorbed) +
         "    (the absorbed query, r = " + std::to_string(mla.kv_rank) + " numbers)");
    line("  c = " + cell_name(StepId::normed_kv_latent, j, -1, 0) + " = " + m_num.vector(c) +
         "    (what a cache keeps of key " + std::to_string(j + 1) + ")");
    line("  q_rope·k_rope = " + m_num.dot_terms(q_rope, k_rope) + " = " + m_num(rope));
    const std::string rope_part = rope < 0 ? " − " + m_num(-rope) : " + " + m_num(rope);
    line("  " + cell_name(StepId::scores, m_row, static_cast<long>(j), h) + " = " + m_num.dot_terms(absorbed, c) +
         rope_part + " = " + result_of(latent + rope, m_step->values(m_row, j)));
}

void Explainer::scaled_scores() {
    const Step& scores = step_of(StepId::scores, m_step->head);
    if (m_model.scale_kind == ScaleKind::none) {
        line("this example does not scale (scale: none), so the scores pass through unchanged");
    } else {
        line("the divisor is " + divisor_text(m_model, m_num));
    }
    for (const arma::uword j : columns()) {
        const double s = scores.values(m_row, j);
        std::string text = cell_name(StepId::scaled_scores, m_row, static_cast<long>(j), m_step->head) + " = " +
                           cell_name(StepId::scores, m_row, static_cast<long>(j), m_step->head);
        if (m_model.scale_kind == ScaleKind::none) {
            text += " = " + result_of(s, m_step->values(m_row, j));
        } else {
            text += " / " + m_num(m_trace.scale) + " = " + m_num(s) + " / " + m_num(m_trace.scale) + " = " +
                    result_of(s / m_trace.scale, m_step->values(m_row, j));
        }
        line(text);
    }
}

// An elementwise step (k_elementwise_steps): its row's f of each cell of the scores it reads.
void Explainer::elementwise() {
    const int h = m_step->head;
    const Elementwise& f = *step_row(m_step->id).elementwise;
    const auto number = [this](double x) { return m_num(x); };
    const StepKey input = step_inputs(m_model, {m_step->id, h}).front();
    const Step& in = step_of(input.id, input.head);
    line(f.about(m_model, h, number));
    for (const arma::uword j : columns()) {
        const double x = in.values(m_row, j);
        const double y = elementwise_value(m_model, m_step->id, h, arma::mat{x})(0, 0);
        line(cell_name(m_step->id, m_row, static_cast<long>(j), h) + " = " +
             elementwise_formula(f.formula, cell_name(input.id, m_row, static_cast<long>(j), h)) + " = " +
             f.working(m_model, h, x, number) + " = " + result_of(y, m_step->values(m_row, j)));
    }
}

void Explainer::position_bias() {
    const double slope = (*m_model.alibi)(static_cast<arma::uword>(m_step->head - 1));
    line("slope m = " + m_num(slope) + (m_model.alibi_press ? " (Press et al.'s slope for head " +
                                                                   std::to_string(m_step->head) + " of " +
                                                                   std::to_string(m_model.n_heads()) + ")"
                                                             : ""));
    line("the farther key j is from query i, the lower its score; the query's own key gets 0");
    for (const arma::uword j : columns()) {
        const double distance = std::fabs(static_cast<double>(m_row) - static_cast<double>(j));
        line(cell_name(StepId::position_bias, m_row, static_cast<long>(j), m_step->head) + " = −m·|i − j| = −" +
             m_num(slope) + " · |" + std::to_string(m_row + 1) + " − " + std::to_string(j + 1) + "| = " +
             result_of(distance == 0.0 ? 0.0 : -slope * distance, m_step->values(m_row, j)));
    }
}

void Explainer::biased_scores() {
    const int h = m_step->head;
    const Step& scaled = step_of(StepId::scaled_scores, h);
    const Step& bias = step_of(StepId::position_bias, h);
    for (const arma::uword j : columns()) {
        const double s = scaled.values(m_row, j);
        const double b = bias.values(m_row, j);
        line(cell_name(StepId::biased_scores, m_row, static_cast<long>(j), h) + " = " +
             cell_name(StepId::scaled_scores, m_row, static_cast<long>(j), h) + " + " +
             cell_name(StepId::position_bias, m_row, static_cast<long>(j), h) + " = " + m_num(s) + " + " +
             m_num.factor(b) + " = " + result_of(s + b, m_step->values(m_row, j)));
    }
}

// Why query i may not attend to key j, or "" when it may.
std::string Explainer::blocked_because(arma::uword i, arma::uword j) const {
    std::vector<std::string> reasons;
    const MaskView mask = mask_view(m_model);
    if (mask.window == 0 && mask.causal_blocks(i, j)) {
        reasons.push_back("the causal mask: query " + std::to_string(i + 1) + " sees keys 1 to " +
                          std::to_string(i + 1));
    }
    if (mask.window > 0 && (mask.causal_blocks(i, j) || mask.window_blocks(i, j))) {
        const arma::uword first = i + 1 > mask.window ? i + 2 - mask.window : 1;
        reasons.push_back("the sliding window of " + std::to_string(mask.window) + ": query " +
                          std::to_string(i + 1) + " sees keys " + std::to_string(first) + " to " +
                          std::to_string(i + 1));
    }
    if (mask.matrix_blocks(i, j)) {
        reasons.push_back("the mask: mask[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "] = 0");
    }
    if (mask.padding_blocks(j)) {
        reasons.push_back("padding: key " + std::to_string(j + 1) + " is marked 0");
    }
    std::string text;
    for (const auto& reason : reasons) {
        text += (text.empty() ? "" : ", and ") + reason;
    }
    return text;
}

void Explainer::masked_scores() {
    const StepKey read = step_inputs(m_model, {StepId::masked_scores, m_step->head}).front();
    const Step& scaled = step_of(read.id, read.head);
    for (const arma::uword j : columns()) {
        const std::string here = cell_name(StepId::masked_scores, m_row, static_cast<long>(j), m_step->head);
        const std::string reason = blocked_because(m_row, j);
        if (reason.empty()) {
            line(here + " = " + cell_name(read.id, m_row, static_cast<long>(j), m_step->head) + " = " +
                 m_num(scaled.values(m_row, j)) + "    (query " + std::to_string(m_row + 1) +
                 " may attend to key " + std::to_string(j + 1) + ")");
        } else {
            line(here + " = −∞    (blocked by " + reason + ")");
        }
    }
    line("a −∞ score becomes exp(−∞) = 0 in the softmax: a weight of exactly 0");
}

void Explainer::weights() {
    const int h = m_step->head;
    // the row the softmax reads: the masked scores, or the scaled ones without a mask
    const StepKey read = step_inputs(m_model, {StepId::weights, h}).front();
    const Step* source = &step_of(read.id, read.head);
    const arma::rowvec s = source->values.row(m_row);
    const bool sink = m_model.sinks.has_value();
    const double sink_logit = sink ? (*m_model.sinks)(static_cast<arma::uword>(h - 1)) : 0.0;
    const double row_max = sink ? std::max(s.max(), sink_logit) : s.max();
    line("s = " + row_name(*source, m_row) + " = " + m_num.vector(s));
    if (sink) {
        line("sink = " + m_num(sink_logit) + "    (head " + std::to_string(h) +
             "'s sink logit: it joins the maximum and the sum, and gets no weight of its own)");
    }
    line("max = " + m_num(row_max) + "    (subtracted first, so that exp() cannot overflow; the weights do not change)");
    arma::rowvec e(s.n_elem);
    std::string exponents;
    for (arma::uword k = 0; k < s.n_elem; ++k) {
        e(k) = std::exp(s(k) - row_max);
        exponents += (k == 0 ? "" : ", ") + std::string("exp(") + m_num(s(k) - row_max) + ")";
    }
    line("exp(s − max) = [" + exponents + "] = " + m_num.vector(e));
    const double sink_share = sink ? std::exp(sink_logit - row_max) : 0.0;
    if (sink) {
        line("exp(sink − max) = exp(" + m_num(sink_logit - row_max) + ") = " + m_num(sink_share));
    }
    const double sum = arma::accu(e) + sink_share;
    std::string terms;
    for (arma::uword k = 0; k < e.n_elem; ++k) {
        terms += (k == 0 ? "" : " + ") + m_num(e(k));
    }
    if (sink) {
        terms += " + " + m_num(sink_share) + " (the sink)";
    }
    line("sum = " + terms + " = " + m_num(sum));
    if (m_whole_row) {
        const arma::rowvec computed = e / sum;
        const arma::rowvec kept = m_step->values.row(m_row);
        std::string text = name() + " = exp(s − max) / sum = " + m_num.vector(e) + " / " + m_num(sum) + " = " +
                           m_num.vector(computed);
        if (rounding(StepId::weights) >= 0) {
            text += ", rounded to " + decimals_text(rounding(StepId::weights)) + ": " + m_num.vector(kept);
        }
        line(text);
        if (sink) {
            line("the weights of this row sum to " + m_num(arma::accu(e) / sum) + "; the other " +
                 m_num(sink_share / sum) + " went to the sink, which passes on no value");
        } else {
            line("the weights of a row sum to 1");
        }
    } else {
        line(name() + " = exp(s" + std::to_string(m_col + 1) + " − max) / sum = " + m_num(e(m_col)) + " / " +
             m_num(sum) + " = " + result_of(e(m_col) / sum, m_step->values(m_row, m_col)));
    }
}

void Explainer::head_output_of(int h) {
    const Step& weights = step_of(StepId::weights, h);
    const Step& values = step_of(StepId::values, m_model.kv_head_of(h));
    const Step& target = step_of(StepId::head_output, h);
    const arma::rowvec a = weights.values.row(m_row);
    if (!m_whole_row) {
        const arma::rowvec v = values.values.col(m_col).t();
        line("a = " + row_name(weights, m_row) + " = " + m_num.vector(a));
        line("v = column " + std::to_string(m_col + 1) + " of the values = " + m_num.vector(v));
        line(cell_name(StepId::head_output, m_row, static_cast<long>(m_col), h) + " = a·v = " + m_num.dot_terms(a, v) +
             " = " + m_num(target.values(m_row, m_col)));
        return;
    }
    // the weighted value vectors, one per key, then their sum
    line("each value row times query " + std::to_string(m_row + 1) + "'s weight for it, then the sum:");
    std::vector<std::string> left;
    std::vector<std::string> right;
    for (arma::uword j = 0; j < a.n_elem; ++j) {
        const arma::rowvec v = values.values.row(j);
        left.push_back(m_num(a(j)) + " · " + m_num.vector(v));
        right.push_back(m_num.vector(arma::rowvec(a(j) * v)) + "    (" + values.row_labels[j] + ")");
    }
    std::size_t width = 0;
    for (const auto& text : left) {
        width = std::max(width, display_width(text));
    }
    for (std::size_t j = 0; j < left.size(); ++j) {
        line((j == 0 ? "  " : "+ ") + left[j] + std::string(width - display_width(left[j]), ' ') + " = " +
             right[j]);
    }
    line("= " + m_num.vector(arma::rowvec(target.values.row(m_row))));
}

void Explainer::concat() {
    const auto d_v = static_cast<arma::uword>(m_trace.dims.d_v);
    if (m_whole_row) {
        line("the heads' output rows side by side, head 1 first:");
        std::vector<double> joined;
        for (int h = 1; h <= static_cast<int>(m_trace.dims.heads); ++h) {
            const arma::rowvec z = step_of(StepId::head_output, h).values.row(m_row);
            line("  " + cell_name(StepId::head_output, m_row, -1, h) + " = " + m_num.vector(z));
            joined.insert(joined.end(), z.begin(), z.end());
        }
        line("= " + m_num.vector(joined));
        return;
    }
    const int h = static_cast<int>(m_col / d_v) + 1;
    const arma::uword column = m_col % d_v;
    line("columns " + std::to_string((h - 1) * d_v + 1) + " to " + std::to_string(h * d_v) + " hold head " +
         std::to_string(h) + "'s output (d_v = " + std::to_string(d_v) + ")");
    line(name() + " = " + cell_name(StepId::head_output, m_row, static_cast<long>(column), h) + " = " +
         m_num(step_of(StepId::head_output, h).values(m_row, column)));
}

void Explainer::output() {
    const bool several = m_trace.dims.heads > 1;
    if (m_model.W_O) {
        const Step& source = several ? step_of(StepId::concat, 0) : step_of(StepId::head_output, 1);
        project_row(source, several ? "the concatenated heads" : "the head output Z", *m_model.W_O, "W_O",
                    m_model.b_O, "b_O");
        return;
    }
    if (several) {
        line("there is no W_O, so the output is the concatenation of the heads");
        concat();
        return;
    }
    line("there is one head and no W_O, so the output is the head's weighted sum of the values");
    head_output_of(1);
}

}  // namespace qkv::explaining
