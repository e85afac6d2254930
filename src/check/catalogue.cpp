// The catalogue of named mistakes (catalogue.hpp): the rows of each stage put
// together, and the search of a step's rows.
#include "check/catalogue.hpp"
#include "check/mistakes_parts.hpp"

#include <algorithm>
#include <stdexcept>

namespace qkv::checking {

namespace {

// The mistakes the search tries itself, in every step: a transpose needs the
// true value worked from the learner's own, which is the search's to compute
// (diagnose.cpp); another cell's value and too few decimals are looked for in
// one cell at a time (check.cpp's grade_cell).
constexpr MistakeRow k_searched[] = {
    {.id = "transposed", .steps = StepSet::every(),
     .man = R"roff(An answer that is the transpose of the right one.)roff"},
    {.id = "another_cell", .steps = StepSet::every(),
     .man = R"roff(A cell that holds another cell's true value, of the same step or of a step it is worked from.)roff"},
    {.id = "too_few_decimals", .steps = StepSet::every(),
     .man = R"roff(A cell that holds the true value rounded to fewer decimals than the exercise asks for.)roff"},
};

std::vector<MistakeRow> all_rows() {
    std::vector<MistakeRow> rows;
    for (const auto stage : {projection_mistakes(), score_mistakes(), output_mistakes(), backward_mistakes(),
                             std::span<const MistakeRow>(k_searched)}) {
        rows.insert(rows.end(), stage.begin(), stage.end());
    }
    return rows;
}

}  // namespace

void Made::operator()(std::string what, std::string correct, arma::mat value, double rounding_slack) const {
    Mistake made{std::string(m_id), std::move(what), std::move(correct), {}, false, rounding_slack};
    made.values.emplace_back(m_step, std::move(value));
    m_out.push_back(std::move(made));
}

void Made::several(std::string what, std::string correct, std::vector<std::pair<StepKey, arma::mat>> values) const {
    m_out.push_back(Mistake{std::string(m_id), std::move(what), std::move(correct), std::move(values), true});
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

std::string mistake_id(std::string_view id) {
    for (const MistakeRow& row : mistake_rows()) {
        if (row.id == id) {
            return std::string(id);
        }
    }
    throw std::logic_error("the mistake " + std::string(id) + " has no row in check's catalogue");
}

std::vector<Mistake> mistakes_in(const Model& model, const Trace& trace, const StepKey& key, const Values& learner) {
    const LearnerValues L(model, learner);
    const Attempt attempt{model, trace, L, key};
    std::vector<Mistake> out;
    for (const MistakeRow& row : mistake_rows()) {
        if (row.make != nullptr && row.steps.has(key.id) && (row.applies == nullptr || row.applies(attempt))) {
            row.make(attempt, Made(row.id, key, out));
        }
    }
    return out;
}

}  // namespace qkv::checking
