// `qkv explain --block-size B`: a row of attention computed as FlashAttention
// does, keys in blocks with a running maximum, sum and output (EXAMPLE FILES in man/qkv.1.in). Each
// block is checked against the recurrence, and the end against the trace.
#include "attention/attention.hpp"
#include "builtin/builtin.hpp"
#include "explain/explain.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <vector>

using namespace qkv;
using qkv::test::run_qkv;

TEST_CASE("the online softmax follows its recurrence block by block and ends at the trace's row", "[explain][online]") {
    for (const auto& example : builtin_examples()) {
        const Model model = test::load_text(std::string(example.text), "builtin:" + std::string(example.name));
        const Trace trace = compute(model);
        RenderOptions options;
        for (const arma::uword B : {1, 2, 3, 64}) {
            for (int h = 1; h <= static_cast<int>(model.n_heads()); ++h) {
                const StepKey read = step_inputs(model, {StepId::weights, h}).front();
                const arma::mat& X = trace.find(read.id, read.head)->values;
                const arma::mat& V = trace.find(StepId::values, model.kv_head_of(h))->values;
                const double sink = model.sinks ? (*model.sinks)(static_cast<arma::uword>(h - 1)) : 0.0;
                for (arma::uword i = 0; i < model.n(); ++i) {
                    CAPTURE(example.name, B, h, i + 1);
                    CellRef cell = parse_cell("head_output[" + std::to_string(i + 1) + "]@" + std::to_string(h));
                    if (model.n_heads() == 1) {
                        cell = parse_cell("head_output[" + std::to_string(i + 1) + "]");
                    }
                    const Explanation e = explain_cell(model, trace, cell, options, B);
                    // the blocks of keys, then the sink as a block of its own (man page, --block-size)
                    REQUIRE(e.blocks.size() == (model.m() + B - 1) / B + (model.sinks ? 1 : 0));
                    // the recurrence, from m = −∞, ℓ = 0, o = 0
                    double m = -arma::datum::inf;
                    double l = 0.0;
                    arma::rowvec o(V.n_cols, arma::fill::zeros);
                    for (const OnlineBlock& block : e.blocks) {
                        if (block.sink) {
                            // a logit with no value: o is rescaled and gains nothing
                            CHECK(&block == &e.blocks.back());
                            CHECK(*block.sink == sink);
                            const double m_new = std::max(m, sink);
                            const double factor = std::isinf(m) ? 0.0 : std::exp(m - m_new);
                            l = l * factor + std::exp(sink - m_new);
                            o = o * factor;
                            m = m_new;
                        } else {
                            const arma::rowvec x = X.row(i).subvec(block.first - 1, block.last - 1);
                            const double m_new = std::max(m, x.max());
                            if (!std::isinf(x.max())) {
                                const double factor = std::isinf(m) ? 0.0 : std::exp(m - m_new);
                                const arma::rowvec e_x = arma::exp(x - m_new);
                                l = l * factor + arma::accu(e_x);
                                o = o * factor + e_x * V.rows(block.first - 1, block.last - 1);
                                m = m_new;
                            }
                        }
                        CHECK(block.max == m);
                        CHECK(block.sum == Approx(l).epsilon(1e-13));
                        test::require_near(arma::rowvec(block.output), o, 1e-13, "o");
                    }
                    CHECK(e.blocks.back().sink.has_value() == model.sinks.has_value());
                    // o_last / ℓ_last is the head's output row
                    test::require_near(arma::rowvec(o / l),
                                       arma::rowvec(trace.find(StepId::head_output, h)->values.row(i)), 1e-12,
                                       "o / ℓ");
                    const std::string last = e.lines.back();
                    CHECK(last.find("= o / ℓ =") != std::string::npos);
                }
            }
        }
    }
}

TEST_CASE("explain --block-size writes the blocks in JSON, −∞ as \"-inf\"", "[explain][online][cli]") {
    // alibi-window: query 5 sees keys 3 to 5, so the first block of two is blocked
    const auto result = run_qkv({"explain", "alibi-window", "weights[5,4]@1", "--block-size", "2", "-f", "json"});
    REQUIRE(result.status == 0);
    const auto doc = nlohmann::json::parse(result.out);
    const auto& blocks = doc.at("cells").at(0).at("blocks");
    REQUIRE(blocks.size() == 3);
    CHECK(blocks[0].at("keys") == nlohmann::json::array({1, 2}));
    CHECK(blocks[0].at("max") == "-inf");
    CHECK(blocks[0].at("sum") == 0.0);
    CHECK_FALSE(blocks[0].contains("output"));
    CHECK(blocks[2].at("keys") == nlohmann::json::array({5, 5}));
    // the weight is exp(x_4 − m) / ℓ
    const auto& lines = doc.at("cells").at(0).at("lines");
    CHECK(lines.back().get<std::string>().rfind("weights[5,4]@1 = exp(x_4 − m) / ℓ", 0) == 0);
    // head_output cells carry the unnormalised output of their columns
    const auto output = run_qkv({"explain", "masked", "head_output[3,2]", "--block-size", "3", "-f", "json"});
    REQUIRE(output.status == 0);
    const auto out_doc = nlohmann::json::parse(output.out);
    CHECK(out_doc.at("cells").at(0).at("blocks").at(0).at("output").size() == 1);
}

