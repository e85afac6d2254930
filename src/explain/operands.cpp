// The numbers a cell is worked from (operands.hpp): for each step, which
// rows, columns and cells of the steps it reads its arithmetic takes.
#include "explain/operands.hpp"

#include "attention/step_handlers.hpp"
#include "attention/steps.hpp"

#include <algorithm>

namespace qkv {

namespace {

class OperandFinder {
public:
    OperandFinder(const Model& model, const Trace& trace, const CellRef& cell, const Step& step)
        : m_model(model), m_trace(trace), m_step(step), m_row(cell.row), m_col(cell.col) {}

    std::vector<Operand> run() {
        static constexpr auto k_operands = step_handlers<void (OperandFinder::*)()>(
            {
                {StepId::positional, &OperandFinder::positional},
                {StepId::encoded, &OperandFinder::same_cells},
                {StepId::q_latent, &OperandFinder::projection},
                {StepId::kv_latent, &OperandFinder::projection},
                {StepId::rope_keys, &OperandFinder::rope_keys},
                {StepId::queries, &OperandFinder::projection},
                {StepId::keys, &OperandFinder::keys},
                {StepId::values, &OperandFinder::projection},
                {StepId::output, &OperandFinder::projection},
                {StepId::rotated_queries, &OperandFinder::rotated},
                {StepId::rotated_keys, &OperandFinder::rotated},
                {StepId::scores, &OperandFinder::rows_of_both},
                {StepId::scaled_scores, &OperandFinder::scaled},
                {StepId::position_bias, &OperandFinder::slope},
                {StepId::biased_scores, &OperandFinder::same_cells},
                {StepId::masked_scores, &OperandFinder::same_cells},
                {StepId::weights, &OperandFinder::softmax},
                {StepId::head_output, &OperandFinder::weighted_sum},
                {StepId::concat, &OperandFinder::concat},
                {StepId::grad_weights, &OperandFinder::rows_of_both},
                {StepId::grad_scaled_scores, &OperandFinder::rows},
                {StepId::grad_scores, &OperandFinder::scaled},
            },
            {.given = &OperandFinder::nothing, .forward = &OperandFinder::rows,
             .gradient = &OperandFinder::rows, .elementwise = &OperandFinder::same_cells});
        (this->*k_operands[step_index(m_step.id)])();
        return std::move(m_operands);
    }

private:
    const Model& m_model;
    const Trace& m_trace;
    const Step& m_step;
    int m_row;  // 1-based
    int m_col;  // 1-based; 0: the whole row
    std::vector<Operand> m_operands;

    std::vector<StepKey> reads() const { return step_inputs(m_model, {m_step.id, m_step.head}); }

    void add(Operand operand) {
        const bool twice = std::any_of(m_operands.begin(), m_operands.end(), [&](const Operand& seen) {
            return seen.name == operand.name && seen.step == operand.step && seen.row == operand.row &&
                   seen.col == operand.col;
        });
        if (!twice) {
            m_operands.push_back(std::move(operand));
        }
    }

    // Row `row` and column `col` (1-based, 0: all) of a step the trace holds.
    void part(const StepKey& key, int row, int col) {
        const Step* step = m_trace.find(key.id, key.head);
        if (step == nullptr || step->values.is_empty()) {
            return;
        }
        const auto r = static_cast<arma::uword>(row - 1);
        const auto c = static_cast<arma::uword>(col - 1);
        arma::mat values = row > 0 && col > 0 ? arma::mat(step->values.submat(r, c, r, c))
                           : row > 0          ? arma::mat(step->values.row(r))
                           : col > 0          ? arma::mat(step->values.col(c).t())
                                              : step->values;
        add({key, row, col, "", std::move(values)});
    }

    void named(const std::string& name, double value) { add({{}, 0, 0, name, arma::mat(1, 1, arma::fill::value(value))}); }

    void nothing() {}

    // row i of every step it reads (the softmax, RoPE, and the fallback)
    void rows() {
        for (const StepKey& read : reads()) {
            const Step* step = m_trace.find(read.id, read.head);
            const bool aligned = step != nullptr && step->values.n_rows == m_step.values.n_rows;
            part(read, aligned ? m_row : 0, 0);
        }
    }

