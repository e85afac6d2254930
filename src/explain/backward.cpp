// `qkv explain` for the backward pass (STEPS in man/qkv.1.in): one gradient cell's
// arithmetic with the numbers of the trace, term by term, ending in the cell's
// value. Every operand is read from the trace (or, for a weight, from the
// model), as explain.cpp does for the forward steps; the formulas are those of
// the step table's backward rows (attention/steps_backward.cpp), written out
// for one cell:
//   dConcat = dO·W_Oᵀ            dA = dZ·Vᵀ       dS' = A ∘ (dA − rowsum(dA ∘ A))
//   dS = dS' / scale             dQ = dS·K        dK = Σ_h dS_hᵀ·Q_h      dV = Σ_h A_hᵀ·dZ_h
//   dW = sourceᵀ·dY (x·W layout; dYᵀ·source in the pytorch layout)     db = Σ_i dY[i, :]
//   dX = Σ_h dQ_h·W_Q,hᵀ + Σ_g (dK_g·W_K,gᵀ + dV_g·W_V,gᵀ)
#include "explain/backward_writer.hpp"

namespace qkv::explaining {

namespace gradients {

void GradientWriter::run() {
    // a forward step's cell is explained by explain.cpp
    static constexpr auto k_explain = step_handlers<void (GradientWriter::*)()>(
        {
            {StepId::grad_output, &GradientWriter::grad_output},
            {StepId::grad_concat, &GradientWriter::grad_concat},
            {StepId::grad_head_output, &GradientWriter::grad_head_output},
            {StepId::grad_weights, &GradientWriter::grad_weights},
            {StepId::grad_scaled_scores, &GradientWriter::score_gradient},
            {StepId::grad_scores, &GradientWriter::grad_scores},
            {StepId::grad_normed_queries, &GradientWriter::grad_queries},
            {StepId::grad_queries, &GradientWriter::grad_queries},
            {StepId::grad_normed_keys, &GradientWriter::grad_keys},
            {StepId::grad_keys, &GradientWriter::grad_keys},
            {StepId::grad_q_norm, &GradientWriter::grad_norm_gain},
            {StepId::grad_k_norm, &GradientWriter::grad_norm_gain},
            {StepId::grad_values, &GradientWriter::grad_values},
            {StepId::grad_normed_q_latent, &GradientWriter::grad_normed_q_latent},
            {StepId::grad_q_latent, &GradientWriter::latent_norm_back},
            {StepId::grad_rope_keys, &GradientWriter::grad_rope_keys},
            {StepId::grad_normed_kv_latent, &GradientWriter::grad_normed_kv_latent},
            {StepId::grad_kv_latent, &GradientWriter::latent_norm_back},
            {StepId::grad_q_a_layernorm, &GradientWriter::latent_norm_gain},
            {StepId::grad_kv_a_layernorm, &GradientWriter::latent_norm_gain},
            {StepId::grad_w_q_a, &GradientWriter::grad_w_latent},
            {StepId::grad_w_kv_a, &GradientWriter::grad_w_latent},
            {StepId::grad_w_query, &GradientWriter::grad_w_projection},
            {StepId::grad_w_key, &GradientWriter::grad_w_projection},
            {StepId::grad_w_value, &GradientWriter::grad_w_projection},
            {StepId::grad_w_output, &GradientWriter::grad_w_output},
            {StepId::grad_out_proj_weight, &GradientWriter::grad_w_output},
            {StepId::grad_b_query, &GradientWriter::grad_b_query},
            {StepId::grad_b_key, &GradientWriter::grad_b_key},
            {StepId::grad_b_value, &GradientWriter::grad_b_value},
            {StepId::grad_b_output, &GradientWriter::grad_b_output},
            {StepId::grad_out_proj_bias, &GradientWriter::grad_b_output},
            {StepId::grad_in_proj_weight, &GradientWriter::grad_in_proj_weight},
            {StepId::grad_in_proj_bias, &GradientWriter::grad_in_proj_bias},
            {StepId::grad_inputs, &GradientWriter::grad_sources},
            {StepId::grad_context, &GradientWriter::grad_sources},
        },
        {.given = &GradientWriter::explained_elsewhere, .forward = &GradientWriter::explained_elsewhere,
         .elementwise_gradient = &GradientWriter::score_gradient});
    (this->*k_explain[step_index(m_step.id)])();
}

// ── the steps ───────────────────────────────────────────────────────────
void GradientWriter::grad_output() {
    if (m_model.grad_output_ones) {
        line("grad_output: ones: L is the sum of every output value, so ∂L/∂O[i,j] = 1");
    } else {
        line("given by the example (grad_output:): how much the loss L changes with each output value");
    }
    for (const arma::uword c : columns()) {
        line(here(c) + " = ∂L/∂O[" + std::to_string(m_row + 1) + "," + std::to_string(c + 1) + "] = " +
             m_num(kept(c)));
    }
}

// dO row i times row c of W_O (the x·W layout's W_O: column c of W_Oᵀ)
void GradientWriter::through_output_weight() {
    const Step& dO = step_of({StepId::grad_output, 0});
    const arma::rowvec d = dO.values.row(m_row);
    define("dO = " + row_name(dO, m_row) + " = " + m_num.vector(d));
    for (const arma::uword c : columns()) {
        const arma::rowvec w = m_model.W_O->row(c);
        const std::string file_name =
            m_model.weight_form == WeightForm::pytorch_block ? "out_proj_weight" : "W_O as written";
        const std::string where = pytorch_layout() ? "column " + std::to_string(c + 1) + " of " + file_name +
                                                         " (out × in: it is W_Oᵀ)"
                                                   : "row " + std::to_string(c + 1) + " of W_O, i.e. column " +
                                                         std::to_string(c + 1) + " of W_Oᵀ";
        line("w = " + where + " = " + m_num.vector(w));
        line(here(c) + " = dO·w = " + m_num.dot_terms(d, w) + " = " + result_of(arma::dot(d, w), kept(c)));
    }
}

void GradientWriter::grad_head_output() {
    const int h = m_step.head;
    const StepKey source = reads().front();
    if (source.id == StepId::grad_output && m_model.W_O) {
        line("one head: the output was Z·W_O, so dZ = dO·W_Oᵀ");
        through_output_weight();
        return;
    }
    const Step& from = step_of(source);
    const arma::uword d_v = m_model.d_v();
    const arma::uword first = static_cast<arma::uword>(h - 1) * d_v;
    if (m_model.n_heads() == 1) {
        line("one head and no W_O: the output is Z itself, so dZ = dO");
    } else {
        const bool concat = source.id == StepId::grad_concat;
        line("head " + std::to_string(h) + " filled columns " + std::to_string(first + 1) + " … " +
             std::to_string(first + d_v) + " of " +
             (concat ? std::string("the concatenation") : std::string("the output (no W_O: it is the concatenation)")) +
             ", d_v = " + std::to_string(d_v) + "; its gradient is those columns of " + (concat ? "dConcat" : "dO"));
    }
    for (const arma::uword c : columns()) {
        line(here(c) + " = " + cell_name(from.id, m_row, static_cast<long>(first + c), 0) + " = " +
             result_of(from.values(m_row, first + c), kept(c)));
    }
}

void GradientWriter::grad_weights() {
    const std::vector<StepKey> in = reads();
    const Step& dZ = step_of(in[0]);
    const Step& V = step_of(in[1]);
    if (shared_kv()) {
        line("query head " + std::to_string(m_step.head) + " read the values of key/value head " +
             std::to_string(V.head));
    }
    const arma::rowvec z = dZ.values.row(m_row);
    line("dz = " + row_name(dZ, m_row) + " = " + m_num.vector(z) + "    (row " + std::to_string(m_row + 1) +
         " of dZ)");
    for (const arma::uword j : columns()) {
        const arma::rowvec v = V.values.row(j);
        line("v = " + row_name(V, j) + " = " + m_num.vector(v) + "    (value " + std::to_string(j + 1) +
             ": column " + std::to_string(j + 1) + " of Vᵀ)");
        line(here(j) + " = dz·v = " + m_num.dot_terms(z, v) + " = " + result_of(arma::dot(z, v), kept(j)));
    }
}

// The gradient of a step of the scores: through the elementwise step that
// reads it (its gradient times f′), or through the softmax.
void GradientWriter::score_gradient() {
    const std::vector<StepKey> in = reads();
    if (in.front().id == StepId::weights) {
        softmax_gradient();
        return;
    }
    // the next step's gradient, and the scores it read
    const Step& grad = step_of(in[0]);
    const Step& input = step_of(in[1]);
    const StepId next = elementwise_after(m_model, input.id)->id;
    const Elementwise& f = *step_row(next).elementwise;
    const auto number = [this](double x) { return m_num(x); };
    line(step_text(next) + " = " + elementwise_formula(f.formula, step_text(input.id)) + ", so its slope is " +
         elementwise_formula(f.slope_formula, step_text(input.id)) + "; " + f.about(m_model, m_step.head, number));
    for (const arma::uword j : columns()) {
        const double g = grad.values(m_row, j);
        const double x = input.values(m_row, j);
        // f′ at x: the gradient 1 taken back
        const arma::mat slope = elementwise_gradient(m_model, next, m_step.head, arma::mat{1.0}, arma::mat{x});
        const std::string source = cell_name(input.id, m_row, static_cast<long>(j), input.head);
        line(here(j) + " = " + cell_name(grad.id, m_row, static_cast<long>(j), grad.head) + " · " +
             elementwise_formula(f.slope_formula, source) + " = " + m_num(g) + " · " +
             f.slope_working(m_model, m_step.head, x, number) + " = " + m_num(g) + " · " + m_num(slope(0, 0)) +
             " = " + result_of(g * slope(0, 0), kept(j)));
    }
}

void GradientWriter::softmax_gradient() {
    const std::vector<StepKey> in = reads();  // weights, grad_weights
    const Step& weights = step_of(in[0]);
    const Step& grad = step_of(in[1]);
    const arma::rowvec A = weights.values.row(m_row);
    const arma::rowvec dA = grad.values.row(m_row);
    const std::string i = std::to_string(m_row + 1);
    line("A = " + row_name(weights, m_row) + " = " + m_num.vector(A));
    line("dA = " + row_name(grad, m_row) + " = " + m_num.vector(dA));
    if (m_model.sinks) {
        line("the sink's column had no dA (it passes on no value), so the row term sums over the keys only");
    }
    if (m_model.alibi) {
        line("ALiBi's bias is a constant, so this is also the gradient of biased_scores");
    }
    const double r = arma::dot(dA, A);
    line("r = Σ_k dA[" + i + ",k]·A[" + i + ",k] = " + m_num.dot_terms(dA, A) + " = " + m_num(r) +
         "    (the row's dA, weighted by A)");
    for (const arma::uword j : columns()) {
        const std::string cell = i + "," + std::to_string(j + 1);
        if (!m_model.allows(m_row, j)) {
            line("key " + std::to_string(j + 1) + " is blocked: its weight A[" + cell +
                 "] is 0, so its gradient is 0");
        }
        line(here(j) + " = A[" + cell + "]·(dA[" + cell + "] − r) = " + m_num(A(j)) + " · (" + m_num(dA(j)) +
             " − " + m_num.factor(r) + ") = " + result_of(A(j) * (dA(j) - r), kept(j)));
    }
}

void GradientWriter::grad_scores() {
    const Step& from = step_of(reads().front());
    const bool none = m_model.scale_kind == ScaleKind::none;
    if (none) {
        line("this example does not scale (scale: none), so the gradient passes unchanged");
    } else {
        line("S' = S / scale, so the gradient is divided by the same divisor, " + divisor_text(m_model, m_num));
    }
    for (const arma::uword j : columns()) {
        const double s = from.values(m_row, j);
        const std::string source = cell_name(from.id, m_row, static_cast<long>(j), from.head);
        if (none) {
            line(here(j) + " = " + source + " = " + result_of(s, kept(j)));
        } else {
            line(here(j) + " = " + source + " / " + m_num(m_trace.scale) + " = " + m_num(s) + " / " +
                 m_num(m_trace.scale) + " = " + result_of(s / m_trace.scale, kept(j)));
        }
    }
}

// Through QK-norm's RMSNorm, one row: y = x·r·g with r = 1/√(mean(x²) + eps), so
// dx_k = r·g_k·dy_k − x_k·r³·mean(x∘g∘dy): its own share, less what x_k did to r.
void GradientWriter::through_norm() {
    const QkNorm& norm = *m_model.qk_norm;
    const bool queries = m_step.id == StepId::grad_queries;
    const std::vector<StepKey> in = reads();  // the normed rows' gradients, then the rows before the norm
    const std::size_t half = in.size() / 2;
    arma::rowvec dy;
    arma::rowvec x;
    std::string dy_names;
    std::string x_names;
    for (std::size_t k = 0; k < in.size(); ++k) {
        const arma::rowvec row = step_of(in[k]).values.row(m_row);
        std::string& names = k < half ? dy_names : x_names;
        names += (names.empty() ? "" : ", ") + cell_name(in[k].id, m_row, -1, in[k].head);
        (k < half ? dy : x) = arma::join_rows(k < half ? dy : x, row);
    }
    const std::string letter = queries ? "q" : "k";
    line("dy = " + dy_names + " = " + m_num.vector(dy) + "    (the gradient of the normed row)");
    line(letter + " = " + x_names + " = " + m_num.vector(x) + "    (the row before the norm" +
         (norm.over_all ? ", every head: over: all)" : ")"));
    const arma::uword first = norm.over_all ? static_cast<arma::uword>(m_step.head - 1) * m_model.d_k() : 0;
    norm_back_cells(letter, norm.offset != 0.0 ? "(1 + γ)" : "γ", x, norm.gain(queries), dy, m_model.qk_norm_eps(),
                    first);
}

// dγ[k] = Σ over the rows (and the heads that share γ) of dy_k·x_k·r
void GradientWriter::grad_norm_gain() {
    const QkNorm& norm = *m_model.qk_norm;
    const std::vector<StepKey> in = reads();  // the normed rows' gradients, then the rows before the norm
    const std::size_t half = in.size() / 2;
    const double eps = m_model.qk_norm_eps();
    const arma::uword d_k = m_model.d_k();
    arma::mat whole;  // over: all, the rows before the norm of every head side by side
    for (std::size_t j = half; norm.over_all && j < in.size(); ++j) {
        whole = arma::join_rows(whole, step_of(in[j]).values);
    }
    for (const arma::uword c : columns()) {
        // over: all, element c is element c mod d_k of head c / d_k + 1; else element c of every head
        std::vector<std::size_t> heads;
        for (std::size_t k = 0; k < half; ++k) {
            if (!norm.over_all || k == c / d_k) {
                heads.push_back(k);
            }
        }
        const arma::uword e = norm.over_all ? c % d_k : c;
        arma::rowvec terms(heads.size() * step_of(in[0]).values.n_rows);
        std::string words;
        arma::uword t = 0;
        for (const std::size_t k : heads) {
            const arma::mat& dY = step_of(in[k]).values;
            const arma::mat& X = step_of(in[half + k]).values;
            // r of each row: over its head's d_k, or over every head's together
            const arma::vec r = rms_inverse(norm.over_all ? whole : X, eps);
            for (arma::uword i = 0; i < X.n_rows; ++i) {
                terms(t++) = dY(i, e) * X(i, e) * r(i);
            }
            words += (words.empty() ? "" : ", ") + step_text(in[k].id) + at_head(in[k].head);
        }
        line("each row i of " + words + ": dy[i," + std::to_string(e + 1) + "]·x[i," + std::to_string(e + 1) +
             "]·r_i, r_i = 1/√(mean(x_i²) + eps)");
        line(here(c) + " = " + sum_terms(terms) + " = " + result_of(arma::accu(terms), kept(c)));
    }
}

void GradientWriter::grad_queries() {
    if (m_step.id == StepId::grad_queries && m_model.qk_norm) {
        through_norm();
        return;
    }
    const std::vector<StepKey> in = reads();  // grad_scores, keys (rotated with RoPE)
    const Step& dS = step_of(in[0]);
    const Step& K = step_of(in[1]);
    if (shared_kv()) {
        line("query head " + std::to_string(m_step.head) + " read the keys of key/value head " +
             std::to_string(K.head));
    }
    const arma::rowvec s = dS.values.row(m_row);
    line("ds = " + row_name(dS, m_row) + " = " + m_num.vector(s) + "    (query " + std::to_string(m_row + 1) +
         "'s gradient for each key)");
    const auto element = [&](arma::uword e, const std::string& target, const double* kept_value) {
        const arma::rowvec k = K.values.col(e).t();
        return dot_sum(target, {{{"k = " + column_name(K, e) + " = " + m_num.vector(k)}, "", "ds·k", s, k}},
                       kept_value);
    };
    if (!m_model.rope) {
        for (const arma::uword c : columns()) {
            const double value = kept(c);
            element(c, here(c), &value);
        }
        return;
    }
    line("the scores read the rotated keys, so ds·K_rot is the gradient of the rotated query");
    turn_back("dQ_rot", [&](arma::uword e, const std::string& target) { return element(e, target, nullptr); });
}

void GradientWriter::grad_keys() {
    if (m_step.id == StepId::grad_keys && m_model.qk_norm) {
        through_norm();
        return;
    }
    const std::vector<StepKey> in = reads();  // pairs (grad_scores@h, queries@h)
    const std::size_t count = in.size() / 2;
    const int g = m_step.head;
    if (count > 1) {
        line("key/value head " + std::to_string(g) + " is read by query heads " + std::to_string(in[0].head) +
             " … " + std::to_string(in[in.size() - 2].head) + ": dK adds up their parts");
    }
    std::vector<arma::rowvec> columns_of_dS;
    for (std::size_t k = 0; k < count; ++k) {
        const Step& dS = step_of(in[2 * k]);
        columns_of_dS.push_back(dS.values.col(m_row).t());
    }
    const auto sub = [&](std::size_t k) { return count > 1 ? subscript(in[2 * k].head) : std::string(); };
    const auto element = [&](arma::uword e, const std::string& target, const double* kept_value) {
        std::vector<DotPart> parts;
        for (std::size_t k = 0; k < count; ++k) {
            const Step& dS = step_of(in[2 * k]);
            const Step& Q = step_of(in[2 * k + 1]);
            const arma::rowvec q = Q.values.col(e).t();
            parts.push_back({{"ds" + sub(k) + " = " + column_name(dS, m_row) + " = " +
                                  m_num.vector(columns_of_dS[k]) + "    (each query's gradient for key " +
                                  std::to_string(m_row + 1) + ")",
                              "q" + sub(k) + " = " + column_name(Q, e) + " = " + m_num.vector(q)},
                             "head " + std::to_string(in[2 * k].head),
                             "ds" + sub(k) + "·q" + sub(k),
                             columns_of_dS[k],
                             q});
        }
        return dot_sum(target, parts, kept_value);
    };
    if (!m_model.rope) {
        for (const arma::uword c : columns()) {
            const double value = kept(c);
            element(c, here(c), &value);
        }
        return;
    }
    line("the scores read the rotated queries, so Σ dsᵀ·Q_rot is the gradient of the rotated key");
    turn_back("dK_rot", [&](arma::uword e, const std::string& target) { return element(e, target, nullptr); });
}

void GradientWriter::grad_values() {
    const std::vector<StepKey> in = reads();  // pairs (weights@h, grad_head_output@h)
    const std::size_t count = in.size() / 2;
    if (count > 1) {
        line("key/value head " + std::to_string(m_step.head) + " is read by query heads " +
             std::to_string(in[0].head) + " … " + std::to_string(in[in.size() - 2].head) +
             ": dV adds up their parts");
    }
    const auto sub = [&](std::size_t k) { return count > 1 ? subscript(in[2 * k].head) : std::string(); };
    for (const arma::uword c : columns()) {
        std::vector<DotPart> parts;
        for (std::size_t k = 0; k < count; ++k) {
            const Step& A = step_of(in[2 * k]);
            const Step& dZ = step_of(in[2 * k + 1]);
            const arma::rowvec a = A.values.col(m_row).t();
            const arma::rowvec z = dZ.values.col(c).t();
            parts.push_back({{"a" + sub(k) + " = " + column_name(A, m_row) + " = " + m_num.vector(a) +
                                  "    (how much each query took from value " + std::to_string(m_row + 1) + ")",
                              "dz" + sub(k) + " = " + column_name(dZ, c) + " = " + m_num.vector(z)},
                             "head " + std::to_string(in[2 * k].head),
                             "a" + sub(k) + "·dz" + sub(k),
                             a,
                             z});
        }
        const double value = kept(c);
        dot_sum(here(c), parts, &value);
    }
}

}  // namespace gradients

void explain_gradient(const Model& model, const Trace& trace, Explanation& explanation, const RenderOptions& options) {
    gradients::GradientWriter(model, trace, explanation, options).run();
}

}  // namespace qkv::explaining
