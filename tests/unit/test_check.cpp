// Unit tests of `qkv check` as a library: reading answers, rounding-aware
// verdicts, error carried forward, and every diagnosis (one answer that shows
// the mistake, one correct answer that must not).
#include "check/check.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>

using namespace qkv;
using Catch::Matchers::Contains;

namespace {

using test::answer_yaml;
using test::answers_from;
using test::yaml_matrix;

// A model, its trace, the answers and the report, kept together because the
// report points into the trace and the answers.
struct Checked {
    Model model;
    Trace trace;
    Answers answers;
    CheckReport report;

    const StepCheck& step(const std::string& id, int head = 1) const {
        for (const auto& step : report.steps) {
            if (step.answer->id == id && (step.answer->head == head || step.answer->head == 0)) {
                return step;
            }
        }
        FAIL("no answer for " << id);
        return report.steps.front();
    }
};

std::unique_ptr<Checked> check_yaml(const std::string& model_yaml, const std::string& answers_yaml,
                                    CheckOptions options = {}) {
    auto checked = std::make_unique<Checked>();
    checked->model = test::load_text(model_yaml);
    checked->trace = compute(checked->model);
    checked->answers = answers_from(answers_yaml, checked->trace);
    checked->report = check_answers(checked->model, checked->trace, checked->answers, options);
    return checked;
}



const arma::mat& value(const Trace& trace, const std::string& id, int head = 0) {
    const Step* step = trace.find(id, head);
    REQUIRE(step != nullptr);
    return step->values;
}

arma::mat softmax(const arma::mat& S) { return softmax_rows(S); }

// ── the examples the cases use ──────────────────────────────────────────────

// The homework model: causal mask, √d_k scaling, d_model = 4, d_k = d_v = 3, n = m = 3.
std::string three_words() { return test::read_repo_file("examples/homework/three-words/model.yaml"); }

// Two heads with square weights, per-head biases, and a square W_O with a bias.
const char* const k_two_heads_bias = R"(
inputs: [[1, 0], [0, 1], [1, 1]]
heads:
  - query: [[1, 2], [0, 1]]
    key:   [[1, 0], [1, 1]]
    value: [[2, 0], [1, 1]]
    bias: {query: [1, 0], key: [0, 1], value: [1, 1]}
  - query: [[0, 1], [2, 0]]
    key:   [[2, 1], [0, 1]]
    value: [[1, 2], [0, 1]]
weights:
  output: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
bias: {output: [0.5, 0, 0, -0.5]}
)";

// Two heads with square weights chosen so that head 1's scores from W·x projections,
// X·W_Qᵀ·W_K·Xᵀ, differ from K·Qᵀ = X·W_K·W_Qᵀ·Xᵀ (W_Qᵀ·W_K = [[1, 1], [2, 3]] and
// W_K·W_Qᵀ = [[3, 1], [2, 1]], by hand): the homework model's head 1 has W_Qᵀ·W_K = W_K·W_Qᵀ,
// so there the two mistakes give the same scores.
const char* const k_two_heads_square = R"(
inputs: [[1, 0], [0, 1], [1, 1]]
heads:
  - query: [[1, 2], [0, 1]]
    key:   [[1, 1], [0, 1]]
    value: [[2, 0], [1, 1]]
  - query: [[0, 1], [2, 0]]
    key:   [[2, 1], [0, 1]]
    value: [[1, 2], [0, 1]]
)";

// Two heads without W_O (the output is the concatenation).
std::string two_heads() { return test::read_repo_file("examples/homework/two-heads/model.yaml"); }

const char* const k_pytorch_layout = R"(
layout: pytorch
inputs: [[1, 0], [0, 1], [2, 1]]
weights:
  query: [[1, 2], [0, 1]]
  key:   [[1, 0], [3, 1]]
  value: [[2, 1], [1, 1]]
)";

const char* const k_positional = R"(
positional: sinusoidal
inputs: [[1, 0], [0, 1], [1, 1]]
weights:
  query: [[1, 2], [0, 1]]
  key:   [[1, 0], [1, 1]]
  value: [[2, 0], [1, 1]]
)";

std::string illustrated() { return test::read_repo_file("examples/illustrated.yaml"); }
std::string cross() { return test::read_repo_file("examples/cross.yaml"); }

