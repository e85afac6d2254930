// The backward pass of multi-head latent attention (mla:) as rows of the step
// table: from each head's dQ, dK and dV (the rows every example has) back
// through the up-projections to the latents, through their RMSNorms, and to
// the weights that made them and the inputs. Each head's dK holds its own share
// of the rope key's gradient; grad_rope_keys adds the shares up, since one
// rope key served every head.
#include "attention/steps_parts.hpp"

#include "attention/attention.hpp"

namespace qkv::step_parts::mla {

namespace {

int heads(const Model& model) { return static_cast<int>(model.n_heads()); }

std::vector<std::string> latent_labels(arma::uword r, arma::uword d_r) {
    std::vector<std::string> labels = prefixed_labels("c", r);
    for (const std::string& label : prefixed_labels("r", d_r)) {
        labels.push_back(label);
    }
    return labels;
}

}  // namespace

// ── when a step exists ──────────────────────────────────────────────────────
bool backward_exists(const Model& model) { return model.mla && model.backward(); }
bool q_rank_backward_exists(const Model& model) { return q_rank_exists(model) && model.backward(); }

StepKey latent_source(const Model& model) {
    return model.mla ? StepKey{StepId::normed_kv_latent, 0} : key_source(model);
}

// ── what a step reads ───────────────────────────────────────────────────────
std::vector<StepKey> reads_grad_normed_q_latent(const Model& model, int) {
    return every_head(StepId::grad_queries, heads(model));
}
std::vector<StepKey> reads_grad_q_latent(const Model&, int) {
    return {{StepId::grad_normed_q_latent, 0}, {StepId::q_latent, 0}};
}
std::vector<StepKey> reads_grad_rope_keys(const Model& model, int) { return every_head(StepId::grad_keys, heads(model)); }
// every head's dK, then every head's dV
std::vector<StepKey> reads_grad_normed_kv_latent(const Model& model, int) {
    std::vector<StepKey> keys = every_head(StepId::grad_keys, heads(model));
    const std::vector<StepKey> values = every_head(StepId::grad_values, heads(model));
    keys.insert(keys.end(), values.begin(), values.end());
    return keys;
}
std::vector<StepKey> reads_grad_kv_latent(const Model&, int) {
    return {{StepId::grad_normed_kv_latent, 0}, {StepId::kv_latent, 0}};
}
std::vector<StepKey> reads_grad_w_q_a(const Model& model, int) {
    return {query_source(model), {StepId::grad_q_latent, 0}};
}
std::vector<StepKey> reads_grad_w_kv_a(const Model& model, int) {
    return {key_source(model), {StepId::grad_kv_latent, 0}, {StepId::grad_rope_keys, 0}};
}
// dX: through W_DQ (with q_rank) or every head's W_Q, then through W_kva
std::vector<StepKey> reads_grad_inputs(const Model& model, int) {
    std::vector<StepKey> keys = q_rank_exists(model) ? std::vector<StepKey>{{StepId::grad_q_latent, 0}}
                                                     : every_head(StepId::grad_queries, heads(model));
    keys.push_back({StepId::grad_kv_latent, 0});
    keys.push_back({StepId::grad_rope_keys, 0});
    return keys;
}

// ── the arithmetic ──────────────────────────────────────────────────────────
// (n × r_q) = Σ_h dQ_h (n × d_k) · W_UQ,hᵀ (d_k × r_q)
arma::mat grad_normed_q_latent(const Model& model, int, StepInputs in) {
    arma::mat result(in[0]->n_rows, *model.mla->q_rank, arma::fill::zeros);
    for (std::size_t h = 0; h < in.size(); ++h) {
        result += product(*in[h], model.heads[h].W_Q.t());
    }
    return result;
}

// back through an RMSNorm: dx = r·γ∘dy − x·r³·mean(x∘γ∘dy), r = 1/√(mean(x²) + eps)
arma::mat grad_q_latent(const Model& model, int, StepInputs in) {
    return rms_norm_back(*in[1], model.mla->q_norm, model.rms_eps(), *in[0]);
}
arma::mat grad_kv_latent(const Model& model, int, StepInputs in) {
    return rms_norm_back(*in[1], model.mla->kv_norm, model.rms_eps(), *in[0]);
}
// dγ = Σ over the rows of dy ∘ x·r
arma::mat grad_norm_gain(const Model& model, int, StepInputs in) {
    return rms_norm_gain_gradient(*in[1], model.rms_eps(), *in[0]);
}

// (n × d_r) = Σ_h dK_h[:, d_n + 1 …]: every head's share of the one rope key
arma::mat grad_rope_keys(const Model& model, int, StepInputs in) {
    const arma::uword d_n = model.mla->nope_dim;
    arma::mat result(in[0]->n_rows, model.mla->rope_dim, arma::fill::zeros);
    for (const arma::mat* dK : in) {
        result += dK->cols(d_n, dK->n_cols - 1);
    }
    return result;
}

// (n × r) = Σ_h dK_h[:, 1 … d_n]·W_UK,hᵀ + dV_h·W_UV,hᵀ
arma::mat grad_normed_kv_latent(const Model& model, int, StepInputs in) {
    const auto H = static_cast<std::size_t>(heads(model));
    const arma::uword d_n = model.mla->nope_dim;
    arma::mat result(in[0]->n_rows, model.mla->kv_rank, arma::fill::zeros);
    for (std::size_t h = 0; h < H; ++h) {
        const HeadWeights& weights = model.heads[h];
        result += product(in[h]->head_cols(d_n), weights.W_K.t()) + product(*in[H + h], weights.W_V.t());
    }
    return result;
}

// (r × H·d_n) = Cᵀ·[dK_1[:, 1 … d_n] … dK_H[:, 1 … d_n]], in the file's layout: W_UK's part of kv_b_proj
arma::mat grad_w_key(const Model& model, int, StepInputs in) {
    arma::mat dK;
    for (std::size_t k = 1; k < in.size(); ++k) {
        dK = arma::join_rows(dK, in[k]->head_cols(model.mla->nope_dim));
    }
    return in_layout(model, product(in[0]->t(), dK));
}

// (n × d_model) = dC_Q·W_DQᵀ (or Σ_h dQ_h·W_Q,hᵀ) + [dC_KV dK_R]·W_kvaᵀ
arma::mat grad_inputs(const Model& model, int, StepInputs in) {
    const Mla& mla = *model.mla;
    const std::size_t queries = in.size() - 2;
    arma::mat result = product(arma::join_rows(*in[queries], *in[queries + 1]), mla.W_kva.t());
    if (mla.q_rank) {
        result += product(*in[0], mla.W_qa->t());
    } else {
        for (std::size_t h = 0; h < queries; ++h) {
            result += product(*in[h], model.heads[h].W_Q.t());
        }
    }
    return result;
}

// ── the words ───────────────────────────────────────────────────────────────
void describe_grad_normed_q_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool several = model.n_heads() > 1;
    set_text(step, std::string("dC_Q,norm = ") + (several ? "Σ_h dQ_h·W_UQ,hᵀ" : "dQ·W_UQᵀ"),
             std::string("dC_{Q,\\mathrm{norm}} = ") + (several ? "\\sum_h dQ_h W_{UQ,h}^\\top" : "dQ\\, W_{UQ}^\\top"),
             "Every head's queries were made from this latent, each through its own block W_UQ of q_b_proj, so its "
             "gradient adds up each head's dQ taken back through that block.",
             model.tokens, prefixed_labels("c", *model.mla->q_rank));
}

