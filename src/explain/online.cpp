// The online softmax of `qkv explain --block-size B`: one row of attention
// computed the way FlashAttention does it, keys in blocks, never holding the
// whole row of weights. Starting from m = −∞, ℓ = 0, o = 0, each block b
// updates
//   m_b = max(m_{b−1}, max_{j in b} x_j)
//   ℓ_b = ℓ_{b−1}·exp(m_{b−1} − m_b) + Σ_{j in b} exp(x_j − m_b)
//   o_b = o_{b−1}·exp(m_{b−1} − m_b) + Σ_{j in b} exp(x_j − m_b)·v_j
// and the row's output is o_last / ℓ_last, its weights exp(x_j − m_last) / ℓ_last.
// The recurrence is attention.hpp's online_softmax; this file writes it out.
#include "explain/explain.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"
#include "explain/numbers.hpp"

#include <cmath>

namespace qkv {

bool has_online_form(StepId id) { return step_row(id).online; }

namespace explaining {

void add_online_softmax(const Model& model, const Trace& trace, Explanation& explanation, const RenderOptions& options,
                        arma::uword block_size) {
    const Numbers num(options);
    const CellRef& cell = explanation.cell;
    const int h = cell.head;
    const auto i = static_cast<arma::uword>(cell.row - 1);
    const bool output = cell.step == StepId::head_output;
    // the row the softmax reads, and the values the output weighs
    const StepKey read = step_inputs(model, {StepId::weights, h}).front();
    const Step& source = *trace.find(read.id, read.head);
    const arma::rowvec x = source.values.row(i);
    const int g = model.kv_head_of(h);
    const Step& values = *trace.find(StepId::values, g);
    std::vector<arma::uword> cols;
    if (output) {
        for (arma::uword c = 0; c < values.values.n_cols; ++c) {
            if (cell.col == 0 || c + 1 == static_cast<arma::uword>(cell.col)) {
                cols.push_back(c);
            }
        }
    }
    const std::string x_name = step_text(read.id) + "[" + std::to_string(i + 1) + "]";
    const std::string head = trace.dims.heads > 1 ? "@" + std::to_string(h) : "";
    auto& lines = explanation.lines;
    lines.push_back("online softmax (FlashAttention), keys in blocks of " + std::to_string(block_size) + ": x = " +
                    x_name + head + ", start from m = −∞, ℓ = 0" + (output ? ", o = 0" : ""));

    // the recurrence (attention.hpp), each update written out as it happens
    arma::mat V(x.n_elem, cols.size());
    for (std::size_t k = 0; k < cols.size(); ++k) {
        V.col(k) = values.values.col(cols[k]);
    }
    std::optional<double> sink;
    if (model.sinks) {
        sink = (*model.sinks)(static_cast<arma::uword>(h - 1));
    }
    const auto as_vector = [](const arma::rowvec& o) { return std::vector<double>(o.begin(), o.end()); };
    const auto each = [&](const OnlineUpdate& u) {
        const double m = u.after.max;
        if (u.sink) {
            // the sink joins last, as one more logit with no value
            lines.push_back("the sink s = " + num(u.block_max) + ": m = " + num(m) + ", ℓ = " + num(u.before.sum) +
                            " · " + num(u.factor) + " + exp(" + num(u.block_max - m) + ") = " + num(u.after.sum) +
                            (output ? "; o is rescaled by " + num(u.factor) + " and gains nothing" : ""));
            explanation.blocks.push_back({0, 0, m, u.after.sum, as_vector(u.after.output), u.block_max});
            return;
        }
        const std::string keys = u.first == u.last ? "key " + std::to_string(u.first + 1)
                                                   : "keys " + std::to_string(u.first + 1) + "–" +
                                                         std::to_string(u.last + 1);
        if (u.blocked) {
            lines.push_back(keys + ": blocked, adds nothing; m, ℓ" + std::string(output ? " and o" : "") +
                            " stay as they were");
        } else {
            std::string terms;
            for (arma::uword j = u.first; j <= u.last; ++j) {
                terms += (j == u.first ? "" : " + ") + std::string("exp(") + num(x(j) - m) + ")";
            }
            lines.push_back(keys + ": m = max(" + num(u.before.max) + ", " + num(u.block_max) + ") = " + num(m) +
                            "; rescale by exp(m_old − m) = " + num(u.factor));
            lines.push_back("  ℓ = " + num(u.before.sum) + " · " + num(u.factor) + " + " + terms + " = " +
                            num(u.after.sum));
            if (output) {
                lines.push_back("  o = o_old · " + num(u.factor) + " + Σ exp(x_j − m)·v_j = " +
                                num.vector(as_vector(u.after.output)));
            }
        }
        explanation.blocks.push_back(
            {u.first + 1, u.last + 1, u.after.max, u.after.sum, as_vector(u.after.output), std::nullopt});
    };
    const OnlineState end = online_softmax(x, V, block_size, sink, true, each);
    const double m = end.max;
    const double l = end.sum;
    const std::vector<double> o = as_vector(end.output);
    // the result, equal to the direct computation above
    if (output) {
        for (std::size_t k = 0; k < cols.size(); ++k) {
            lines.push_back("head_output[" + std::to_string(i + 1) + "," + std::to_string(cols[k] + 1) + "]" + head +
                            " = o / ℓ = " + num(o[k]) + " / " + num(l) + " = " + num(o[k] / l));
        }
        return;
    }
    for (arma::uword j = 0; j < x.n_elem; ++j) {
        if (cell.col != 0 && j + 1 != static_cast<arma::uword>(cell.col)) {
            continue;
        }
        lines.push_back("weights[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]" + head + " = exp(x_" +
                        std::to_string(j + 1) + " − m) / ℓ = exp(" + num(x(j) - m) + ") / " + num(l) + " = " +
                        num(std::exp(x(j) - m) / l));
    }
}

}  // namespace explaining

}  // namespace qkv
