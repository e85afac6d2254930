// `qkv check`'s diagnoses in the model of a teacher's trial: four tokens,
// d_model 4, two heads of d_k 2 split from one 4 × 4 block of weights (or
// listed head by head, or in a pytorch: block), a causal mask, a query bias b_Q
// and W_O with a bias. Every diagnosis id of the check command in man/qkv.1.in is shown by an answer
// worked here with Armadillo — the attention computed in this file, the
// mistake made on purpose, the result rounded to two decimals as a learner
// writes it — and none is named on a right answer or on a slip.
#include "check/check.hpp"
#include "io/answers.hpp"
#include "support.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>

using namespace qkv;
using Catch::Matchers::Contains;

namespace {

using test::answer_yaml;
using test::answers_from;
using test::yaml_matrix;

// ── the models, as matrices ─────────────────────────────────────────────────

// How the file writes the projections: one `weights:` block split into heads,
// a `heads:` list of each head's d_model × d_k matrices, or nn.MultiheadAttention's
// `pytorch:` block (out × in).
enum class Form { split, list, pytorch };

// A model with H heads and W_O, its matrices in the x·W layout (rows are
// tokens): W_Q, W_K, W_V are d_model × H·d_k, the heads side by side.
struct Setup {
    std::string name;
    Form form = Form::split;
    int heads = 2;
    bool causal = true;
    arma::mat X;
    arma::mat W_Q, W_K, W_V, W_O;
    arma::rowvec b_Q, b_O;  // empty: no bias
    arma::mat dO;           // empty: no backward pass

    arma::uword n() const { return X.n_rows; }
    arma::uword d_model() const { return X.n_cols; }
    arma::uword d_k() const { return W_Q.n_cols / static_cast<arma::uword>(heads); }
    // columns (h − 1)·d_k … h·d_k − 1: head h's part of a block
    arma::mat part(const arma::mat& M, int h) const {
        const auto first = static_cast<arma::uword>(h - 1) * d_k();
        return M.cols(first, first + d_k() - 1);
    }
};

// [1.00, 2.50, -1.00]: a bias as a flat list.
std::string yaml_row(const arma::rowvec& b) {
    const std::string matrix = yaml_matrix(b, 2);
    return matrix.substr(1, matrix.size() - 2);
}

std::string yaml_of(const Setup& s) {
    std::string y = "inputs: " + yaml_matrix(s.X, 2) + "\n";
    if (s.causal) {
        y += "mask: causal\n";
    }
    if (!s.dO.empty()) {
        y += "grad_output: " + yaml_matrix(s.dO, 2) + "\n";
    }
    const std::string output_bias = s.b_O.empty() ? "" : "output: " + yaml_row(s.b_O);
    switch (s.form) {
        case Form::split:
            y += "heads: " + std::to_string(s.heads) + "\nweights:\n  query: " + yaml_matrix(s.W_Q, 2) +
                 "\n  key: " + yaml_matrix(s.W_K, 2) + "\n  value: " + yaml_matrix(s.W_V, 2) +
                 "\n  output: " + yaml_matrix(s.W_O, 2) + "\n";
            y += "bias: {" + (s.b_Q.empty() ? "" : "query: " + yaml_row(s.b_Q) + (s.b_O.empty() ? "" : ", ")) +
                 output_bias + "}\n";
            break;
        case Form::list:
            y += "heads:\n";
            for (int h = 1; h <= s.heads; ++h) {
                y += "  - query: " + yaml_matrix(s.part(s.W_Q, h), 2) + "\n    key: " + yaml_matrix(s.part(s.W_K, h), 2) +
                     "\n    value: " + yaml_matrix(s.part(s.W_V, h), 2) + "\n";
                if (!s.b_Q.empty()) {
                    y += "    bias: {query: " + yaml_row(s.part(s.b_Q, h)) + "}\n";
                }
            }
            y += "weights:\n  output: " + yaml_matrix(s.W_O, 2) + "\n";
            if (!s.b_O.empty()) {
                y += "bias: {" + output_bias + "}\n";
            }
            break;
        case Form::pytorch: {
            y += "pytorch:\n  num_heads: " + std::to_string(s.heads) + "\n  in_proj_weight: " +
                 yaml_matrix(arma::join_cols(s.W_Q.t(), s.W_K.t(), s.W_V.t()), 2) +
                 "\n  out_proj_weight: " + yaml_matrix(s.W_O.t(), 2) + "\n";
            if (!s.b_Q.empty()) {
                const arma::rowvec zeros(s.W_K.n_cols, arma::fill::zeros);
                y += "  in_proj_bias: " + yaml_row(arma::join_rows(s.b_Q, zeros, zeros)) + "\n";
            }
            if (!s.b_O.empty()) {
                y += "  out_proj_bias: " + yaml_row(s.b_O) + "\n";
            }
            break;
        }
    }
    return y;
}

// The teacher's model: 4 tokens, d_model 4, two heads of d_k = d_v = 2 (so
// √d_model = d_k = 2), causal, b_Q and b_O, and a grad_output for the backward
// pass. Small numbers, so that the softmax does not saturate and every mistake
// changes several cells at two decimals.
Setup teacher(Form form = Form::split) {
    Setup s;
    s.name = "the teacher's model";
    s.form = form;
    s.X = test::rows({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, -1}, {0, 1, 1, 0}});
    s.W_Q = test::rows({{1, 0.5, 0.5, -1}, {0, -1, 0, 0.5}, {0.5, 1, 0, 0}, {-1, 0, 1, 0.5}});
    s.W_K = test::rows({{0, 1, 1, 0}, {1, 0, 0, 0.5}, {0.5, -1, 1, 0}, {0.5, 0.5, 0, 1}});
    s.W_V = test::rows({{1, 2, 0, 1}, {0, 1, 1, 0}, {2, 0, 1, -1}, {1, 0, 0, 2}});
    s.W_O = test::rows({{1, 0, 0, 1}, {0, 1, -1, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}});
    s.b_Q = {0.5, -1, 1, 0};
    s.b_O = {0, 0.5, 0, -0.5};
    s.dO = test::rows({{1, 0, -1, 0.5}, {0, 1, 0.5, -1}, {0.5, -0.5, 1, 0}, {1, 0.5, 0, -1}});
    return s;
}

