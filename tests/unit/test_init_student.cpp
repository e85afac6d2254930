// qkv init --student: one exercise per student, the same for an ID on every
// machine and with every version (pinned by golden files), different from one
// ID to the next, and one in which `qkv check` names each classic mistake a
// learner makes in it. The mistakes are made here twice over: with check's
// catalogue, graded in-process over many IDs, and worked from the trace with
// Armadillo, graded end to end by the qkv binary.
#include "check/check.hpp"
#include "check/diagnose.hpp"
#include "io/answers.hpp"
#include "check/catalogue.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

using namespace qkv;
using qkv::test::init_text;
using qkv::test::run_qkv;

namespace {

// The classic mistakes, by their diagnosis ids: the rows of check's
// catalogue marked classic (test_man.cpp holds them to the classic mistakes of DIAGNOSES in man/qkv.1.in).
std::set<std::string> classic_ids() {
    std::set<std::string> ids;
    for (const qkv::checking::MistakeRow* row : qkv::checking::named_mistakes()) {
        if (row->classic) {
            ids.insert(std::string(row->id));
        }
    }
    return ids;
}
const std::set<std::string> k_classic = classic_ids();

// FNV-1a, 64 bits, as the man page states it: from 14695981039346656037, each
// byte XORed in, then the hash multiplied by 1099511628211 modulo 2^64.
std::uint64_t fnv1a_64(const std::string& bytes) {
    std::uint64_t hash = 14695981039346656037ULL;
    for (const unsigned char byte : bytes) {
        hash = (hash ^ byte) * 1099511628211ULL;
    }
    return hash;
}

// The draw the file's header names: "# It is draw 3 for this ID".
int draw_of(const std::string& text) {
    const std::string marker = "# It is draw ";
    const auto at = text.find(marker);
    REQUIRE(at != std::string::npos);
    return std::stoi(text.substr(at + marker.size()));
}

// A number as a learner writes it to two decimals ("-inf" for a blocked score).
std::string written(double value) {
    if (std::isinf(value)) {
        return value < 0 ? "-inf" : "inf";
    }
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    return std::string(buffer) == "-0.00" ? "0.00" : buffer;
}

// The cells in which A and B, written to two decimals, differ (all of them when the shapes differ).
arma::uword cells_differing(const arma::mat& A, const arma::mat& B) {
    if (A.n_rows != B.n_rows || A.n_cols != B.n_cols) {
        return std::max(A.n_elem, B.n_elem);
    }
    arma::uword count = 0;
    for (arma::uword k = 0; k < A.n_elem; ++k) {
        count += written(A(k)) != written(B(k)) ? 1 : 0;
    }
    return count;
}

Answers answers_from(const std::string& yaml, const Trace& trace) {
    return read_answers({"answers.yaml", yaml, ""}, trace, AnswersIn::answer_file);
}

// Every requirement of an exercise, checked on the file `text` that init wrote;
// adds the classic mistakes it showed to `seen`.
void require_good_exercise(const std::string& text, std::set<std::string>& seen) {
    const Model model = test::load_text(text, "exercise.yaml");
    const Trace trace = compute(model);
    REQUIRE(model.decimals == 2);
    // d_k is not √d_model: dividing by d_k and by √d_model must give different numbers
    if (model.scale_kind == ScaleKind::sqrt_dk && model.d_k() > 1) {
        CHECK(model.d_k() * model.d_k() != model.d_model());
    }
    // no weight a learner may write rounds to 0 or 1 (a row with one key to attend aside)
    const arma::mat allowed = model.allowed();
    for (const Step& step : trace.steps) {
        if (step.id != StepId::weights) {
            continue;
        }
        for (arma::uword i = 0; i < step.values.n_rows; ++i) {
            for (arma::uword j = 0; j < step.values.n_cols && arma::accu(allowed.row(i)) > 1.0; ++j) {
                CAPTURE(step.head, i, j, step.values(i, j));
                if (allowed(i, j) != 0.0) {
                    CHECK(written(step.values(i, j)) != "0.00");
                    CHECK(written(step.values(i, j)) != "1.00");
                }
            }
        }
    }
    // each classic mistake, made on the true values by check's catalogue, written to two
    // decimals: at least two cells differ from the truth and from every other mistake of
    // the step, and qkv check names it
    const checking::Values truth = checking::true_values(trace);
    CheckOptions options;
    options.decimals = 2;
    for (const Step& step : trace.steps) {
        const StepKey key{step.id, step.head};
        const auto mistakes = checking::mistakes_in(model, trace, key, truth);
        std::vector<std::pair<std::string, arma::mat>> made;  // each mistake's value of this step
        for (const auto& mistake : mistakes) {
            for (const auto& [made_in, value] : mistake.values) {
                if (made_in == key && !mistake.several_steps) {
                    made.emplace_back(mistake.key, value);
                }
            }
        }
        for (const auto& [id, value] : made) {
            if (k_classic.count(id) == 0) {
                continue;
            }
            CAPTURE(step_text(step.id), step.head, id);
            seen.insert(id);
            CHECK_FALSE(value.has_nan());  // a cell no learner can write
            if (value.has_nan()) {
                continue;
            }
            CHECK(cells_differing(value, step.values) >= 2);
            for (const auto& [other_id, other] : made) {
                if (other_id != id) {
                    CAPTURE(other_id);
                    CHECK(cells_differing(value, other) >= 2);
                }
            }
            const Answers answers =
                answers_from(test::answer_yaml(step_text(step.id), step.head, static_cast<int>(model.n_heads()), value, 2),
                             trace);
            const CheckReport report = check_answers(model, trace, answers, options);
            REQUIRE(report.steps.size() == 1);
            const StepCheck& check = report.steps.front();
            // enough evidence: two wrong cells, or an answer of another shape (heads averaged)
            CHECK((check.shape_ok ? check.count(Verdict::wrong) : check.answer->answered()) >= 2);
            REQUIRE(check.diagnosis.has_value());
            CHECK(check.diagnosis->key == id);
            CHECK(check.diagnosis->carried.empty());
        }
    }
}

// A temporary folder, removed at the end of the scope.
struct TempFolder {
    std::filesystem::path path;
    TempFolder() {
        char name[] = "/tmp/qkv-student-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        path = name;
    }
    ~TempFolder() { std::filesystem::remove_all(path); }
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;
};

void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// Softmax down each column, the blocked cells (−∞) weighing nothing.
arma::mat softmax_down_columns(const arma::mat& S) {
    arma::mat E = arma::exp(S.each_row() - arma::max(S, 0));
    return E.each_row() / arma::sum(E, 0);
}

}  // namespace