// back through q_a_layernorm (grad_q_latent) or kv_a_layernorm (grad_kv_latent)
void describe_grad_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool queries = step.id == StepId::grad_q_latent;
    const std::string name = queries ? "dC_Q" : "dC_KV";
    set_text(step, name + " = r·γ∘dy − c·r³·mean(c∘γ∘dy), r = 1/√(mean(c²) + eps)",
             (queries ? "dC_Q" : "dC_{KV}") +
                 std::string(" = r\\,\\gamma \\odot dy - c\\, r^3 \\operatorname{mean}(c \\odot \\gamma \\odot dy)"),
             std::string("Back through ") + (queries ? "q_a_layernorm" : "kv_a_layernorm") +
                 ": each element passes on its own gradient times r·γ, less what it did to the row's root mean square, "
                 "which every element of the row was divided by.",
             queries ? model.tokens : context.key_tokens(),
             prefixed_labels("c", queries ? *model.mla->q_rank : model.mla->kv_rank));
    step.notes.push_back(queries ? "dy is grad_normed_q_latent's row, c the row of q_latent"
                                 : "dy is grad_normed_kv_latent's row, c the row of kv_latent");
}

void describe_grad_rope_keys(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    const bool several = model.n_heads() > 1;
    const std::string span = std::to_string(mla.nope_dim + 1) + " … " + std::to_string(mla.nope_dim + mla.rope_dim);
    const std::string span_latex =
        std::to_string(mla.nope_dim + 1) + "\\ldots " + std::to_string(mla.nope_dim + mla.rope_dim);
    set_text(step, std::string("dK_R = ") + (several ? "Σ_h dK_h" : "dK") + "[:, " + span + "]",
             std::string("dK_R = ") + (several ? "\\sum_h {dK_h}" : "dK") + "_{:,\\," + span_latex + "}",
             several ? "One rope key served every head, so its gradient is the sum of every head's share: the last d_r "
                       "columns of each head's dK, already turned back through RoPE."
                     : "The last d_r columns of the one head's dK, already turned back through RoPE.",
             context.key_tokens(), prefixed_labels("r", mla.rope_dim));
    if (several) {
        step.notes.push_back("summed over all " + std::to_string(model.n_heads()) +
                             " heads: grad_keys holds each head's own share");
    }
}

