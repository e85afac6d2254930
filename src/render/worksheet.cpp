// What is on a worksheet: the givens of the example, then each step asked
// with its heading, formula, shape and a table to fill in (or, in the key,
// filled in), as a document that each document format writes.
#include "render/worksheet.hpp"
#include "attention/divisor.hpp"
#include "base/numbers.hpp"
#include "attention/step_handlers.hpp"

#include "attention/steps.hpp"
#include "base/diagnostics.hpp"
#include "model/keys.hpp"
#include "model/model.hpp"
#include "render/render.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace qkv {

namespace {

// Given numbers are shown as they are, with up to this many decimals.
constexpr int k_given_decimals = 4;

// A given matrix of the sheet, with its labels as a step carries them.
struct GivenMatrix {
    std::string name;   // "Query weights, head 1"
    std::string latex;  // "W_{Q}"
    Step matrix;        // values, row and column labels
};

struct Givens {
    std::vector<GivenMatrix> matrices;
    std::vector<std::string> settings;  // the scale, the mask's kind, RoPE, …
};

std::vector<std::string> dimension_labels(arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword j = 1; j <= count; ++j) {
        labels.push_back("d" + std::to_string(j));
    }
    return labels;
}

// A given number as a person reads it: "2", "0.0625", "1.7320508075688772".
std::string number_text(double value) { return readable(value); }

// An RMSNorm's γ as the sheet gives it: every number, or what it is when the file leaves it out.
std::string gamma_given(const arma::rowvec& values, bool given, const std::string& otherwise) {
    if (!given) {
        return otherwise;
    }
    std::string text;
    for (const double value : values) {
        text += (text.empty() ? "[" : ", ") + number_text(value);
    }
    return text + "]";
}

// The fewest decimals (up to k_given_decimals) that show every entry as it is.
int exact_decimals(const arma::mat& M) {
    int decimals = 0;
    for (const double value : M) {
        if (!std::isfinite(value)) {
            continue;
        }
        while (decimals < k_given_decimals) {
            if (std::strtod(fixed(value, decimals).c_str(), nullptr) == value) {
                break;
            }
            ++decimals;
        }
    }
    return decimals;
}

Step given_step(const arma::mat& values, std::vector<std::string> rows, std::vector<std::string> cols) {
    Step step;
    step.values = values;
    step.row_labels = std::move(rows);
    step.col_labels = std::move(cols);
    return step;
}

// A weight matrix in the file's layout: in × out, or out × in for PyTorch's
// (the model holds every weight as in × out).
GivenMatrix weight_matrix(const Model& model, const std::string& name, const std::string& letter, const arma::mat& W) {
    const arma::mat shown = model.layout == Layout::pytorch ? arma::mat(W.t()) : W;
    return {name, "W_{" + letter + "}",
            given_step(shown, dimension_labels(shown.n_rows), dimension_labels(shown.n_cols))};
}

GivenMatrix bias_vector(const std::string& name, const std::string& letter, const arma::rowvec& b) {
    return {name, "b_{" + letter + "}", given_step(b, {"b_" + letter}, dimension_labels(b.n_elem))};
}

// ", head 2" on an example of several heads; for split weights also where the
// head's part sits in the file's matrix: "(columns 3–4 of W_Q)".
std::string head_suffix(const Model& model, int head, bool key_value, const std::string& letter, arma::uword width) {
    const bool shared = key_value && model.n_kv_heads() != model.n_heads();
    const arma::uword heads = key_value ? model.n_kv_heads() : model.n_heads();
    if (model.n_heads() == 1) {
        return "";
    }
    std::string suffix = std::string(shared ? ", key/value head " : ", head ") + std::to_string(head);
    if (model.weight_form == WeightForm::split && heads > 1) {
        const arma::uword first = (static_cast<arma::uword>(head) - 1) * width + 1;
        suffix += std::string(" (") + (model.layout == Layout::pytorch ? "rows " : "columns ") +
                  std::to_string(first) + "–" + std::to_string(first + width - 1) + " of W_" + letter + ")";
    }
    return suffix;
}

