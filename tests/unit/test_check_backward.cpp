// `qkv check` on the backward pass (STEPS and DIAGNOSES in man/qkv.1.in): every named mistake of the
// gradient steps, each with an answer that shows it and a correct answer that
// must not; error carried forward through the gradients; and the command's exit
// status for right and wrong gradient answers.
#include "check/check.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <functional>

using namespace qkv;
using Catch::Matchers::Contains;

namespace {

using test::answer_yaml;
using test::answers_from;
using test::yaml_matrix;



const arma::mat& value(const Trace& trace, const std::string& id, int head = 0) {
    const Step* step = trace.find(id, head);
    INFO("step " << id << " head " << head);
    REQUIRE(step != nullptr);
    return step->values;
}

// ── the examples ────────────────────────────────────────────────────────────

// One head, d_model 3, d_k = d_v = 2 (scaled by √2), no mask, a grad_output with no pattern.
const char* const k_one_head = R"(
inputs: [[1, 0, 1], [0, 2, 1], [1, 1, 0]]
weights:
  query: [[1, 0], [0, 1], [1, 1]]
  key:   [[0, 1], [1, 0], [1, 1]]
  value: [[1, 2], [0, 1], [2, 0]]
grad_output: [[1, -1], [0.5, 2], [-1, 0.5]]
)";

// Square weights (d_model = d_k = d_v = d_out = 2), one head with W_O: every weight's gradient is square.
const char* const k_square = R"(
inputs: [[1, 0], [0, 2], [1, 1]]
weights:
  query:  [[1, 2], [0, 1]]
  key:    [[1, 0], [3, 1]]
  value:  [[2, 1], [1, 1]]
  output: [[1, -1], [2, 0]]
grad_output: [[1, 0], [0.5, -1], [0, 2]]
)";

std::string square_pytorch() {
    std::string text = "layout: pytorch\n";
    text.append(k_square);
    return text;
}

// nn.MultiheadAttention with E = 2 and one head: out_proj.weight's gradient is square.
const char* const k_block = R"(
inputs: [[1, 0], [0, 2], [1, 1]]
pytorch:
  num_heads: 1
  in_proj_weight: [[1, 0], [2, 1], [1, 3], [0, 1], [2, 1], [1, 1]]
  out_proj_weight: [[1, 2], [-1, 0]]
grad_output: [[1, 0], [0.5, -1], [0, 2]]
)";

// Two heads of width 1 with W_O (H·d_v = d_out = 2).
const char* const k_two_heads = R"(
inputs: [[1, 0], [0, 1], [1, 1]]
heads: 2
weights:
  query:  [[1, 2], [0, 1]]
  key:    [[1, 0], [1, 1]]
  value:  [[2, 0], [1, 1]]
  output: [[1, 2], [-1, 1]]
grad_output: [[1, 0], [0.5, -1], [2, 1]]
)";

// Multi-query attention: two query heads share one key/value head.
const char* const k_shared = R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
heads: 2
kv_heads: 1
weights:
  query: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
  key:   [[1, 0], [0, 1], [1, 1], [0, 0]]
  value: [[1, 2], [0, 1], [2, 0], [1, 1]]
grad_output: [[1, -1, 0, 2], [0.5, 0, 1, -1], [0, 1, -0.5, 1]]
)";

// RoPE on one head of width 4.
const char* const k_rope = R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
weights:
  query: [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
  key:   [[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]]
  value: [[1, 2], [0, 1], [2, 0], [1, 1]]
rope: true
grad_output: [[1, -1], [0.5, 2], [-1, 0.5]]
)";

struct Example {
    const char* name;
    std::string yaml;
};

struct MistakeCase {
    const char* key;
    Example example;
    const char* step;
    int head;  // query head, or key/value head for grad_keys and grad_values; 0 for other steps
    // the learner's wrong value: the mistaken operation applied to the trace's own values
    std::function<arma::mat(const Model&, const Trace&)> wrong;
};