// The same kind of model where d_k ≠ √d_model and n = d_k, so that every
// mistake of the catalogue (DIAGNOSES in the man page) can be told apart, Q·K (without the transpose) included:
// 3 tokens, d_model 6, two heads of d_k 3.
Setup wide(Form form = Form::split) {
    Setup s;
    s.name = "d_model 6, two heads of d_k 3";
    s.form = form;
    s.X = test::rows({{1, 0, 0.5, 0, 1, 0}, {0, 1, 0, -0.5, 0, 1}, {0.5, 0, 1, 1, 0, -0.5}});
    s.W_Q = test::rows({{0.5, 0, 1, -0.5, 0, 0.5},
                        {0, 1, 0, 0.5, -0.5, 0},
                        {1, 0, -0.5, 0, 0.5, 1},
                        {0, -0.5, 0, 1, 0, 0.5},
                        {-0.5, 0.5, 0, 0, 1, 0},
                        {0, 0, 0.5, 0.5, 0, -1}});
    s.W_K = test::rows({{0, 0.5, 0, 1, 0, -0.5},
                        {1, 0, 0.5, 0, 0.5, 0},
                        {0, -1, 0, 0.5, 0, 1},
                        {0.5, 0, 1, 0, -0.5, 0},
                        {0, 0.5, -0.5, 0, 1, 0.5},
                        {-0.5, 0, 0, 1, 0, 0}});
    s.W_V = test::rows({{1, 0, 2, 0, 1, -1},
                        {0, 1, 0, 2, 0, 1},
                        {2, -1, 0, 1, 0, 0},
                        {0, 0, 1, 0, 2, 1},
                        {1, 1, 0, -1, 0, 2},
                        {0, 2, 1, 0, 1, 0}});
    s.W_O = test::rows({{1, 0, 0, 0.5, 0, 0},
                        {0, 1, 0, 0, -0.5, 0},
                        {0, 0, 1, 0, 0, 0.5},
                        {0.5, 0, 0, 1, 0, 0},
                        {0, -0.5, 0, 0, 1, 0},
                        {0, 0, 0.5, 0, 0, 1}});
    s.b_Q = {0.5, -0.5, 0, 1, 0, -1};
    s.b_O = {0.5, 0, 0, 0, -0.5, 0};
    s.dO = test::rows({{1, 0, -1, 0.5, 0, 1}, {0, 1, 0.5, -1, 1, 0}, {0.5, -0.5, 1, 0, -1, 0.5}});
    return s;
}

// ── attention, worked here ──────────────────────────────────────────────────

// softmax along each row; −∞ gives 0
arma::mat softmax_rows_of(const arma::mat& M) {
    arma::mat E(M.n_rows, M.n_cols);
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        E.row(i) = arma::exp(M.row(i) - M.row(i).max());
        E.row(i) /= arma::accu(E.row(i));
    }
    return E;
}

