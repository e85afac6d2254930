// check's catalogue of mistakes read as a table (check/catalogue.hpp): every
// row is made in some example, and `check` names it there; an id's first row
// carries its man page line. The mistakes themselves are worked by hand in
// test_check_diagnoses.cpp, test_check.cpp and test_check_backward.cpp.
#include "builtin/builtin.hpp"
#include "check/catalogue.hpp"
#include "check/check.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <cmath>
#include <map>
#include <set>

using namespace qkv;
using namespace qkv::checking;

namespace {

// The examples the rows are made in: the built-in ones with their backward
// pass, and a few with what no built-in example has (biases, positional
// encodings, scale: none, several heads without W_O, one head with W_O,
// cross-attention over as many tokens as it has inputs).
struct Example {
    std::string name;
    std::string yaml;
};

const char* const k_biases = R"(inputs: [[1, 0, 2, 1], [0, 1, 1, 2], [2, 1, 0, 1]]
positional: [[0.5, 0, 0, 0.5], [0, 0.5, 0.5, 0], [0.5, 0.5, 0, 0]]
heads: 2
weights:
  query: [[1, 0, 2, 1], [0, 1, 1, 0], [1, 1, 0, 2], [2, 0, 1, 1]]
  key: [[0, 1, 1, 2], [1, 0, 2, 1], [2, 1, 0, 0], [1, 2, 1, 0]]
  value: [[1, 2, 0, 1], [2, 0, 1, 1], [0, 1, 1, 2], [1, 1, 2, 0]]
  output: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]]
bias:
  query: [0.5, -0.5, 1, 0]
  key: [1, 0.5, 0, -1]
  value: [0, 1, -0.5, 0.5]
  output: [0.25, 0, -0.25, 0.5]
mask: causal
)";

const char* const k_unscaled = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0], [1, 2, 1]]
scale: none
weights:
  query: [[1, 0], [0, 1], [1, 1]]
  key: [[0, 1], [1, 0], [1, 2]]
  value: [[1, 2], [2, 0], [0, 1]]
)";

const char* const k_heads_without_output = R"(inputs: [[1, 0, 2, 1], [0, 1, 1, 2], [2, 1, 0, 1]]
heads:
  - query: [[1, 0], [0, 1], [1, 1], [2, 0]]
    key: [[0, 1], [1, 0], [2, 1], [1, 2]]
    value: [[1, 2], [2, 0], [0, 1], [1, 1]]
  - query: [[0, 2], [1, 0], [0, 1], [1, 1]]
    key: [[1, 1], [0, 2], [1, 0], [2, 1]]
    value: [[2, 1], [0, 1], [1, 0], [1, 2]]
)";

const char* const k_one_head_with_output = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0], [1, 2, 1]]
weights:
  query: [[1, 0, 1], [0, 1, 2], [1, 1, 0]]
  key: [[0, 1, 1], [1, 0, 2], [1, 2, 0]]
  value: [[1, 2, 0], [2, 0, 1], [0, 1, 1]]
  output: [[1, 0, 1], [0, 2, 1], [1, 1, 0]]
bias:
  output: [0.5, -1, 0.25]
)";

// Cross-attention with as many context tokens as inputs: keys and values
// worked from the inputs then give scores of the right shape.
const char* const k_square_cross = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
context: [[0, 1, 1], [1, 2, 0], [2, 0, 1]]
weights:
  query: [[1, 0], [0, 1], [1, 1]]
  key: [[0, 1], [1, 0], [1, 2]]
  value: [[1, 2], [2, 0], [0, 1]]
)";

std::vector<Example> examples() {
    std::vector<Example> all;
    for (const auto& example : builtin_examples()) {
        all.push_back({std::string(example.name), std::string(example.text)});
    }
    all.push_back({"biases", k_biases});
    all.push_back({"unscaled", k_unscaled});
    all.push_back({"heads-without-output", k_heads_without_output});
    all.push_back({"one-head-with-output", k_one_head_with_output});
    all.push_back({"square-cross", k_square_cross});
    return all;
}