std::vector<MistakeCase> mistake_cases() {
    const Example one{"one head", k_one_head};
    const Example square{"square weights", k_square};
    const Example square_pt{"square weights, layout pytorch", square_pytorch()};
    const Example block{"a pytorch: block", k_block};
    const Example two{"two heads with W_O", k_two_heads};
    const Example shared{"two query heads share one key/value head", k_shared};
    const Example rope{"RoPE", k_rope};
    const auto A = [](const Trace& t, int h) { return value(t, "weights", h); };
    return {
        // the softmax's backward (the first is in the the check command's contract)
        {"softmax_backward_no_row_term", one, "grad_scaled_scores", 1,
         [=](const Model&, const Trace& t) { return arma::mat(A(t, 1) % value(t, "grad_weights", 1)); }},
        {"softmax_backward_no_row_term", two, "grad_scaled_scores", 2,
         [=](const Model&, const Trace& t) { return arma::mat(A(t, 2) % value(t, "grad_weights", 2)); }},
        {"softmax_backward_diagonal_only", one, "grad_scaled_scores", 1,
         [=](const Model&, const Trace& t) {
             return arma::mat(A(t, 1) % (1.0 - A(t, 1)) % value(t, "grad_weights", 1));
         }},
        {"softmax_backward_skipped", one, "grad_scaled_scores", 1,
         [](const Model&, const Trace& t) { return value(t, "grad_weights", 1); }},
        // the scale (the first is in the contract): d_k = 2
        {"grad_scale_forgotten", one, "grad_scores", 1,
         [](const Model&, const Trace& t) { return value(t, "grad_scaled_scores", 1); }},
        {"grad_scale_multiplied", one, "grad_scores", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_scaled_scores", 1) * std::sqrt(2.0)); }},
        // queries, keys and values (dV = A·dZ and dK = dS·Q are in the contract)
        {"grad_queries_transposed", one, "grad_queries", 1,
         [](const Model&, const Trace& t) {
             return arma::mat(value(t, "grad_scores", 1).t() * value(t, "keys", 1));
         }},
        {"grad_keys_no_transpose", one, "grad_keys", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_scores", 1) * value(t, "queries", 1)); }},
        {"grad_keys_no_transpose", shared, "grad_keys", 1,
         [](const Model&, const Trace& t) {
             return arma::mat(value(t, "grad_scores", 1) * value(t, "queries", 1) +
                              value(t, "grad_scores", 2) * value(t, "queries", 2));
         }},
        {"grad_values_no_transpose", one, "grad_values", 1,
         [=](const Model&, const Trace& t) { return arma::mat(A(t, 1) * value(t, "grad_head_output", 1)); }},
        {"grad_values_no_transpose", two, "grad_values", 2,
         [=](const Model&, const Trace& t) { return arma::mat(A(t, 2) * value(t, "grad_head_output", 2)); }},
        {"grad_kv_one_head", shared, "grad_keys", 1,
         [](const Model&, const Trace& t) {
             return arma::mat(value(t, "grad_scores", 1).t() * value(t, "queries", 1));
         }},
        {"grad_kv_one_head", shared, "grad_values", 1,
         [=](const Model&, const Trace& t) { return arma::mat(A(t, 1).t() * value(t, "grad_head_output", 1)); }},
        // RoPE
        {"grad_rope_not_reversed", rope, "grad_queries", 1,
         [](const Model&, const Trace& t) {
             return arma::mat(value(t, "grad_scores", 1) * value(t, "rotated_keys", 1));
         }},
        {"grad_rope_not_reversed", rope, "grad_keys", 1,
         [](const Model&, const Trace& t) {
             return arma::mat(value(t, "grad_scores", 1).t() * value(t, "rotated_queries", 1));
         }},
        // W_O
        {"grad_output_projection_forgotten", two, "grad_head_output", 1,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_output").col(0)); }},
        {"grad_output_projection_forgotten", two, "grad_head_output", 2,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_output").col(1)); }},
        // the weights' gradients in the other layout
        {"grad_weight_layout", square, "grad_w_query", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_w_query").t()); }},
        {"grad_weight_layout", square, "grad_w_value", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_w_value").t()); }},
        {"grad_weight_layout", square, "grad_w_output", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_w_output").t()); }},
        {"grad_weight_layout", square_pt, "grad_w_key", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_w_key").t()); }},
        {"grad_weight_layout", block, "grad_out_proj_weight", 0,
         [](const Model&, const Trace& t) { return arma::mat(value(t, "grad_out_proj_weight").t()); }},
        // the inputs
        {"grad_inputs_queries_only", one, "grad_inputs", 0,
         [](const Model& m, const Trace& t) { return arma::mat(value(t, "grad_queries", 1) * m.heads[0].W_Q.t()); }},
        {"grad_inputs_queries_only", shared, "grad_inputs", 0,
         [](const Model& m, const Trace& t) {
             return arma::mat(value(t, "grad_queries", 1) * m.heads[0].W_Q.t() +
                              value(t, "grad_queries", 2) * m.heads[1].W_Q.t());
         }},
    };
}

}  // namespace

TEST_CASE("every mistake of the backward pass is named, and none fires on a correct answer", "[check][backward]") {
    for (const auto& c : mistake_cases()) {
        CAPTURE(c.key, c.example.name, c.step, c.head);
        const Model model = test::load_text(c.example.yaml);
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
        REQUIRE(checked.diagnosis.has_value());
        CHECK(checked.diagnosis->key == c.key);
        CHECK(checked.diagnosis->carried.empty());
        CHECK_FALSE(checked.diagnosis->mistake.empty());
        CHECK_FALSE(checked.diagnosis->correct.empty());

        // the correct answer, at 4 and at 2 decimals: right, and no mistake recognised in it
        for (const int decimals : {4, 2}) {
            CAPTURE(decimals);
            const Answers correct = answers_from(answer_yaml(c.step, c.head, n_heads, step->values, decimals), trace);
            const CheckReport right = check_answers(model, trace, correct, {});
            CHECK(right.correct());
            CHECK(right.steps.front().count(Verdict::right) == step->values.n_elem);
            CHECK_FALSE(right.steps.front().diagnosis.has_value());
            CHECK_FALSE(diagnose_answer(model, trace, correct, test::step(c.step), c.head, {}).has_value());
        }
    }
}

TEST_CASE("the the four backward mistakes the man page names, worked from the learner's numbers", "[check][backward]") {
    // the contract of the man page by name, each found in a report of several answers
    const Model model = test::load_text(k_one_head);
    const Trace trace = compute(model);
    const arma::mat& A = value(trace, "weights", 1);
    const arma::mat& dA = value(trace, "grad_weights", 1);
    const arma::mat& dZ = value(trace, "grad_head_output", 1);
    // grad_weights right; the rest each done one wrong way, from the true values before them
    const std::string answers = answer_yaml("grad_weights", 1, 1, dA) +
                                answer_yaml("grad_scaled_scores", 1, 1, A % dA) +
                                answer_yaml("grad_values", 1, 1, A * dZ);
    const Answers given = answers_from(answers, trace);
    const CheckReport report = check_answers(model, trace, given, {});
    REQUIRE(report.steps.size() == 3);
    CHECK(report.steps[0].count(Verdict::right) == 9);
    REQUIRE(report.steps[1].diagnosis.has_value());
    CHECK(report.steps[1].diagnosis->key == "softmax_backward_no_row_term");
    CHECK_THAT(report.steps[1].diagnosis->correct, Contains("rowsum(dA ∘ A)"));
    REQUIRE(report.steps[2].diagnosis.has_value());
    CHECK(report.steps[2].diagnosis->key == "grad_values_no_transpose");
    REQUIRE(report.first_mistake() != nullptr);
    CHECK(report.first_mistake()->answer->id == "grad_scaled_scores");

    // dS = dS' (the learner's own dS' right), then dK = dS·Q from the learner's own dS
    const arma::mat& dS_scaled = value(trace, "grad_scaled_scores", 1);
    const arma::mat learner_dS = round_to(dS_scaled, 4);
    const Answers more = answers_from(answer_yaml("grad_scaled_scores", 1, 1, dS_scaled) +
                                          answer_yaml("grad_scores", 1, 1, learner_dS) +
                                          answer_yaml("grad_keys", 1, 1, learner_dS * value(trace, "queries", 1)),
                                      trace);
    const CheckReport second = check_answers(model, trace, more, {});
    REQUIRE(second.steps.size() == 3);
    CHECK(second.steps[0].count(Verdict::right) == 9);
    REQUIRE(second.steps[1].diagnosis.has_value());
    CHECK(second.steps[1].diagnosis->key == "grad_scale_forgotten");
    REQUIRE(second.steps[2].diagnosis.has_value());
    CHECK(second.steps[2].diagnosis->key == "grad_keys_no_transpose");
}

TEST_CASE("a gradient worked correctly from a wrong earlier gradient is consistent, not wrong", "[check][backward]") {
    const Model model = test::load_text(k_one_head);
    const Trace trace = compute(model);
    const arma::mat& A = value(trace, "weights", 1);
    // dA doubled: wrong in every cell (adding a constant to a row would not do, since the softmax's
    // backward ignores it)
    const arma::mat wrong_dA = round_to(2.0 * value(trace, "grad_weights", 1), 4);
    const arma::mat dS_scaled = softmax_backward(A, wrong_dA);  // the right formula on the learner's dA
    const Answers answers = answers_from(
        answer_yaml("grad_weights", 1, 1, wrong_dA) + answer_yaml("grad_scaled_scores", 1, 1, dS_scaled), trace);
    const CheckReport report = check_answers(model, trace, answers, {});
    REQUIRE(report.steps.size() == 2);
    const StepCheck& dA = report.steps[0];
    const StepCheck& dS = report.steps[1];
    CHECK(dA.count(Verdict::wrong) >= 6);
    CHECK(dS.count(Verdict::wrong) == 0);
    CHECK(dS.count(Verdict::consistent) >= 6);
    CHECK(dS.follows_from == std::vector<std::string>{"grad_weights"});
    CHECK_FALSE(dS.diagnosis.has_value());
    REQUIRE(report.first_mistake() == &dA);

    SECTION("and further down: dS from the learner's dS' (the scale divided out) follows as well") {
        const Answers longer = answers_from(answer_yaml("grad_weights", 1, 1, wrong_dA) +
                                                answer_yaml("grad_scaled_scores", 1, 1, dS_scaled) +
                                                answer_yaml("grad_scores", 1, 1, dS_scaled / std::sqrt(2.0)),
                                            trace);
        const CheckReport chained = check_answers(model, trace, longer, {});
        REQUIRE(chained.steps.size() == 3);
        CHECK(chained.steps[2].count(Verdict::wrong) == 0);
        CHECK(chained.steps[2].count(Verdict::consistent) >= 6);
    }
}

// ── the command ─────────────────────────────────────────────────────────────

namespace {

// Every step of the trace answered at `decimals`, as a learner who got them all right writes them.
std::string every_answer(const Trace& trace, bool gradients_only, int decimals = 4) {
    std::string top;
    std::vector<std::string> heads(trace.dims.heads);
    for (const Step& step : trace.steps) {
        if (gradients_only && !is_gradient(step.id)) {
            continue;
        }
        const std::string entry = std::string(step_name(step.id)) + ": " + yaml_matrix(step.values, decimals);
        if (step.head == 0 || trace.dims.heads == 1) {
            top += "  " + entry + "\n";
        } else {
            std::string& head = heads[static_cast<std::size_t>(step.head - 1)];
            head += (head.empty() ? "" : ", ") + entry;
        }
    }
    std::string text = "answers:\n" + top;
    if (trace.dims.heads > 1) {
        text += "  heads:\n";
        for (const std::string& head : heads) {
            text += "    - {" + head + "}\n";
        }
    }
    return text;
}

const char* const k_list = R"(
inputs: [[1, 0], [0, 2], [1, 1]]
heads:
  - {query: [[1, 2], [0, 1]], key: [[1, 0], [3, 1]], value: [[2, 1], [1, 1]], bias: {query: [0.5, 0]}}
  - {query: [[0, 1], [1, 1]], key: [[1, 1], [0, 2]], value: [[1, 0], [0, 1]]}
weights: {output: [[1, -1], [2, 0], [0, 1], [1, 1]]}
grad_output: [[1, 0], [0.5, -1], [0, 2]]
)";

}  // namespace

TEST_CASE("qkv check passes every gradient answered right, and fails one answered wrong", "[check][backward][cli]") {
    const Example examples[] = {{"one head", k_one_head},
                                {"square weights, layout pytorch", square_pytorch()},
                                {"a pytorch: block", k_block},
                                {"two heads with W_O", k_two_heads},
                                {"two query heads share one key/value head", k_shared},
                                {"RoPE", k_rope}};
    for (const auto& example : examples) {
        CAPTURE(example.name);
        const Trace trace = test::compute_text(example.yaml);
        const test::CliResult right = test::run_qkv({"check", "-"}, example.yaml + every_answer(trace, false));
        INFO(right.err);
        INFO(right.out.substr(0, 3000));
        CHECK(right.status == 0);
        CHECK(right.err.empty());
    }
    SECTION("the contract's mistakes: exit 1, and the report names each") {
        const Model model = test::load_text(k_one_head);
        const Trace trace = compute(model);
        const arma::mat& A = value(trace, "weights", 1);
        const std::pair<std::string, std::string> cases[] = {
            {answer_yaml("grad_scaled_scores", 1, 1, A % value(trace, "grad_weights", 1)), "rowsum(dA ∘ A)"},
            {answer_yaml("grad_scores", 1, 1, value(trace, "grad_scaled_scores", 1)), "dS = dS'"},
            {answer_yaml("grad_values", 1, 1, A * value(trace, "grad_head_output", 1)), "A·dZ"},
            {answer_yaml("grad_keys", 1, 1, value(trace, "grad_scores", 1) * value(trace, "queries", 1)), "dS·Q"},
        };
        for (const auto& [answer, words] : cases) {
            CAPTURE(answer);
            const test::CliResult wrong =
                test::run_qkv({"check", "-", "-f", "json"}, std::string(k_one_head) + "answers:\n  " + answer);
            INFO(wrong.err);
            CHECK(wrong.status == 1);
            const auto json = nlohmann::json::parse(wrong.out);
            CHECK(json["correct"] == false);
            REQUIRE(json["steps"].size() == 1);
            REQUIRE(json["steps"][0]["diagnosis"].is_string());
            CHECK_THAT(json["steps"][0]["diagnosis"].get<std::string>(), Contains(words));
        }
    }
}

TEST_CASE("the weights' gradients of a heads: list can be answered per head", "[check][backward][cli]") {
    // with a heads: list, grad_w_* and grad_b_* are per head (Dims::weight_sets), so their answers go under heads:
    const Trace trace = test::compute_text(k_list);
    REQUIRE(trace.find(StepId::grad_w_query, 2) != nullptr);
    const std::string answers =
        "heads:\n  - {grad_w_query: " + yaml_matrix(value(trace, "grad_w_query", 1), 4) +
        ", grad_b_query: " + yaml_matrix(value(trace, "grad_b_query", 1), 4) + "}\n  - {grad_w_query: " +
        yaml_matrix(value(trace, "grad_w_query", 2), 4) + "}\n";
    Answers read;
    CHECK_NOTHROW(read = answers_from(answers, trace));
    const test::CliResult right = test::run_qkv({"check", "-"}, std::string(k_list) + every_answer(trace, true));
    INFO(right.err);
    CHECK(right.status == 0);
}

TEST_CASE("a weight's gradient written transposed is named as such, whatever the weight's shape", "[check][backward][cli]") {
    // W_Q is 4 × 2: dW_Q written 2 × 4 is the layout mistake, and its rows are not tokens
    const std::string example = R"(
tokens: [the, cat, sat]
inputs: [[1, 0, 2, 0], [0, 1, 0, 2], [1, 1, 0, 1]]
weights:
  query: [[1, 0], [0, 1], [1, 0], [0, 1]]
  key: [[0, 1], [1, 0], [1, 1], [0, 0]]
  value: [[1, 2], [3, 0], [0, 1], [2, 0]]
grad_output: [[1, 0], [0, 1], [2, -1]]
)";
    const Trace trace = compute(test::load_text(example));
    const arma::mat& dW = value(trace, "grad_w_query", 0);
    REQUIRE(dW.n_rows == 4);
    REQUIRE(arma::abs(dW).max() > 0.1);
    const auto result = test::run_qkv({"check", "-"}, example + "answers:\n  " + answer_yaml("grad_w_query", 0, 1, dW.t()));
    CHECK(result.status == 1);
    CHECK_THAT(result.out, Contains("Your answer is 2 × 4; grad_w_query is 4 × 2. Its rows are not tokens"));
    CHECK_THAT(result.out, Contains("Mistake: The gradient is transposed: weights are in × out here"));
    CHECK_THAT(result.out, !Contains("Rows are tokens"));
    // the rows of a token step stay tokens
    const arma::mat& Q = value(trace, "queries", 1);
    const auto tokens = test::run_qkv({"check", "-"}, example + "answers:\n  " + answer_yaml("queries", 1, 1, Q.t()));
    CHECK_THAT(tokens.out, Contains("Rows are tokens: write one row per token."));
}