// Each key's settings as sentences (the sheet column of model/keys.def): the
// layout, the scale, the mask's kind, RoPE, ALiBi's slopes and the sinks of
// `heads`, hand rounding. The keys whose numbers the sheet gives as matrices
// (givens), and those that are not the computation's, say nothing (`none`).
using Lines = std::vector<std::string>;

void none(const Model&, const Trace&, const std::vector<int>&, const KeyRow&, Lines&) {}

// ", head 2" on an example of several heads
std::string head_text(const Model& model, int h) {
    return model.n_heads() > 1 ? ", head " + std::to_string(h) : std::string();
}

void sheet_layout(const Model& model, const Trace&, const std::vector<int>&, const KeyRow&, Lines& lines) {
    if (model.layout == Layout::pytorch) {
        lines.push_back("The weights are written out × in, as PyTorch stores them: Q = X·W_Qᵀ.");
    }
}

void sheet_scale(const Model& model, const Trace&, const std::vector<int>&, const KeyRow&, Lines& lines) {
    const Divisor divisor = divisor_of(model);
    lines.push_back(!divisor.scaled ? std::string("Scale: none; the scaled scores equal the scores.")
                    : divisor.root  ? "Scale: divide the scores by " + divisor.symbol + " = " + divisor.exact + "."
                                    : "Scale: divide the scores by " + divisor.exact + ".");
}

void sheet_mask(const Model& model, const Trace&, const std::vector<int>&, const KeyRow&, Lines& lines) {
    if (model.mask_kind == MaskKind::causal) {
        lines.push_back("Mask: causal; query i may attend to keys 1 … i.");
    }
    if (model.mask_kind == MaskKind::window) {
        lines.push_back("Mask: a sliding window of " + std::to_string(model.window) +
                        "; query i may attend to keys i − " + std::to_string(model.window - 1) + " … i.");
    }
}

void sheet_rope(const Model& model, const Trace& trace, const std::vector<int>& heads, const KeyRow&, Lines& lines) {
    if (model.rope) {
        const Step* rotated = trace.find(StepId::rotated_queries, heads.empty() ? 1 : heads.front());
        std::string line = "RoPE";
        for (const auto& note : rotated != nullptr ? rotated->notes : std::vector<std::string>{}) {
            line += (line == "RoPE" ? ": " : "; ") + note;
        }
        lines.push_back(line + ".");
    }
}

void sheet_qk_norm(const Model& model, const Trace&, const std::vector<int>&, const KeyRow&, Lines& lines) {
    if (model.qk_norm) {
        const QkNorm& norm = *model.qk_norm;
        const auto gamma = [&](const arma::rowvec& values, bool given) {
            return gamma_given(values, given, norm.offset != 0.0 ? "0" : "1");
        };
        lines.push_back(std::string("QK-norm: divide each query and key row by √(mean of its squares + eps), ") +
                        (norm.over_all ? "the mean over the token's whole projection, every head together"
                                       : "the mean over the head's d_k = " + std::to_string(model.d_k()) +
                                             " values") +
                        ", then multiply element by element by " +
                        (norm.offset != 0.0 ? "1 + γ" : "γ") + "; eps = " + number_text(model.qk_norm_eps()) +
                        ", γ = " + gamma(norm.query, norm.query_given) + " for the queries and " +
                        gamma(norm.key, norm.key_given) + " for the keys.");
    }
}

void sheet_mla(const Model& model, const Trace&, const std::vector<int>&, const KeyRow&, Lines& lines) {
    if (model.mla) {
        const Mla& mla = *model.mla;
        const auto gamma = [](const arma::rowvec& values, bool given) {
            return gamma_given(values, given, "1");
        };
        std::string line = "Latent attention (mla): r = " + std::to_string(mla.kv_rank) + ", d_r = " +
                           std::to_string(mla.rope_dim) + ", d_n = " + std::to_string(mla.nope_dim) +
                           ", d_v = " + std::to_string(mla.v_dim);
        if (mla.q_rank) {
            line += ", r_q = " + std::to_string(*mla.q_rank);
        }
        line += ". Each latent row is divided by √(mean of its squares + eps) and multiplied by γ; eps = " +
                number_text(model.rms_eps()) + ", γ = " + gamma(mla.kv_norm, mla.kv_norm_given) +
                " for the key/value latent" +
                (mla.q_rank ? " and " + gamma(mla.q_norm, mla.q_norm_given) + " for the query latent" : "") +
                ". Each head's key is its latent part followed by the shared rope key.";
        lines.push_back(line);
    }
}