// [[0.1235, -inf, ~], …]: a cell with no value (0/0) is left blank.
std::string matrix_yaml(const arma::mat& M) {
    std::string text = "[";
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        text += i == 0 ? "[" : ", [";
        for (arma::uword j = 0; j < M.n_cols; ++j) {
            const double x = M(i, j);
            text += (j == 0 ? "" : ", ") +
                    (std::isnan(x) ? std::string("~") : std::isinf(x) ? std::string(x < 0 ? "-inf" : "inf") : [&] {
                        char buffer[64];
                        std::snprintf(buffer, sizeof buffer, "%.4f", x);
                        return std::string(buffer);
                    }());
        }
        text += "]";
    }
    return text + "]";
}

// One step's answer: under answers.heads with several heads, a per-kv-head
// step under the first query head that reads it, as the worksheet writes it.
std::string answer_of(const Model& model, const StepKey& key, const arma::mat& M) {
    const std::string id(step_name(key.id));
    if (key.head == 0 || model.n_heads() == 1) {
        return id + ": " + matrix_yaml(M) + "\n";
    }
    const int slot = is_per_kv_head(key.id) ? model.first_query_head(key.head) : key.head;
    std::string heads = "heads: [";
    for (int h = 1; h < slot; ++h) {
        heads += "~, ";
    }
    return heads + "{" + id + ": " + matrix_yaml(M) + "}]\n";
}

// The true value of every step of the trace.
Values true_values(const Trace& trace) {
    Values values;
    for (const Step& step : trace.steps) {
        values[{step.id, step.head}] = std::make_shared<const arma::mat>(step.values);
    }
    return values;
}

// The steps a mistake of several steps is seen in: the true values with the
// mistake's, and every later computed step worked again from them.
Values carried_values(const Model& model, const Trace& trace, const Mistake& mistake) {
    Values values = true_values(trace);
    std::set<StepKey> made;
    for (const auto& [key, value] : mistake.values) {
        values[key] = std::make_shared<const arma::mat>(value);
        made.insert(key);
    }
    bool after = false;
    for (const Step& step : trace.steps) {
        const StepKey key{step.id, step.head};
        if (made.count(key) != 0) {
            after = true;
            continue;
        }
        if (after && !is_parameter(step.id) && step.id != StepId::inputs && step.id != StepId::positional &&
            step.id != StepId::context && step.id != StepId::grad_output) {
            if (auto value = recompute(model, key, values)) {
                values[key] = std::make_shared<const arma::mat>(std::move(*value));
            }
        }
    }
    return values;
}

}  // namespace

TEST_CASE("each mistake's first row carries its man page line and whether it is classic", "[check]") {
    std::set<std::string_view> seen;
    for (const MistakeRow& row : mistake_rows()) {
        CAPTURE(row.id);
        const bool first = seen.insert(row.id).second;
        CHECK(first == !row.man.empty());
        CHECK((first || !row.classic));
        // the transpose, another cell's value and too few decimals are the search's own; every
        // other row has its recipe
        CHECK((row.make == nullptr) ==
              (row.id == "transposed" || row.id == "another_cell" || row.id == "too_few_decimals"));
    }
    CHECK(named_mistakes().size() == seen.size());
}

TEST_CASE("every row of check's catalogue is made in some example, and check names it there", "[check][slow]") {
    const auto rows = mistake_rows();
    std::map<std::size_t, std::string> named;  // row index → where check named it
    for (const Example& example : examples()) {
        Model model = test::load_text(example.yaml, example.name + ".yaml");
        if (!model.grad_output) {
            model.grad_output = arma::mat(model.n(), model.d_out(), arma::fill::ones);
            model.grad_output_ones = true;
        }
        const Trace trace = compute(model);
        const Values truth = true_values(trace);
        for (const Step& step : trace.steps) {
            const StepKey key{step.id, step.head};
            const LearnerValues L(model, truth);
            const Attempt attempt{model, trace, L, key};
            for (std::size_t r = 0; r < rows.size(); ++r) {
                const MistakeRow& row = rows[r];
                if (named.count(r) != 0 || row.make == nullptr || !row.steps.has(key.id) ||
                    (row.applies != nullptr && !row.applies(attempt))) {
                    continue;
                }
                std::vector<Mistake> made;
                row.make(attempt, Made(row.id, key, made));
                for (const Mistake& mistake : made) {
                    CHECK(mistake.key == row.id);
                    // a mistake of one step is answered in that step; one of several, in the head's
                    // weighted sum, which reads them all
                    StepKey answered = key;
                    arma::mat value;
                    if (mistake.several_steps) {
                        answered = {StepId::head_output, key.head};
                        value = *carried_values(model, trace, mistake).at(answered);
                    } else {
                        value = mistake.values.front().second;
                    }
                    const Answers answers = test::answers_from(answer_of(model, answered, value), trace);
                    const auto diagnosis = diagnose_answer(model, trace, answers, answered.id, answered.head, {});
                    if (diagnosis && diagnosis->key == mistake.key && diagnosis->mistake == mistake.mistake) {
                        named[r] = example.name + " " + std::string(step_name(answered.id)) + " head " +
                                   std::to_string(answered.head);
                        break;
                    }
                }
            }
        }
    }
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].make != nullptr) {
            CAPTURE(r, rows[r].id);
            CHECK(named.count(r) == 1);
        }
    }
}