// The mask of the three-words model (causal): 1 where query i may attend to key j.
arma::mat causal3() { return test::rows({{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}); }

struct DiagnosisCase {
    const char* key;
    std::function<std::string()> model;
    const char* step;
    int head;
    // The learner's wrong value: the mistaken operation applied to the trace's own values.
    std::function<arma::mat(const Model&, const Trace&)> wrong;
    const char* carried = "";  // the earlier, unanswered step the mistake is in ("" = this step)
};

std::vector<DiagnosisCase> diagnosis_cases() {
    const auto two_bias = [] { return std::string(k_two_heads_bias); };
    const auto pytorch = [] { return std::string(k_pytorch_layout); };
    const auto positional = [] { return std::string(k_positional); };
    return {
        // projections
        {"projection_w_x", two_bias, "queries", 1,
         [](const Model& m, const Trace&) {
             arma::mat Q = m.X * m.heads[0].W_Q.t();
             Q.each_row() += *m.heads[0].b_Q;
             return Q;
         }},
        {"projection_w_x", pytorch, "keys", 1,
         // W_K as written is the transpose of the stored x·W weight: X·W_K(as written)
         [](const Model& m, const Trace&) { return arma::mat(m.X * m.heads[0].W_K.t()); }},
        {"weights_swapped", three_words, "queries", 1,
         [](const Model& m, const Trace&) { return arma::mat(m.X * m.heads[0].W_K); }},
        {"wrong_weight", three_words, "values", 1,
         [](const Model& m, const Trace&) { return arma::mat(m.X * m.heads[0].W_Q); }},
        {"bias_forgotten", two_bias, "keys", 1,
         [](const Model& m, const Trace&) { return arma::mat(m.X * m.heads[0].W_K); }},
        {"positions_forgotten", positional, "queries", 1,
         [](const Model& m, const Trace&) { return arma::mat(m.X * m.heads[0].W_Q); }},
        {"cross_source_swapped", cross, "keys", 1,
         // keys from the 2 inputs instead of the 3 context rows: a 2 × 2 answer for a 3 × 2 step
         [](const Model& m, const Trace&) { return arma::mat(m.X * m.heads[0].W_K); }},
        {"other_head_weights", two_bias, "queries", 2,
         [](const Model& m, const Trace&) {
             arma::mat Q = m.X * m.heads[0].W_Q;
             Q.each_row() += *m.heads[0].b_Q;
             return Q;
         }},
        {"positions_not_added", positional, "encoded", 0, [](const Model& m, const Trace&) { return m.X; }},
        // scores
        {"scores_no_transpose", three_words, "scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "queries", 1) * value(t, "keys", 1)); }},
        {"scores_k_qt", three_words, "scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "keys", 1) * value(t, "queries", 1).t()); }},
        {"scores_qt_k", three_words, "scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "queries", 1).t() * value(t, "keys", 1)); }},
        {"scores_already_scaled", three_words, "scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scores", 1) / std::sqrt(3.0)); }},
        {"scores_used_values", three_words, "scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "queries", 1) * value(t, "values", 1).t()); }},
        // scaling: d_k = 3, d_model = 4
        {"scaling_forgotten", three_words, "scaled_scores", 1,
         [](const Model&, const Trace& t) { return value(t, "scores", 1); }},
        {"scaled_by_dk", three_words, "scaled_scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scores", 1) / 3.0); }},
        {"scaled_by_sqrt_d_model", three_words, "scaled_scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scores", 1) / 2.0); }},
        {"scale_multiplied", three_words, "scaled_scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scores", 1) * std::sqrt(3.0)); }},
        {"scaled_without_scale", illustrated, "scaled_scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scores", 1) / std::sqrt(3.0)); }},
        // the causal mask
        {"mask_zero", three_words, "masked_scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scaled_scores", 1) % causal3()); }},
        {"mask_ignored", three_words, "masked_scores", 1,
         [](const Model&, const Trace& t) { return value(t, "scaled_scores", 1); }},
        {"mask_transposed", three_words, "masked_scores", 1,
         [](const Model&, const Trace& t) { return apply_mask(value(t, "scaled_scores", 1), causal3().t()); }},
        {"mask_inverted", three_words, "masked_scores", 1,
         [](const Model&, const Trace& t) { return apply_mask(value(t, "scaled_scores", 1), 1.0 - causal3()); }},
        // softmax
        {"softmax_columns", three_words, "weights", 1,
         [](const Model&, const Trace& t) { return arma::mat(softmax(value(t, "masked_scores", 1).t()).t()); }},
        {"softmax_no_exp", three_words, "weights", 1,
         [](const Model&, const Trace& t) {
             arma::mat M = value(t, "scaled_scores", 1) % causal3();  // blocked cells count as 0
             M.each_col() /= arma::sum(M, 1);
             return M;
         }},
        {"softmax_not_normalised", three_words, "weights", 1,
         [](const Model&, const Trace& t) { return arma::mat(arma::exp(value(t, "masked_scores", 1))); }},
        {"mask_after_softmax", three_words, "weights", 1,
         [](const Model&, const Trace& t) { return arma::mat(softmax(value(t, "scaled_scores", 1)) % causal3()); }},
        {"softmax_whole_matrix", three_words, "weights", 1,
         [](const Model&, const Trace& t) {
             arma::mat E = arma::exp(value(t, "masked_scores", 1));
             return arma::mat(E / arma::accu(E));
         }},
        // weighted sum (one head, no W_O: the output is Z)
        {"output_at_v", three_words, "output", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "weights", 1).t() * value(t, "values", 1)); }},
        {"output_scores_v", three_words, "output", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "scaled_scores", 1) * value(t, "values", 1)); }},
        {"output_weighted_inputs", three_words, "head_output", 1,
         // A (3 × 3) · X (3 × 4): a 3 × 4 answer for a 3 × 3 step
         [](const Model& m, const Trace& t) { return arma::mat(value(t, "weights", 1) * m.X); }},
        // heads
        {"heads_averaged", two_heads, "concat", 0,
         [](const Model&, const Trace& t) {
             return arma::mat((value(t, "head_output", 1) + value(t, "head_output", 2)) / 2.0);
         }},
        {"heads_summed", two_heads, "concat", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "head_output", 1) + value(t, "head_output", 2)); }},
        {"heads_reversed", two_heads, "concat", 0,
         [](const Model&, const Trace& t) {
             return arma::mat(arma::join_rows(value(t, "head_output", 2), value(t, "head_output", 1)));
         }},
        {"heads_stacked", two_heads, "concat", 0,
         [](const Model&, const Trace& t) {
             return arma::mat(arma::join_cols(value(t, "head_output", 1), value(t, "head_output", 2)));
         }},
        {"heads_averaged", two_heads, "output", 0,
         [](const Model&, const Trace& t) {
             return arma::mat((value(t, "head_output", 1) + value(t, "head_output", 2)) / 2.0);
         }},
        // output projection
        {"output_projection_forgotten", two_bias, "output", 0,
         [](const Model&, const Trace& t) { return value(t, "concat"); }},
        {"bias_forgotten", two_bias, "output", 0,
         [](const Model& m, const Trace& t) { return arma::mat(value(t, "concat") * *m.W_O); }},
        {"projection_w_x", two_bias, "output", 0,
         [](const Model& m, const Trace& t) {
             arma::mat O = value(t, "concat") * m.W_O->t();
             O.each_row() += *m.b_O;
             return O;
         }},
        // any step
        {"transposed", three_words, "queries", 1, [](const Model&, const Trace& t) { return arma::mat(value(t, "queries", 1).t()); }},
        // mistakes in an earlier step that is not answered, found from a later one
        {"scaling_forgotten", three_words, "weights", 1,
         [](const Model&, const Trace& t) { return softmax(apply_mask(value(t, "scores", 1), causal3())); },
         "scaled_scores"},
        {"scores_no_transpose", three_words, "weights", 1,
         [](const Model&, const Trace& t) {
             const arma::mat S = value(t, "queries", 1) * value(t, "keys", 1);
             return softmax(apply_mask(S / std::sqrt(3.0), causal3()));
         },
         "scores"},
        {"projection_w_x", [] { return std::string(k_two_heads_square); }, "scores", 1,
         [](const Model& m, const Trace&) {
             const arma::mat Q = m.X * m.heads[0].W_Q.t();
             const arma::mat K = m.X * m.heads[0].W_K.t();
             return arma::mat(Q * K.t());
         },
         "queries (head 1)"},
        {"heads_averaged", [] { return std::string(k_two_heads_bias); }, "output", 0,
         // averaged heads (3 × 2) cannot meet W_O (4 × 4): nothing carries; kept to show that no other mistake is named
         [](const Model&, const Trace& t) {
             return arma::mat((value(t, "head_output", 1) + value(t, "head_output", 2)) / 2.0);
         },
         "-"},
    };
}

}  // namespace