// 1 where query i may attend to key j
arma::mat allowed_of(const Setup& s) {
    const arma::mat ones(s.n(), s.n(), arma::fill::ones);
    return s.causal ? arma::mat(arma::trimatl(ones)) : ones;
}

arma::mat with_mask(const arma::mat& S, const arma::mat& allowed) {
    arma::mat M = S;
    M.elem(arma::find(allowed == 0.0)).fill(-std::numeric_limits<double>::infinity());
    return M;
}

arma::mat plus_bias(arma::mat M, const arma::rowvec& b) {
    if (!b.empty()) {
        M.each_row() += b;
    }
    return M;
}

// Every step of every head, the forward pass and the backward (vectors are indexed by head − 1).
struct Worked {
    std::vector<arma::mat> Q, K, V, S, S_scaled, masked, A, Z, dZ, dA, dS_scaled, dS, dQ, dK, dV;
    arma::mat concat, O;
};

Worked work(const Setup& s) {
    Worked w;
    const arma::mat allowed = allowed_of(s);
    const arma::mat Q_all = plus_bias(s.X * s.W_Q, s.b_Q);
    const arma::mat K_all = s.X * s.W_K;
    const arma::mat V_all = s.X * s.W_V;
    const double root = std::sqrt(static_cast<double>(s.d_k()));
    for (int h = 1; h <= s.heads; ++h) {
        w.Q.push_back(s.part(Q_all, h));
        w.K.push_back(s.part(K_all, h));
        w.V.push_back(s.part(V_all, h));
        w.S.push_back(w.Q.back() * w.K.back().t());
        w.S_scaled.push_back(w.S.back() / root);
        w.masked.push_back(with_mask(w.S_scaled.back(), allowed));
        w.A.push_back(softmax_rows_of(w.masked.back()));
        w.Z.push_back(w.A.back() * w.V.back());
        w.concat = arma::join_rows(w.concat, w.Z.back());
    }
    w.O = plus_bias(w.concat * s.W_O, s.b_O);
    // backward: dO → d(concat) = dO·W_Oᵀ → each head's dZ, dA, dS', dS, dQ, dK, dV
    const arma::mat d_concat = s.dO * s.W_O.t();
    for (int h = 1; h <= s.heads; ++h) {
        const std::size_t i = static_cast<std::size_t>(h - 1);
        w.dZ.push_back(s.part(d_concat, h));
        w.dA.push_back(w.dZ[i] * w.V[i].t());
        const arma::vec row_term = arma::sum(w.dA[i] % w.A[i], 1);
        arma::mat centred = w.dA[i];
        centred.each_col() -= row_term;
        w.dS_scaled.push_back(w.A[i] % centred);
        w.dS.push_back(w.dS_scaled[i] / root);
        w.dQ.push_back(w.dS[i] * w.K[i]);
        w.dK.push_back(w.dS[i].t() * w.Q[i]);
        w.dV.push_back(w.A[i].t() * w.dZ[i]);
    }
    return w;
}

// The model loaded from its YAML, its trace, and the true values worked here.
struct Loaded {
    Setup setup;
    Model model;
    Trace trace;
    Worked worked;

    explicit Loaded(Setup s) : setup(std::move(s)), model(test::load_text(yaml_of(setup))), trace(compute(model)),
                               worked(work(setup)) {}

    const Step& step(const std::string& id, int head) const {
        const Step* found = trace.find(id, head);
        INFO("step " << id << " head " << head);
        REQUIRE(found != nullptr);
        return *found;
    }
    // The diagnosis of one answered step, `M` written with `decimals` decimals.
    std::optional<Diagnosis> diagnose(const std::string& id, int head, const arma::mat& M, int decimals = 2) const {
        const Answers answers = answers_from(answer_yaml(id, head, static_cast<int>(model.n_heads()), M, decimals), trace);
        return diagnose_answer(model, trace, answers, test::step(id), head, {});
    }
    // The same through check_answers, which looks only in wrong steps.
    std::optional<Diagnosis> checked(const std::string& answers_yaml) const {
        const Answers answers = answers_from(answers_yaml, trace);
        const CheckReport report = check_answers(model, trace, answers, {});
        REQUIRE(report.steps.size() == 1);
        CHECK(report.steps.front().has_mistake());
        return report.steps.front().diagnosis;
    }
};

}  // namespace