TEST_CASE("one cell written under a classic mistake gets the diagnosis the whole step gets", "[check][slow]") {
    const auto rows = mistake_rows();
    std::set<std::string> shown;  // the classic mistakes one cell was diagnosed under
    std::set<std::string> classic;
    for (const MistakeRow& row : rows) {
        if (row.classic && row.make != nullptr) {
            classic.insert(std::string(row.id));
        }
    }
    for (const Example& example : examples()) {
        const Model model = test::load_text(example.yaml, example.name + ".yaml");
        const Trace trace = compute(model);
        const Values truth = true_values(trace);
        for (const Step& step : trace.steps) {
            const StepKey key{step.id, step.head};
            const std::vector<Mistake> made = mistakes_in(model, trace, key, truth);
            for (std::size_t m = 0; m < made.size(); ++m) {
                const Mistake& mistake = made[m];
                if (classic.count(mistake.key) == 0 || shown.count(mistake.key) != 0 || mistake.several_steps) {
                    continue;
                }
                const arma::mat& value = mistake.values.front().second;
                if (value.n_rows != step.values.n_rows || value.n_cols != step.values.n_cols) {
                    continue;
                }
                // the whole step names it
                const Answers whole = test::answers_from(answer_of(model, key, value), trace);
                const auto step_diagnosis = diagnose_answer(model, trace, whole, key.id, key.head, {});
                if (!step_diagnosis || step_diagnosis->key != mistake.key) {
                    continue;
                }
                // a cell that this mistake alone gives: away from the truth (by more than a
                // slip of rounding) and from the numbers the step's other mistakes give there
                const auto apart = [](double a, double b) { return !(std::fabs(a - b) < 2e-3); };
                for (arma::uword k = 0; k < value.n_elem; ++k) {
                    const double x = value(k);
                    bool alone = std::isfinite(x) && !(std::fabs(x - step.values(k)) <= 2e-4);
                    for (std::size_t o = 0; o < made.size() && alone; ++o) {
                        const arma::mat& other = made[o].values.front().second;
                        alone = o == m || made[o].key == mistake.key || other.n_elem != value.n_elem ||
                                !std::isfinite(other(k)) || apart(x, other(k));
                    }
                    if (!alone) {
                        continue;
                    }
                    arma::mat one(value.n_rows, value.n_cols, arma::fill::value(arma::datum::nan));
                    one(k) = x;
                    const Answers answers = test::answers_from(answer_of(model, key, one), trace);
                    const CheckReport report = check_answers(model, trace, answers, {});
                    CAPTURE(example.name, step_name(key.id), key.head, mistake.key, k, x);
                    const StepCheck* checked = nullptr;
                    for (const StepCheck& each : report.steps) {
                        checked = each.answer->id == key.id && each.answer->head == key.head ? &each : checked;
                    }
                    REQUIRE(checked != nullptr);
                    REQUIRE(checked->cells.size() == 1);
                    REQUIRE(checked->cells.front().diagnosis);
                    CHECK(checked->cells.front().diagnosis->key == mistake.key);
                    shown.insert(mistake.key);
                    break;
                }
            }
        }
    }
    // softmax without exp, scaling forgotten, d_k for √d_k, no transpose, the column softmax,
    // Aᵀ·V, the mask's mistakes, the wrong weight matrix...: each, in some example
    // heads averaged makes concat n × d_v, not n × H·d_v: no one cell of the step shows it
    classic.erase("heads_averaged");
    for (const std::string& id : classic) {
        CAPTURE(id);
        CHECK(shown.count(id) == 1);
    }
}
