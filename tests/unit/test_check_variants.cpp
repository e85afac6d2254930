// `qkv check`'s diagnoses in today's attention: RoPE, ALiBi, sliding windows,
// sinks and grouped-query heads, each mistake worked here with Armadillo from
// the true values of the steps before it, in a built-in example, and answered
// to four decimals in the step it is made in.
#include "builtin/builtin.hpp"
#include "check/check.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using namespace qkv;

namespace {

struct Worked {
    Model model;
    Trace trace;

    explicit Worked(const std::string& name)
        : model(test::load_text(std::string(find_builtin_example(name)->text), name + ".yaml")), trace(compute(model)) {}
    Worked(const std::string& name, const std::string& text) : model(test::load_text(text, name)), trace(compute(model)) {}

    const arma::mat& operator()(const std::string& id, int head) const {
        const Step* step = trace.find(test::step(id), head);
        INFO(id << " head " << head);
        REQUIRE(step != nullptr);
        return step->values;
    }

    // The diagnosis of `M` answered alone in step `id` of `head` (the answers' head: a
    // key/value head's step is written under the first query head that reads it).
    std::string diagnosis(const std::string& id, int head, const arma::mat& M, int slot = 0) const {
        const Answers answers = test::answers_from(
            test::answer_yaml(id, slot != 0 ? slot : head, static_cast<int>(model.n_heads()), M, 4), trace);
        const auto found = diagnose_answer(model, trace, answers, test::step(id), head, {});
        return found ? found->key : "none";
    }
};

// RoPE by hand: row p (from 0) of X, each pair (a, b) turned by (p + shift)·θ_k
// times `sign`, θ_k = 10000^(−2k/d); the pairs are (k, k + d/2), or (2k, 2k + 1) when interleaved.
arma::mat turned(const arma::mat& X, bool interleaved, double shift = 0.0, double sign = 1.0) {
    arma::mat R = X;
    const arma::uword d = X.n_cols;
    for (arma::uword k = 0; k < d / 2; ++k) {
        const arma::uword a = interleaved ? 2 * k : k;
        const arma::uword b = interleaved ? 2 * k + 1 : k + d / 2;
        const double theta = std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(d));
        for (arma::uword p = 0; p < X.n_rows; ++p) {
            const double angle = sign * (static_cast<double>(p) + shift) * theta;
            R(p, a) = X(p, a) * std::cos(angle) - X(p, b) * std::sin(angle);
            R(p, b) = X(p, a) * std::sin(angle) + X(p, b) * std::cos(angle);
        }
    }
    return R;
}

arma::mat softmax_by_rows(const arma::mat& M) {
    arma::mat E = M;
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        E.row(i) = arma::exp(M.row(i) - M.row(i).max());
        E.row(i) /= arma::accu(E.row(i));
    }
    return E;
}

}  // namespace

TEST_CASE("RoPE's mistakes are named: not applied, the other pairing, positions from 1, turned backwards, forgotten",
          "[check][diagnosis]") {
    const Worked w("rope");  // one head, d_k 4, pairs (k, k + 2)
    const arma::mat& Q = w("queries", 1);
    const arma::mat& K = w("keys", 1);
    // the true rotation is the one worked here
    test::require_near(w("rotated_queries", 1), turned(Q, false), 1e-12, "Q_rot");
    test::require_near(w("rotated_keys", 1), turned(K, false), 1e-12, "K_rot");
    CHECK(w.diagnosis("rotated_queries", 1, Q) == "rope_not_applied");
    CHECK(w.diagnosis("rotated_keys", 1, turned(K, true)) == "rope_other_style");
    CHECK(w.diagnosis("rotated_queries", 1, turned(Q, false, 1.0)) == "rope_positions_from_one");
    CHECK(w.diagnosis("rotated_keys", 1, turned(K, false, 0.0, -1.0)) == "rope_turned_backwards");
    // the scores of the queries and keys as projected, before RoPE
    CHECK(w.diagnosis("scores", 1, Q * K.t()) == "rope_forgotten");
}