void sheet_alibi(const Model& model, const Trace&, const std::vector<int>& heads, const KeyRow&, Lines& lines) {
    for (const int h : model.alibi ? heads : std::vector<int>{}) {
        lines.push_back("ALiBi" + head_text(model, h) + ": slope m = " +
                        number_text((*model.alibi)(static_cast<arma::uword>(h - 1))) + ".");
    }
}

void sheet_sinks(const Model& model, const Trace&, const std::vector<int>& heads, const KeyRow&, Lines& lines) {
    for (const int h : model.sinks ? heads : std::vector<int>{}) {
        lines.push_back("Sink" + head_text(model, h) + ": s = " +
                        number_text((*model.sinks)(static_cast<arma::uword>(h - 1))) +
                        ", one more logit in each row's softmax, with no value.");
    }
}

void sheet_round(const Model& model, const Trace&, const std::vector<int>&, const KeyRow&, Lines& lines) {
    for (const auto& [step, decimals] : model.round) {
        lines.push_back("Round " + (step == "*" ? std::string("every step") : step) + " to " +
                        std::to_string(decimals) + " decimals and carry the rounded values forward.");
    }
}

// a number key: its sentence when the example sets it
void sheet_number(const Model& model, const Trace&, const std::vector<int>&, const KeyRow& row, Lines& lines) {
    if (const std::optional<double>& number = model.*row.number->member) {
        lines.push_back(number_key_sentence(row, number_text(*number)));
    }
}

std::vector<std::string> settings(const Model& model, const Trace& trace, const std::vector<int>& heads) {
    static constexpr void (*sheets[])(const Model&, const Trace&, const std::vector<int>&, const KeyRow&, Lines&) = {
#define QKV_KEY(name, kind, stage, read, json, sheet, feeds, form, italic, meaning) sheet,
#include "model/keys.def"
    };
    Lines lines;
    for (std::size_t k = 0; k < std::size(sheets); ++k) {
        sheets[k](model, trace, heads, key_row(static_cast<Key>(k)), lines);
    }
    return lines;
}

