// The online softmax of `qkv explain --block-size B`: one row of attention
// computed the way FlashAttention does it, keys in blocks, never holding the
// whole row of weights. Starting from m = −∞, ℓ = 0, o = 0, each block b
// updates
//   m_b = max(m_{b−1}, max_{j in b} x_j)
//   ℓ_b = ℓ_{b−1}·exp(m_{b−1} − m_b) + Σ_{j in b} exp(x_j − m_b)
//   o_b = o_{b−1}·exp(m_{b−1} − m_b) + Σ_{j in b} exp(x_j − m_b)·v_j
// and the row's output is o_last / ℓ_last, its weights exp(x_j − m_last) / ℓ_last.
#include "explain/explain.hpp"

#include "attention/steps.hpp"
#include "explain/numbers.hpp"

#include <cmath>

namespace qkv {

bool has_online_form(StepId id) { return step_row(id).online; }

namespace explaining {

namespace {

// exp(a − b) for the rescaling factor, with exp(−∞ − m) = 0 for a first block
double rescale(double previous, double current) {
    return std::isinf(previous) && previous < 0 ? 0.0 : std::exp(previous - current);
}

}  // namespace

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

    double m = -arma::datum::inf;
    double l = 0.0;
    std::vector<double> o(cols.size(), 0.0);
    for (arma::uword first = 0; first < x.n_elem; first += block_size) {
        const arma::uword last = std::min<arma::uword>(first + block_size, x.n_elem) - 1;
        const double block_max = x.subvec(first, last).max();
        const double m_new = std::max(m, block_max);
        const std::string keys = first == last ? "key " + std::to_string(first + 1)
                                               : "keys " + std::to_string(first + 1) + "–" + std::to_string(last + 1);
        if (std::isinf(block_max) && block_max < 0) {
            // a blocked key adds nothing: the block changes nothing
            lines.push_back(keys + ": blocked, adds nothing; m, ℓ" + std::string(output ? " and o" : "") +
                            " stay as they were");
            explanation.blocks.push_back({first + 1, last + 1, m, l, o, std::nullopt});
            continue;
        }
        const double factor = rescale(m, m_new);
        double added = 0.0;
        std::string terms;
        std::vector<double> o_new(o.size());
        for (std::size_t k = 0; k < o.size(); ++k) {
            o_new[k] = o[k] * factor;
        }
        for (arma::uword j = first; j <= last; ++j) {
            const double e = std::exp(x(j) - m_new);
            added += e;
            terms += (j == first ? "" : " + ") + std::string("exp(") + num(x(j) - m_new) + ")";
            for (std::size_t k = 0; k < cols.size(); ++k) {
                o_new[k] += e * values.values(j, cols[k]);
            }
        }
        lines.push_back(keys + ": m = max(" + num(m) + ", " + num(block_max) + ") = " + num(m_new) +
                        "; rescale by exp(m_old − m) = " + num(factor));
        lines.push_back("  ℓ = " + num(l) + " · " + num(factor) + " + " + terms + " = " + num(l * factor + added));
        l = l * factor + added;
        m = m_new;
        if (output) {
            o = std::move(o_new);
            lines.push_back("  o = o_old · " + num(factor) + " + Σ exp(x_j − m)·v_j = " + num.vector(o));
        }
        explanation.blocks.push_back({first + 1, last + 1, m, l, o, std::nullopt});
    }
    if (model.sinks) {
        // the sink joins last, as one more logit with no value
        const double sink = (*model.sinks)(static_cast<arma::uword>(h - 1));
        const double m_new = std::max(m, sink);
        const double factor = rescale(m, m_new);
        const double share = std::exp(sink - m_new);
        lines.push_back("the sink s = " + num(sink) + ": m = " + num(m_new) + ", ℓ = " + num(l) + " · " + num(factor) +
                        " + exp(" + num(sink - m_new) + ") = " + num(l * factor + share) +
                        (output ? "; o is rescaled by " + num(factor) + " and gains nothing" : ""));
        l = l * factor + share;
        for (double& value : o) {
            value *= factor;
        }
        m = m_new;
        explanation.blocks.push_back({0, 0, m, l, o, sink});
    }
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
