// Golden files of the CLI's output for every built-in example: text compared
// exactly, JSON compared structurally with numbers within 1e-12 (BLAS kernels
// may differ in the last bits between machines).
#include "attention/engine.hpp"
#include "builtin/builtin.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

using qkv::test::check_golden;
using qkv::test::run_qkv;

namespace {

void compare_json(const nlohmann::json& got, const nlohmann::json& expected, const std::string& path) {
    if (expected.is_number() && got.is_number()) {
        const double e = expected.get<double>();
        const double g = got.get<double>();
        const double difference = std::fabs(g - e);
        if (!(difference <= 1e-12 || difference <= 1e-12 * std::fabs(e))) {
            FAIL(path << " is " << g << "; expected " << e);
        }
        return;
    }
    if (expected.type() != got.type()) {
        FAIL(path << " is " << got.dump() << "; expected " << expected.dump());
    }
    if (expected.is_object()) {
        for (auto it = expected.begin(); it != expected.end(); ++it) {
            if (!got.contains(it.key())) {
                FAIL(path << "." << it.key() << " is missing");
            }
            compare_json(got[it.key()], it.value(), path + "." + it.key());
        }
        if (got.size() != expected.size()) {
            FAIL(path << " has " << got.size() << " keys; expected " << expected.size());
        }
    } else if (expected.is_array()) {
        if (got.size() != expected.size()) {
            FAIL(path << " has " << got.size() << " items; expected " << expected.size());
        }
        for (std::size_t i = 0; i < expected.size(); ++i) {
            compare_json(got[i], expected[i], path + "[" + std::to_string(i) + "]");
        }
    } else if (expected != got) {
        FAIL(path << " is " << got.dump() << "; expected " << expected.dump());
    }
}

void check_json_golden(const std::string& name, const std::string& actual) {
    const std::string path = qkv::test::source_dir() + "/tests/golden/" + name;
    const char* update = std::getenv("QKV_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1") {
        std::ofstream(path, std::ios::binary) << actual;
        return;
    }
    const auto got = nlohmann::json::parse(actual);
    const auto expected = nlohmann::json::parse(qkv::test::read_repo_file("tests/golden/" + name));
    compare_json(got, expected, "$");
    SUCCEED(name << " agrees");
}

}  // namespace

TEST_CASE("every built-in example's text output matches its golden file", "[cli][golden]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const auto result = run_qkv({"run", name});
        REQUIRE(result.status == 0);
        CHECK(result.err.empty());
        check_golden(name + ".txt", result.out);
    }
}

TEST_CASE("every built-in example's JSON output matches its golden file", "[cli][golden]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const auto result = run_qkv({"run", name, "--format", "json"});
        REQUIRE(result.status == 0);
        CHECK(result.err.empty());
        check_json_golden(name + ".json", result.out);
    }
}

TEST_CASE("every file in examples/ runs and equals its built-in copy", "[cli][examples]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const std::string path = qkv::test::source_dir() + "/examples/" + name + ".yaml";
        CHECK(qkv::test::read_repo_file("examples/" + name + ".yaml") == std::string(example.text));
        const auto from_file = run_qkv({"run", path, "--format", "json"});
        const auto builtin = run_qkv({"run", name, "--format", "json"});
        REQUIRE(from_file.status == 0);
        CHECK(from_file.out == builtin.out);
    }
}

TEST_CASE("qkv run without a file runs the illustrated example", "[cli]") {
    const auto plain = run_qkv({"run"});
    const auto named = run_qkv({"run", "illustrated"});
    REQUIRE(plain.status == 0);
    CHECK(plain.out == named.out);
    CHECK(plain.out.find("Three inputs, step by step") != std::string::npos);
}

TEST_CASE("standard input is read with -", "[cli]") {
    const std::string yaml = qkv::test::read_repo_file("examples/cross.yaml");
    const auto piped = run_qkv({"run", "-", "-f", "json"}, yaml);
    const auto named = run_qkv({"run", "cross", "-f", "json"});
    REQUIRE(piped.status == 0);
    CHECK(piped.out == named.out);
}