// What the sheet gives: the inputs (positions, context), each head's weights
// and biases (those of head `head` alone when it is set), W_O and b_O, the
// mask or padding as matrices, dO for the backward pass.
Givens givens(const Model& model, const Trace& trace, const std::vector<const Step*>& steps, int head) {
    Givens result;
    const auto from_trace = [&](StepId id, const std::string& name, const std::string& latex) {
        if (const Step* step = trace.find(id); step != nullptr) {
            result.matrices.push_back({name, latex, *step});
        }
    };
    from_trace(StepId::inputs, "Inputs", "X");
    from_trace(StepId::positional, model.P_sinusoidal ? "Positional encodings (sinusoidal)" : "Positional encodings",
               "P");
    from_trace(StepId::context, "Context", "C");

    std::vector<int> heads;
    for (int h = 1; h <= static_cast<int>(model.n_heads()); ++h) {
        if (head == 0 || h == head) {
            heads.push_back(h);
        }
    }
    const arma::uword d_k = model.d_k();
    const arma::uword d_v = model.d_v();
    for (const int h : heads) {
        const HeadWeights& weights = model.heads.at(static_cast<std::size_t>(h - 1));
        const std::string of_head = head_suffix(model, h, false, "Q", d_k);
        result.matrices.push_back(weight_matrix(model, "Query weights" + of_head, "Q", weights.W_Q));
        if (weights.b_Q) {
            result.matrices.push_back(bias_vector("Query bias" + of_head, "Q", *weights.b_Q));
        }
        // a key/value head comes with the first query head that reads it
        const int g = model.kv_head_of(h);
        if (model.first_query_head(g) != h && head == 0) {
            continue;
        }
        const HeadWeights& shared = model.kv_weights(g);
        result.matrices.push_back(weight_matrix(model, "Key weights" + head_suffix(model, g, true, "K", d_k), "K",
                                                shared.W_K));
        if (shared.b_K) {
            result.matrices.push_back(bias_vector("Key bias" + head_suffix(model, g, true, "K", d_k), "K", *shared.b_K));
        }
        result.matrices.push_back(weight_matrix(model, "Value weights" + head_suffix(model, g, true, "V", d_v), "V",
                                                shared.W_V));
        if (shared.b_V) {
            result.matrices.push_back(
                bias_vector("Value bias" + head_suffix(model, g, true, "V", d_v), "V", *shared.b_V));
        }
    }
    // one head's sheet needs W_O only for the output or the backward pass
    const bool output = head == 0 || std::any_of(steps.begin(), steps.end(), [](const Step* step) {
                            return step->id == StepId::output || is_gradient(step->id);
                        });
    if (model.W_O && output) {
        result.matrices.push_back(weight_matrix(model, "Output weights", "O", *model.W_O));
    }
    if (model.b_O && output) {
        result.matrices.push_back(bias_vector("Output bias", "O", *model.b_O));
    }
    const std::vector<std::string>& key_tokens = trace.cross ? trace.context_tokens : trace.tokens;
    if (model.mask_kind == MaskKind::matrix) {
        result.matrices.push_back({"Mask (1 = may attend, 0 = blocked)", "M", given_step(model.mask, trace.tokens, key_tokens)});
    }
    if (model.padding) {
        result.matrices.push_back(
            {"Padding (1 = a token, 0 = padding)", "\\mathrm{padding}", given_step(*model.padding, {"padding"}, key_tokens)});
    }
    if (std::any_of(steps.begin(), steps.end(), [](const Step* step) { return is_gradient(step->id); })) {
        from_trace(StepId::grad_output, "Gradient of the loss with respect to the output", "dO");
    }
    result.settings = settings(model, trace, heads);
    return result;
}

// "Blocked cells (the query may not attend to the key): row 1 (<s>): columns 2, 3; …"
std::string blocked_cells(const Model& model, const Step& step) {
    std::string rows;
    for (arma::uword i = 0; i < model.n(); ++i) {
        std::string columns;
        for (arma::uword j = 0; j < model.m(); ++j) {
            if (!model.allows(i, j)) {
                columns += (columns.empty() ? "" : ", ") + std::to_string(j + 1);
            }
        }
        if (!columns.empty()) {
            const bool several = columns.find(',') != std::string::npos;
            rows += std::string(rows.empty() ? "" : "; ") + "row " + std::to_string(i + 1) + " (" +
                    one_line(step.row_labels.at(i)) + "): " + (several ? "columns " : "column ") + columns;
        }
    }
    return "Blocked cells, where the query may not attend to the key: " + rows + ".";
}

void check_size(const std::string& what, const arma::mat& M) {
    if (M.n_rows <= k_worksheet_limit && M.n_cols <= k_worksheet_limit) {
        return;
    }
    throw InputError(Diagnostic{"", 0, 0,
                                "worksheet: " + what + " is " + std::to_string(M.n_rows) + " × " +
                                    std::to_string(M.n_cols) + "; expected at most " +
                                    std::to_string(k_worksheet_limit) + " rows and columns on a sheet",
                                "a worksheet is worked with pencil and paper: take a smaller example, e.g. one that "
                                "qkv init writes"});
}

// The givens, each within a sheet's size.
Givens sheet_givens(const Model& model, const Trace& trace, const std::vector<const Step*>& steps, int head) {
    Givens given = givens(model, trace, steps, head);
    for (const GivenMatrix& matrix : given.matrices) {
        check_size(matrix.name, matrix.matrix.values);
    }
    return given;
}

}  // namespace

std::vector<std::string> worksheet_notes(const Model& model, const Step& step) {
    std::vector<std::string> notes = step.notes;
    if (model.masked() && (step.id == StepId::masked_scores || step.id == StepId::weights)) {
        notes.push_back(blocked_cells(model, step));
    }
    return notes;
}

bool is_given(StepId id) { return step_category(id) == StepCategory::given || id == StepId::grad_output; }