TEST_CASE("the attention worked in this file is the trace's", "[check][diagnosis]") {
    // the true values the mistakes below are made from, worked here apart from qkv's step table: the same numbers
    for (const Setup& setup : {teacher(), teacher(Form::list), teacher(Form::pytorch), wide()}) {
        CAPTURE(setup.name, static_cast<int>(setup.form));
        const Loaded l(setup);
        REQUIRE(l.model.n_heads() == 2);
        for (int h = 1; h <= 2; ++h) {
            const auto i = static_cast<std::size_t>(h - 1);
            test::require_near(l.step("queries", h).values, l.worked.Q[i], 1e-12, "queries");
            test::require_near(l.step("keys", h).values, l.worked.K[i], 1e-12, "keys");
            test::require_near(l.step("masked_scores", h).values, l.worked.masked[i], 1e-12, "masked_scores");
            test::require_near(l.step("weights", h).values, l.worked.A[i], 1e-12, "weights");
            test::require_near(l.step("grad_scaled_scores", h).values, l.worked.dS_scaled[i], 1e-12,
                               "grad_scaled_scores");
            test::require_near(l.step("grad_keys", h).values, l.worked.dK[i], 1e-12, "grad_keys");
            test::require_near(l.step("grad_values", h).values, l.worked.dV[i], 1e-12, "grad_values");
        }
        test::require_near(l.step("output", 0).values, l.worked.O, 1e-12, "output");
    }
}

// ── 1. W·x with heads split from one square block ───────────────────────────

TEST_CASE("W·x is named when the heads are split from one square block of weights", "[check][diagnosis]") {
    SECTION("the teacher's model: 4 × 2 heads of a 4 × 4 block, with b_Q") {
        for (const Setup& setup : {teacher(), teacher(Form::pytorch)}) {
            const Loaded l(setup);
            const Setup& s = l.setup;
            for (int h = 1; h <= 2; ++h) {
                CAPTURE(static_cast<int>(s.form), h);
                // each projection, answered: head h's columns of X·Wᵀ (+ b_Q)
                const arma::mat Q = s.part(plus_bias(s.X * s.W_Q.t(), s.b_Q), h);
                const arma::mat K = s.part(s.X * s.W_K.t(), h);
                const arma::mat V = s.part(s.X * s.W_V.t(), h);
                for (const auto& [id, M] : {std::pair{"queries", Q}, std::pair{"keys", K}, std::pair{"values", V}}) {
                    CAPTURE(id);
                    const auto diagnosis = l.diagnose(id, h, M);
                    REQUIRE(diagnosis.has_value());
                    CHECK(diagnosis->key == "projection_w_x");
                    CHECK_THAT(diagnosis->mistake, Contains("whole 4 × 4"));
                }
                // not answered: found from the scores they give, with the causal mask, the weights
                const auto scores = l.diagnose("scores", h, arma::mat(Q * K.t()));
                REQUIRE(scores.has_value());
                CHECK(scores->key == "projection_w_x");
                CHECK(scores->carried == "queries (head " + std::to_string(h) + ")");
                const double root2 = std::sqrt(2.0);
                const auto weights =
                    l.diagnose("weights", h, softmax_rows_of(with_mask(Q * K.t() / root2, allowed_of(s))));
                REQUIRE(weights.has_value());
                CHECK(weights->key == "projection_w_x");
            }
        }
    }
    SECTION("a simple model: d_model 2 split into two heads of width 1") {
        const Model model = test::load_text(R"(
inputs: [[1, 0], [0, 1], [1, 2]]
heads: 2
weights:
  query: [[1, 2], [0, 1]]
  key:   [[1, 0], [3, 1]]
  value: [[2, 1], [1, 1]]
)");
        const Trace trace = compute(model);
        const arma::mat W_Q = test::rows({{1, 2}, {0, 1}});
        const arma::mat X = test::rows({{1, 0}, {0, 1}, {1, 2}});
        // X·W_Qᵀ = [[1, 0], [2, 1], [5, 2]] (by hand); head 2 is its second column
        const arma::mat Q2 = arma::mat(X * W_Q.t()).col(1);
        CHECK(Q2(2) == 2.0);
        const Answers answers = answers_from(answer_yaml("queries", 2, 2, Q2, 2), trace);
        const auto diagnosis = diagnose_answer(model, trace, answers, StepId::queries, 2, {});
        REQUIRE(diagnosis.has_value());
        CHECK(diagnosis->key == "projection_w_x");
    }
    SECTION("a heads: list of 4 × 2 matrices has no W·x, and the same numbers name nothing") {
        const Loaded l(teacher(Form::list));
        const Setup& s = l.setup;
        for (int h = 1; h <= 2; ++h) {
            CAPTURE(h);
            const auto diagnosis = l.diagnose("queries", h, s.part(plus_bias(s.X * s.W_Q.t(), s.b_Q), h));
            CHECK_FALSE(diagnosis.has_value());
        }
    }
}

