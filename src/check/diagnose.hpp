// The classic mistakes of attention by hand, and how to recognise one in a
// learner's answer. Every mistake is a recipe: the value a step takes when it
// is done in that wrong way, worked out from the learner's own earlier values.
// An answer shows a mistake when every answered cell matches that value, the
// value differs from the true one in some answered cell, every wrong cell is
// clearly away from the true one, and there are at least two wrong cells.
// catalogue.hpp holds the catalogue (mistakes_in), diagnose.cpp the search.
#pragma once

#include "check/catalogue.hpp"
#include "check/check.hpp"
#include "check/recompute.hpp"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace qkv::checking {

class Diagnoser {
public:
    // versions: the learner's value of every step (their answers, the rest
    // worked out from them), in one or more versions (as written, and without
    // their rounding); answered: the steps they wrote down; rounding: per step
    // and cell, how far the learner's value may be from what they had before
    // rounding it (nullptr: none allowed for).
    Diagnoser(const Model& model, const Trace& trace, std::vector<const Values*> versions,
              const std::set<StepKey>& answered, const CheckOptions& options, const Values* rounding = nullptr)
        : m_model(model), m_trace(trace), m_versions(std::move(versions)), m_answered(answered), m_options(options),
          m_rounding(rounding), m_working(working_of(options)) {}

    // The first mistake that explains this step's answer: one made in the step
    // itself, else one made in an earlier step that was not answered; the
    // mistakes of method first, then the slips of rounding (only those when
    // `method` is false).
    std::optional<Diagnosis> diagnose(const StepCheck& check, bool method = true);

private:
    const Model& m_model;
    const Trace& m_trace;
    std::vector<const Values*> m_versions;
    const std::set<StepKey>& m_answered;
    const CheckOptions& m_options;
    const Values* m_rounding;
    Working m_working;
    std::map<std::pair<std::size_t, StepKey>, std::vector<Mistake>> m_mistakes;

    // The rows that are slips of rounding (`rounding`) or the others, tried in
    // this step, as a transpose (not rounding), then in the earlier steps.
    std::optional<Diagnosis> diagnose(const StepCheck& check, std::size_t version, bool rounding);
    static Working working_of(const CheckOptions& options);
    const std::vector<Mistake>& mistakes_at(std::size_t version, const StepKey& key);
    // The answer is this mistake's: every answered cell matches `candidate`
    // (within rounding_slack more units of its last decimal, and within `spread`
    // of it when given: the learner's rounding carried into it), the
    // candidate is not the true value, and there are enough wrong cells to tell.
    bool explains(const arma::mat& candidate, const StepCheck& check, double rounding_slack,
                  const arma::mat* spread = nullptr) const;
    // The answer is mistake `index` of the step `made_in` (the answered step
    // itself, or an earlier one left out), whose value of the answered step is
    // `value`: explains() as it stands, or once the learner's rounding carried
    // into it is allowed for.
    bool shows(std::size_t version, const StepKey& made_in, std::size_t index, const arma::mat& value,
               const StepCheck& check);
    // Every answered cell within ten units of its last decimal of `candidate`:
    // worth working out how far the learner's rounding may move it.
    bool near(const arma::mat& candidate, const StepCheck& check) const;
    // How far the learner's rounding in `inputs` may move `value_of`, cell by
    // cell: each rounded input cell moved by its rounding, one at a time, the
    // changes added up (empty when value_of gives nothing).
    arma::mat perturbed_spread(std::size_t version, const std::vector<StepKey>& inputs,
                               const std::function<std::optional<arma::mat>(const Values&)>& value_of) const;
    // The value of `target` when `mistake` is made, carried through the steps in between.
    std::optional<arma::mat> carried(const Values& learner, const Mistake& mistake, const StepKey& target) const;
};

}  // namespace qkv::checking
