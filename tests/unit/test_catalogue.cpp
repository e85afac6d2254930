// check's catalogue of mistakes read as a table (check/catalogue.hpp): every
// row is made in some example, and `check` names it there; an id's first row
// carries its man page line. The mistakes themselves are worked by hand in
// test_check_diagnoses.cpp, test_check.cpp and test_check_backward.cpp.
#include "attention/cell.hpp"
#include "builtin/builtin.hpp"
#include "check/catalogue.hpp"
#include "check/check.hpp"
#include "io/lesson_loader.hpp"
#include "lesson/player.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace qkv;
using namespace qkv::checking;

namespace {

// The examples the rows are made in: the built-in ones with their backward
// pass, and a few with what no built-in example has (biases, positional
// encodings, scale: none, several heads without W_O, one head with W_O,
// cross-attention over as many tokens as it has inputs, soft-capping).
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

// RoPE turning the first 2 of d_k 4, so that turning the whole head is a mistake of its own
const char* const k_partial_rope = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
weights:
  query: [[1, 0, 2, 1], [0, 1, 1, 0], [1, 1, 0, 2]]
  key: [[0, 1, 1, 2], [1, 0, 2, 0], [1, 2, 0, 1]]
  value: [[1, 2], [2, 0], [0, 1]]
rope: {partial_rotary_factor: 0.5}
)";

// Soft-capping with a cap near the scaled scores, so that the cap bends them and each way of getting it
// wrong gives other numbers
const char* const k_softcap = R"(inputs: [[1, 0, 1], [0, 1, 1], [1, 1, 0]]
weights:
  query: [[1, 0], [0, 1], [1, 1]]
  key: [[0, 1], [1, 0], [1, 1]]
  value: [[1, 2], [2, 0], [0, 1]]
softcap: 2
mask: causal
)";

// QK-norm with Gemma's 1 + γ over each head of two, and OLMo 2's over the whole projection, with γ far
// enough from 1 that each way of getting the norm wrong gives other numbers
const char* const k_qk_norm = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
heads: 2
weights:
  query: [[1, 0, 2, 1], [0, 1, 1, 0], [1, 1, 0, 2]]
  key: [[0, 1, 1, 2], [1, 0, 2, 0], [1, 2, 0, 1]]
  value: [[1, 2], [2, 0], [0, 1]]
qk_norm: {offset: 1, query: [0.5, -0.25], key: [-0.5, 1]}
)";
const char* const k_qk_norm_all = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
heads: 2
weights:
  query: [[1, 0, 2, 1], [0, 1, 1, 0], [1, 1, 0, 2]]
  key: [[0, 1, 1, 2], [1, 0, 2, 0], [1, 2, 0, 1]]
  value: [[1, 2], [2, 0], [0, 1]]
qk_norm: {over: all, query: [1.5, 0.5, 2, 1], key: [1, 2, 0.5, 1]}
mask: causal
)";

// RoPE scaled as Llama 3.1 does (pairs 1 and 2 of 4 in different bands), and by YaRN with its attention factor
const char* const k_rope_llama3 = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
weights:
  query: [[1, 0, 2, 1, 0, 1, 1, 2], [0, 1, 1, 0, 2, 1, 0, 1], [1, 1, 0, 2, 1, 0, 2, 1]]
  key: [[0, 1, 1, 2, 1, 0, 1, 1], [1, 0, 2, 0, 1, 2, 0, 1], [1, 2, 0, 1, 0, 1, 1, 0]]
  value: [[1, 2], [2, 0], [0, 1]]
rope: {scaling: {rope_type: llama3, factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64}}
)";
const char* const k_rope_yarn = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
weights:
  query: [[1, 0, 2, 1, 0, 1, 1, 2], [0, 1, 1, 0, 2, 1, 0, 1], [1, 1, 0, 2, 1, 0, 2, 1]]
  key: [[0, 1, 1, 2, 1, 0, 1, 1], [1, 0, 2, 0, 1, 2, 0, 1], [1, 2, 0, 1, 0, 1, 1, 0]]
  value: [[1, 2], [2, 0], [0, 1]]
rope: {scaling: {rope_type: yarn, factor: 8, original_max_position_embeddings: 2048}}
mask: causal
)";

// latent attention with a query latent, d_n = d_r = 2 and DeepSeek-V3's YaRN, whose mscale² joins the scale
const char* const k_mla = R"(inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]
heads: 2
mla: {kv_rank: 2, rope_dim: 2, nope_dim: 2, v_dim: 1, q_rank: 2}
rope: {style: interleaved, scaling: {type: yarn, factor: 40, original_max_position_embeddings: 4096,
       mscale: 1.0, mscale_all_dim: 1.0}}