// ── 2. swapped W_Q and W_K, the bias staying with the query ─────────────────

TEST_CASE("swapped query and key weights are named whether or not the biases travel with them", "[check][diagnosis]") {
    SECTION("the teacher's model, heads split, b_Q only") {
        const Loaded l(teacher());
        const Setup& s = l.setup;
        for (int h = 1; h <= 2; ++h) {
            CAPTURE(h);
            // the bias stays: Q = X·W_K + b_Q, K = X·W_Q
            const arma::mat Q_kept = s.part(plus_bias(s.X * s.W_K, s.b_Q), h);
            const arma::mat K_kept = s.part(s.X * s.W_Q, h);
            // the bias travels: Q = X·W_K, K = X·W_Q + b_Q
            const arma::mat Q_moved = s.part(s.X * s.W_K, h);
            const arma::mat K_moved = s.part(plus_bias(s.X * s.W_Q, s.b_Q), h);
            for (const auto& [id, M] : {std::pair{"queries", Q_kept}, std::pair{"keys", K_kept},
                                        std::pair{"queries", Q_moved}, std::pair{"keys", K_moved}}) {
                CAPTURE(id, M);
                const auto diagnosis = l.diagnose(id, h, M);
                REQUIRE(diagnosis.has_value());
                CHECK(diagnosis->key == "weights_swapped");
            }
            const auto kept = l.diagnose("queries", h, Q_kept);
            REQUIRE(kept.has_value());
            CHECK_THAT(kept->mistake, Contains("keeping b_Q"));
            // not answered, found from the scores: with the bias kept, Q·Kᵀ is not the transpose of the true scores
            const auto scores = l.diagnose("scores", h, arma::mat(Q_kept * K_kept.t()));
            REQUIRE(scores.has_value());
            CHECK(scores->key == "weights_swapped");
            CHECK(scores->carried == "queries (head " + std::to_string(h) + ")");
            // with the bias moved, the scores are the true ones transposed: K·Qᵀ, which is what is named
            const auto moved = l.diagnose("scores", h, arma::mat(Q_moved * K_moved.t()));
            REQUIRE(moved.has_value());
            CHECK(moved->key == "scores_k_qt");
        }
    }
    SECTION("a simple model: one head with a query bias") {
        const Model model = test::load_text(R"(
inputs: [[1, 0], [0, 1], [1, 1]]
weights:
  query: [[1, 2], [0, 1]]
  key:   [[1, 0], [3, 1]]
  value: [[2, 1], [1, 1]]
bias: {query: [1, -1]}
)");
        const Trace trace = compute(model);
        const arma::mat X = test::rows({{1, 0}, {0, 1}, {1, 1}});
        const arma::mat W_Q = test::rows({{1, 2}, {0, 1}});
        const arma::mat W_K = test::rows({{1, 0}, {3, 1}});
        const arma::rowvec b_Q = {1, -1};
        // Q = X·W_K + b_Q = [[2, -1], [4, 0], [5, 0]] (by hand)
        const arma::mat Q = plus_bias(X * W_K, b_Q);
        CHECK(Q(2, 0) == 5.0);
        for (const auto& [id, M] : {std::pair{"queries", Q}, std::pair{"keys", arma::mat(X * W_Q)}}) {
            CAPTURE(id);
            const Answers answers = answers_from(answer_yaml(id, 1, 1, M, 2), trace);
            const auto diagnosis = diagnose_answer(model, trace, answers, test::step(id), 1, {});
            REQUIRE(diagnosis.has_value());
            CHECK(diagnosis->key == "weights_swapped");
        }
    }
}

// ── 3. no exp, with a row whose plain sum is 0 ──────────────────────────────