    // the same cell (or row) of every step it reads: X + P, the bias added, the mask applied
    void same_cells() {
        for (const StepKey& read : reads()) {
            part(read, m_row, m_col);
        }
    }

    void positional() {
        if (m_model.P_sinusoidal) {
            named("position p", static_cast<double>(m_row - 1));
            named("d_model", static_cast<double>(m_model.d_model()));
        }
    }

    // row i of the source, then column j of the weight (row j as a PyTorch-layout file writes it) and the bias
    void projection() {
        part(reads().front(), m_row, 0);
        for (const StepId id : step_parameters(m_step.id)) {
            const StepKey weight{id, step_per_head(m_model, id) ? m_step.head : 0};
            const bool bias =
                id == StepId::b_query || id == StepId::b_key || id == StepId::b_value || id == StepId::b_output;
            if (bias || m_model.layout != Layout::pytorch) {
                part(weight, bias ? 1 : 0, m_col);
            } else {
                part(weight, m_col, 0);
            }
        }
    }

    // mla: row i of the source and column r + j of kv_a_proj_with_mqa (its last d_r are W_KR)
    void rope_keys() {
        part(reads().front(), m_row, 0);
        const int r = static_cast<int>(m_model.mla->kv_rank);
        const int col = m_col == 0 ? 0 : r + m_col;
        if (m_model.layout != Layout::pytorch) {
            part({StepId::w_kv_a, 0}, 0, col);
        } else {
            part({StepId::w_kv_a, 0}, col, 0);
        }
    }

    // mla: a key's first d_n elements from the latent and W_UK, the rest the shared rope key's
    void keys() {
        if (!m_model.mla) {
            projection();
            return;
        }
        const std::vector<StepKey> from = reads();
        const int d_n = static_cast<int>(m_model.mla->nope_dim);
        if (m_col > d_n) {
            part(from[1], m_row, m_col - d_n);
            return;
        }
        part(from[0], m_row, 0);
        const StepKey weight{StepId::w_key, m_step.head};
        if (m_model.layout != Layout::pytorch) {
            part(weight, 0, m_col);
        } else {
            part(weight, m_col, 0);
        }
        if (m_col == 0) {
            part(from[1], m_row, 0);
        }
    }

    void rotated() {
        part(reads().front(), m_row, 0);
        named("position p", static_cast<double>(m_row - 1));
    }

    // row i of the first, row j of the second (all of it for a whole row): Q·Kᵀ, dZ·Vᵀ
    void rows_of_both() {
        const std::vector<StepKey> from = reads();
        part(from[0], m_row, 0);
        part(from[1], m_col, 0);
    }

    void scaled() {
        same_cells();
        if (m_model.scale_kind != ScaleKind::none) {
            named("scale", m_trace.scale);
        }
    }

    void slope() { named("slope m", (*m_model.alibi)(static_cast<arma::uword>(m_step.head - 1))); }

    void softmax() {
        rows();
        if (m_model.sinks) {
            named("sink", (*m_model.sinks)(static_cast<arma::uword>(m_step.head - 1)));
        }
    }

    // row i of the weights, column j of the values (all of them for a whole row)
    void weighted_sum() {
        const std::vector<StepKey> from = reads();
        part(from[0], m_row, 0);
        part(from[1], 0, m_col);
    }

    // the head's cell the column comes from
    void concat() {
        const int d_v = static_cast<int>(m_model.d_v());
        if (m_col == 0) {
            rows();
            return;
        }
        part({StepId::head_output, (m_col - 1) / d_v + 1}, m_row, (m_col - 1) % d_v + 1);
    }
};

}  // namespace

std::vector<Operand> cell_operands(const Model& model, const Trace& trace, const CellRef& cell) {
    const Step& step = cell_step(trace, cell);
    return OperandFinder(model, trace, cell, step).run();
}

std::vector<const Step*> shape_operands(const Model& model, const Trace& trace, const StepKey& key) {
    std::vector<const Step*> steps;
    const auto add = [&](StepId id, int head) {
        if (const Step* step = trace.find(id, head); step != nullptr) {
            steps.push_back(step);
        }
    };
    for (const StepKey& read : step_inputs(model, key)) {
        add(read.id, read.head);
    }
    for (const StepId id : step_parameters(key.id)) {
        add(id, step_per_head(model, id) ? key.head : 0);
    }
    return steps;
}

}  // namespace qkv
