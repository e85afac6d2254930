// The step table (attention/steps.hpp): one row per step, read by compute(),
// check, explain, the loader and the lessons.
#include "support.hpp"

#include "attention/step_handlers.hpp"
#include "check/recompute.hpp"

#include <algorithm>

using namespace qkv;

namespace {

const char* const k_two_heads_masked = R"(
inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
heads: 2
weights:
  query: [[1, 0, 1, 0], [1, 0, 0, 1], [0, 0, 1, 1], [0, 1, 1, 0]]
  key:   [[0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
  value: [[0, 2, 0, 1], [0, 3, 0, 0], [1, 0, 3, 0], [1, 1, 0, 2]]
mask: causal
positional: sinusoidal
)";

// Four query heads sharing two key/value heads, with every key of today's attention (EXAMPLE FILES in man/qkv.1.in).
const char* const k_grouped = R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]]
heads: 4
kv_heads: 2
weights:
  query: [[1, 0, 0, 1, 1, 0, 0, 1], [0, 1, 1, 0, 0, 1, 1, 0], [1, 1, 0, 0, 1, 0, 1, 0], [0, 0, 1, 1, 0, 1, 0, 1]]
  key:   [[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 1, 0], [0, 1, 0, 1]]
  value: [[1, 0, 2, 0], [0, 1, 0, 2], [1, 1, 0, 0], [0, 0, 1, 1]]
rope: true
alibi: true
mask: {window: 2}
sinks: [0, 1, -1, 0.5]
)";

std::vector<std::string> names_of(const std::vector<StepKey>& keys) {
    std::vector<std::string> names;
    for (const auto& key : keys) {
        names.push_back(step_text(key.id) + (key.head == 0 ? "" : "@" + std::to_string(key.head)));
    }
    return names;
}

}  // namespace

TEST_CASE("every step has one row, in the order of its id, and its name reads back", "[steps]") {
    const std::vector<StepId> ids = all_steps();
    REQUIRE(ids.size() == k_step_count);
    for (std::size_t k = 0; k < ids.size(); ++k) {
        CAPTURE(k);
        CHECK(static_cast<std::size_t>(ids[k]) == k);
        CHECK(step_row(ids[k]).id == ids[k]);
        CHECK(find_step(step_name(ids[k])) == ids[k]);
        CHECK_FALSE(step_row(ids[k]).title.empty());
    }
    CHECK_FALSE(find_step("score").has_value());
    CHECK(step_name_list() ==
          "inputs, positional, encoded, context, w_q_a, q_latent, normed_q_latent, w_kv_a, kv_latent, "
          "normed_kv_latent, rope_keys, w_query, b_query, queries, normed_queries, rotated_queries, w_key, "
          "b_key, keys, normed_keys, rotated_keys, w_value, b_value, values, scores, scaled_scores, capped_scores, position_bias, biased_scores, "
          "masked_scores, "
          "weights, head_output, concat, w_output, b_output, output, "
          "grad_output, grad_concat, grad_head_output, grad_weights, grad_capped_scores, grad_scaled_scores, grad_scores, "
          "grad_normed_queries, grad_queries, grad_normed_keys, grad_keys, grad_values, grad_q_norm, grad_k_norm, "
          "grad_normed_q_latent, grad_q_latent, grad_rope_keys, grad_normed_kv_latent, grad_kv_latent, "
          "grad_q_a_layernorm, grad_kv_a_layernorm, "
          "grad_w_query, grad_w_key, grad_w_value, grad_w_q_a, grad_w_kv_a, grad_w_output, grad_b_query, grad_b_key, "
          "grad_b_value, grad_b_output, grad_in_proj_weight, grad_in_proj_bias, grad_out_proj_weight, "
          "grad_out_proj_bias, grad_inputs, grad_context");
}