mask: causal
weights:
  q_a_proj: [[1, 0], [0, 2], [1, 1]]
  q_a_layernorm: [1, 0.5]
  q_b_proj: [[1, 0, 2, 1, 0, 1, 1, 2], [0, 1, 1, 0, 2, 1, 0, 1]]
  kv_a_proj_with_mqa: [[0, 1, 1, 2], [1, 0, 2, 0], [1, 2, 0, 1]]
  kv_a_layernorm: [2, 1]
  kv_b_proj: [[1, 2, 0, 1, 0, 2], [2, 0, 1, 0, 1, 1]]
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
    all.push_back({"partial-rope", k_partial_rope});
    all.push_back({"softcap", k_softcap});
    all.push_back({"qk-norm", k_qk_norm});
    all.push_back({"qk-norm-all", k_qk_norm_all});
    all.push_back({"rope-llama3", k_rope_llama3});
    all.push_back({"rope-yarn", k_rope_yarn});
    all.push_back({"mla-q-rank", k_mla});
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
    const int slot = key.head;  // a key/value step under its key/value head
    std::string heads = "heads: [";
    for (int h = 1; h < slot; ++h) {
        heads += "~, ";
    }
    return heads + "{" + id + ": " + matrix_yaml(M) + "}]\n";
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
        // the transpose, the key/value heads counted in a shape, another cell's value and too few
        // decimals are the search's own; every other row has its recipe
        CHECK((row.make == nullptr) == (row.id == "transposed" || row.id == "kv_heads_counted" ||
                                        row.id == "another_cell" || row.id == "too_few_decimals"));
    }
    CHECK(named_mistakes().size() == seen.size());
}

