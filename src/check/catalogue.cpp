// The catalogue of named mistakes (catalogue.hpp): the rows of each stage put
// together, and the search of a step's rows.
#include "check/catalogue.hpp"
#include "check/mistakes_parts.hpp"

#include "attention/attention.hpp"
#include "render/render.hpp"

#include <algorithm>
#include <stdexcept>

namespace qkv::checking {

namespace {

// A step worked from its inputs rounded to fewer decimals than they have
// (the learner's values: their answers, the rest worked out from them), to
// each of 0 … rounded_below − 1 decimals that changes them.
void rounded_too_early(const Attempt& a, const Made& made) {
    const std::vector<StepKey> reads = step_inputs(a.model, a.key);
    for (int decimals = 0; decimals < a.working.rounded_below; ++decimals) {
        Values values = a.L.all();
        std::vector<std::string> changed;
        for (const StepKey& read : reads) {
            const auto found = values.find(read);
            if (found == values.end()) {
                return;
            }
            arma::mat rounded = round_to(*found->second, decimals);
            if (arma::accu(rounded != *found->second) == 0) {  // −∞ stays −∞, and counts as unchanged
                continue;
            }
            if (std::find(changed.begin(), changed.end(), step_text(read.id)) == changed.end()) {
                changed.push_back(step_text(read.id));
            }
            found->second = std::make_shared<const arma::mat>(std::move(rounded));
        }
        if (changed.empty()) {
            continue;
        }
        auto value = recompute(a.model, a.key, values);
        if (!value) {
            return;
        }
        made("Worked from the " + join_list(changed, " and ") + " rounded to " + std::to_string(decimals) +
                 (decimals == 1 ? " decimal" : " decimals") + ", not from their full values.",
             "keep every decimal of the numbers you work from, and round only the answer", std::move(*value));
    }
}

// A step worked from others, and not one that passes its only input on as it
// is (the output of one head without W_O, which is its weighted sum): rounding
// that input is rounding the answer.
bool computed(const Attempt& a) {
    const std::vector<StepKey> reads = step_inputs(a.model, a.key);
    if (reads.size() != 1) {
        return !reads.empty();
    }
    const Step* input = a.trace.find(reads.front().id, reads.front().head);
    const Step* step = a.trace.find(a.key.id, a.key.head);
    return input == nullptr || step == nullptr || input->values.n_rows != step->values.n_rows ||
           input->values.n_cols != step->values.n_cols || arma::accu(input->values != step->values) != 0;
}

// Tried after every other row of the step and of the earlier steps (diagnose.cpp).
constexpr MistakeRow k_rounding[] = {
    {.id = "rounded_too_early", .steps = StepSet::every(),
     .man = R"roff(A step worked from its inputs rounded to fewer decimals than they have (output from the weights rounded to 2 decimals); a lesson tries fewer decimals than its screen shows.)roff",
     .rounding = true, .applies = computed, .make = rounded_too_early},
};

// The mistakes the search tries itself, in every step: a transpose needs the
// true value worked from the learner's own, which is the search's to compute
// (diagnose.cpp); the key/value heads counted is seen in an answer's shape
// (check.cpp's shape_mistake); another cell's value and too few decimals are
// looked for in one cell at a time (check.cpp's grade_cell).
constexpr MistakeRow k_searched[] = {
    {.id = "transposed", .steps = StepSet::every(),
     .man = R"roff(An answer that is the transpose of the right one.)roff"},
    {.id = "kv_heads_counted", .steps = StepSet::every(),
     .man = R"roff(An answer as wide as the key/value heads side by side (n \(mu G\(pcd_v) where the query heads are (n \(mu H\(pcd_v).)roff",
     .one_cell = true},
    {.id = "another_cell", .steps = StepSet::every(),
     .man = R"roff(A cell that holds another cell's true value, of the same step or of a step it is worked from.)roff",
     .one_cell = true},
    {.id = "too_few_decimals", .steps = StepSet::every(),
     .man = R"roff(A cell that holds the true value rounded to fewer decimals than the exercise asks for.)roff",
     .one_cell = true, .rounding = true},
};

std::vector<MistakeRow> all_rows() {
    std::vector<MistakeRow> rows;
    for (const auto stage : {projection_mistakes(), score_mistakes(), output_mistakes(), backward_mistakes(),
                             std::span<const MistakeRow>(k_rounding), std::span<const MistakeRow>(k_searched)}) {
        rows.insert(rows.end(), stage.begin(), stage.end());
    }
    return rows;
}

}  // namespace

void Made::operator()(std::string what, std::string correct, arma::mat value, double rounding_slack) const {
    Mistake made{std::string(m_row.id), std::move(what), std::move(correct), {}, false, rounding_slack, m_row.rounding};
    made.values.emplace_back(m_step, std::move(value));
    m_out.push_back(std::move(made));
}

void Made::several(std::string what, std::string correct, std::vector<std::pair<StepKey, arma::mat>> values) const {
    m_out.push_back(
        Mistake{std::string(m_row.id), std::move(what), std::move(correct), std::move(values), true, 0.0, m_row.rounding});
}

std::span<const MistakeRow> mistake_rows() {
    static const std::vector<MistakeRow> rows = all_rows();
    return rows;
}

std::vector<const MistakeRow*> named_mistakes() {
    std::vector<const MistakeRow*> named;
    for (const MistakeRow& row : mistake_rows()) {
        const bool seen = std::any_of(named.begin(), named.end(), [&](const MistakeRow* n) { return n->id == row.id; });
        if (!seen) {
            named.push_back(&row);
        }
    }
    return named;
}

const MistakeRow& row_of(std::string_view id) {
    for (const MistakeRow& row : mistake_rows()) {
        if (row.id == id) {
            return row;
        }
    }
    throw std::logic_error("the mistake " + std::string(id) + " has no row in check's catalogue");
}

std::string mistake_id(std::string_view id) { return std::string(row_of(id).id); }

std::vector<Mistake> mistakes_in(const Model& model, const Trace& trace, const StepKey& key, const Values& learner,
                                 const Working& working) {
    const LearnerValues L(model, learner);
    const Attempt attempt{model, trace, L, key, working};
    std::vector<Mistake> out;
    for (const MistakeRow& row : mistake_rows()) {
        if (row.make != nullptr && row.steps.has(key.id) && (row.applies == nullptr || row.applies(attempt))) {
            row.make(attempt, Made(row, key, out));
        }
    }
    return out;
}

}  // namespace qkv::checking