TEST_CASE("the trace's order is the table's, each head's steps together", "[steps]") {
    const Model model = test::load_text(k_two_heads_masked);
    CHECK(names_of(step_sequence(model)) ==
          std::vector<std::string>{"inputs", "positional", "encoded", "w_query@1", "queries@1", "w_key@1", "keys@1",
                                   "w_value@1", "values@1", "scores@1", "scaled_scores@1", "masked_scores@1",
                                   "weights@1", "head_output@1", "w_query@2", "queries@2", "w_key@2", "keys@2",
                                   "w_value@2", "values@2", "scores@2", "scaled_scores@2", "masked_scores@2",
                                   "weights@2", "head_output@2", "concat", "output"});
    const Trace trace = compute(model);
    REQUIRE(trace.steps.size() == step_sequence(model).size());
    for (std::size_t k = 0; k < trace.steps.size(); ++k) {
        CHECK(trace.steps[k].id == step_sequence(model)[k].id);
        CHECK(trace.steps[k].head == step_sequence(model)[k].head);
    }
    // numbered by the ids the trace holds: no context, so queries is step 4; the weights have no number
    CHECK(trace.number(StepId::w_query) == 0);
    CHECK(trace.number(StepId::inputs) == 1);
    CHECK(trace.number(StepId::queries) == 4);
    CHECK(trace.number(StepId::output) == 13);
    CHECK(trace.number(StepId::context) == 0);
}

TEST_CASE("when a step exists and what it reads", "[steps]") {
    const Model plain = test::load_text("inputs: [[1, 0], [0, 1]]\nweights: {query: [[1, 0], [0, 1]], key: [[1, 0], "
                                        "[0, 1]], value: [[1, 0], [0, 1]]}\n");
    const Model masked = test::load_text(k_two_heads_masked);
    CHECK_FALSE(step_exists(plain, StepId::positional));
    CHECK_FALSE(step_exists(plain, StepId::masked_scores));
    CHECK_FALSE(step_exists(plain, StepId::concat));
    CHECK(step_exists(masked, StepId::encoded));
    CHECK(step_exists(masked, StepId::masked_scores));
    CHECK(step_exists(masked, StepId::concat));
    CHECK(step_heads(masked, StepId::keys) == 2);
    CHECK(step_heads(masked, StepId::output) == 0);

    CHECK(names_of(step_inputs(plain, {StepId::queries, 1})) == std::vector<std::string>{"inputs"});
    CHECK(names_of(step_inputs(masked, {StepId::queries, 2})) == std::vector<std::string>{"encoded"});
    CHECK(names_of(step_inputs(plain, {StepId::weights, 1})) == std::vector<std::string>{"scaled_scores@1"});
    CHECK(names_of(step_inputs(masked, {StepId::weights, 2})) == std::vector<std::string>{"masked_scores@2"});
    CHECK(names_of(step_inputs(plain, {StepId::output, 0})) == std::vector<std::string>{"head_output@1"});
    CHECK(names_of(step_inputs(masked, {StepId::concat, 0})) ==
          std::vector<std::string>{"head_output@1", "head_output@2"});
    CHECK(step_inputs(plain, {StepId::inputs, 0}).empty());

    // the example's weights: W_Q, W_K and W_V always, W_O and the biases when the file gives them
    CHECK(step_exists(plain, StepId::w_query));
    CHECK_FALSE(step_exists(plain, StepId::w_output));
    CHECK_FALSE(step_exists(plain, StepId::b_query));
    CHECK(step_heads(masked, StepId::w_key) == 2);
    CHECK(step_inputs(plain, {StepId::w_query, 1}).empty());

    CHECK(step_requirements() ==
          "positional and encoded need positional:, context needs context:, w_q_a, q_latent and normed_q_latent "
          "need mla: with q_rank, w_kv_a, kv_latent, normed_kv_latent and rope_keys need mla:, b_query needs bias.query, "
          "normed_queries and normed_keys need qk_norm:, rotated_queries and rotated_keys need rope:, b_key needs bias.key, b_value needs bias.value, "
          "capped_scores needs softcap:, position_bias and biased_scores need alibi:, masked_scores needs a mask or padding, concat needs more "
          "than one head, w_output needs weights.output, b_output needs bias.output, and the grad_ steps need "
          "grad_output: or --backward");
    CHECK(step_absence(StepId::masked_scores) == "this step exists only when the example sets a mask or padding");
    CHECK(step_absence(StepId::scores).empty());
}

