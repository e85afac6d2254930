// Multi-head latent attention (mla:, DeepSeek-V2/V3) as rows of the step
// table: the query latent (with q_rank) and the key/value latent, each after
// its RMSNorm, the rope key part every head shares, and each head's queries,
// keys and values made from them, as transformers' DeepseekV3Attention makes
// them. RoPE turns the rope parts alone (Rope::skip), so the rotated steps are
// the table's own.
#include "attention/steps_parts.hpp"

#include "attention/attention.hpp"

#include <algorithm>

namespace qkv::step_parts::mla {

namespace {

std::string count_text(arma::uword count, const std::string& what) {
    return std::to_string(count) + " " + what;
}

// "eps = 1e-06 (the default); γ = [1.1, 0.9] (kv_a_layernorm)"
std::string norm_note(const Model& model, const arma::rowvec& gamma, bool given, const std::string& name) {
    std::string text = "eps = " + readable(model.rms_eps()) + (model.norm_eps ? " (norm_eps:)" : " (the default)") +
                       "; γ = ";
    if (!given) {
        return text + "1 (" + name + " not given)";
    }
    return text + gamma_text(gamma) + " (" + name + ")";
}

}  // namespace

// ── when a step exists ──────────────────────────────────────────────────────
bool exists(const Model& model) { return model.mla.has_value(); }
bool q_rank_exists(const Model& model) { return model.mla && model.mla->q_rank; }

// ── what a step reads ───────────────────────────────────────────────────────
std::vector<StepKey> reads_q_latent(const Model&, int) { return {{StepId::q_latent, 0}}; }
std::vector<StepKey> reads_kv_latent(const Model&, int) { return {{StepId::kv_latent, 0}}; }
StepKey queries_source(const Model& model) {
    return q_rank_exists(model) ? StepKey{StepId::normed_q_latent, 0} : query_source(model);
}

// ── the arithmetic ──────────────────────────────────────────────────────────
arma::mat w_q_a(const Model& model, int, StepInputs) { return in_layout(model, *model.mla->W_qa); }
arma::mat w_kv_a(const Model& model, int, StepInputs) { return in_layout(model, model.mla->W_kva); }

// (n × r_q) = X·W_DQ
arma::mat q_latent(const Model& model, int, StepInputs in) { return project(*in[0], *model.mla->W_qa, std::nullopt); }
// (n × r) = X·W_DKV, the first r columns of X·W_kva
arma::mat kv_latent(const Model& model, int, StepInputs in) {
    return project(*in[0], model.mla->W_kva.head_cols(model.mla->kv_rank), std::nullopt);
}
// (n × d_r) = X·W_KR, the last d_r columns of X·W_kva
arma::mat rope_keys(const Model& model, int, StepInputs in) {
    return project(*in[0], model.mla->W_kva.tail_cols(model.mla->rope_dim), std::nullopt);
}
// each row over its root mean square, times γ
arma::mat normed_q_latent(const Model& model, int, StepInputs in) {
    return rms_norm(*in[0], model.mla->q_norm, model.rms_eps());
}
arma::mat normed_kv_latent(const Model& model, int, StepInputs in) {
    return rms_norm(*in[0], model.mla->kv_norm, model.rms_eps());
}
// (n × (d_n + d_r)) = [C·W_UK  K_R]: the head's own part beside the one every head shares
arma::mat keys(const Model& model, int g, StepInputs in) {
    return arma::join_rows(project(*in[0], model.kv_weights(g).W_K, std::nullopt), *in[1]);
}

// ── the words ───────────────────────────────────────────────────────────────
void describe_w_q_a(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "W_DQ", "W_{DQ}",
             "The weights that compress each token into its query latent (q_a_proj): " +
                 std::string(pytorch_layout(model) ? "row" : "column") +
                 " c, dotted with the token's row, gives number c of the latent.",
             dimension_labels(model.d_model()), prefixed_labels("c", *model.mla->q_rank));
    if (pytorch_layout(model)) {
        std::swap(step.row_labels, step.col_labels);
        step.notes.push_back("in PyTorch's layout, out × in, as the state dict holds q_a_proj.weight");
    }
}

