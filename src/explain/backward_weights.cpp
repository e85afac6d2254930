// `qkv explain` for the backward pass, continued (backward_writer.hpp): the
// cells of mla's latents and their norms, the weights' and biases' gradients
// (each a column of its source against a column of its projection's
// gradient), and the gradients of the inputs and the context, every path back
// into X summed; and the two workings backward.cpp's steps use too, a sum of
// dot products (dot_sum) and a row back through an RMSNorm (norm_back_cells),
// so that backward.cpp calls this file and this file calls nothing of its.
#include "explain/backward_writer.hpp"

namespace qkv::explaining::gradients {

// The cells of a row taken back through an RMSNorm y = x·r∘g, r = 1/√(mean(x²) + eps), from the row x
// (`letter`), its gain g (`gain` names it) and dy: dx_k = r·g_k·dy_k − x_k·r³·mean(x∘g∘dy): its own
// share, less what x_k did to r. Cell c is element first + c of the row.
void GradientWriter::norm_back_cells(const std::string& letter, const std::string& gain, const arma::rowvec& x,
                     const arma::rowvec& g, const arma::rowvec& dy, double eps, arma::uword first) {
    const double width = static_cast<double>(x.n_elem);
    const double mean_squares = arma::dot(x, x) / width;
    const double r = 1.0 / std::sqrt(mean_squares + eps);
    const double mean = arma::dot(x % g, dy) / width;
    line("r = 1/√(mean(" + letter + "²) + eps) = 1/√(" + m_num(mean_squares) + " + " + readable(eps) + ") = " +
         m_num(r));
    line("m = mean(" + letter + "∘" + gain + "∘dy) = " + m_num(mean) + "    (what the row's size passes back)");
    for (const arma::uword c : columns()) {
        const arma::uword k = first + c;
        line(here(c) + " = r·" + gain + "[" + std::to_string(k + 1) + "]·dy[" + std::to_string(k + 1) + "] − " +
             letter + "[" + std::to_string(k + 1) + "]·r³·m = " + m_num(r) + " · " + m_num.factor(g(k)) + " · " +
             m_num.factor(dy(k)) + " − " + m_num.factor(x(k)) + " · " + m_num.factor(r * r * r) + " · " +
             m_num.factor(mean) + " = " + result_of(r * g(k) * dy(k) - x(k) * r * r * r * mean, kept(c)));
    }
}

// The dot products, one line each (with their label when there are
// several), then their sum; the last line is "target = … = value", with the
// kept value when the target is the cell, otherwise the computed one.
double GradientWriter::dot_sum(const std::string& target, const std::vector<DotPart>& parts, const double* kept_value) {
    arma::rowvec values(parts.size());
    for (std::size_t k = 0; k < parts.size(); ++k) {
        for (const auto& text : parts[k].before) {
            define(text);
        }
        values(k) = arma::dot(parts[k].a, parts[k].b);
        if (parts.size() > 1) {
            line(parts[k].label + ": " + parts[k].symbol + " = " + m_num.dot_terms(parts[k].a, parts[k].b) +
                 " = " + m_num(values(k)));
        }
    }
    const double total = arma::accu(values);
    const std::string value = kept_value ? result_of(total, *kept_value) : m_num(total);
    if (parts.size() == 1) {
        line(target + " = " + parts[0].symbol + " = " + m_num.dot_terms(parts[0].a, parts[0].b) + " = " + value);
    } else {
        line(target + " = " + sum_terms(values) + " = " + value);
    }
    return total;
}

// ── mla's latents ───────────────────────────────────────────────────────
// dC_Q,norm[i,c] = Σ_h dQ_h[i,:]·W_UQ,h[c,:]
void GradientWriter::grad_normed_q_latent() {
    const std::vector<StepKey> in = reads();  // every head's grad_queries
    line("every head's queries were this latent times its own block W_UQ of q_b_proj, so the gradient adds up "
         "each head's dQ row times row c of its block (column c of W_UQᵀ)");
    for (const arma::uword c : columns()) {
        std::vector<DotPart> parts;
        for (const StepKey& key : in) {
            const Step& dQ = step_of(key);
            const arma::rowvec d = dQ.values.row(m_row);
            const arma::rowvec w = m_model.heads[static_cast<std::size_t>(key.head - 1)].W_Q.row(c);
            const std::string sub = in.size() > 1 ? subscript(key.head) : "";
            parts.push_back({{"dq" + sub + " = " + row_name(dQ, m_row) + " = " + m_num.vector(d),
                              "w = " + mla_weight_row(StepId::w_query, key.head, c) + " = " + m_num.vector(w)},
                             "head " + std::to_string(key.head),
                             "dq" + sub + "·w",
                             d,
                             w});
        }
        const double value = kept(c);
        dot_sum(here(c), parts, &value);
    }
}

// dK_R[i,c] = Σ_h dK_h[i, d_n + c]
void GradientWriter::grad_rope_keys() {
    const std::vector<StepKey> in = reads();  // every head's grad_keys
    const arma::uword d_n = m_model.mla->nope_dim;
    line(in.size() > 1 ? "one rope key served every head, so its gradient adds up each head's share: the last "
                         "d_r columns of its dK"
                       : "the one head's dK holds the rope key's gradient in its last d_r columns");
    for (const arma::uword c : columns()) {
        arma::rowvec terms(in.size());
        std::string names;
        for (std::size_t k = 0; k < in.size(); ++k) {
            terms(k) = step_of(in[k]).values(m_row, d_n + c);
            names += (k == 0 ? "" : " + ") + cell_name(in[k].id, m_row, static_cast<long>(d_n + c), in[k].head);
        }
        line(here(c) + " = " + names + " = " + sum_terms(terms) + " = " + result_of(arma::accu(terms), kept(c)));
    }
}

// dC[i,c] = Σ_h (dK_h[i, 1 … d_n]·W_UK,h[c,:] + dV_h[i,:]·W_UV,h[c,:])
void GradientWriter::grad_normed_kv_latent() {
    const std::vector<StepKey> in = reads();  // every head's grad_keys, then every head's grad_values
    const std::size_t H = in.size() / 2;
    const arma::uword d_n = m_model.mla->nope_dim;
    line("the latent made each head's keys (their first d_n numbers, through W_UK) and values (through W_UV): "
         "its gradient adds both paths of every head, each row of dK or dV times row c of the block");
    for (const arma::uword c : columns()) {
        std::vector<DotPart> parts;
        for (std::size_t k = 0; k < 2 * H; ++k) {
            const bool key = k < H;
            const Step& grad = step_of(in[k]);
            const HeadWeights& weights = m_model.heads[static_cast<std::size_t>(grad.head - 1)];
            const arma::rowvec d = key ? arma::rowvec(grad.values.row(m_row).head(d_n)) : arma::rowvec(grad.values.row(m_row));
            const arma::rowvec w = key ? weights.W_K.row(c) : weights.W_V.row(c);
            const std::string sub = H > 1 ? subscript(grad.head) : "";
            const std::string lower = key ? "dk" : "dv";
            parts.push_back({{lower + sub + " = " + row_name(grad, m_row) + (key ? ", its first d_n" : "") + " = " +
                                  m_num.vector(d),
                              "w = " + mla_weight_row(key ? StepId::w_key : StepId::w_value, grad.head, c) + " = " +
                                  m_num.vector(w)},
                             std::string(key ? "keys' path" : "values' path") +
                                 (H > 1 ? ", head " + std::to_string(grad.head) : std::string()),
                             lower + sub + "·w",
                             d,
                             w});
        }
        const double value = kept(c);
        dot_sum(here(c), parts, &value);
    }
}

// Back through a latent's RMSNorm, one row (norm_back_cells)
void GradientWriter::latent_norm_back() {
    const std::vector<StepKey> in = reads();  // the normed latent's gradient, the latent
    const bool queries = m_step.id == StepId::grad_q_latent;
    const Step& grad = step_of(in[0]);
    const Step& latent = step_of(in[1]);
    const arma::rowvec g = queries ? m_model.mla->q_norm : m_model.mla->kv_norm;
    const arma::rowvec dy = grad.values.row(m_row);
    const arma::rowvec x = latent.values.row(m_row);
    line("dy = " + row_name(grad, m_row) + " = " + m_num.vector(dy) + "    (the gradient of the normed row)");
    line("c = " + row_name(latent, m_row) + " = " + m_num.vector(x) + "    (the row before the norm)");
    line("γ = " + m_num.vector(g) + " (" + (queries ? "q_a_layernorm" : "kv_a_layernorm") + ")");
    norm_back_cells("c", "γ", x, g, dy, m_model.rms_eps(), 0);
}

// dγ[c] = Σ_i dy[i,c]·c[i,c]·r_i
void GradientWriter::latent_norm_gain() {
    const std::vector<StepKey> in = reads();  // the normed latent's gradient, the latent
    const arma::mat& dY = step_of(in[0]).values;
    const arma::mat& X = step_of(in[1]).values;
    const arma::vec r = rms_inverse(X, m_model.rms_eps());
    line("r_i = 1/√(mean(c_i²) + eps) of each row i of " + step_text(in[1].id) + ": " +
         m_num.vector(arma::rowvec(r.t())));
    for (const arma::uword c : columns()) {
        const arma::rowvec terms = (dY.col(c) % X.col(c) % r).t();
        line("each row i: " + step_text(in[0].id) + "[i," + std::to_string(c + 1) + "]·" + step_text(in[1].id) +
             "[i," + std::to_string(c + 1) + "]·r_i");
        line(here(c) + " = " + sum_terms(terms) + " = " + result_of(arma::accu(terms), kept(c)));
    }
}

// dW_DQ = Xᵀ·dC_Q, dW_kva = Xᵀ·[dC_KV dK_R] (their transposes in the pytorch layout)
void GradientWriter::grad_w_latent() {
    const std::vector<StepKey> in = reads();  // the source, then the gradients of what the weight made
    const bool queries = m_step.id == StepId::grad_w_q_a;
    Projection p;
    p.letter = queries ? "C_Q" : "[C_KV K_R]";
    p.source = in.front();
    p.grads.assign(in.begin() + 1, in.end());
    p.heads = false;
    const std::string s = source_symbol(p.source.id);
    const std::string w = queries ? "W_DQ" : "W_kva";
    const std::string d = queries ? "dC_Q" : "[dC_KV dK_R]";
    if (pytorch_layout()) {
        line("layout pytorch: d" + w + " is out × in like " + (queries ? "q_a_proj" : "kv_a_proj_with_mqa") +
             " as written, " + d + "ᵀ·" + s + ": cell [r,c] = Σ_i " + d + "[i,r]·" + s + "[i,c]");
    } else {
        line("d" + w + " = " + s + "ᵀ·" + d + " (in × out, like " + (queries ? "q_a_proj" : "kv_a_proj_with_mqa") +
             "): cell [r,c] = Σ_i " + s + "[i,r]·" + d + "[i,c]");
    }
    weight_cells(p, pytorch_layout());
}

// "row 3 of kv_b_proj, column 2 (head 1's W_UK)": where a row of a head's block sits in the file
std::string GradientWriter::mla_weight_row(StepId weight, int head, arma::uword row) const {
    const MlaBlock block = mla_block(m_model, weight, head);
    const std::string span = std::to_string(block.first + 1) + " … " + std::to_string(block.first + block.width);
    return (pytorch_layout() ? "column " : "row ") + std::to_string(row + 1) + " of " + block.file +
           (pytorch_layout() ? " as written, rows " : ", columns ") + span + " (" +
           (several_heads() ? "head " + std::to_string(head) + "'s " : std::string()) + "W_" + block.subscript + ")";
}

// ── the weights' gradients ──────────────────────────────────────────────
// Column `out` of the projections' gradients side by side: the step and
// column it comes from, and a line that says whose it is when there are several.
std::pair<const Step*, arma::uword> GradientWriter::gradient_column(const Projection& p, arma::uword out,
                                                   const std::string& what) {
    std::size_t k = 0;
    arma::uword col = out;
    for (; k + 1 < p.grads.size(); ++k) {
        const arma::uword width = p.width != 0 ? p.width : step_of(p.grads[k]).values.n_cols;
        if (col < width) {
            break;
        }
        col -= width;
    }
    const Step& grad = step_of(p.grads[k]);
    if (p.grads.size() > 1) {
        define(what + (p.heads ? " belongs to " + head_text(grad) + ": column " + std::to_string(col + 1) +
                                     " of its d" + p.letter
                               : " comes from " + step_text(grad.id) + ": its column " + std::to_string(col + 1)));
    }
    return {&grad, col};
}

// dW[r,c]: x·W layout Σ_i S[i,r]·dY[i,c]; pytorch layout (out × in) Σ_i dY[i,r]·S[i,c].
// `row_offset` is the first row of the block in in_proj_weight.
void GradientWriter::weight_cells(const Projection& p, bool out_first, arma::uword row_offset) {
    const Step& S = step_of(p.source);
    const std::string s_name = source_symbol(p.source.id);
    for (const arma::uword c : columns()) {
        const arma::uword out = out_first ? m_row - row_offset : c;
        const arma::uword in = out_first ? c : m_row;
        const std::string what = out_first ? "row " + std::to_string(m_row + 1) : "column " + std::to_string(c + 1);
        const auto [grad, col] = gradient_column(p, out, what);
        const arma::rowvec x = S.values.col(in).t();
        const arma::rowvec y = grad->values.col(col).t();
        const std::string x_line = "x = " + column_name(S, in) + " = " + m_num.vector(x) + "    (element " +
                                   std::to_string(in + 1) + " of every row of " + s_name + ")";
        const std::string y_line = "dy = " + column_name(*grad, col) + " = " + m_num.vector(y);
        const double value = kept(c);
        if (out_first) {
            dot_sum(here(c), {{{y_line, x_line}, "", "dy·x", y, x}}, &value);
        } else {
            dot_sum(here(c), {{{x_line, y_line}, "", "x·dy", x, y}}, &value);
        }
    }
}

void GradientWriter::grad_w_projection() {
    const std::vector<StepKey> in = reads();  // the source, then the projections' gradients
    Projection p;
    p.letter = m_step.id == StepId::grad_w_query ? "Q" : m_step.id == StepId::grad_w_key ? "K" : "V";
    p.source = in.front();
    p.grads.assign(in.begin() + 1, in.end());
    p.width = p.letter == "V" ? m_model.d_v() : m_model.d_k();
    if (m_model.mla && p.letter == "K") {
        p.width = m_model.mla->nope_dim;  // W_UK made only each key's first d_n numbers
    }
    const std::string s = source_symbol(p.source.id);
    const std::string d = "d" + p.letter;
    if (m_model.mla) {
        const bool latent = m_model.mla->q_rank.has_value();
        line(p.letter == "Q" ? "the queries were " + s + " times " + (latent ? "q_b_proj" : "q_proj") +
                                   ", each head its own columns"
             : p.letter == "K" ? std::string("W_UK, each head's first d_n columns of its block of kv_b_proj, made "
                                             "only the keys' first d_n numbers: dK's rope part is not used here")
                               : std::string("W_UV is each head's last d_v columns of its block of kv_b_proj"));
    }
    if (pytorch_layout()) {
        line("layout pytorch: dW_" + p.letter + " is out × in like W_" + p.letter + " as written, " + d + "ᵀ·" + s +
             ": cell [r,c] = Σ_i " + d + "[i,r]·" + s + "[i,c]");
    } else {
        line("dW_" + p.letter + " = " + s + "ᵀ·" + d + " (in × out, like W_" + p.letter + "): cell [r,c] = Σ_i " + s +
             "[i,r]·" + d + "[i,c]");
    }
    if (p.letter != "Q" && m_model.cross()) {
        line("cross-attention: the keys and values read the context C");
    }
    weight_cells(p, pytorch_layout());
}

void GradientWriter::grad_w_output() {
    const std::vector<StepKey> in = reads();  // concat (or Z), grad_output
    Projection p{"O", in[0], {in[1]}, m_model.d_out()};
    const std::string s = source_symbol(p.source.id);
    const bool out_first = pytorch_layout();
    if (out_first) {
        line((m_step.id == StepId::grad_out_proj_weight ? "out_proj_weight" : "layout pytorch: dW_O") +
             std::string(" is out × in, dOᵀ·") + s + ": cell [r,c] = Σ_i dO[i,r]·" + s + "[i,c]");
    } else {
        line("dW_O = " + s + "ᵀ·dO (in × out, like W_O): cell [r,c] = Σ_i " + s + "[i,r]·dO[i,c]");
    }
    weight_cells(p, out_first);
}

// in_proj_weight stacks W_Q, W_K and W_V (each E × E, out × in): the block of the row
void GradientWriter::grad_in_proj_weight() {
    const std::vector<StepKey> in = reads();  // X, C (or X), dQ_1 … dQ_H, dK_1 … dK_G, dV_1 … dV_G
    const auto H = static_cast<std::size_t>(m_model.n_heads());
    const auto G = static_cast<std::size_t>(m_model.n_kv_heads());
    const arma::uword E = m_model.n_heads() * m_model.d_k();
    const arma::uword block = m_row / E;
    const std::string letter = block == 0 ? "Q" : block == 1 ? "K" : "V";
    Projection p;
    p.letter = letter;
    p.source = block == 0 ? in[0] : in[1];
    const std::size_t first = block == 0 ? 2 : block == 1 ? 2 + H : 2 + H + G;
    const std::size_t count = block == 0 ? H : G;
    p.grads.assign(in.begin() + static_cast<long>(first), in.begin() + static_cast<long>(first + count));
    p.width = letter == "V" ? m_model.d_v() : m_model.d_k();
    const std::string s = source_symbol(p.source.id);
    line("rows " + std::to_string(block * E + 1) + " … " + std::to_string(block * E + E) +
         " of in_proj_weight are W_" + letter + "'s (out × in), so this block is d" + letter + "ᵀ·" + s + ":");
    line("cell [r,c] = Σ_i d" + letter + "[i," + (block == 0 ? std::string("r") : "r − " + std::to_string(block * E)) +
         "]·" + s + "[i,c]");
    weight_cells(p, true, block * E);
}

// db[c] = Σ_i dY[i,c] for the cells' columns `cols`; `col_offset` is the
// first column of the bias in the step (b_K's in in_proj_bias)
void GradientWriter::bias_cells(const Projection& p, const std::vector<arma::uword>& cols, arma::uword col_offset) {
    line("the bias was added to every row, so its gradient adds up d" + p.letter + "'s column over the rows");
    for (const arma::uword c : cols) {
        const auto [grad, col] = gradient_column(p, c - col_offset, "column " + std::to_string(c + 1));
        const arma::rowvec y = grad->values.col(col).t();
        line(here(c) + " = Σ_i " + step_text(grad->id) + "[i," + std::to_string(col + 1) + "]" +
             at_head(grad->head) + " = " + sum_terms(y) + " = " + result_of(arma::accu(y), kept(c)));
    }
}

void GradientWriter::grad_bias(const std::string& letter, arma::uword width) {
    Projection p;
    p.grads = reads();  // the projections' gradients (dO for the output's bias)
    p.letter = letter;
    p.width = width;
    if (m_step.id == StepId::grad_b_key && !m_model.rope && !m_model.sinks && !m_model.qk_norm) {
        // Σ_j dS[i,j] = 0 on each row when its weights sum to 1, so Σ_j dK[j,:] = Σ_i Q[i,:]·0
        line("b_K adds the same q·b_K to every score of a row, which the softmax ignores: this gradient is 0 "
             "(up to rounding)");
    }
    bias_cells(p, columns(), 0);
}

// in_proj_bias holds b_Q, b_K and b_V one after the other, E each
void GradientWriter::grad_in_proj_bias() {
    const std::vector<StepKey> in = reads();  // dQ_1 … dQ_H, dK_1 … dK_G, dV_1 … dV_G
    const auto H = static_cast<std::size_t>(m_model.n_heads());
    const auto G = static_cast<std::size_t>(m_model.n_kv_heads());
    const arma::uword E = m_model.n_heads() * m_model.d_k();
    for (arma::uword block = 0; block < 3; ++block) {
        std::vector<arma::uword> cols;
        for (const arma::uword c : columns()) {
            if (c / E == block) {
                cols.push_back(c);
            }
        }
        if (cols.empty()) {
            continue;
        }
        Projection p;
        p.letter = block == 0 ? "Q" : block == 1 ? "K" : "V";
        const std::size_t first = block == 0 ? 0 : block == 1 ? H : H + G;
        const std::size_t count = block == 0 ? H : G;
        p.grads.assign(in.begin() + static_cast<long>(first), in.begin() + static_cast<long>(first + count));
        p.width = block == 2 ? m_model.d_v() : m_model.d_k();
        line("columns " + std::to_string(block * E + 1) + " … " + std::to_string(block * E + E) +
             " of in_proj_bias are b_" + p.letter + "'s");
        bias_cells(p, cols, block * E);
    }
}

// ── the inputs' and the context's gradients ─────────────────────────────
// "row 3 of W_Q, columns 1 … 2 (head 1)": where a head's weight row sits in the file
std::string GradientWriter::weight_row_text(const std::string& letter, int head, arma::uword row, arma::uword width) const {
    const std::string r = std::to_string(row + 1);
    const bool kv = letter != "Q";
    const std::string who = (kv && shared_kv() ? "key/value head " : "head ") + std::to_string(head);
    const std::string span = std::to_string(static_cast<arma::uword>(head - 1) * width + 1) + " … " +
                             std::to_string(static_cast<arma::uword>(head) * width);
    switch (m_model.weight_form) {
        case WeightForm::pytorch_block: {
            const arma::uword E = m_model.n_heads() * m_model.d_k();
            const arma::uword offset = letter == "Q" ? 0 : letter == "K" ? E : 2 * E;
            return "column " + r + " of in_proj_weight, rows " +
                   std::to_string(offset + static_cast<arma::uword>(head - 1) * width + 1) + " … " +
                   std::to_string(offset + static_cast<arma::uword>(head) * width) + " (W_" + letter +
                   (several_heads() ? ", " + who : std::string()) + ")";
        }
        case WeightForm::head_list:
            return (pytorch_layout() ? "column " + r + " of " : "row " + r + " of ") + who + "'s W_" + letter +
                   (pytorch_layout() ? " as written" : "");
        case WeightForm::split:
            break;
    }
    const bool split = m_model.n_heads() > 1 && (letter == "Q" ? true : m_model.n_kv_heads() > 1);
    if (pytorch_layout()) {
        return "column " + r + " of W_" + letter + " as written" + (split ? ", rows " + span + " (" + who + ")" : "");
    }
    return "row " + r + " of W_" + letter + (split ? ", columns " + span + " (" + who + ")" : "");
}

// dX (or dC) = each path's gradient row times its weight's transpose, summed
// dX with mla: through W_DQ (or each head's W_Q) and through W_kva
void GradientWriter::latent_sources() {
    const std::vector<StepKey> in = reads();
    const Mla& mla = *m_model.mla;
    const std::string q_name = mla.q_rank ? "q_a_proj" : "q_proj";
    line(std::string("X made the ") + (mla.q_rank ? "query latent (q_a_proj)" : "queries (q_proj)") +
         " and, through kv_a_proj_with_mqa, the latent and the rope key: the gradient adds the paths");
    if (m_model.P) {
        line("P is fixed, so this is also the gradient of X + P");
    }
    const std::size_t queries = in.size() - 2;
    const auto file_row = [&](const std::string& name, arma::uword c) {
        return (pytorch_layout() ? "column " : "row ") + std::to_string(c + 1) + " of " + name +
               (pytorch_layout() ? " as written" : "");
    };
    for (const arma::uword c : columns()) {
        std::vector<DotPart> parts;
        if (mla.q_rank) {
            const Step& grad = step_of(in[0]);
            const arma::rowvec d = grad.values.row(m_row);
            const arma::rowvec w = mla.W_qa->row(c);
            parts.push_back({{"dc_q = " + row_name(grad, m_row) + " = " + m_num.vector(d),
                              "w = " + file_row(q_name, c) + " = " + m_num.vector(w)},
                             "query latent's path",
                             "dc_q·w",
                             d,
                             w});
        } else {
            for (std::size_t k = 0; k < queries; ++k) {
                const Step& grad = step_of(in[k]);
                const arma::rowvec d = grad.values.row(m_row);
                const arma::rowvec w = m_model.heads[k].W_Q.row(c);
                const std::string sub = queries > 1 ? subscript(grad.head) : "";
                parts.push_back({{"dq" + sub + " = " + row_name(grad, m_row) + " = " + m_num.vector(d),
                                  "w = " + mla_weight_row(StepId::w_query, grad.head, c) + " = " + m_num.vector(w)},
                                 "queries' path" + (queries > 1 ? ", head " + std::to_string(grad.head) : std::string()),
                                 "dq" + sub + "·w",
                                 d,
                                 w});
            }
        }
        const Step& latent = step_of(in[queries]);
        const Step& rope = step_of(in[queries + 1]);
        const arma::rowvec d = arma::join_rows(latent.values.row(m_row), rope.values.row(m_row));
        const arma::rowvec w = mla.W_kva.row(c);
        parts.push_back({{"dkv = [" + row_name(latent, m_row) + ", " + row_name(rope, m_row) + "] = " +
                              m_num.vector(d),
                          "w = " + file_row("kv_a_proj_with_mqa", c) + " = " + m_num.vector(w)},
                         "latent's and rope key's path",
                         "dkv·w",
                         d,
                         w});
        const double value = kept(c);
        dot_sum(here(c), parts, &value);
    }
}

void GradientWriter::grad_sources() {
    if (m_model.mla) {
        latent_sources();
        return;
    }
    const std::vector<StepKey> in = reads();
    const bool inputs = m_step.id == StepId::grad_inputs;
    if (inputs && m_model.cross()) {
        line("cross-attention: X feeds only the queries, so only the queries' path comes back here;");
        line("the keys and values read the context C (see grad_context)");
    }
    if (inputs && m_model.P) {
        line("P is fixed, so this is also the gradient of X + P");
    }
    const auto H = static_cast<std::size_t>(m_model.n_heads());
    const auto G = static_cast<std::size_t>(m_model.n_kv_heads());
    for (const arma::uword c : columns()) {
        std::vector<DotPart> parts;
        std::size_t next = 0;
        const auto add = [&](const std::string& letter, const std::string& path, std::size_t count) {
            for (std::size_t k = 0; k < count; ++k, ++next) {
                const Step& grad = step_of(in[next]);
                const int head = grad.head;
                const HeadWeights& weights =
                    letter == "Q" ? m_model.heads[static_cast<std::size_t>(head - 1)] : m_model.kv_weights(head);
                const arma::mat& W = letter == "Q" ? weights.W_Q : letter == "K" ? weights.W_K : weights.W_V;
                const std::string sub = count > 1 ? subscript(head) : "";
                const std::string lower = letter == "Q" ? "dq" : letter == "K" ? "dk" : "dv";
                const arma::rowvec d = grad.values.row(m_row);
                const arma::rowvec w = W.row(c);
                parts.push_back({{lower + sub + " = " + row_name(grad, m_row) + " = " + m_num.vector(d),
                                  "w = " + weight_row_text(letter, head, c, W.n_cols) + " = " + m_num.vector(w)},
                                 path + (count > 1 ? ", " + head_text(grad) : std::string()),
                                 lower + sub + "·w",
                                 d,
                                 w});
            }
        };
        if (inputs) {
            add("Q", "queries' path", H);
        }
        if (!inputs || !m_model.cross()) {
            add("K", "keys' path", G);
            add("V", "values' path", G);
        }
        const double value = kept(c);
        dot_sum(here(c), parts, &value);
    }
}

}  // namespace qkv::explaining::gradients
