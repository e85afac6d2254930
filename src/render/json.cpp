// The JSON contract of OUTPUT FORMATS in man/qkv.1, written as a stream so that large traces need
// no giant string: one step per line, numbers in round-trip precision.
#include "attention/attention.hpp"
#include "attention/steps.hpp"
#include "base/numbers.hpp"
#include "model/keys.hpp"
#include "model/model.hpp"
#include "render/render.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <type_traits>

namespace qkv {

namespace {

std::string quoted(const std::string& text) { return nlohmann::json(text).dump(); }

void write_labels(std::ostream& out, const std::vector<std::string>& labels) {
    out << '[';
    for (std::size_t i = 0; i < labels.size(); ++i) {
        out << (i == 0 ? "" : ", ") << quoted(labels[i]);
    }
    out << ']';
}

// The same text as round_trip(), written straight into the stream: no string
// per number, which matters for matrices of a million entries.
void write_number(std::ostream& out, double value) {
    if (!std::isfinite(value)) {
        out << (std::isinf(value) && value < 0 ? "\"-inf\"" : round_trip(value));
        return;
    }
    char buffer[k_shortest_size + 2];
    char* end = write_shortest(buffer, value);
    if (std::find_if(buffer, end, [](char c) { return c == '.' || c == 'e'; }) == end) {
        *end++ = '.';
        *end++ = '0';
    }
    out.write(buffer, end - buffer);
}

// [a, b, c]: `count` numbers, the j-th from number(j)
template <class Number>
void write_numbers(std::ostream& out, arma::uword count, const Number& number) {
    out << '[';
    for (arma::uword j = 0; j < count; ++j) {
        if (j != 0) {
            out.write(", ", 2);
        }
        write_number(out, number(j));
    }
    out << ']';
}

template <class Matrix>
void write_optional(std::ostream& out, const std::optional<Matrix>& M) {
    if (!M) {
        out << "null";
    } else if constexpr (std::is_same_v<Matrix, arma::rowvec>) {
        write_json_row(out, *M);
    } else {
        write_json_rows(out, *M);
    }
}

void write_optional_number(std::ostream& out, const std::optional<double>& number) {
    if (number) {
        out << round_trip(*number);
    } else {
        out << "null";
    }
}

// rope.scaling as the example gave it, the keys its rope_type reads, with the
// attention factor it comes to; null without one
void write_scaling(std::ostream& out, const Rope& rope) {
    if (!rope.scaling) {
        out << "null";
        return;
    }
    const RopeScaling& scaling = *rope.scaling;
    const char* const types[] = {"linear", "dynamic", "yarn", "llama3"};
    out << "{\"rope_type\": " << quoted(types[static_cast<int>(scaling.type)])
        << ", \"factor\": " << round_trip(scaling.factor) << ", \"original_max_position_embeddings\": ";
    write_optional_number(out, scaling.original_max_position_embeddings);
    if (scaling.type == RopeScalingType::llama3) {
        out << ", \"low_freq_factor\": " << round_trip(scaling.low_freq_factor)
            << ", \"high_freq_factor\": " << round_trip(scaling.high_freq_factor);
    }
    if (scaling.type == RopeScalingType::yarn) {
        out << ", \"beta_fast\": " << round_trip(scaling.beta_fast) << ", \"beta_slow\": "
            << round_trip(scaling.beta_slow) << ", \"mscale\": ";
        write_optional_number(out, scaling.mscale);
        out << ", \"mscale_all_dim\": ";
        write_optional_number(out, scaling.mscale_all_dim);
        out << ", \"truncate\": " << (scaling.truncate ? "true" : "false");
    }
    out << ", \"attention_factor\": " << round_trip(rope_attention_factor(rope)) << '}';
}

std::string mask_kind_name(MaskKind kind) {
    switch (kind) {
        case MaskKind::none:
            return "none";
        case MaskKind::causal:
            return "causal";
        case MaskKind::window:
            return "window";
        case MaskKind::matrix:
            return "matrix";
    }
    return "none";
}

// Each key's part of "params" (the json column of model/keys.def): what the
// example gave the computation, every weight in the x·W layout (in × out)
// whatever layout its file used. A key whose numbers another key's part holds,
// or that gives the computation nothing, writes nothing (`none`).
void none(std::ostream&, const Model&, const KeyRow&) {}

void json_inputs(std::ostream& out, const Model& model, const KeyRow&) {
    out << "\"inputs\": ";
    write_json_rows(out, model.X);
}

void json_positional(std::ostream& out, const Model& model, const KeyRow&) {
    out << ",\n  \"positional\": ";
    write_optional(out, model.P);
}

void json_context(std::ostream& out, const Model& model, const KeyRow&) {
    out << ", \"context\": ";
    write_optional(out, model.C);
}

// A query head's W_K, W_V, b_K and b_V are those of the key/value head it reads ("kv_head").
void json_weights(std::ostream& out, const Model& model, const KeyRow&) {
    out << ",\n  \"heads\": [";
    for (std::size_t h = 0; h < model.heads.size(); ++h) {
        const int kv_head = model.kv_head_of(static_cast<int>(h + 1));
        const HeadWeights& queries = model.heads[h];
        const HeadWeights& keys = model.kv_weights(kv_head);
        out << (h == 0 ? "\n   " : ",\n   ") << "{\"head\": " << h + 1 << ", \"kv_head\": " << kv_head
            << ", \"W_Q\": ";
        write_json_rows(out, queries.W_Q);
        out << ", \"W_K\": ";
        write_json_rows(out, keys.W_K);
        out << ", \"W_V\": ";
        write_json_rows(out, keys.W_V);
        out << ", \"b_Q\": ";
        write_optional(out, queries.b_Q);
        out << ", \"b_K\": ";
        write_optional(out, keys.b_K);
        out << ", \"b_V\": ";
        write_optional(out, keys.b_V);
        out << '}';
    }
    out << "],\n  \"W_O\": ";
    write_optional(out, model.W_O);
    out << ", \"b_O\": ";
    write_optional(out, model.b_O);
}

// 1 where query i may attend to key j, after the mask and the padding
void json_mask(std::ostream& out, const Model& model, const KeyRow&) {
    out << ",\n  \"mask\": {\"kind\": " << quoted(mask_kind_name(model.mask_kind)) << ", \"window\": ";
    if (model.mask_kind == MaskKind::window) {
        out << model.window;
    } else {
        out << "null";
    }
    out << ", \"padding\": ";
    write_optional(out, model.padding);
    out << ", \"allowed\": ";
    write_json_rows(out, model.allowed());
    out << "}";
}

void json_rope(std::ostream& out, const Model& model, const KeyRow&) {
    out << ",\n  \"rope\": ";
    if (!model.rope) {
        out << "null";
        return;
    }
    const Rope& rope = *model.rope;
    out << "{\"base\": " << round_trip(rope.base) << ", \"style\": "
        << quoted(rope.style == RopeStyle::half ? "half" : "interleaved")
        << ", \"partial_rotary_factor\": " << round_trip(rope.partial_rotary_factor)
        << ", \"max_position_embeddings\": ";
    write_optional_number(out, rope.max_position_embeddings);
    out << ", \"scaling\": ";
    write_scaling(out, rope);
    out << '}';
}

// γ as the norm applies it (its default filled in), and the eps it uses
void json_qk_norm(std::ostream& out, const Model& model, const KeyRow&) {
    out << ",\n  \"qk_norm\": ";
    if (!model.qk_norm) {
        out << "null";
        return;
    }
    const QkNorm& norm = *model.qk_norm;
    out << "{\"over\": " << quoted(norm.over_all ? "all" : "head") << ", \"query\": ";
    write_json_row(out, norm.query);
    out << ", \"key\": ";
    write_json_row(out, norm.key);
    out << ", \"eps\": " << round_trip(model.qk_norm_eps()) << ", \"offset\": " << round_trip(norm.offset) << '}';
}

// the sizes, the latents' weights and the γ each norm applies (the heads' blocks are the heads' weights)
void json_mla(std::ostream& out, const Model& model, const KeyRow&) {
    out << ",\n  \"mla\": ";
    if (!model.mla) {
        out << "null";
        return;
    }
    const Mla& mla = *model.mla;
    out << "{\"kv_rank\": " << mla.kv_rank << ", \"rope_dim\": " << mla.rope_dim << ", \"nope_dim\": " << mla.nope_dim
        << ", \"v_dim\": " << mla.v_dim << ", \"q_rank\": ";
    if (mla.q_rank) {
        out << *mla.q_rank;
    } else {
        out << "null";
    }
    out << ", \"W_qa\": ";
    write_optional(out, mla.W_qa);
    out << ", \"q_a_layernorm\": ";
    if (mla.q_rank) {
        write_json_row(out, mla.q_norm);
    } else {
        out << "null";
    }
    out << ", \"W_kva\": ";
    write_json_rows(out, mla.W_kva);
    out << ", \"kv_a_layernorm\": ";
    write_json_row(out, mla.kv_norm);
    out << ", \"eps\": " << round_trip(model.rms_eps()) << '}';
}

void json_alibi(std::ostream& out, const Model& model, const KeyRow&) {
    out << ", \"alibi\": ";
    write_optional(out, model.alibi);
}

void json_sinks(std::ostream& out, const Model& model, const KeyRow&) {
    out << ", \"sinks\": ";
    write_optional(out, model.sinks);
}

void json_grad_output(std::ostream& out, const Model& model, const KeyRow&) {
    out << ", \"grad_output\": ";
    write_optional(out, model.grad_output);
}

// a number key: its number, or null
void json_number(std::ostream& out, const Model& model, const KeyRow& row) {
    out << ", " << quoted(std::string(row.name)) << ": ";
    write_optional_number(out, model.*row.number->member);
}

void write_params(std::ostream& out, const Model& model) {
    static constexpr void (*writers[])(std::ostream&, const Model&, const KeyRow&) = {
#define QKV_KEY(name, kind, stage, read, json, sheet, feeds, form, italic, meaning) json,
#include "model/keys.def"
    };
    out << " \"params\": {";
    for (std::size_t k = 0; k < std::size(writers); ++k) {
        writers[k](out, model, key_row(static_cast<Key>(k)));
    }
    out << "},\n";
}

}  // namespace

void render_json(const Trace& trace, const Model* model, const RenderOptions& options, std::ostream& out,
                 const std::function<void(std::ostream&)>& more) {
    const Dims& d = trace.dims;
    out << "{\"schema_version\": 1,\n";
    out << " \"title\": " << quoted(trace.title) << ",\n";
    out << " \"description\": " << quoted(trace.description) << ",\n";
    out << " \"tokens\": ";
    write_labels(out, trace.tokens);
    out << ",\n";
    if (trace.cross) {
        out << " \"context_tokens\": ";
        write_labels(out, trace.context_tokens);
        out << ",\n";
    }
    out << " \"dims\": {\"n\": " << d.n << ", \"m\": " << d.m << ", \"d_model\": " << d.d_model
        << ", \"heads\": " << d.heads << ", \"d_k\": " << d.d_k << ", \"d_v\": " << d.d_v << ", \"d_out\": " << d.d_out
        << ", \"kv_heads\": " << d.kv_heads << "},\n";
    out << " \"scale\": " << round_trip(trace.scale) << ",\n";
    if (model != nullptr) {
        write_params(out, *model);
    }
    out << " \"steps\": [";
    const auto steps = select_steps(trace, options);
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& step = *steps[s];
        out << (s == 0 ? "\n  " : ",\n  ");
        out << "{\"id\": " << quoted(step_text(step.id)) << ", \"head\": ";
        if (step.head == 0) {
            out << "null";
        } else {
            out << step.head;
        }
        out << ", \"title\": " << quoted(step.title) << ", \"formula\": " << quoted(step.formula)
            << ", \"latex\": " << quoted(step.latex);
        if (model != nullptr) {
            // the steps its arithmetic reads, each with its head (null: not per head)
            out << ", \"reads\": [";
            const auto reads = step_inputs(*model, StepKey{step.id, step.head});
            for (std::size_t r = 0; r < reads.size(); ++r) {
                out << (r == 0 ? "" : ", ") << "{\"id\": " << quoted(step_text(reads[r].id)) << ", \"head\": ";
                if (reads[r].head == 0) {
                    out << "null";
                } else {
                    out << reads[r].head;
                }
                out << '}';
            }
            out << ']';
        }
        out << ", \"notes\": ";
        write_labels(out, step.notes);
        out << ", \"rows\": ";
        write_labels(out, step.row_labels);
        out << ", \"cols\": ";
        write_labels(out, step.col_labels);
        out << ", \"values\": ";
        write_json_rows(out, step.values);
        out << "}";
    }
    out << "\n ]";
    if (more) {
        more(out);
    }
    out << "}\n";
}

void write_json_row(std::ostream& out, const arma::rowvec& row) {
    write_numbers(out, row.n_elem, [&](arma::uword j) { return row(j); });
}

void write_json_rows(std::ostream& out, const arma::mat& M) {
    out << '[';
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        if (i != 0) {
            out.write(", ", 2);
        }
        write_numbers(out, M.n_cols, [&](arma::uword j) { return M(i, j); });
    }
    out << ']';
}

}  // namespace qkv