void describe_w_kv_a(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    set_text(step, "W_kva = [W_DKV  W_KR]", "W_{kva} = \\begin{bmatrix} W_{DKV} & W_{KR} \\end{bmatrix}",
             "The weights of kv_a_proj_with_mqa: its first r columns compress each token into the latent that every "
             "head's keys and values are made from, its last d_r columns make the key part that carries positions.",
             dimension_labels(model.d_model()), prefixed_labels("c", mla.kv_rank));
    for (arma::uword j = 1; j <= mla.rope_dim; ++j) {
        step.col_labels.push_back("r" + std::to_string(j));
    }
    if (pytorch_layout(model)) {
        std::swap(step.row_labels, step.col_labels);
        step.notes.push_back("in PyTorch's layout, out × in, as the state dict holds kv_a_proj_with_mqa.weight");
    }
    step.notes.push_back("r = " + std::to_string(mla.kv_rank) + " latent columns, then d_r = " +
                         std::to_string(mla.rope_dim) + " rope columns");
}

void describe_q_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "C_Q = " + context.names().queries + "·W_DQ", "C_{Q} = " + context.names().queries + " W_{DQ}",
             "Each token compressed to a short query latent of r_q numbers; every head's query is made from it.",
             model.tokens, prefixed_labels("c", *model.mla->q_rank));
    step.notes.push_back("r_q = " + std::to_string(*model.mla->q_rank) + " (q_rank), against d_model = " +
                         std::to_string(model.d_model()));
}

void describe_normed_q_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "C_Q,norm = RMSNorm(C_Q): each row c / √(mean(c²) + eps) ∘ γ",
             "C_{Q,\\mathrm{norm}} = \\frac{c}{\\sqrt{\\operatorname{mean}(c^2) + \\epsilon}} \\odot \\gamma",
             "The query latent divided by its root mean square and multiplied by γ, so that the queries are made "
             "from rows of a steady size.",
             model.tokens, prefixed_labels("c", *model.mla->q_rank));
    step.notes.push_back(norm_note(model, model.mla->q_norm, model.mla->q_norm_given, "q_a_layernorm"));
}

void describe_kv_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    set_text(step, "C_KV = " + context.names().keys + "·W_DKV", "C_{KV} = " + context.names().keys + " W_{DKV}",
             "Each token compressed to one latent of r numbers, the first r columns of kv_a_proj_with_mqa. Every "
             "head's keys and values are made from it, so it is all a cache needs to keep of them.",
             context.key_tokens(), prefixed_labels("c", mla.kv_rank));
    step.notes.push_back("r = " + std::to_string(mla.kv_rank) + " (kv_rank), against H·(d_n + d_v) = " +
                         std::to_string(model.n_heads()) + " × " + std::to_string(mla.nope_dim + mla.v_dim) + " = " +
                         std::to_string(model.n_heads() * (mla.nope_dim + mla.v_dim)) +
                         " numbers of keys and values without positions");
}

void describe_normed_kv_latent(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "C = RMSNorm(C_KV): each row c / √(mean(c²) + eps) ∘ γ",
             "C = \\frac{c}{\\sqrt{\\operatorname{mean}(c^2) + \\epsilon}} \\odot \\gamma",
             "The latent divided by its root mean square and multiplied by γ. This is what a decoding cache keeps "
             "for each token, with the rotated rope key.",
             context.key_tokens(), prefixed_labels("c", model.mla->kv_rank));
    step.notes.push_back(norm_note(model, model.mla->kv_norm, model.mla->kv_norm_given, "kv_a_layernorm"));
}

void describe_rope_keys(const StepContext& context, Step& step) {
    const Model& model = context.model();
    set_text(step, "K_R = " + context.names().keys + "·W_KR", "K_{R} = " + context.names().keys + " W_{KR}",
             "The key part that RoPE will turn: the last d_r columns of kv_a_proj_with_mqa. There is one for each "
             "token, and every head's key ends with it, since a latent turned by RoPE could no longer be absorbed "
             "into the queries.",
             context.key_tokens(), prefixed_labels("r", model.mla->rope_dim));
    step.notes.push_back("d_r = " + std::to_string(model.mla->rope_dim) + " (rope_dim), shared by all " +
                         count_text(model.n_heads(), "heads"));
}