TEST_CASE("every diagnosis names its mistake, and none fires on a correct answer", "[check][diagnosis]") {
    for (const auto& c : diagnosis_cases()) {
        CAPTURE(c.key, c.step, c.head, c.carried);
        const Model model = test::load_text(c.model());
        const Trace trace = compute(model);
        const int n_heads = static_cast<int>(model.n_heads());
        const Step* step = trace.find(c.step, c.head);
        REQUIRE(step != nullptr);

        // the mistake: every answered cell comes from the mistaken operation
        const arma::mat wrong = c.wrong(model, trace);
        const Answers mistaken = answers_from(answer_yaml(c.step, c.head, n_heads, wrong), trace);
        const CheckReport report = check_answers(model, trace, mistaken, {});
        REQUIRE(report.steps.size() == 1);
        const StepCheck& checked = report.steps.front();
        CHECK(checked.has_mistake());
        CHECK_FALSE(report.correct());
        if (std::string(c.carried) == "-") {
            CHECK_FALSE(checked.diagnosis.has_value());
        } else {
            REQUIRE(checked.diagnosis.has_value());
            CHECK(checked.diagnosis->key == c.key);
            CHECK(checked.diagnosis->carried == c.carried);
            CHECK_FALSE(checked.diagnosis->mistake.empty());
            CHECK_FALSE(checked.diagnosis->correct.empty());
        }

        // the correct answer, at 4 and at 2 decimals: right, and no mistake recognised in it
        for (const int decimals : {4, 2}) {
            CAPTURE(decimals);
            const Answers correct = answers_from(answer_yaml(c.step, c.head, n_heads, step->values, decimals), trace);
            const CheckReport right = check_answers(model, trace, correct, {});
            CHECK(right.correct());
            CHECK(right.steps.front().count(Verdict::right) == step->values.n_elem);
            const int head = is_per_head(test::step(c.step)) ? c.head : 0;
            CHECK_FALSE(diagnose_answer(model, trace, correct, test::step(c.step), head, {}).has_value());
        }
    }
}