TEST_CASE("qkv init --student writes the same file for an ID, on every machine and with every version",
          "[init][cli]") {
    const std::string alice = init_text({"--student", "alice"});
    CHECK(alice == init_text({"--student", "alice"}));
    // pinned byte for byte: a change of the seed's derivation, of the generator or of the
    // drawing would show here
    test::check_golden("init-student-alice.yaml", alice);
    const std::vector<std::string> options = {"--student", "Zoë O'Brien", "--heads", "2", "--d-model", "6", "--d-k", "3",
                                              "--mask", "causal", "--bias", "--negative"};
    const std::string zoe = init_text(options);
    test::check_golden("init-student-options.yaml", zoe);
    // the header names the student and the command that writes the file again
    CHECK(alice.rfind("# An exercise for student alice, written by\n"
                      "#   qkv init --student alice --tokens 3 --d-model 4 --d-k 3 --max-int 1\n",
                      0) == 0);
    CHECK(zoe.find("#   qkv init --student 'Zoë O'\\''Brien' --tokens 3 --d-model 6 --d-k 3 --heads 2 --max-int 1 "
                   "--negative --mask causal --bias\n") != std::string::npos);
    CHECK(zoe.find("title: \"Exercise for Zoë O'Brien\"\n") != std::string::npos);
    CHECK(alice.find("\ndecimals: 2 ") != std::string::npos);
    // the seed is FNV-1a of "alice#DRAW" and the numbers come from std::mt19937_64, each
    // output modulo max-int + 1, a row of zeros drawn again: the inputs worked out here
    // from that description are the file's
    CHECK(fnv1a_64("") == 0xcbf29ce484222325ULL);  // FNV's published test vectors
    CHECK(fnv1a_64("a") == 0xaf63dc4c8601ec8cULL);
    CHECK(fnv1a_64("foobar") == 0x85944171f73967e8ULL);
    std::mt19937_64 engine(fnv1a_64("alice#" + std::to_string(draw_of(alice))));
    arma::mat X(3, 4);
    for (arma::uword i = 0; i < 3; ++i) {
        do {
            for (arma::uword j = 0; j < 4; ++j) {
                X(i, j) = static_cast<double>(engine() % 2);
            }
        } while (arma::accu(X.row(i)) == 0.0);
    }
    test::require_near(test::load_text(alice).X, X, 0, "inputs from FNV-1a and mt19937_64");
    // the written command writes the same file again
    const auto again = run_qkv({"init", "--student=Zoë O'Brien", "--tokens", "3", "--d-model", "6", "--d-k", "3",
                                "--heads", "2", "--max-int", "1", "--negative", "--mask", "causal", "--bias"});
    CHECK(again.out == zoe);
}