TEST_CASE("RoPE turning part of each head: the whole head turned is named, the rest passes unchanged",
          "[check][diagnosis][explain][cli]") {
    // the built-in rope example (one head of d_k 4) with only its first 2 elements turning
    std::string text(find_builtin_example("rope")->text);
    const std::size_t at = text.find("rope: true");
    REQUIRE(at != std::string::npos);
    text.replace(at, 10, "rope: {partial_rotary_factor: 0.5}");
    const Worked w("partial.yaml", text);
    const arma::mat& Q = w("queries", 1);
    const arma::mat& K = w("keys", 1);
    // by hand: d_rot = 2, one pair (0, 1) turned by p·θ_0 = p; columns 3 and 4 as they were
    arma::mat expected = Q;
    for (arma::uword p = 0; p < Q.n_rows; ++p) {
        const double c = std::cos(static_cast<double>(p));
        const double s = std::sin(static_cast<double>(p));
        expected(p, 0) = Q(p, 0) * c - Q(p, 1) * s;
        expected(p, 1) = Q(p, 1) * c + Q(p, 0) * s;
    }
    test::require_near(w("rotated_queries", 1), expected, 1e-12, "Q_rot");
    CHECK(w.diagnosis("rotated_queries", 1, turned(Q, false)) == "rope_whole_head");
    CHECK(w.diagnosis("rotated_keys", 1, turned(K, false)) == "rope_whole_head");
    CHECK(w.diagnosis("rotated_queries", 1, Q) == "rope_not_applied");
    // explain says so for a cell past the turned part, and works a turned one over d_rot
    const auto past = test::run_qkv({"explain", "-", "rotated_queries[3,4]"}, text);
    INFO(past.err);
    REQUIRE(past.status == 0);
    CHECK(past.out.find("element 4 is past the first 2, which turn: it passes unchanged") != std::string::npos);
    CHECK(past.out.find("d_rot = 2 of d_k = 4 (partial_rotary_factor 0.5)") != std::string::npos);
    const auto turned_cell = test::run_qkv({"explain", "-", "rotated_keys[3,2]"}, text);
    CHECK(turned_cell.out.find("pair k = 0: elements 1 and 2") != std::string::npos);
    // and the step's note, and the JSON's rope
    const auto json = nlohmann::json::parse(test::run_ok({"run", "-", "-f", "json"}, text));
    CHECK(json["params"]["rope"]["partial_rotary_factor"] == 0.5);
    CHECK(test::run_ok({"run", "-", "-s", "rotated_queries"}, text)
              .find("only the first d_rot = 2 of the d_k = 4 elements turn") != std::string::npos);
}

TEST_CASE("ALiBi's and the window's mistakes are named: the sign, the bias left out or scaled, one key too many",
          "[check][diagnosis]") {
    const Worked w("alibi-window");  // two heads of d_k 2, slopes 1/16 and 1/256, a window of 3
    REQUIRE(w.model.alibi);
    const arma::uword n = w.model.n();
    for (int h = 1; h <= 2; ++h) {
        CAPTURE(h);
        const double slope = std::pow(2.0, -8.0 * h / 2.0);
        CHECK((*w.model.alibi)(static_cast<arma::uword>(h - 1)) == slope);
        arma::mat distance(n, n);
        for (arma::uword i = 0; i < n; ++i) {
            for (arma::uword j = 0; j < n; ++j) {
                distance(i, j) = std::abs(static_cast<double>(i) - static_cast<double>(j));
            }
        }
        test::require_near(w("position_bias", h), -slope * distance, 1e-15, "B");
        CHECK(w.diagnosis("position_bias", h, slope * distance) == "alibi_sign");
        const arma::mat& S = w("scores", h);
        CHECK(w.diagnosis("biased_scores", h, S / std::sqrt(2.0)) == "alibi_bias_forgotten");
        CHECK(w.diagnosis("biased_scores", h, (S - slope * distance) / std::sqrt(2.0)) == "alibi_bias_scaled");
        // the window of 4: query i sees keys i − 3 … i
        arma::mat wide = w("biased_scores", h);
        for (arma::uword i = 0; i < n; ++i) {
            for (arma::uword j = 0; j < n; ++j) {
                if (j > i || i - j > 3) {
                    wide(i, j) = -std::numeric_limits<double>::infinity();
                }
            }
        }
        CHECK(w.diagnosis("masked_scores", h, wide) == "window_one_too_wide");
    }
}

TEST_CASE("a sink left out of the softmax is named", "[check][diagnosis]") {
    const Worked w("sinks");  // sinks 0 and 3, a causal mask
    // the plain softmax of each row, its blocked cells 0
    CHECK(w.diagnosis("weights", 2, softmax_by_rows(w("masked_scores", 2))) == "sink_forgotten");
}

TEST_CASE("key/value heads taken in turn instead of in groups are named in the scores and the weighted sum",
          "[check][diagnosis]") {
    const Worked w("gqa");  // query heads 1 and 2 read key/value head 1, heads 3 and 4 read head 2
    // query head 2 with key/value head 2 (torch's repeat: head h reads (h − 1) mod 2 + 1)
    const arma::mat Q2 = w("queries", 2);
    CHECK(w.diagnosis("scores", 2, Q2 * w("keys", 2).t()) == "kv_heads_in_turn");
    CHECK(w.diagnosis("head_output", 2, w("weights", 2) * w("values", 2)) == "kv_heads_in_turn");
    // query head 3 with key/value head 1
    CHECK(w.diagnosis("scores", 3, w("queries", 3) * w("keys", 1).t()) == "kv_heads_in_turn");
}