TEST_CASE("grouped-query heads: key/value steps once per shared head, each with its first query head", "[steps]") {
    const Model model = test::load_text(k_grouped);
    CHECK(step_heads(model, StepId::queries) == 4);
    CHECK(step_heads(model, StepId::keys) == 2);
    CHECK(step_heads(model, StepId::rotated_keys) == 2);
    CHECK(step_heads(model, StepId::values) == 2);
    // query heads 1 and 2 read key/value head 1, heads 3 and 4 read head 2
    CHECK(names_of(step_inputs(model, {StepId::scores, 2})) ==
          std::vector<std::string>{"rotated_queries@2", "rotated_keys@1"});
    CHECK(names_of(step_inputs(model, {StepId::scores, 3})) ==
          std::vector<std::string>{"rotated_queries@3", "rotated_keys@2"});
    CHECK(names_of(step_inputs(model, {StepId::head_output, 4})) ==
          std::vector<std::string>{"weights@4", "values@2"});
    CHECK(names_of(step_inputs(model, {StepId::biased_scores, 1})) ==
          std::vector<std::string>{"scaled_scores@1", "position_bias@1"});
    CHECK(names_of(step_inputs(model, {StepId::masked_scores, 1})) == std::vector<std::string>{"biased_scores@1"});
    CHECK(names_of(step_inputs(model, {StepId::weights, 1})) == std::vector<std::string>{"masked_scores@1"});
    const std::vector<std::string> sequence = names_of(step_sequence(model));
    const std::vector<std::string> head_2 = {"w_query@2", "queries@2", "rotated_queries@2", "scores@2"};
    const std::vector<std::string> head_3 = {"w_query@3", "queries@3", "rotated_queries@3", "w_key@2", "keys@2",
                                             "rotated_keys@2", "w_value@2", "values@2", "scores@3"};
    CHECK(std::search(sequence.begin(), sequence.end(), head_2.begin(), head_2.end()) != sequence.end());
    CHECK(std::search(sequence.begin(), sequence.end(), head_3.begin(), head_3.end()) != sequence.end());
    CHECK(std::count(sequence.begin(), sequence.end(), "keys@1") == 1);
    CHECK(std::count(sequence.begin(), sequence.end(), "keys@3") == 0);

    const Trace trace = compute(model);
    CHECK(trace.dims.heads == 4);
    CHECK(trace.dims.kv_heads == 2);
    CHECK(trace.dims.kv_head_of(2) == 1);
    CHECK(trace.dims.kv_head_of(3) == 2);
    // --head 3 keeps query head 3's steps and key/value head 2's
    ComputeOptions options;
    options.head = 3;
    const Trace one = compute(model, options);
    CHECK_FALSE(one.find(StepId::keys, 2)->values.is_empty());
    CHECK(one.find(StepId::keys, 1)->values.is_empty());
    CHECK_FALSE(one.find(StepId::scores, 3)->values.is_empty());
    CHECK(one.find(StepId::scores, 2)->values.is_empty());
}