TEST_CASE("explain --block-size ends the JSON blocks with the sink's, whose max and sum give the weight",
          "[explain][online][cli]") {
    // head 2's sink (3) joins after keys 1, 2 and 3 (blocked): max 3, sum 2·exp(√2 − 3) + 1
    const auto result = run_qkv({"explain", "sinks", "weights[2,1]@2", "--block-size", "1", "-f", "json"});
    REQUIRE(result.status == 0);
    const auto cell = nlohmann::json::parse(result.out).at("cells").at(0);
    const auto& blocks = cell.at("blocks");
    REQUIRE(blocks.size() == 4);
    CHECK(blocks[1].at("max") == Approx(std::sqrt(2.0)).epsilon(1e-15));
    CHECK(blocks[1].at("sum") == 2.0);
    const auto& sink = blocks[3];
    CHECK(sink.at("sink") == 3.0);
    CHECK_FALSE(sink.contains("keys"));
    CHECK(sink.at("max") == 3.0);
    const double sum = 2.0 * std::exp(std::sqrt(2.0) - 3.0) + 1.0;
    CHECK(sink.at("sum").get<double>() == Approx(sum).epsilon(1e-14));
    // the reported weight is exp(x_1 − m_last) / ℓ_last, as for every other row
    const double weight = cell.at("values").at(0).get<double>();
    CHECK(weight == Approx(std::exp(std::sqrt(2.0) - 3.0) / sum).epsilon(1e-14));
    CHECK(weight == Approx(0.14528).margin(1e-5));
    // for an output cell the sink's block carries o, rescaled and gaining nothing: o / ℓ is the output
    const auto output = run_qkv({"explain", "sinks", "head_output[2]@2", "--block-size", "2", "-f", "json"});
    REQUIRE(output.status == 0);
    const auto out_cell = nlohmann::json::parse(output.out).at("cells").at(0);
    const auto& last = out_cell.at("blocks").back();
    REQUIRE(last.at("output").size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
        CHECK(last.at("output").at(k).get<double>() / last.at("sum").get<double>() ==
              Approx(out_cell.at("values").at(k).get<double>()).epsilon(1e-14));
    }
}

TEST_CASE("explain --block-size takes weights and head_output cells and a block of at least 1", "[explain][online][cli]") {
    const auto scores = run_qkv({"explain", "masked", "scores[2,1]", "--block-size", "2"});
    CHECK(scores.status == 2);
    CHECK(scores.err.find("qkv: error: --block-size explains weights and head_output cells; scores[2,1] belongs to "
                          "step scores") != std::string::npos);
    CHECK(scores.err.find("hint: ") != std::string::npos);
    const auto zero = run_qkv({"explain", "masked", "weights[2]", "--block-size", "0"});
    CHECK(zero.status == 2);
    CHECK(zero.err.find("--block-size") != std::string::npos);
}

TEST_CASE("the one online-softmax recurrence ends where the softmax and the weighted sum end, at any block size",
          "[explain][online]") {
    // rows with blocked keys (−∞) in front, between and at the end, with and without a sink
    arma::arma_rng::set_seed(3);
    const double blocked = -arma::datum::inf;
    const std::vector<arma::rowvec> rows = {{0.5, -1.25, 3.0, 2.0, -0.5, 4.5, 1.0},
                                            {blocked, blocked, 1.0, -2.0, blocked, 6.0, 0.25},
                                            {2.0, 2.0, 2.0, blocked}};
    for (const arma::rowvec& x : rows) {
        const arma::mat V = arma::randu(x.n_elem, 3) * 4.0 - 2.0;
        for (const std::optional<double> sink : {std::optional<double>{}, std::optional<double>{0.75}}) {
            const arma::mat A = sink ? softmax_rows(x, *sink) : softmax_rows(x);
            const arma::rowvec expected = weighted_sum(A, V);
            for (arma::uword B = 1; B <= x.n_elem + 1; ++B) {
                CAPTURE(x, B, sink.has_value());
                std::size_t updates = 0;
                const OnlineState end = online_softmax(x, V, B, sink, true, [&](const OnlineUpdate& u) {
                    ++updates;
                    // a block never lowers the maximum, and the sum only ever grows from its rescaled self
                    CHECK(u.after.max >= u.before.max);
                    CHECK(u.after.sum >= u.before.sum * u.factor);
                    CHECK(u.blocked == (!u.sink && std::isinf(u.block_max)));
                });
                CHECK(updates == (x.n_elem + B - 1) / B + (sink ? 1 : 0));
                test::require_near(arma::rowvec(end.output / end.sum), expected, 1e-12, "o / ℓ");
                test::require_near(arma::rowvec(arma::exp(x - end.max) / end.sum), A, 1e-12, "exp(x − m) / ℓ");
            }
        }
    }
    // the learner's mistake: ℓ not rescaled when a later block raises m gives another sum, and the
    // same one when the first block already holds the maximum
    const arma::mat none(3, 0);
    CHECK(online_softmax({1.0, 0.0, 5.0}, none, 2, std::nullopt, false).sum !=
          Approx(online_softmax({1.0, 0.0, 5.0}, none, 2).sum));
    CHECK(online_softmax({5.0, 0.0, 1.0}, none, 2, std::nullopt, false).sum ==
          online_softmax({5.0, 0.0, 1.0}, none, 2).sum);
}