TEST_CASE("a mistake that gives the true values is not named", "[check][diagnosis]") {
    // the illustrated article's scores are symmetric ([[2, 4, 4], [4, 16, 12], [4, 12, 10]], its step 4),
    // so K·Qᵀ = Sᵀ = S: a right answer must not be taken for that mistake, nor for a transpose
    const Model model = test::load_text(illustrated());
    const Trace trace = compute(model);
    const Answers right = answers_from("scores: [[2, 4, 4], [4, 16, 12], [4, 12, 10]]\n", trace);
    CHECK_FALSE(diagnose_answer(model, trace, right, StepId::scores, 1, {}).has_value());
    const Answers scaled = answers_from("scaled_scores: [[2, 4, 4], [4, 16, 12], [4, 12, 10]]\n", trace);
    CHECK_FALSE(diagnose_answer(model, trace, scaled, StepId::scaled_scores, 1, {}).has_value());
    // a wrong answer still gets its mistake named: Q·K without the transpose
    // (NumPy: [[4, 7, 3], [12, 16, 4], [10, 15, 5]])
    const Answers wrong = answers_from(answer_yaml("scores", 1, 1, arma::mat(value(trace, "queries", 1) *
                                                                             value(trace, "keys", 1)), 0),
                                       trace);
    const auto diagnosis = diagnose_answer(model, trace, wrong, StepId::scores, 1, {});
    REQUIRE(diagnosis.has_value());
    CHECK(diagnosis->key == "scores_no_transpose");
}

TEST_CASE("a diagnosis names the operation in words and gives the correct one", "[check][diagnosis]") {
    // the scores of the three-words homework computed as Q·K (worked with NumPy: Q·K = [[3,4,5],[2,1,5],[5,5,5]])
    const auto checked = check_yaml(three_words(), "scores: [[3, 4, 5], [2, 1, 5], [5, 5, 5]]\n");
    const StepCheck& scores = checked->step("scores");
    REQUIRE(scores.diagnosis.has_value());
    CHECK_THAT(scores.diagnosis->mistake, Contains("Q·K, without transposing K"));
    CHECK_THAT(scores.diagnosis->correct, Contains("S = Q·Kᵀ"));
    // the pytorch layout gets its own wording
    const Model model = test::load_text(k_pytorch_layout);
    const Trace trace = compute(model);
    const Answers answers = answers_from(answer_yaml("keys", 1, 1, arma::mat(model.X * model.heads[0].W_K.t())), trace);
    const auto diagnosis = check_answers(model, trace, answers, {}).steps.front().diagnosis;
    REQUIRE(diagnosis.has_value());
    CHECK_THAT(diagnosis->mistake, Contains("layout: pytorch"));
}

// ── verdicts ────────────────────────────────────────────────────────────────

TEST_CASE("an answer with k decimals is right when it equals the true value rounded to k decimals", "[check]") {
    const CheckOptions rounding;
    CHECK(matches(0.5, 1, 0.4683, rounding));
    CHECK_FALSE(matches(0.50, 2, 0.4683, rounding));   // "0.50" claims two decimals: 0.47
    CHECK(matches(0.47, 2, 0.4683, rounding));
    CHECK_FALSE(matches(0.0, 1, 0.0634, rounding));   // 0.0634 rounds to 0.1 (the illustrated article)
    CHECK(matches(0.1, 1, 0.0634, rounding));
    CheckOptions whole;
    whole.decimals = 0;
    CHECK(matches(2.0, 0, 2.4, whole));
    CHECK_FALSE(matches(2.0, 0, 2.6, whole));
    // an exact tie may be rounded either way
    CHECK(matches(0.2, 1, 0.25, rounding));
    CHECK(matches(0.3, 1, 0.25, rounding));
    // -inf only for -inf; NaN never
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(matches(-inf, 0, -inf, rounding));
    CHECK_FALSE(matches(-1e9, 0, -inf, rounding));
    CHECK_FALSE(matches(0.0, 0, std::nan(""), rounding));
    // an absolute tolerance instead
    const CheckOptions tolerance{0.1};
    CHECK(matches(0.0, 1, 0.0634, tolerance));
    CHECK_FALSE(matches(0.5, 1, 0.62, tolerance));
    CHECK(matches(7, 0, 7.0, CheckOptions{0.0}));
}