TEST_CASE("normalising without exp is named when a row the learner left blank sums to 0", "[check][diagnosis]") {
    SECTION("the teacher's model with a first token of zeros: k_1 = 0, so row 1 of the scores is 0") {
        Setup s = teacher();
        s.X.row(0).zeros();
        const Loaded l(s);
        for (int h = 1; h <= 2; ++h) {
            CAPTURE(h);
            const auto i = static_cast<std::size_t>(h - 1);
            const arma::mat M = l.worked.S_scaled[i] % allowed_of(s);
            REQUIRE(arma::accu(M.row(0)) == 0.0);
            // rows 2 … 4 divided by their sums; row 1 (0 / 0) left blank
            std::string rows = "[~";
            for (arma::uword r = 1; r < M.n_rows; ++r) {
                const arma::mat ratios = M.row(r) / arma::accu(M.row(r));
                const std::string row = yaml_matrix(ratios, 2);
                rows += ", " + row.substr(1, row.size() - 2);
            }
            rows += "]";
            const std::string before = "heads: [" + std::string(h == 2 ? "~, " : "") + "{weights: ";
            const std::string blank = before + rows + "}]\n";
            CAPTURE(blank);
            const auto diagnosis = l.checked(blank);
            REQUIRE(diagnosis.has_value());
            CHECK(diagnosis->key == "softmax_no_exp");
            // row 1 answered: 0 / 0 is no number, so that row cannot be the mistake's, and it is not named
            const std::string answered = before + "[[1.00, 0.00, 0.00, 0.00]" + rows.substr(2) + "}]\n";
            CAPTURE(answered);
            const auto other = l.checked(answered);
            CHECK_FALSE((other && other->key == "softmax_no_exp"));
        }
    }
    SECTION("a simple model without a mask: the scores' row 2 is [0, 1, −1]") {
        // S = X·Xᵀ with W_Q = W_K = I: [[1, 0, 1], [0, 1, -1], [1, -1, 2]] (by hand); row 2 sums to 0
        const Model model = test::load_text(R"(
inputs: [[1, 0], [0, 1], [1, -1]]
weights:
  query: [[1, 0], [0, 1]]
  key:   [[1, 0], [0, 1]]
  value: [[2, 1], [1, 1]]
)");
        const Trace trace = compute(model);
        // no exp: row 1 [1, 0, 1] / 2, row 3 [1, -1, 2] / 2 (the √2 cancels)
        const Answers answers = answers_from("weights: [[0.50, 0.00, 0.50], ~, [0.50, -0.50, 1.00]]\n", trace);
        const auto diagnosis = diagnose_answer(model, trace, answers, StepId::weights, 1, {});
        REQUIRE(diagnosis.has_value());
        CHECK(diagnosis->key == "softmax_no_exp");
        // the true weights there name nothing
        const Answers right = answers_from(answer_yaml("weights", 1, 1, trace.find(StepId::weights, 1)->values, 2), trace);
        CHECK_FALSE(diagnose_answer(model, trace, right, StepId::weights, 1, {}).has_value());
    }
}

// ── 4. d_k = √d_model ───────────────────────────────────────────────────────

TEST_CASE("dividing by d_k or by √d_model is one diagnosis when the two are equal", "[check][diagnosis]") {
    const std::string text =
        "The scores were divided by d_k = 2 instead of √d_k = √2 — or by √d_model = √4 = 2; the two are the same "
        "here and cannot be told apart.";
    SECTION("the teacher's model: d_model 4, heads of d_k 2") {
        const Loaded l(teacher());
        for (int h = 1; h <= 2; ++h) {
            CAPTURE(h);
            const auto diagnosis = l.diagnose("scaled_scores", h, arma::mat(l.worked.S[h - 1] / 2.0));
            REQUIRE(diagnosis.has_value());
            CHECK(diagnosis->key == "scaled_by_dk");
            CHECK(diagnosis->mistake == text);
        }
    }
    SECTION("a simple model: one head, d_model 4, d_k 2") {
        const Model model = test::load_text(R"(
inputs: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
weights:
  query: [[1, 0], [0, 1], [1, 1], [0, 2]]
  key:   [[0, 1], [1, 0], [1, 1], [2, 0]]
  value: [[1, 2], [0, 1], [2, 0], [1, 1]]
)");
        const Trace trace = compute(model);
        const arma::mat S = trace.find(StepId::scores, 1)->values;
        const Answers answers = answers_from(answer_yaml("scaled_scores", 1, 1, arma::mat(S / 2.0), 2), trace);
        const auto diagnosis = diagnose_answer(model, trace, answers, StepId::scaled_scores, 1, {});
        REQUIRE(diagnosis.has_value());
        CHECK(diagnosis->key == "scaled_by_dk");
        CHECK(diagnosis->mistake == text);
    }
    SECTION("with d_k ≠ √d_model the two are named apart") {
        const Loaded l(wide());
        const arma::mat& S = l.worked.S[0];
        const auto by_dk = l.diagnose("scaled_scores", 1, arma::mat(S / 3.0));
        REQUIRE(by_dk.has_value());
        CHECK(by_dk->key == "scaled_by_dk");
        CHECK_THAT(by_dk->mistake, !Contains("cannot be told apart"));
        const auto by_d_model = l.diagnose("scaled_scores", 1, arma::mat(S / std::sqrt(6.0)));
        REQUIRE(by_d_model.has_value());
        CHECK(by_d_model->key == "scaled_by_sqrt_d_model");
    }
}