TEST_CASE("the JSON output follows the contract", "[cli][json]") {
    const auto result = run_qkv({"run", "cross", "-f", "json"});
    REQUIRE(result.status == 0);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["schema_version"] == 1);
    CHECK(doc["tokens"] == nlohmann::json({"le", "chat"}));
    CHECK(doc["context_tokens"] == nlohmann::json({"the", "black", "cat"}));
    CHECK(doc["dims"]["n"] == 2);
    CHECK(doc["dims"]["m"] == 3);
    CHECK_THAT(doc["scale"].get<double>(), Catch::Matchers::WithinRel(std::sqrt(2.0), 1e-15));
    bool saw_weights = false;
    for (const auto& step : doc["steps"]) {
        if (step["id"] == "weights") {
            saw_weights = true;
            CHECK(step["head"] == 1);
            CHECK(step["rows"] == nlohmann::json({"le", "chat"}));
            CHECK(step["cols"] == nlohmann::json({"the", "black", "cat"}));
        }
        if (step["id"] == "context") {
            CHECK(step["head"].is_null());
        }
    }
    CHECK(saw_weights);
    // no context_tokens for self-attention, and −∞ written as the string "-inf"
    const auto masked = nlohmann::json::parse(run_qkv({"run", "masked", "-f", "json", "-s", "masked_scores"}).out);
    CHECK_FALSE(masked.contains("context_tokens"));
    CHECK(masked["steps"][0]["values"][0][1] == "-inf");
}

TEST_CASE("the steps, head, precision and brief options select what is shown", "[cli]") {
    const auto scores = run_qkv({"run", "two-heads", "-s", "scores", "--head", "2"});
    REQUIRE(scores.status == 0);
    CHECK(scores.out.find("Scores · head 2") != std::string::npos);
    CHECK(scores.out.find("head 1") == std::string::npos);
    CHECK(scores.out.find("Queries") == std::string::npos);

    const auto precise = run_qkv({"run", "illustrated", "-s", "weights", "-p", "6"});
    CHECK(precise.out.find("0.063379") != std::string::npos);

    const auto brief = run_qkv({"run", "illustrated", "--brief", "-s", "scores"});
    CHECK(brief.out.find("dotted with") == std::string::npos);
    CHECK(brief.out.find("S = Q·Kᵀ") != std::string::npos);

    const auto json = nlohmann::json::parse(run_qkv({"run", "two-heads", "-f", "json", "-s", "weights", "--head", "1"}).out);
    REQUIRE(json["steps"].size() == 1);
    CHECK(json["steps"][0]["head"] == 1);
}

TEST_CASE("large matrices are summarised unless --full", "[cli]") {
    const std::string yaml = R"(
inputs: {random: {rows: 20, cols: 3, seed: 7}}
weights: {query: {random: {rows: 3, cols: 2, seed: 1}}, key: {random: {rows: 3, cols: 2, seed: 2}}, value: {random: {rows: 3, cols: 2, seed: 3}}}
)";
    const auto summarised = run_qkv({"run", "-", "-s", "scores"}, yaml);
    REQUIRE(summarised.status == 0);
    CHECK(summarised.out.find("…") != std::string::npos);
    CHECK(summarised.out.find("x20") != std::string::npos);
    CHECK(summarised.out.find("x10") == std::string::npos);
    const auto full = run_qkv({"run", "-", "-s", "scores", "--full"}, yaml);
    CHECK(full.out.find("…") == std::string::npos);
    CHECK(full.out.find("x10") != std::string::npos);
}

TEST_CASE("colour appears only when asked for or on a terminal", "[cli]") {
    const auto piped = run_qkv({"run", "illustrated"});
    CHECK(piped.out.find('\x1b') == std::string::npos);
    const auto always = run_qkv({"run", "illustrated", "--color", "always"});
    CHECK(always.out.find("\x1b[") != std::string::npos);
    const auto json = run_qkv({"run", "illustrated", "--color", "always", "-f", "json"});
    CHECK(json.out.find('\x1b') == std::string::npos);
}