TEST_CASE("an answer with fewer decimals than the exercise asks for is right only when exact", "[check]") {
    const CheckOptions one;  // the default: at least one decimal
    CHECK(one.decimals == 1);
    CHECK(matches(4.0, 0, 4.0, one));          // a score of 4 may be written 4
    CHECK_FALSE(matches(1.0, 0, 0.9999, one));  // a weight of 0.9999 may not be written 1
    CHECK_FALSE(matches(0.0, 0, 0.0634, one));
    CHECK_FALSE(matches(1.0, 0, 0.577, one));   // the unscaled score of the three-words homework
    CHECK(matches(0.6, 1, 0.577, one));
    CheckOptions two;
    two.decimals = 2;
    CHECK_FALSE(matches(0.6, 1, 0.577, two));
    CHECK(matches(0.5, 1, 0.5, two));           // exact: fewer decimals will do
    CHECK(matches(0.58, 2, 0.577, two));
    // the decimals it is graded at, for the true value shown beside it
    CHECK(graded_decimals(0, 1.0, 0.577, two) == 2);
    CHECK(graded_decimals(0, 47.0, 21.0, two) == 0);  // a whole true value may be written whole
    CHECK(graded_decimals(1, 0.5, 0.5, two) == 1);
    CHECK(graded_decimals(3, 0.577, 0.577, two) == 3);
    // slack: the learner's rounding upstream
    CHECK_FALSE(matches(2.33, 2, 2.31, two));
    CHECK(matches(2.33, 2, 2.31, two, 0.02));
    CHECK_FALSE(matches(2.0, 0, 2.01, two, 0.0));
    CHECK(matches(2.0, 0, 2.01, two, 0.02));
    // --tolerance replaces the policy
    CheckOptions tolerance;
    tolerance.tolerance = 0.1;
    tolerance.decimals = 2;
    CHECK(matches(1.0, 0, 0.95, tolerance));
}

TEST_CASE("the decimals of an answer are counted as written, exponent included", "[check]") {
    CHECK(count_decimals("2") == 0);
    CHECK(count_decimals("0.50") == 2);
    CHECK(count_decimals("-0.125") == 3);
    CHECK(count_decimals("2.") == 0);
    CHECK(count_decimals(".5") == 1);
    CHECK(count_decimals("9.63506E-05") == 10);
    CHECK(count_decimals("1.5e-3") == 4);
    CHECK(count_decimals("2.5e1") == 0);
    CHECK(count_decimals("1e+2") == 0);
}

TEST_CASE("the illustrated article's rounded weights: one wrong cell, and an output that follows from them", "[check]") {
    // the check command in man/qkv.1.in: 0.0634 written as 0.0 is wrong (it rounds to 0.1); Output 1 [2.0, 7.0, 1.5] is what the
    // article's own weights [0.0, 0.5, 0.5] give: 0.5·[2, 8, 0] + 0.5·[2, 6, 3] (worked by hand).
    const auto checked = check_yaml(illustrated(), R"(
answers:
  keys:    [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
  scores:  [[2, 4, 4], [4, 16, 12], [4, 12, 10]]
  weights: [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.0, 0.9, 0.1]]
  output:  [[2.0, 7.0, 1.5], ~, ~]
)");
    const CheckReport& report = checked->report;
    REQUIRE(report.steps.size() == 4);
    CHECK(checked->step("keys").count(Verdict::right) == 9);
    CHECK(checked->step("scores").count(Verdict::right) == 9);
    const StepCheck& weights = checked->step("weights");
    REQUIRE(weights.cells.size() == 9);
    CHECK(weights.cells[0].verdict == Verdict::wrong);
    CHECK_THAT(weights.cells[0].expected, Catch::Matchers::WithinAbs(0.0634, 5e-5));
    for (std::size_t i = 1; i < 9; ++i) {
        CAPTURE(i);
        CHECK(weights.cells[i].verdict == Verdict::right);
    }
    CHECK_FALSE(weights.diagnosis.has_value());  // a rounding slip, not a classic mistake
    const StepCheck& output = checked->step("output");
    REQUIRE(output.cells.size() == 3);
    for (const auto& cell : output.cells) {
        CHECK(cell.verdict == Verdict::consistent);
    }
    CHECK(output.follows_from == std::vector<std::string>{"weights"});
    CHECK_FALSE(report.correct());
    REQUIRE(report.first_mistake() != nullptr);
    CHECK(report.first_mistake()->answer->id == "weights");
}

TEST_CASE("values rounded by hand and carried forward are consistent, not wrong", "[check]") {
    // examples/homework/three-words/rounded.yaml: softmax of the scaled scores rounded to two decimals gives
    // 0.5738 for weights[3,3] (NumPy), written 0.57, where the exact 0.5753 rounds to 0.58
    const auto checked = check_yaml(three_words(), test::read_repo_file("examples/homework/three-words/rounded.yaml"));
    const StepCheck& weights = checked->step("weights");
    CHECK(weights.count(Verdict::wrong) == 0);
    CHECK(weights.count(Verdict::consistent) == 1);
    CHECK(weights.cells.back().verdict == Verdict::consistent);
    CHECK(weights.follows_from == std::vector<std::string>{"scaled_scores"});
    CHECK(checked->step("output").count(Verdict::consistent) == 3);
    CHECK(checked->report.correct());
    CHECK(checked->report.first_mistake() == nullptr);
}