// ── every diagnosis of the catalogue, made on purpose ──────────────────────

namespace {

struct Made {
    const char* key;   // the diagnosis id
    const char* step;  // the step answered
    bool per_head;
    // the mistake, worked from the true values of the steps before (i = head − 1)
    std::function<arma::mat(const Setup&, const Worked&, std::size_t i)> wrong;
    // whether the model allows the mistake (e.g. Q·K needs n = d_k)
    std::function<bool(const Setup&)> possible = [](const Setup&) { return true; };
};

// The ids the man page lists for check, each of which the cases below must make.
const std::set<std::string> k_spec_ids = {
    "scores_no_transpose", "scores_k_qt", "scaling_forgotten", "scaled_by_dk", "scaled_by_sqrt_d_model",
    "softmax_columns", "softmax_no_exp", "output_at_v", "projection_w_x", "weights_swapped", "heads_averaged",
    "mask_after_softmax", "mask_zero", "softmax_backward_no_row_term", "grad_scale_forgotten",
    "grad_values_no_transpose", "grad_keys_no_transpose"};

std::vector<Made> made_mistakes() {
    const auto sqrt_d_model = [](const Setup& s) { return std::sqrt(static_cast<double>(s.d_model())); };
    return {
        {"scores_no_transpose", "scores", true,
         [](const Setup&, const Worked& w, std::size_t i) { return arma::mat(w.Q[i] * w.K[i]); },
         [](const Setup& s) { return s.n() == s.d_k(); }},
        {"scores_k_qt", "scores", true,
         [](const Setup&, const Worked& w, std::size_t i) { return arma::mat(w.K[i] * w.Q[i].t()); }},
        {"scaling_forgotten", "scaled_scores", true,
         [](const Setup&, const Worked& w, std::size_t i) { return w.S[i]; }},
        {"scaled_by_dk", "scaled_scores", true,
         [](const Setup& s, const Worked& w, std::size_t i) { return arma::mat(w.S[i] / static_cast<double>(s.d_k())); }},
        // with √d_model = d_k this is scaled_by_dk's answer too, named once (see the test of it below)
        {"scaled_by_sqrt_d_model", "scaled_scores", true,
         [=](const Setup& s, const Worked& w, std::size_t i) { return arma::mat(w.S[i] / sqrt_d_model(s)); },
         [](const Setup& s) { return s.d_model() != s.d_k() * s.d_k(); }},
        {"softmax_columns", "weights", true,
         [](const Setup&, const Worked& w, std::size_t i) {
             return arma::mat(softmax_rows_of(w.masked[i].t()).t());
         }},
        {"softmax_no_exp", "weights", true,
         [](const Setup& s, const Worked& w, std::size_t i) {
             arma::mat M = w.S_scaled[i] % allowed_of(s);  // blocked cells count as 0
             M.each_col() /= arma::sum(M, 1);
             return M;
         }},
        {"mask_after_softmax", "weights", true,
         [](const Setup& s, const Worked& w, std::size_t i) {
             return arma::mat(softmax_rows_of(w.S_scaled[i]) % allowed_of(s));
         }},
        {"mask_zero", "masked_scores", true,
         [](const Setup& s, const Worked& w, std::size_t i) { return arma::mat(w.S_scaled[i] % allowed_of(s)); }},
        {"output_at_v", "head_output", true,
         [](const Setup&, const Worked& w, std::size_t i) { return arma::mat(w.A[i].t() * w.V[i]); }},
        // W·x for each token with the whole 4 × 4 W_Q, which is X·W_Qᵀ, then split into heads
        {"projection_w_x", "queries", true,
         [](const Setup& s, const Worked&, std::size_t i) {
             return s.part(plus_bias(s.X * s.W_Q.t(), s.b_Q), static_cast<int>(i) + 1);
         },
         [](const Setup& s) { return s.form != Form::list; }},
        {"projection_w_x", "values", true,
         [](const Setup& s, const Worked&, std::size_t i) { return s.part(s.X * s.W_V.t(), static_cast<int>(i) + 1); },
         [](const Setup& s) { return s.form != Form::list; }},
        // W_K for the queries: with its own bias (none) ...
        {"weights_swapped", "queries", true,
         [](const Setup& s, const Worked&, std::size_t i) { return s.part(s.X * s.W_K, static_cast<int>(i) + 1); }},
        // ... or keeping the query bias: Q = X·W_K + b_Q
        {"weights_swapped", "queries", true,
         [](const Setup& s, const Worked&, std::size_t i) {
             return s.part(plus_bias(s.X * s.W_K, s.b_Q), static_cast<int>(i) + 1);
         }},
        // W_Q for the keys, with the query bias, or without it: K = X·W_Q (+ b_Q)
        {"weights_swapped", "keys", true,
         [](const Setup& s, const Worked&, std::size_t i) {
             return s.part(plus_bias(s.X * s.W_Q, s.b_Q), static_cast<int>(i) + 1);
         }},
        {"weights_swapped", "keys", true,
         [](const Setup& s, const Worked&, std::size_t i) { return s.part(s.X * s.W_Q, static_cast<int>(i) + 1); }},
        {"heads_averaged", "concat", false,
         [](const Setup&, const Worked& w, std::size_t) {
             arma::mat sum = w.Z[0];
             for (std::size_t i = 1; i < w.Z.size(); ++i) {
                 sum += w.Z[i];
             }
             return arma::mat(sum / static_cast<double>(w.Z.size()));
         }},
        {"softmax_backward_no_row_term", "grad_scaled_scores", true,
         [](const Setup&, const Worked& w, std::size_t i) { return arma::mat(w.A[i] % w.dA[i]); }},
        {"grad_scale_forgotten", "grad_scores", true,
         [](const Setup&, const Worked& w, std::size_t i) { return w.dS_scaled[i]; }},
        {"grad_values_no_transpose", "grad_values", true,
         [](const Setup&, const Worked& w, std::size_t i) { return arma::mat(w.A[i] * w.dZ[i]); }},
        {"grad_keys_no_transpose", "grad_keys", true,
         [](const Setup&, const Worked& w, std::size_t i) { return arma::mat(w.dS[i] * w.Q[i]); }},
    };
}

}  // namespace