TEST_CASE("ascii output has no box-drawing or math symbols", "[cli]") {
    const auto result = run_qkv({"run", "masked", "--ascii"});
    REQUIRE(result.status == 0);
    for (const char c : result.out) {
        if (static_cast<unsigned char>(c) >= 0x80) {
            FAIL("non-ASCII byte in --ascii output");
        }
    }
    CHECK(result.out.find("-inf") != std::string::npos);
    // γ is spelled out, and the elementwise product is a word of its own, with or without spaces around it
    const auto latent = run_qkv({"run", "mla", "--backward", "--ascii", "-s", "grad_kv_latent,grad_kv_a_layernorm"});
    REQUIRE(latent.status == 0);
    CHECK(latent.out.find('?') == std::string::npos);
    CHECK(latent.out.find("mean(c o gamma o dy)") != std::string::npos);
    CHECK(latent.out.find("Gradient of kv_a_layernorm's gamma") != std::string::npos);
    const auto softmax = run_qkv({"run", "backward", "--ascii", "-s", "grad_scaled_scores"});
    CHECK(softmax.out.find("A o (dA - rowsum(dA o A))") != std::string::npos);
}

TEST_CASE("qkv --version names the build and the BLAS", "[cli]") {
    const auto result = run_qkv({"--version"});
    CHECK(result.status == 0);
    CHECK(result.out.rfind("qkv 0.", 0) == 0);
    CHECK(result.out.find("BLAS: ") != std::string::npos);
#ifdef QKV_BLAS_OPENBLAS
    // the kernels in use, and the user's own choice of them
    CHECK(result.out.find(qkv::blas_core()) != std::string::npos);
    if (qkv::blas_name().find("DYNAMIC_ARCH") != std::string::npos) {
        const auto pinned = run_qkv(qkv::test::CliRun{.args = {"--version"}, .env = {{"OPENBLAS_CORETYPE", "Haswell"}}});
        CHECK(pinned.out.find(" Haswell ") != std::string::npos);
        CHECK(pinned.out.find("OPENBLAS_CORETYPE=Haswell") != std::string::npos);
        CHECK(pinned.out.find("chosen by qkv") == std::string::npos);
    }
#endif
}

TEST_CASE("qkv examples lists every built-in example, name first", "[cli]") {
    const auto result = run_qkv({"examples"});
    REQUIRE(result.status == 0);
    std::size_t count = 0;
    for (const auto& example : qkv::builtin_examples()) {
        const bool listed = result.out.find("\n" + std::string(example.name) + " ") != std::string::npos ||
                            result.out.rfind(std::string(example.name) + " ", 0) == 0;
        CHECK(listed);
        ++count;
    }
    CHECK(std::count(result.out.begin(), result.out.end(), '\n') == static_cast<long>(count));
}

TEST_CASE("qkv examples NAME prints the example's file, comments included, and run - on it writes what run NAME "
          "writes", "[cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const std::string yaml = qkv::test::run_ok({"examples", name});
        CHECK(yaml == qkv::test::read_repo_file("examples/" + name + ".yaml"));
        for (const char* format : {"text", "json", "latex"}) {
            CAPTURE(format);
            CHECK(qkv::test::run_ok({"run", "-", "-f", format}, yaml) == qkv::test::run_ok({"run", name, "-f", format}));
        }
    }
    // the comments of the file come with it
    CHECK(qkv::test::run_ok({"examples", "masked"}).find("padding: [1, 1, 1, 0]       # per key: 1 = a real token") !=
          std::string::npos);

    // -o writes a file to start from, never over one
    qkv::test::TempDir dir;
    const std::string mine = dir.path() + "/mine.yaml";
    CHECK(qkv::test::run_ok({"examples", "masked", "-o", mine}).empty());
    CHECK(qkv::test::read_file(mine) == qkv::test::read_repo_file("examples/masked.yaml"));
    const auto again = run_qkv({"examples", "rope", "-o", mine});
    CHECK(again.status == 2);
    CHECK(qkv::test::read_file(mine) == qkv::test::read_repo_file("examples/masked.yaml"));

    // a name that is not built in, with the names that are
    const auto missing = run_qkv({"examples", "maskd"});
    CHECK(missing.status == 2);
    CHECK(missing.out.empty());
    CHECK(missing.err == "qkv: error: maskd: no built-in example by that name\n  hint: did you mean masked? "
                         "built-in examples: illustrated, sky-is-blue, two-heads, masked, cross, rope, gqa, "
                         "alibi-window, sinks, backward, mla\n");
}