TEST_CASE("values written rounded but worked on unrounded are consistent too", "[check]") {
    // the essay's softmax 9.63506E-05 comes from the unrounded 47/√3, not from its written 27.13546
    // (NumPy: 9.635060e-05 from the exact value, 9.635006e-05 from the rounded one)
    const auto checked = check_yaml(test::read_repo_file("examples/homework/how-are-you/model.yaml"),
                                    test::read_repo_file("examples/homework/how-are-you/model.yaml"));
    CHECK(checked->step("scaled_scores").count(Verdict::consistent) == 9);
    CHECK(checked->step("weights").count(Verdict::consistent) == 9);
    const StepCheck& scores = checked->step("scores");
    CHECK(scores.count(Verdict::wrong) == 9);
    REQUIRE(scores.diagnosis.has_value());
    CHECK(scores.diagnosis->key == "scores_no_transpose");
}

TEST_CASE("an answer that is not consistent with earlier answers is wrong", "[check]") {
    // scaled scores that follow neither from the true scores nor from the learner's: [[9, ...]]
    const auto checked = check_yaml(three_words(), R"(
scores: [[2, 4, 7], [2, 1, 6], [3, 5, 6]]
scaled_scores: [[9, ~, ~], ~, ~]
)");
    const StepCheck& scaled = checked->step("scaled_scores");
    REQUIRE(scaled.cells.size() == 1);
    CHECK(scaled.cells[0].verdict == Verdict::wrong);
    CHECK_FALSE(scaled.diagnosis.has_value());
}

TEST_CASE("a tolerance replaces the rounding rule", "[check]") {
    const std::string answers = "weights: [[0.0, 0.5, 0.5], ~, ~]\n";
    CHECK_FALSE(check_yaml(illustrated(), answers)->report.correct());
    const auto tolerant = check_yaml(illustrated(), answers, CheckOptions{0.07});
    CHECK(tolerant->report.correct());
    CHECK(tolerant->step("weights").count(Verdict::right) == 3);
    CHECK_FALSE(check_yaml(illustrated(), answers, CheckOptions{0.06})->report.correct());
}

TEST_CASE("an answer of the wrong shape is a wrong answer with no cells", "[check]") {
    const auto checked = check_yaml(illustrated(), "scores: [[2, 4, 4], [4, 16, 12]]\n");
    const StepCheck& scores = checked->step("scores");
    CHECK_FALSE(scores.shape_ok);
    CHECK(scores.cells.empty());
    CHECK(scores.has_mistake());
    CHECK_FALSE(checked->report.correct());
    CHECK(checked->report.first_mistake() == &scores);
}

TEST_CASE("the first mistake is the earliest step in the order of the steps, then by head", "[check]") {
    // head 1's weights and head 2's scores are wrong; scores come first whatever the head
    const auto checked = check_yaml(two_heads(), R"(
heads:
  - {weights: [[0.9, ~, ~], ~, ~]}
  - {scores: [[9, ~, ~], ~, ~]}
)");
    REQUIRE(checked->report.first_mistake() != nullptr);
    CHECK(checked->report.first_mistake()->answer->id == "scores");
    CHECK(checked->report.first_mistake()->answer->head == 2);
}

TEST_CASE("answers may leave out cells, rows and whole steps with ~", "[check]") {
    const auto checked = check_yaml(illustrated(), R"(
keys: [[0, ~, 1], ~, [2, 3, 1]]
scores: ~
)");
    REQUIRE(checked->report.steps.size() == 1);
    CHECK(checked->step("keys").cells.size() == 5);
    CHECK(checked->report.correct());
}

// ── reading answers ─────────────────────────────────────────────────────────

namespace {

void require_answer_error(const std::string& model_yaml, const std::string& answers_yaml, const std::string& fragment) {
    const Trace trace = test::compute_text(model_yaml);
    try {
        answers_from(answers_yaml, trace);
        FAIL("no error for: " << answers_yaml);
    } catch (const InputError& error) {
        const std::string text = format_where_what(error.diagnostics().front());
        CHECK_THAT(text, Contains(fragment));
    }
}

}  // namespace

TEST_CASE("bad answer files are input errors with their position", "[check][errors]") {
    // "abc" is at line 2, column 19 (1-based: two spaces, "scores: " and "[[2, 4, " come before it)
    require_answer_error(illustrated(), "answers:\n  scores: [[2, 4, abc], ~, ~]\n",
                         "answers.yaml:2:19: answers.scores[1,3] is \"abc\"; expected a number");
    require_answer_error(illustrated(), "answers:\n  score: [[2]]\n", "answers.yaml:2:3: unknown step id answers.score");
    require_answer_error(illustrated(), "scores: [[.nan, 1, 1], ~, ~]\n", "scores[1,1] is \".nan\"; expected a number");
    require_answer_error(two_heads(), "heads: [~, ~, {scores: [[1]]}]\n",
                         "answers.yaml:1:15: heads[3] does not exist: this example has 2 heads");
    require_answer_error(two_heads(), "scores: [[1, 2, 3]]\n", "scores is a per-head step, and this example has 2 heads");
    require_answer_error(two_heads(), "heads: [{output: [[1]]}]\n", "heads[1].output is not a per-head step");
    require_answer_error(illustrated(), "masked_scores: [[1]]\n", "this example has no step masked_scores");
    require_answer_error(illustrated(), "scores: [[1, 2, 3], [1, 2]]\n", "answers.yaml:1:21: scores row 2 has 2 numbers; the first row has 3 (scores is 3 × 3)");
    require_answer_error(illustrated(), "scores: 4\n", "scores is \"4\"; expected a list of rows");
    require_answer_error(illustrated(), "scores: [[1, 2, 3], 4]\n", "scores row 2 is \"4\"; expected a list of numbers or ~");
    require_answer_error(illustrated(), "answers: ~\n", "answers is empty");
    require_answer_error(illustrated(), "[1, 2]\n", "the top level of the answer file is not a map");
    require_answer_error(illustrated(), "heads: [{scores: [[1]]}]\nscores: [[1]]\n", "scores is answered twice");
    require_answer_error(illustrated(), "title: mine\ninputs: [[1]]\n", "looks like an example file");
}