TEST_CASE("qkv init --student writes a different exercise for each student", "[init][cli]") {
    std::set<std::string> numbers;
    const int students = 30;
    for (int i = 1; i <= students; ++i) {
        const Model model = test::load_text(init_text({"--student", "student-" + std::to_string(i)}));
        std::ostringstream all;
        all << model.X << model.heads[0].W_Q << model.heads[0].W_K << model.heads[0].W_V;
        numbers.insert(all.str());
    }
    CHECK(numbers.size() == students);
    CHECK(init_text({"--student", "alice"}) != init_text({"--student", "Alice"}));
    // the new options shape the file without --student as well
    const std::string text = init_text({"--mask", "causal", "--bias", "--scale", "none", "--negative", "--max-int", "2",
                                        "--heads", "2", "--d-k", "2"});
    const Model model = test::load_text(text);
    CHECK(model.mask_kind == MaskKind::causal);
    CHECK(model.scale_kind == ScaleKind::none);
    REQUIRE(model.heads[1].b_Q.has_value());
    REQUIRE(model.heads[1].b_K.has_value());
    REQUIRE(model.heads[1].b_V.has_value());
    REQUIRE(model.b_O.has_value());
    CHECK(model.X.min() >= -2.0);
    CHECK(model.X.max() <= 2.0);
    CHECK(text.find("\n# mask: causal") == std::string::npos);  // no longer a suggestion
    CHECK(text.find("--seed 1 --max-int 2 --negative --mask causal --bias --scale none\n") != std::string::npos);
    // negative numbers are drawn for some seed: the range is −max_int … max_int
    double lowest = 0.0;
    for (int seed = 1; seed <= 5; ++seed) {
        lowest = std::min(lowest, test::load_text(init_text({"--negative", "--seed", std::to_string(seed)})).X.min());
    }
    CHECK(lowest == -1.0);
    // --bias draws after the weights, so a seed keeps its inputs and weights
    const Model plain = test::load_text(init_text({"--seed", "9"}));
    const Model biased = test::load_text(init_text({"--seed", "9", "--bias"}));
    test::require_near(biased.heads[0].W_V, plain.heads[0].W_V, 0, "W_V with and without --bias");
}

TEST_CASE("every exercise qkv init --student writes lets qkv check name each classic mistake", "[init][cli]") {
    // many students, in shapes that between them allow every classic mistake
    const std::vector<std::vector<std::string>> shapes = {
        {},
        {"--mask", "causal"},
        {"--bias", "--negative"},
        {"--scale", "none", "--tokens", "4"},
        {"--heads", "2", "--d-model", "6", "--d-k", "3", "--mask", "causal"},
        {"--d-model", "3", "--d-k", "3", "--bias"},
        {"--tokens", "4", "--d-model", "5", "--d-k", "2", "--d-v", "3", "--negative"},
        {"--max-int", "2", "--d-model", "3", "--d-k", "2"},
    };
    const int per_shape = 15;
    std::set<std::string> seen;
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        for (int i = 1; i <= per_shape; ++i) {
            std::vector<std::string> options = {"--student", "s" + std::to_string(s) + "-" + std::to_string(i)};
            options.insert(options.end(), shapes[s].begin(), shapes[s].end());
            CAPTURE(options);
            require_good_exercise(init_text(options), seen);
        }
    }
    CHECK(shapes.size() * per_shape >= 100);
    CHECK(seen == k_classic);
}

