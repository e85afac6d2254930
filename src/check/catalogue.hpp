// The catalogue of named mistakes: one row for each way a step can be done
// wrong. A row holds the mistake's id (what check's reports, JSON and
// gradebook name), the steps it is made in, whether it is one of the classic
// mistakes that `qkv init --student` makes sure an exercise can tell apart,
// its line in the man page's DIAGNOSES, when it applies, and its recipe: the
// value the step takes when it is done that way, worked out from the
// learner's own earlier values, with what was done and the correct form.
//
// The rows are in the order of the steps, in one file per stage:
// mistakes_projections.cpp (the encoded inputs, the projections, RoPE),
// mistakes_scores.cpp (the scores to the weights), mistakes_output.cpp (the
// weighted sum, the heads, the output) and mistakes_backward.cpp. Within a
// step, the order of the rows is the order diagnose.cpp tries them in: the
// first that explains an answer names it. A mistake made in more than one
// step has a row for each; its first row carries its man page line and
// whether it is classic. Rows are tokens throughout: Q = X·W_Q.
#pragma once

#include "attention/steps.hpp"
#include "attention/trace.hpp"
#include "check/recompute.hpp"
#include "model/model.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qkv::checking {

// One mistake made: its id, what was done, the correct form, and the values
// of the steps it changes.
struct Mistake {
    std::string key;      // e.g. "scores_no_transpose"
    std::string mistake;  // what was done, one sentence
    std::string correct;  // the correct operation
    std::vector<std::pair<StepKey, arma::mat>> values;  // the steps as the mistake makes them
    bool several_steps = false;  // several steps at once: only recognised in later steps
    // How far, in units of an answer's last decimal, the mistake's value may
    // be from the answer beyond the half unit of its own rounding, for a learner
    // who worked from values rounded to the same decimals (0 = no further).
    double rounding_slack = 0.0;
    bool rounding = false;  // its row's: a slip of rounding, tried last
};

// How the exercise was worked, beyond its numbers, for the rows that need it.
struct Working {
    int block_size = 0;  // the keys read in blocks of this many, as the online softmax reads them; 0: whole
    // The inputs of a step rounded to 0 … rounded_below − 1 decimals are tried
    // (a lesson: fewer than its screen shows; at most 4).
    int rounded_below = 4;
};

// The mistakes that can be made in one step, computed from `learner`: each
// row of the step that applies, in the order of the rows.
std::vector<Mistake> mistakes_in(const Model& model, const Trace& trace, const StepKey& key, const Values& learner,
                                 const Working& working = {});

// A set of step ids, written as a list: {StepId::queries, StepId::keys}.
class StepSet {
public:
    constexpr StepSet() = default;
    constexpr StepSet(std::initializer_list<StepId> ids) {
        for (const StepId id : ids) {
            const auto bit = static_cast<std::size_t>(id);
            m_words[bit / 64] |= std::uint64_t{1} << (bit % 64);
        }
    }
    constexpr bool has(StepId id) const {
        const auto bit = static_cast<std::size_t>(id);
        return (m_words[bit / 64] >> (bit % 64) & 1U) != 0;
    }
    static constexpr StepSet every() {
        StepSet all;
        for (std::uint64_t& word : all.m_words) {
            word = ~std::uint64_t{0};
        }
        return all;
    }

private:
    std::array<std::uint64_t, (k_step_count + 63) / 64> m_words{};
};

// The learner's value of each step before the one diagnosed: their answers,
// the rest worked out from them.
class LearnerValues {
public:
    LearnerValues(const Model& model, const Values& values) : m_model(model), m_values(values) {}

    const arma::mat& operator()(StepId id, int head = 0) const { return *m_values.at({id, head}); }
    const Values& all() const { return m_values; }

    // What the projections read: (X + P) or X; keys and values read C in cross-attention.
    const arma::mat& query_source() const { return *m_values.at(step_inputs(m_model, {StepId::queries, 1}).front()); }
    const arma::mat& key_source() const { return *m_values.at(step_inputs(m_model, {StepId::keys, 1}).front()); }

private:
    const Model& m_model;
    const Values& m_values;
};

// A step as the learner worked it: the example, the true trace, the learner's
// values, and the step (head 1-based, 0 for a step that is not per head).
struct Attempt {
    const Model& model;
    const Trace& trace;
    const LearnerValues& L;
    const StepKey& key;
    const Working& working;
};

// What a row's recipe gives: its mistake, as many times as the step allows
// (none, once, or once for each other head), each with its own words.
struct MistakeRow;

class Made {
public:
    Made(const MistakeRow& row, const StepKey& step, std::vector<Mistake>& out) : m_row(row), m_step(step), m_out(out) {}

    // Made in this step alone: what was done, the correct form, and the
    // value the step takes.
    void operator()(std::string what, std::string correct, arma::mat value, double rounding_slack = 0.0) const;
    // Made in several steps at once, so only seen in a later step.
    void several(std::string what, std::string correct, std::vector<std::pair<StepKey, arma::mat>> values) const;

private:
    const MistakeRow& m_row;
    const StepKey& m_step;
    std::vector<Mistake>& m_out;
};

struct MistakeRow {
    std::string_view id = {};  // "scores_no_transpose"
    StepSet steps = {};        // the steps it is made in
    bool classic = false;      // `init --student` makes each one an exercise allows recognisable
    std::string_view man = {};  // the man page's one line (roff): what was done; on an id's first row only
    // Looked for in one cell at a time (check.cpp's grade_cell), and its
    // sentence says what the number is ("That number is scores[2,2], …").
    bool one_cell = false;
    // A slip of rounding rather than of method: tried after every other row,
    // of this step and of the earlier ones, has found nothing.
    bool rounding = false;
    // When it applies, beyond being one of its steps: what the example has
    // (RoPE, a bias, a mask); none: always. A recipe may still make nothing
    // where the learner's shapes do not allow the mistake.
    bool (*applies)(const Attempt&) = nullptr;
    // How to make it; none for the transpose, which the search tries itself
    // for every step (diagnose.cpp).
    void (*make)(const Attempt&, const Made&) = nullptr;
};

// Every row, in order.
std::span<const MistakeRow> mistake_rows();

// The named mistakes: the first row of each id, in order, as the man page lists them.
std::vector<const MistakeRow*> named_mistakes();

// The first row of ID; a name the table lacks is a programming error (std::logic_error).
const MistakeRow& row_of(std::string_view id);

// ID, checked against the table: a name the table lacks is a programming
// error (std::logic_error), so no diagnosis goes undocumented.
std::string mistake_id(std::string_view id);

}  // namespace qkv::checking