TEST_CASE("an example file without answers cannot be checked", "[check][errors]") {
    const Trace trace = test::compute_text(illustrated());
    CHECK_THROWS_AS(read_answers({"illustrated.yaml", illustrated(), ""}, trace, AnswersIn::example_file), InputError);
}

TEST_CASE("answers read blocked cells as -inf, and a single row as a flat list", "[check]") {
    const std::string model = three_words();
    const Trace trace = test::compute_text(model);
    const Answers answers = answers_from("masked_scores: [[1.15, -inf, −∞], ~, ~]\noutput: [3, 0, 3]\n", trace);
    REQUIRE(answers.steps.size() == 2);
    const StepAnswer& masked = answers.steps[0];
    CHECK(masked.id == "masked_scores");
    CHECK(masked.at(0, 1).value == -std::numeric_limits<double>::infinity());
    CHECK(masked.at(0, 2).value == -std::numeric_limits<double>::infinity());
    CHECK(masked.at(0, 0).decimals == 2);
    CHECK(masked.at(0, 0).text == "1.15");
    const StepAnswer& output = answers.steps[1];
    CHECK(output.n_rows == 1);
    CHECK(output.n_cols == 3);
}

// ── QA fixes: heads averaged, evidence, ragged rows, non-finite answers, --steps ──

TEST_CASE("heads averaged instead of concatenated is named without the head outputs", "[check][diagnosis]") {
    // the two-heads homework's head outputs at two decimals (its right.yaml), Z_1 = [[2.31, 0.93], [2.00, 0.80],
    // [2.33, 0.96]] and Z_2 = [[0.75, 2.26], [0.97, 2.46], [0.98, 2.64]], averaged by hand: (0.93 + 2.26) / 2 = 1.595
    // is written 1.60 and (2.33 + 0.98) / 2 = 1.655 is written 1.66, where the exact average gives 1.5905 and 1.6537
    const std::string averaged = "[[1.53, 1.60], [1.49, 1.63], [1.66, 1.80]]";
    for (const std::string id : {"concat", "output"}) {
        CAPTURE(id);
        const auto checked = check_yaml(two_heads(), id + ": " + averaged + "\n");
        const StepCheck& step = checked->step(id, 0);
        CHECK_FALSE(step.shape_ok);
        CHECK(step.cells.empty());
        CHECK_FALSE(checked->report.correct());
        REQUIRE(step.diagnosis.has_value());
        CHECK(step.diagnosis->key == "heads_averaged");
        CHECK(step.diagnosis->carried.empty());
    }
    // head 1's written head output is wrong in row 1, but the average is of the true head outputs
    // (the head outputs of `qkv run -p 10` averaged by hand: [1.533017, 1.590458], [1.485648, 1.629584],
    // [1.653725, 1.799857])
    const auto own_wrong = check_yaml(two_heads(), R"(
heads: [{head_output: [[9, 9], ~, ~]}]
concat: [[1.53, 1.59], [1.49, 1.63], [1.65, 1.80]]
)");
    REQUIRE(own_wrong->step("concat", 0).diagnosis.has_value());
    CHECK(own_wrong->step("concat", 0).diagnosis->key == "heads_averaged");
    // one number is not enough to tell
    CHECK_FALSE(check_yaml(two_heads(), "concat: [[1.53, ~], ~, ~]\n")->step("concat", 0).diagnosis.has_value());
}

TEST_CASE("the concatenation is written [Z_1 Z_2] in the diagnosis of two heads", "[check][diagnosis]") {
    const auto checked = check_yaml(two_heads(), "concat: [[1.53, 1.60], [1.49, 1.63], [1.66, 1.80]]\n");
    const auto& diagnosis = checked->step("concat", 0).diagnosis;
    REQUIRE(diagnosis.has_value());
    CHECK_THAT(diagnosis->correct, Contains("concat = [Z_1 Z_2]"));
    CHECK(diagnosis->correct.find("Z₁") == std::string::npos);
}