TEST_CASE("qkv check names a classic mistake made in a student's exercise", "[init][cli]") {
    struct Case {
        std::vector<std::string> init;
        std::string step;
        int head;
        std::string diagnosis_id;
        std::function<arma::mat(const Model&, const Trace&)> mistake;  // the step as the mistake makes it
    };
    const auto values = [](const Trace& trace, const char* id, int head) { return trace.find(id, head)->values; };
    const std::vector<Case> cases = {
        {{"--student", "e2e-1"}, "scores", 0, "scores_k_qt",
         [&](const Model&, const Trace& t) -> arma::mat { return values(t, "keys", 1) * values(t, "queries", 1).t(); }},
        {{"--student", "e2e-2", "--bias"}, "scaled_scores", 0, "scaled_by_dk",
         [&](const Model& m, const Trace& t) -> arma::mat { return values(t, "scores", 1) / double(m.d_k()); }},
        {{"--student", "e2e-3", "--mask", "causal"}, "masked_scores", 0, "mask_zero",
         [&](const Model& m, const Trace& t) -> arma::mat {
             arma::mat S = values(t, "scaled_scores", 1);
             S.elem(arma::find(m.allowed() == 0.0)).zeros();
             return S;
         }},
        {{"--student", "e2e-4", "--mask", "causal", "--negative"}, "weights", 0, "softmax_columns",
         [&](const Model&, const Trace& t) -> arma::mat { return softmax_down_columns(values(t, "masked_scores", 1)); }},
        {{"--student", "e2e-5", "--heads", "2", "--d-model", "6", "--d-k", "3"}, "concat", 0, "heads_averaged",
         [&](const Model&, const Trace& t) -> arma::mat {
             return (values(t, "head_output", 1) + values(t, "head_output", 2)) / 2.0;
         }},
        {{"--student", "e2e-6", "--scale", "none"}, "head_output", 0, "output_at_v",
         [&](const Model&, const Trace& t) -> arma::mat { return values(t, "weights", 1).t() * values(t, "values", 1); }},
    };
    for (const auto& c : cases) {
        CAPTURE(c.init, c.diagnosis_id);
        TempFolder folder;
        const std::string model_text = init_text(c.init);
        write(folder.path / "exercise.yaml", model_text);
        const Model model = test::load_text(model_text);
        const Trace trace = compute(model);
        const arma::mat M = c.mistake(model, trace);
        write(folder.path / "answers.yaml", "answers:\n  " + test::answer_yaml(c.step, c.head, 1, M, 2));
        test::CliRun run;
        run.cwd = folder.path.string();
        run.args = {"check", "exercise.yaml", "--answers", "answers.yaml", "-f", "json"};
        const auto result = run_qkv(run);
        INFO("stderr: " << result.err);
        CHECK(result.status == 1);
        const auto report = nlohmann::json::parse(result.out);
        CHECK(report["correct"] == false);
        CHECK(report["first_mistake"] == c.step);
        REQUIRE(report["steps"].size() == 1);
        CHECK(report["steps"][0]["id"] == c.step);
        CHECK(report["steps"][0]["diagnosis_id"] == c.diagnosis_id);
        const auto& step = report["steps"][0];
        if (step["shape_given"] == step["shape_expected"]) {
            CHECK(step["counts"]["wrong"].get<int>() >= 2);
        }
    }
}

TEST_CASE("qkv init --student refuses options that cannot make a gradable exercise", "[init][cli]") {
    // (tests/bad/commands.txt holds the others, each with its hint)
    const std::vector<std::string> ids = {"tab\there", "line\nbreak", "\xff\xfe", "line\xe2\x80\xa8" "separator",
                                          std::string(201, 'x')};
    for (const auto& id : ids) {
        CAPTURE(id);
        const auto result = run_qkv({"init", "--student", id});
        test::require_input_error(result, "qkv: error: --student: the ID ");
        CHECK(result.err.find("\n  hint: ") != std::string::npos);
    }
    // d_k = √d_model divides alike by d_k and by √d_model; without scaling it does not matter
    test::require_input_error(run_qkv({"init", "--student", "bo", "--d-model", "9", "--d-k", "3"}),
                              "qkv: error: --student with --d-k 3 and --d-model 9: d_k is √d_model");
    CHECK(run_qkv({"init", "--student", "bo", "--d-model", "9", "--d-k", "3", "--scale", "none"}).status == 0);
    // --seed with --student is refused, not ignored
    const auto both = run_qkv({"init", "--seed", "1", "--student", "bo"});
    test::require_input_error(both, "qkv: error: --seed cannot be combined with --student");
    CHECK(both.err.find("hint: --student derives the seed from the ID") != std::string::npos);
}