TEST_CASE("every row of check's catalogue is made in some example, and check names it there", "[check][slow]") {
    const auto rows = mistake_rows();
    std::map<std::size_t, std::string> named;  // row index → where check named it
    for (const Example& example : examples()) {
        Model model = test::load_text(example.yaml, example.name + ".yaml");
        // with its backward pass
        if (!model.grad_output) {
            model.grad_output = arma::mat(model.n(), model.d_out(), arma::fill::ones);
            model.grad_output_ones = true;
        }
        const Trace trace = compute(model);
        const Values truth = true_values(trace);
        // the keys read two at a time, so that the online softmax's rows apply
        const checking::Working working{.block_size = 2};
        CheckOptions options;
        options.block_size = working.block_size;
        for (const Step& step : trace.steps) {
            const StepKey key{step.id, step.head};
            const LearnerValues L(model, truth);
            const Attempt attempt{model, trace, L, key, working};
            for (std::size_t r = 0; r < rows.size(); ++r) {
                const MistakeRow& row = rows[r];
                if (named.count(r) != 0 || row.make == nullptr || !row.steps.has(key.id) ||
                    (row.applies != nullptr && !row.applies(attempt))) {
                    continue;
                }
                std::vector<Mistake> made;
                row.make(attempt, Made(row, key, made));
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
                    const auto diagnosis =
                        diagnose_answer(model, trace, answers, answered.id, answered.head, options);
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

namespace {

// What the mistakes of the steps before `key` give in it, carried forward from
// the true values: each with its id.
std::vector<std::pair<std::string, arma::mat>> carried_here(const Model& model, const Trace& trace, const StepKey& key,
                                                            const checking::Working& working = {}) {
    const Values truth = true_values(trace);
    std::vector<std::pair<std::string, arma::mat>> carried;
    for (const Step& earlier : trace.steps) {
        if (earlier.id == key.id && earlier.head == key.head) {
            break;
        }
        for (const Mistake& mistake : mistakes_in(model, trace, {earlier.id, earlier.head}, truth, working)) {
            const Values values = carried_values(model, trace, mistake);
            if (const auto found = values.find(key); found != values.end() && found->second != truth.at(key)) {
                carried.emplace_back(mistake.key, *found->second);
            }
        }
    }
    return carried;
}

// Cell k of mistake m of `made` is that mistake's alone: away from the truth
// (by more than a slip of rounding) and from the numbers the step's other
// mistakes give there; a slip of rounding, also from what the mistakes of the
// earlier steps give, since those are tried first.
bool alone(const std::vector<Mistake>& made, std::size_t m, const std::vector<std::pair<std::string, arma::mat>>& carried,
           const arma::mat& truth, arma::uword k) {
    const Mistake& mistake = made[m];
    const double x = mistake.values.front().second(k);
    const auto apart = [](double a, double b) { return !(std::fabs(a - b) < 2e-3); };
    bool alone = std::isfinite(x) && !(std::fabs(x - truth(k)) <= 2e-4);
    for (std::size_t o = 0; o < made.size() && alone; ++o) {
        const arma::mat& other = made[o].values.front().second;
        alone = o == m || made[o].key == mistake.key || other.n_elem != truth.n_elem || !std::isfinite(other(k)) ||
                apart(x, other(k));
    }
    for (std::size_t o = 0; o < carried.size() && alone && mistake.rounding; ++o) {
        const arma::mat& other = carried[o].second;
        alone = carried[o].first == mistake.key || other.n_elem != truth.n_elem || !std::isfinite(other(k)) ||
                apart(x, other(k));
    }
    return alone;
}

// The mistakes one cell is written under: the classic ones and intermediates
// rounded too early (the done-when of SPEC §5a's one grader).
std::set<std::string> one_cell_mistakes() {
    std::set<std::string> ids{"rounded_too_early"};
    for (const MistakeRow& row : mistake_rows()) {
        if (row.classic && row.make != nullptr) {
            ids.insert(std::string(row.id));
        }
    }
    return ids;
}

// Each mistake of `ids` in each step of the model that the whole step is
// named under, written in one cell it alone gives (a slip of rounding: that no
// mistake of an earlier step gives either, since those come first): check
// names that cell, on its own, with the same mistake. Returns the mistakes
// tried.
std::set<std::string> one_cell_named(const std::string& name, const Model& model, const std::set<std::string>& ids) {
    std::set<std::string> shown;
    const Trace trace = compute(model);
    const Values truth = true_values(trace);
    for (const Step& step : trace.steps) {
        const StepKey key{step.id, step.head};
        const std::vector<Mistake> made = mistakes_in(model, trace, key, truth);
        const auto carried = carried_here(model, trace, key);
        for (std::size_t m = 0; m < made.size(); ++m) {
            const Mistake& mistake = made[m];
            if (ids.count(mistake.key) == 0 || shown.count(mistake.key) != 0 || mistake.several_steps) {
                continue;
            }
            const arma::mat& value = mistake.values.front().second;
            if (value.n_rows != step.values.n_rows || value.n_cols != step.values.n_cols) {
                continue;
            }
            // the whole step names it
            const Answers whole = test::answers_from(answer_of(model, key, value), trace);
            const auto step_diagnosis = diagnose_answer(model, trace, whole, key.id, key.head, {});
            if (!step_diagnosis || step_diagnosis->key != mistake.key || step_diagnosis->mistake != mistake.mistake) {
                continue;
            }
            // a cell that this mistake alone gives: away from the truth (by more than a
            // slip of rounding) and from the numbers the step's other mistakes give there
            for (arma::uword k = 0; k < value.n_elem; ++k) {
                const double x = value(k);
                if (!alone(made, m, carried, step.values, k)) {
                    continue;
                }
                arma::mat one(value.n_rows, value.n_cols, arma::fill::value(arma::datum::nan));
                one(k) = x;
                const Answers answers = test::answers_from(answer_of(model, key, one), trace);
                const CheckReport report = check_answers(model, trace, answers, {});
                CAPTURE(name, step_name(key.id), key.head, mistake.key, mistake.mistake, k, x);
                const StepCheck* checked = nullptr;
                for (const StepCheck& each : report.steps) {
                    checked = each.answer->id == key.id && each.answer->head == key.head ? &each : checked;
                }
                REQUIRE(checked != nullptr);
                REQUIRE(checked->cells.size() == 1);
                REQUIRE(checked->cells.front().diagnosis);
                CHECK(checked->cells.front().diagnosis->key == mistake.key);
                CHECK(checked->cells.front().diagnosis->mistake == mistake.mistake);
                shown.insert(mistake.key);
                break;
            }
        }
    }
    return shown;
}

// A small model of random whole numbers from -2 to 3: 3 or 4 tokens of width 2
// to 4, one or two heads of width 2 or 3, scaled or not, causal or not.
std::string random_model(std::mt19937& random) {
    const auto pick = [&random](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
    const auto matrix = [&](int rows, int cols) {
        std::string text = "[";
        for (int i = 0; i < rows; ++i) {
            text += i == 0 ? "[" : ", [";
            for (int j = 0; j < cols; ++j) {
                text += (j == 0 ? "" : ", ") + std::to_string(pick(-2, 3));
            }
            text += "]";
        }
        return text + "]";
    };
    const int n = pick(3, 4);
    const int d = pick(2, 4);
    const int heads = pick(1, 2);
    const int width = heads * pick(2, 3);
    std::string yaml = "inputs: " + matrix(n, d) + "\nheads: " + std::to_string(heads) + "\nweights:\n";
    for (const char* name : {"query", "key", "value"}) {
        yaml += std::string("  ") + name + ": " + matrix(d, width) + "\n";
    }
    if (pick(0, 1) == 1) {
        yaml += "mask: causal\n";
    }
    if (pick(0, 2) == 0) {
        yaml += "scale: none\n";
    }
    return yaml;
}

}  // namespace

TEST_CASE("one cell written under a classic mistake gets the diagnosis the whole step gets", "[check][slow]") {
    const std::set<std::string> ids = one_cell_mistakes();
    std::set<std::string> shown;  // the mistakes one cell was diagnosed under
    for (const Example& example : examples()) {
        const Model model = test::load_text(example.yaml, example.name + ".yaml");
        const std::set<std::string> here = one_cell_named(example.name, model, ids);
        shown.insert(here.begin(), here.end());
    }
    // softmax without exp, scaling forgotten, d_k for √d_k, no transpose, the column softmax,
    // Aᵀ·V, the mask's mistakes, the wrong weight matrix, intermediates rounded...: each, in some example
    // heads averaged makes concat n × d_v, not n × H·d_v: no one cell of the step shows it
    for (const std::string& id : ids) {
        CAPTURE(id);
        CHECK((shown.count(id) == 1 || id == "heads_averaged"));
    }
}

TEST_CASE("on random small models too, one cell under a mistake gets the whole step's diagnosis", "[check][slow]") {
    std::mt19937 random(20261128);  // a fixed seed: the same models on every run
    const std::set<std::string> ids = one_cell_mistakes();
    std::map<std::string, int> shown;  // how many models showed each mistake in one cell
    for (int k = 0; k < 24; ++k) {
        const std::string yaml = random_model(random);
        const Model model = test::load_text(yaml, "random.yaml");
        CAPTURE(yaml);
        for (const std::string& id : one_cell_named("random " + std::to_string(k), model, ids)) {
            ++shown[id];
        }
    }
    // the mistakes these models can show (no mask matrix, no W_O) are each seen more than once
    for (const char* id : {"softmax_no_exp", "scaling_forgotten", "scores_no_transpose", "softmax_columns", "output_at_v",
                           "rounded_too_early"}) {
        CAPTURE(id);
        CHECK(shown[id] >= 2);
    }
}

TEST_CASE("a lesson's number written under a mistake gets the diagnosis check gives the whole step",
          "[check][lesson][slow]") {
    // every number question of every built-in lesson, with each mistake of its step that the step
    // written whole is named under, where that mistake alone gives the asked cell's number
    const std::set<std::string> ids = [] {
        std::set<std::string> all = one_cell_mistakes();
        all.insert({"online_not_rescaled", "online_not_divided"});
        return all;
    }();
    std::set<std::string> shown;
    for (const auto& file : builtin_lessons()) {
        const auto found = find_lesson(std::string(file.name));
        const Lesson lesson = prepare_lesson(read_lesson(found.source, found.name));
        for (const Page& page : lesson.pages) {
            if (!page.ask || page.ask->kind != Question::Kind::number) {
                continue;
            }
            const Question& question = *page.ask;
            const LessonModel& entry = lesson.models[static_cast<std::size_t>(question.answer.model)];
            const CellRef& cell = question.answer.cell;
            const Step* step = &cell_step(entry.trace, cell);
            const StepKey key{step->id, step->head};
            const checking::Working working{.block_size = page.block_size};
            CheckOptions options;
            options.block_size = page.block_size;
            const std::vector<Mistake> made = mistakes_in(entry.model, entry.trace, key, true_values(entry.trace), working);
            const auto carried = carried_here(entry.model, entry.trace, key, working);
            const auto k = static_cast<arma::uword>(cell.col - 1) * step->values.n_rows + static_cast<arma::uword>(cell.row - 1);
            for (std::size_t m = 0; m < made.size(); ++m) {
                const Mistake& mistake = made[m];
                const arma::mat& value = mistake.values.front().second;
                if (ids.count(mistake.key) == 0 || mistake.several_steps || value.n_rows != step->values.n_rows ||
                    value.n_cols != step->values.n_cols || !alone(made, m, carried, step->values, k)) {
                    continue;
                }
                const Answers whole = test::answers_from(answer_of(entry.model, key, value), entry.trace);
                const auto named = diagnose_answer(entry.model, entry.trace, whole, key.id, key.head, options);
                if (!named || named->key != mistake.key || named->mistake != mistake.mistake) {
                    continue;
                }
                const std::string reply = fmt::format("{:.4f}", value(k));
                CAPTURE(lesson.name, cell.text, mistake.key, mistake.mistake, reply);
                const Graded graded = grade_reply(lesson, question, reply);
                CHECK(graded.valid);
                CHECK_FALSE(graded.right);
                CHECK(graded.why.find(mistake.mistake) != std::string::npos);
                shown.insert(mistake.key);
            }
        }
    }
    // the questions ask for scores, weights and outputs: these at least are met in their own step
    for (const char* id : {"scores_no_transpose", "softmax_no_exp", "softmax_columns", "output_at_v",
                           "rounded_too_early", "online_not_rescaled", "online_not_divided"}) {
        CAPTURE(id, shown);
        CHECK(shown.count(id) == 1);
    }
}