void describe_grad_normed_kv_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool several = model.n_heads() > 1;
    const std::string sum = several ? "Σ_h (" : "";
    const std::string h = several ? "_h" : "";
    set_text(step,
             "dC = " + sum + "dK" + h + "[:, 1 … d_n]·W_UK" + (several ? ",h" : "") + "ᵀ + dV" + h + "·W_UV" +
                 (several ? ",h" : "") + "ᵀ" + (several ? ")" : ""),
             std::string("dC = ") + (several ? "\\sum_h \\left(" : "") + "dK^{\\mathrm{nope}}" + h + " W_{UK" +
                 (several ? ",h" : "") + "}^\\top + dV" + h + " W_{UV" + (several ? ",h" : "") + "}^\\top" +
                 (several ? "\\right)" : ""),
             "The latent made every head's keys (their first d_n numbers, through W_UK) and values (through W_UV), so "
             "its gradient adds all those paths back through the blocks' transposes. The rope key did not come from "
             "the latent: it has its own gradient.",
             context.key_tokens(), prefixed_labels("c", model.mla->kv_rank));
}

void describe_grad_norm_gain(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool queries = step.id == StepId::grad_q_a_layernorm;
    const std::string latent = queries ? "q_latent" : "kv_latent";
    set_text(step, "dγ = Σ over rows of dy ∘ c·r, r = 1/√(mean(c²) + eps)",
             "d\\gamma = \\sum_i dy_i \\odot c_i\\, r_i",
             "γ multiplied each normed element, so its gradient adds up, over every token, the gradient of that "
             "element times the latent's element divided by its row's root mean square.",
             {"γ"}, prefixed_labels("c", queries ? *model.mla->q_rank : model.mla->kv_rank));
    const bool given = queries ? model.mla->q_norm_given : model.mla->kv_norm_given;
    step.notes.push_back(std::string("dy is grad_normed_") + latent + ", c is " + latent + "; γ is " +
                         (queries ? "q_a_layernorm" : "kv_a_layernorm") + (given ? "" : ", 1 where not given"));
}

void describe_grad_w_q_a(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const std::string& x = context.names().queries;
    backward::describe_weight_gradient(model, step,
                                       {.name = "W_DQ",
                                        .name_latex = "W_{DQ}",
                                        .source = x,
                                        .source_latex = x,
                                        .dy = "dC_Q",
                                        .dy_latex = "dC_Q",
                                        .in = dimension_labels(model.d_model()),
                                        .out = prefixed_labels("c", *model.mla->q_rank)});
    step.explanation = "Each number of the query latent was its token's row times a column of W_DQ, so a weight's "
                       "gradient adds up, over the tokens, the input value it multiplied times the latent's gradient.";
    step.notes.push_back(backward::layout_note(model, "q_a_proj"));
}

void describe_grad_w_kv_a(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    const std::string& x = context.names().keys;
    backward::describe_weight_gradient(model, step,
                                       {.name = "W_kva",
                                        .name_latex = "W_{kva}",
                                        .source = x,
                                        .source_latex = x,
                                        .dy = "[dC_KV  dK_R]",
                                        .dy_latex = "\\begin{bmatrix} dC_{KV} & dK_R \\end{bmatrix}",
                                        .in = dimension_labels(model.d_model()),
                                        .out = latent_labels(mla.kv_rank, mla.rope_dim)});
    step.explanation = "kv_a_proj_with_mqa made the latent (its first r columns) and the rope key (its last d_r), so "
                       "its gradient is the inputs' transpose times both gradients side by side.";
    step.notes.push_back(backward::layout_note(model, "kv_a_proj_with_mqa"));
}