void describe_queries(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    const bool latent = q_rank_exists(model);
    const std::string source = latent ? "C_Q,norm" : context.names().queries;
    const std::string source_latex = latent ? "C_{Q,\\mathrm{norm}}" : context.names().queries;
    const std::string weight = latent ? "UQ" : "Q";
    set_text(step, "Q = " + source + "·W_" + weight, "Q = " + source_latex + " W_{" + weight + "}",
             "Each token's query for this head: its first d_n numbers (q_nope) meet the keys' latent part, its last "
             "d_r (q_rope) are turned by RoPE and meet the shared rope key.",
             model.tokens, dimension_labels(model.d_k()));
    step.notes.push_back("d_n = " + std::to_string(mla.nope_dim) + " (nope_dim) + d_r = " +
                         std::to_string(mla.rope_dim) + " (rope_dim); W_" + weight + " is this head's " +
                         std::to_string(model.d_k()) + " columns of " + (latent ? "q_b_proj" : "q_proj"));
}

void describe_keys(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    set_text(step, "K = [C·W_UK  K_R]", "K = \\begin{bmatrix} C W_{UK} & K_{R} \\end{bmatrix}",
             "Each token's key for this head: d_n numbers made from the latent by this head's W_UK, then the rope "
             "key that every head shares.",
             context.key_tokens(), dimension_labels(model.d_k()));
    step.notes.push_back("W_UK is this head's first d_n = " + std::to_string(mla.nope_dim) + " of " +
                         std::to_string(mla.nope_dim + mla.v_dim) + " columns of kv_b_proj; elements " +
                         std::to_string(mla.nope_dim + 1) + " … " + std::to_string(model.d_k()) + " are rope_keys");
    // what a cache keeps: the latent and the rope key, against every head's keys and values
    const arma::uword latent = mla.kv_rank + mla.rope_dim;
    const arma::uword full = model.n_heads() * (model.d_k() + mla.v_dim);
    step.notes.push_back("a cache of the latent and the rope key holds r + d_r = " + std::to_string(latent) +
                         " numbers per token, against " + std::to_string(full) + " for every head's keys and values");
}

void describe_values(const StepContext& context, Step& step) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    set_text(step, "V = C·W_UV", "V = C W_{UV}",
             "Each token's value for this head, made from the latent by this head's W_UV.", context.key_tokens(),
             dimension_labels(model.d_v()));
    step.notes.push_back("W_UV is this head's last d_v = " + std::to_string(mla.v_dim) + " of " +
                         std::to_string(mla.nope_dim + mla.v_dim) + " columns of kv_b_proj");
}

// a head's block of an up-projection, in the file's layout: W_Q (or W_UQ), W_UK or W_UV
void describe_head_weight(const StepContext& context, Step& step, StepId id) {
    const Model& model = context.model();
    const Mla& mla = *model.mla;
    const bool latent = q_rank_exists(model);
    const bool query = id == StepId::w_query;
    const MlaBlock block = mla_block(model, id, std::max(step.head, 1));
    set_text(step, "W_" + block.subscript, "W_{" + block.subscript + "}",
             query ? "This head's block of " + block.file + ": it makes the head's queries, q_nope then q_rope."
             : id == StepId::w_key ? std::string("This head's block of kv_b_proj that makes its keys from the latent.")
                                   : std::string("This head's block of kv_b_proj that makes its values from the latent."),
             query && !latent ? dimension_labels(model.d_model()) : prefixed_labels("c", query ? *mla.q_rank : mla.kv_rank),
             dimension_labels(block.width));
    if (pytorch_layout(model)) {
        std::swap(step.row_labels, step.col_labels);
    }
    step.notes.push_back((pytorch_layout(model) ? "rows " : "columns ") + std::to_string(block.first + 1) + " … " +
                         std::to_string(block.first + block.width) + " of " + block.file +
                         (pytorch_layout(model) ? " as the state dict holds it (out × in)" : ""));
}

}  // namespace qkv::step_parts::mla

namespace qkv {

MlaBlock mla_block(const Model& model, StepId weight, int head) {
    const Mla& mla = *model.mla;
    const bool latent = mla.q_rank.has_value();
    const bool query = weight == StepId::w_query;
    MlaBlock block;
    block.file = query ? (latent ? "q_b_proj" : "q_proj") : "kv_b_proj";
    block.subscript = query ? (latent ? "UQ" : "Q") : weight == StepId::w_key ? "UK" : "UV";
    block.width = query ? model.d_k() : weight == StepId::w_key ? mla.nope_dim : mla.v_dim;
    const arma::uword stride = query ? model.d_k() : mla.nope_dim + mla.v_dim;
    block.first = static_cast<arma::uword>(head - 1) * stride + (weight == StepId::w_value ? mla.nope_dim : 0);
    return block;
}

}  // namespace qkv