TEST_CASE("every named diagnosis is found in split heads with biases, a causal mask and W_O",
          "[check][diagnosis]") {
    std::set<std::string> made;
    for (const Setup& setup : {teacher(), teacher(Form::list), teacher(Form::pytorch), wide(), wide(Form::list)}) {
        const Loaded l(setup);
        for (const auto& m : made_mistakes()) {
            if (!m.possible(setup)) {
                continue;
            }
            for (int h = 1; h <= (m.per_head ? setup.heads : 1); ++h) {
                const int head = m.per_head ? h : 0;
                CAPTURE(setup.name, static_cast<int>(setup.form), m.key, m.step, head);
                const arma::mat wrong = m.wrong(setup, l.worked, static_cast<std::size_t>(h - 1));
                const auto diagnosis =
                    l.checked(answer_yaml(m.step, head, static_cast<int>(l.model.n_heads()), wrong, 2));
                CHECK(diagnosis.has_value());
                if (diagnosis) {
                    CHECK(diagnosis->key == m.key);
                    CHECK(diagnosis->carried.empty());
                    made.insert(diagnosis->key);
                }
            }
        }
    }
    CHECK(made == k_spec_ids);
}

TEST_CASE("no diagnosis is named on a right answer or on a slip, in split heads with biases and a causal mask",
          "[check][diagnosis]") {
    std::mt19937 random(20240615);  // a fixed seed: the same slips on every run
    for (const Setup& setup : {teacher(), teacher(Form::list), wide()}) {
        const Loaded l(setup);
        std::set<std::string> steps;
        for (const auto& m : made_mistakes()) {
            steps.insert(m.step);
        }
        steps.insert("output");
        for (const auto& id : steps) {
            const bool per_head = is_per_head(test::step(id));
            for (int h = 1; h <= (per_head ? setup.heads : 1); ++h) {
                const int head = per_head ? h : 0;
                CAPTURE(setup.name, static_cast<int>(setup.form), id, head);
                const arma::mat& truth = l.step(id, head).values;
                // right at two and at four decimals
                CHECK_FALSE(l.diagnose(id, head, truth, 2).has_value());
                CHECK_FALSE(l.diagnose(id, head, truth, 4).has_value());
                // slips: two or three finite cells off by 0.11 … 0.99, the rest right
                arma::mat slipped = truth;
                const arma::uvec finite = arma::find_finite(truth);
                std::uniform_int_distribution<arma::uword> pick(0, finite.n_elem - 1);
                std::uniform_real_distribution<double> by(0.11, 0.99);
                const int slips = 2 + static_cast<int>(random() % 2);
                for (int k = 0; k < slips; ++k) {
                    slipped(finite(pick(random))) += (random() % 2 == 0 ? 1.0 : -1.0) * by(random);
                }
                CAPTURE(slipped);
                CHECK_FALSE(l.diagnose(id, head, slipped, 2).has_value());
            }
        }
    }
}