// grad_w_query, grad_w_key, grad_w_value: q_proj (q_b_proj), and kv_b_proj's W_UK and W_UV parts
void describe_grad_head_weights(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    const bool query = step.id == StepId::grad_w_query;
    const bool key = step.id == StepId::grad_w_key;
    const bool latent = q_rank_exists(model);
    // head 1's block: where each head's part sits within its own block of the file's weight
    const MlaBlock block = mla_block(model, query ? StepId::w_query : key ? StepId::w_key : StepId::w_value, 1);
    const std::string source = query ? (latent ? "C_Q,norm" : context.names().queries) : "C";
    const std::string source_latex = query ? (latent ? "C_{Q,\\mathrm{norm}}" : context.names().queries) : "C";
    const std::string letter = query ? "Q" : key ? "K" : "V";
    const std::string dy = key ? "[dK_1[:, 1 … d_n] … ]" : "[d" + letter + "_1 … d" + letter + "_H]";
    const std::string dy_latex = key ? "\\begin{bmatrix} dK^{\\mathrm{nope}}_1 & \\cdots \\end{bmatrix}"
                                     : "\\begin{bmatrix} d" + letter + "_1 & \\cdots & d" + letter + "_H \\end{bmatrix}";
    const bool several = model.n_heads() > 1;
    std::vector<std::string> in = query && !latent ? dimension_labels(model.d_model())
                                                   : prefixed_labels("c", query ? *mla.q_rank : mla.kv_rank);
    backward::describe_weight_gradient(
        model, step,
        {.name = "W_" + letter,
         .name_latex = "W_{" + letter + "}",
         .source = source,
         .source_latex = source_latex,
         .dy = several ? dy : key ? "dK[:, 1 … d_n]" : "d" + letter,
         .dy_latex = several ? dy_latex : key ? "dK^{\\mathrm{nope}}" : "d" + letter,
         .in = std::move(in),
         .out = prefixed_labels(letter == "Q" ? "q" : letter == "K" ? "k" : "v", model.n_heads() * block.width)});
    step.explanation =
        query ? "Each head's queries were " + source + " times its block of " + block.file +
                    ", so a weight's gradient adds up, over the tokens, the value it multiplied times the gradient of "
                    "the query it made."
        : key ? std::string("Each head's keys began with C times its W_UK, so W_UK's gradient is Cᵀ times the first "
                            "d_n columns of the head's dK; the rope part came from kv_a_proj_with_mqa instead.")
              : std::string("Each head's values were C times its W_UV, so W_UV's gradient is Cᵀ times the head's dV.");
    if (query) {
        step.notes.push_back(backward::layout_note(model, block.file));
        return;
    }
    step.notes.push_back("W_" + block.subscript + (several ? " of every head side by side" : "") + ": head h's are " +
                         (pytorch_layout(model) ? "rows " : "columns ") + std::to_string(block.first + 1) + " … " +
                         std::to_string(block.first + block.width) +
                         " of its block of d_n + d_v = " + std::to_string(mla.nope_dim + mla.v_dim) + " in kv_b_proj's " +
                         (pytorch_layout(model) ? "out × in" : "in × out") + " gradient");
}

void describe_grad_inputs(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const bool latent = q_rank_exists(model);
    const bool several = model.n_heads() > 1;
    const std::string queries = latent ? "dC_Q·" + backward::weight_text(model, "DQ", true)
                                       : std::string(several ? "Σ_h dQ_h·" : "dQ·") + backward::weight_text(model, several ? "Q,h" : "Q", true);
    const std::string queries_latex =
        latent ? "dC_Q\\, " + backward::weight_latex(model, "DQ", true)
               : std::string(several ? "\\sum_h dQ_h\\, " : "dQ\\, ") + backward::weight_latex(model, several ? "Q,h" : "Q", true);
    set_text(step, "dX = " + queries + " + [dC_KV  dK_R]·" + backward::weight_text(model, "kva", true),
             "dX = " + queries_latex + " + \\begin{bmatrix} dC_{KV} & dK_R \\end{bmatrix} " +
                 backward::weight_latex(model, "kva", true),
             std::string("X made the ") + (latent ? "query latent" : "queries") +
                 ", and through kv_a_proj_with_mqa the latent and the rope key, so its gradient adds the paths, each "
                 "back through its weight's transpose.",
             model.tokens, dimension_labels(model.d_model()));
    if (model.P) {
        step.notes.push_back("P is fixed, so this is also the gradient of X + P");
    }
}

}  // namespace qkv::step_parts::mla