std::vector<const Step*> worksheet_steps(const Trace& trace, const WorksheetOptions& options) {
    std::vector<StepId> ids = options.steps;
    for (const StepId id : ids) {
        if (is_given(id)) {
            throw InputError(Diagnostic{"", 0, 0, "--steps: " + step_text(id) + " is given on the sheet; expected a step to work out",
                                        "leave " + step_text(id) + " out: the sheet shows it under Given"});
        }
        const bool exists =
            std::any_of(trace.steps.begin(), trace.steps.end(), [id](const Step& step) { return step.id == id; });
        if (!exists) {
            throw InputError(Diagnostic{"", 0, 0, "--steps: this example has no step " + step_text(id),
                                        step_absence(id)});
        }
    }
    if (ids.empty()) {
        // with one head of several, the steps after the heads' need every head: left out
        const bool one_head = options.head != 0 && trace.dims.heads > 1;
        bool heads_seen = false;
        for (const Step& step : trace.steps) {
            heads_seen = heads_seen || step.head != 0;
            const bool wanted = !is_given(step.id) && (options.backward || !is_gradient(step.id)) &&
                                !(one_head && heads_seen && step.head == 0);
            if (wanted && std::find(ids.begin(), ids.end(), step.id) == ids.end()) {
                ids.push_back(step.id);
            }
        }
    }
    RenderOptions selection;
    selection.steps = ids;
    selection.head = options.head;
    std::vector<const Step*> chosen = select_steps(trace, selection);
    for (const Step* step : chosen) {
        check_size(step_text(step->id), step->values);
    }
    return chosen;
}

Document worksheet_document(const Model& model, const Trace& trace, const WorksheetOptions& options) {
    const std::vector<const Step*> steps = worksheet_steps(trace, options);
    const Givens given = sheet_givens(model, trace, steps, options.head);

    Document sheet;
    sheet.title = (options.key ? "Answer key: " : "Worksheet: ") +
                  (trace.title.empty() ? std::string("Self-attention, step by step") : trace.title);
    sheet.purpose = "a worksheet, an exercise to work by hand";
    const std::string decimals = std::to_string(options.decimals) + (options.decimals == 1 ? " decimal" : " decimals");
    sheet.blocks.push_back(Prose{trace.description});
    sheet.blocks.push_back(Sizes{trace.dims, trace.cross});
    sheet.blocks.push_back(Prose{options.key ? "The answer key: the true value of each cell, to " + decimals +
                                                   " (whole numbers without decimals)."
                                             : "Work out each step by hand from what is given, and write its values "
                                               "in the empty table, to " + decimals + "."});

    sheet.blocks.push_back(Section{"Given"});
    for (const GivenMatrix& matrix : given.matrices) {
        RenderOptions exact;
        exact.full = true;
        exact.ascii = options.ascii;
        exact.precision = exact_decimals(matrix.matrix.values);
        const arma::mat& M = matrix.matrix.values;
        sheet.blocks.push_back(Group{{Caption{matrix.name, matrix.latex, M.n_rows, M.n_cols},
                                      TableBlock{.table = build_table(matrix.matrix, exact), .role = TableRole::given}}});
    }
    sheet.blocks.push_back(Notes{given.settings});

    RenderOptions rounded;
    rounded.full = true;
    rounded.ascii = options.ascii;
    rounded.precision = options.decimals;
    for (const Step* step : steps) {
        sheet.blocks.push_back(
            Group{{step_heading_of(trace, *step), formula_of(*step),
                   TableBlock{.table = build_table(*step, rounded),
                              .role = options.key ? TableRole::key : TableRole::blank},
                   Notes{worksheet_notes(model, *step)}}});
    }
    return sheet;
}

void render_worksheet(const Model& model, const Trace& trace, const WorksheetOptions& options, std::ostream& out) {
    if (options.format == Format::yaml) {
        const std::vector<const Step*> steps = worksheet_steps(trace, options);
        sheet_givens(model, trace, steps, options.head);  // a sheet's limits hold for its template too
        render_answers_template(model, trace, steps, options, out);
        return;
    }
    const DocumentStyle style{.ascii = options.ascii, .standalone = options.standalone};
    write_document(worksheet_document(model, trace, options), options.format, style, out);
}

}  // namespace qkv