TEST_CASE("each step recomputed from the trace's own values gives the trace's values", "[steps]") {
    // compute_step is what check's error carried forward uses: from the true
    // earlier values it must give back every true value
    const std::string yaml = GENERATE(as<std::string>{}, k_two_heads_masked, k_grouped);
    const Model model = test::load_text(yaml);
    const Trace trace = compute(model);
    const StepValues values = checking::true_values(trace);
    for (const auto& step : trace.steps) {
        CAPTURE(step_text(step.id), step.head);
        const auto again = checking::recompute(model, {step.id, step.head}, values);
        REQUIRE(again.has_value());
        test::require_near(*again, step.values, 0, step_text(step.id));
    }
    // inputs that do not fit together give no value, not an abort
    StepValues wrong = values;
    wrong[step_inputs(model, {StepId::scores, 1})[1]] = std::make_shared<const arma::mat>(arma::mat(2, 7, arma::fill::ones));
    CHECK_FALSE(checking::recompute(model, {StepId::scores, 1}, wrong).has_value());
}

TEST_CASE("a lesson heads its tables by the steps' names, and run numbers them", "[steps][lesson][cli]") {
    // lesson 6 shows an unmasked example's scores, then a masked one's; lesson 10 the queries and the scores,
    // then the rotated queries: no numbers that skip or run backwards
    for (const std::string name : {"masking", "rope"}) {
        CAPTURE(name);
        const test::CliResult result = test::run_qkv({"lesson", name, "--no-pause"});
        REQUIRE(result.status == 0);
        CHECK(result.out.find("\nScores  [scores]") != std::string::npos);
        CHECK(result.out.find("\nStep ") == std::string::npos);
    }
    const test::CliResult run = test::run_qkv({"run", "masked"});
    REQUIRE(run.status == 0);
    CHECK(run.out.find("\nStep 7 · Masked scores  [masked_scores]") != std::string::npos);
}

TEST_CASE("a reader's table of steps takes its entries, and each category's fallback for the rest", "[steps]") {
    // given: inputs, positional, context; the backward pass from grad_output on; the rest computed forward
    CHECK(step_category(StepId::inputs) == StepCategory::given);
    CHECK(step_category(StepId::positional) == StepCategory::given);
    CHECK(step_category(StepId::context) == StepCategory::given);
    CHECK(step_category(StepId::encoded) == StepCategory::forward);
    CHECK(step_category(StepId::output) == StepCategory::forward);
    CHECK(step_category(StepId::grad_output) == StepCategory::gradient);
    CHECK(step_category(StepId::grad_context) == StepCategory::gradient);

    // an elementwise step of the scores, and the gradient of its output, are categories of their own
    CHECK(step_category(StepId::capped_scores) == StepCategory::elementwise);
    CHECK(step_category(StepId::grad_capped_scores) == StepCategory::elementwise_gradient);
    CHECK(step_category(StepId::scaled_scores) == StepCategory::forward);
    CHECK(step_category(StepId::grad_scaled_scores) == StepCategory::gradient);

    // without fallbacks of their own they take the forward and the gradient ones
    static constexpr auto table = step_handlers<int>({{StepId::scores, 7}, {StepId::grad_keys, 8}, {StepId::context, 9}},
                                                     {.given = 1, .forward = 2, .gradient = 3});
    static constexpr auto own = step_handlers<int>({{StepId::scores, 7}},
                                                   {.given = 1, .forward = 2, .gradient = 3, .elementwise = 4,
                                                    .elementwise_gradient = 5});
    for (const StepId id : all_steps()) {
        CAPTURE(step_name(id));
        const StepCategory category = step_category(id);
        const int expected = id == StepId::scores      ? 7
                             : id == StepId::grad_keys ? 8
                             : id == StepId::context   ? 9
                             : category == StepCategory::given   ? 1
                             : category == StepCategory::forward || category == StepCategory::elementwise ? 2
                                                                          : 3;
        CHECK(table[step_index(id)] == expected);
        const int expected_own = id == StepId::scores                              ? 7
                                 : category == StepCategory::given                ? 1
                                 : category == StepCategory::forward              ? 2
                                 : category == StepCategory::gradient             ? 3
                                 : category == StepCategory::elementwise          ? 4
                                                                                  : 5;
        CHECK(own[step_index(id)] == expected_own);
    }
}