TEST_CASE("a mistake is named only on the evidence of at least two wrong cells", "[check][diagnosis]") {
    // three-words homework (right.yaml): queries row 1 = [2, 1, 1], keys = X·W_K = [[0, 1, 1], [1, 0, 2], ...];
    // scores row 1 = [2, 4, 7], scaled by √3: [1.15, 2.31, 4.04]
    SECTION("one wrong cell is a slip, whatever mistake it happens to fit") {
        // 0 is keys[1,1], and 2 the unscaled scores[1,1]
        CHECK_FALSE(check_yaml(three_words(), "queries: [[0, ~, ~], ~, ~]\n")->step("queries").diagnosis.has_value());
        CHECK_FALSE(
            check_yaml(three_words(), "scaled_scores: [[2, ~, ~], ~, ~]\n")->step("scaled_scores").diagnosis.has_value());
        // [0, 1, 1] is all of keys row 1, but only its first number is wrong for queries row 1
        CHECK_FALSE(check_yaml(three_words(), "queries: [[0, 1, 1], ~, ~]\n")->step("queries").diagnosis.has_value());
    }
    SECTION("two wrong cells that the mistake explains are enough") {
        const auto swapped = check_yaml(three_words(), "queries: [[0, 1, 1], [1, 0, 2], ~]\n");
        REQUIRE(swapped->step("queries").diagnosis.has_value());
        CHECK(swapped->step("queries").diagnosis->key == "weights_swapped");
        const auto unscaled = check_yaml(three_words(), "scaled_scores: [[2, 4, ~], ~, ~]\n");
        REQUIRE(unscaled->step("scaled_scores").diagnosis.has_value());
        CHECK(unscaled->step("scaled_scores").diagnosis->key == "scaling_forgotten");
    }
}

TEST_CASE("ragged answer rows blame the rows that differ from the step's shape", "[check][errors]") {
    // three-words scores are 3 × 3: row 1 is short, rows 2 and 3 are fine although they differ from row 1
    const Trace trace = test::compute_text(three_words());
    try {
        answers_from("scores: [[2, 4], [2, 1, 6], [3, 5, 6]]\n", trace);
        FAIL("no error for ragged rows");
    } catch (const InputError& error) {
        REQUIRE(error.diagnostics().size() == 1);
        // "scores: [" is 9 characters: row 1 starts at column 10
        CHECK_THAT(format_where_what(error.diagnostics().front()),
                   Contains("answers.yaml:1:10: scores row 1 has 2 numbers; expected 3 (scores is 3 × 3)"));
    }
    // rows of one and the same wrong length are a wrong answer, not an input error
    CHECK_FALSE(check_yaml(three_words(), "scores: [[2, 4], [2, 1], [3, 5]]\n")->step("scores").shape_ok);
}

TEST_CASE("non-finite answers are input errors, but -inf is a blocked score", "[check][errors]") {
    for (const std::string number : {"1e400", "-1e400", "inf", ".inf", "+.inf", "∞"}) {
        CAPTURE(number);
        require_answer_error(three_words(), "scores: [[" + number + ", 4, 7], ~, ~]\n",
                             "answers.yaml:1:11: scores[1,1] is \"" + number + "\"; expected a finite number");
    }
    const Trace trace = test::compute_text(three_words());
    for (const std::string number : {"-inf", "-.inf", "−∞"}) {
        CAPTURE(number);
        const Answers answers = answers_from("masked_scores: [[1.15, " + number + ", -inf], ~, ~]\n", trace);
        CHECK(answers.steps.front().at(0, 1).value == -std::numeric_limits<double>::infinity());
    }
}

TEST_CASE("answers left out of a report give no follow-through credit", "[check]") {
    // two-heads mistake-w-x: head 1's queries, keys and values are X·Wᵀ, and the scores follow from them
    const auto checked = check_yaml(two_heads(), test::read_repo_file("examples/homework/two-heads/mistake-w-x.yaml"));
    // the true scores of head 1 are [[1, 3, 4], [0, 1, 1], [1, 4, 5]] (right.yaml): the diagonal agrees, the rest follows
    CHECK(checked->step("scores").count(Verdict::right) == 3);
    CHECK(checked->step("scores").count(Verdict::consistent) == 6);
    CHECK(checked->step("scores").count(Verdict::wrong) == 0);
    // what qkv check --steps scores does: grade only the scores, as if nothing else was given
    Answers scores_only = checked->answers;
    std::erase_if(scores_only.steps, [](const StepAnswer& answer) { return answer.id != "scores"; });
    const CheckReport narrowed = check_answers(checked->model, checked->trace, scores_only, {});
    REQUIRE(narrowed.steps.size() == 1);
    CHECK_FALSE(narrowed.correct());
    REQUIRE(narrowed.first_mistake() == &narrowed.steps.front());
    const StepCheck& scores = narrowed.steps.front();
    CHECK(scores.count(Verdict::consistent) == 0);
    CHECK(scores.count(Verdict::right) == 3);
    CHECK(scores.count(Verdict::wrong) == 6);
    CHECK(scores.diagnosis.has_value());
    // the whole report is unchanged
    CHECK_FALSE(checked->report.correct());
}
