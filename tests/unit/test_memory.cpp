// qkv's memory promises (docs/hardening.md): masks applied without an n × m
// matrix, an estimate that counts what a computation allocates, --max-memory
// refusing before it allocates, and running out of memory (ulimit -v) as
// exit 2, never a crash or a hang. Each runs the qkv binary, measuring its
// peak resident memory, some of them under an address-space limit.
#include "support.hpp"

#include "attention/engine_parts.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <new>
#include <set>
#include <thread>

using namespace qkv;
using qkv::test::run_qkv;

namespace {

constexpr std::uint64_t k_mib = std::uint64_t{1} << 20;

// AddressSanitizer and ThreadSanitizer reserve terabytes of address space, so
// no address-space limit can hold a sanitized qkv.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool k_sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool k_sanitized = true;
#else
constexpr bool k_sanitized = false;
#endif
#else
constexpr bool k_sanitized = false;
#endif

// qkv's own memory, as the kernel counts it: not in a sanitized build, nor
// under an emulator (scripts/arm64-check), whose memory would be counted and
// which cannot start under an address-space limit either
bool native_memory() { return !k_sanitized && std::getenv("QKV_TEST_BINARY") == nullptr; }

// N random tokens of width `width`, one head of width `width`, and `extra` lines.
std::string tokens(int n, int width, const std::string& extra = "") {
    const std::string square = "{rows: " + std::to_string(width) + ", cols: " + std::to_string(width);
    return "inputs: {random: {rows: " + std::to_string(n) + ", cols: " + std::to_string(width) +
           ", seed: 1}}\n"
           "weights:\n"
           "  query: {random: " + square + ", seed: 2}}\n"
           "  key: {random: " + square + ", seed: 3}}\n"
           "  value: {random: " + square + ", seed: 4}}\n" +
           extra;
}

test::CliResult run_limited(const std::vector<std::string>& args, const std::string& input, std::uint64_t limit) {
    test::CliRun run;
    run.args = args;
    run.input = input;
    run.address_limit = native_memory() ? limit : 0;
    return run_qkv(run);
}

// The peak of qkv doing next to nothing: its code and libraries.
// qkv's own memory, running the smallest example: the largest of three runs,
// as it moves by some hundreds of KiB from one run to the next
std::uint64_t baseline_kib() {
    static const std::uint64_t kib = [] {
        std::uint64_t most = 0;
        for (int run = 0; run < 3; ++run) {
            most = std::max(most, run_qkv({"run", "illustrated", "-s", "output"}).peak_kib);
        }
        return most;
    }();
    return kib;
}

}  // namespace

TEST_CASE("a causal run of 30,000 tokens holds no n × n matrix: it stays under 1 GiB", "[memory][slow][cli]") {
    // one 30,000 × 30,000 matrix alone would be 7.2 GB
    const auto result = run_limited({"run", "-", "-s", "output", "-f", "csv"}, tokens(30000, 8, "mask: causal\n"),
                                    1024 * k_mib);
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());
    INFO("peak " << result.peak_kib << " KiB");
    if (native_memory()) {
        CHECK(result.peak_kib * 1024 < 200 * k_mib);
    }
    // the last row of the output, and only the output
    CHECK(result.out.find("\noutput,,30000,8,x30000,d8,") != std::string::npos);
    CHECK(result.out.find("\nweights,") == std::string::npos);
}

TEST_CASE("the memory estimate is at least what a computation uses", "[memory][slow][cli]") {
    // Each case runs once to measure its peak, and again with --max-memory at
    // that peak less qkv's own baseline (and 1%): the estimate must refuse it.
    if (!native_memory()) {
        SUCCEED("a sanitizer's or an emulator's own memory would be measured too");
        return;
    }
    std::string padding = "padding: [";
    for (int i = 0; i < 1500; ++i) {
        padding += i < 1400 ? "1, " : "0, ";
    }
    padding.replace(padding.size() - 2, 2, "]\n");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"causal, output only", tokens(20000, 16, "mask: causal\n")},
        {"window 64", tokens(20000, 16, "mask: {window: 64}\n")},
        {"padding, every step kept", tokens(1500, 16, padding)},
        {"every step kept", tokens(1500, 16)},
        {"GQA, RoPE, ALiBi and sinks",
         "inputs: {random: {rows: 3000, cols: 64, seed: 1}}\nheads: 8\nkv_heads: 2\n"
         "weights:\n  query: {random: {rows: 64, cols: 64, seed: 2}}\n"
         "  key: {random: {rows: 64, cols: 16, seed: 3}}\n  value: {random: {rows: 64, cols: 16, seed: 4}}\n"
         "  output: {random: {rows: 64, cols: 64, seed: 5}}\n"
         "rope: true\nalibi: true\nsinks: [0, 0, 0, 0, 0, 0, 0, 0]\nmask: causal\n"},
        {"the backward pass", tokens(3000, 32, "mask: causal\ngrad_output: ones\n")},
    };
    for (const auto& [name, yaml] : cases) {
        // text, which shows a large matrix in part: the output's own size stays small
        std::vector<std::string> args = {"run", "-"};
        if (name.find("every step") == std::string::npos) {
            args.insert(args.end(), {"-s", "output"});
        }
        INFO(name);
        const auto measured = run_qkv(args, yaml);
        REQUIRE(measured.status == 0);
        // qkv's own memory with this file read (a 1,500-entry padding list is
        // some hundreds of KiB of YAML nodes): the same run, refused before it computes
        std::vector<std::string> refused_early = args;
        refused_early.insert(refused_early.end(), {"--max-memory", "1KiB"});
        const auto read_only = run_qkv(refused_early, yaml);
        REQUIRE(read_only.status == 2);
        const std::uint64_t own_kib = std::max(read_only.peak_kib, baseline_kib());
        const std::uint64_t used_kib = measured.peak_kib - std::min(measured.peak_kib, own_kib);
        INFO("peak " << measured.peak_kib << " KiB, of which the computation " << used_kib << " KiB");
        REQUIRE(used_kib > 4 * 1024);  // big enough to be measured
        // within 1%: the estimate counts the matrices, not the labels each kept
        // step carries, the text being written or the allocator's own bookkeeping,
        // and the peak moves by some hundreds of KiB from one run to the next
        args.insert(args.end(), {"--max-memory", std::to_string(used_kib - used_kib / 100) + "KiB"});
        const auto refused = run_qkv(args, yaml);
        CHECK(refused.status == 2);
        CHECK(refused.err.find("the computation needs about") != std::string::npos);
    }
}

TEST_CASE("run, explain, check and bench refuse above --max-memory before they allocate", "[memory][cli]") {
    const std::string yaml = tokens(30000, 64, "mask: causal\n");
    const std::vector<std::vector<std::string>> commands = {
        {"run", "-", "-s", "output", "--max-memory", "64MiB"},
        {"explain", "-", "output[1,1]", "--max-memory", "64MiB"},
        {"check", "-", "--max-memory", "64MiB"},
    };
    for (const auto& args : commands) {
        INFO(args.front());
        const auto result = run_qkv(args, yaml + "answers:\n  output: [[1]]\n");
        CHECK(result.status == 2);
        CHECK(result.err.find("the computation needs about") != std::string::npos);
        CHECK(result.err.find("the limit is 64 MiB") != std::string::npos);
        CHECK(result.out.empty());
        // the inputs (15 MiB) are read; nothing of the computation is
        CHECK((!native_memory() || result.peak_kib < baseline_kib() + 40 * 1024));
    }
    const auto bench = run_qkv({"bench", "--tokens", "30000", "--d-model", "64", "--heads", "1", "--max-memory", "64MiB"});
    CHECK(bench.status == 2);
    CHECK(bench.err.find("this size needs about") != std::string::npos);
    CHECK(bench.err.find("the limit is 64 MiB") != std::string::npos);
    CHECK((!native_memory() || bench.peak_kib < baseline_kib() + 8 * 1024));
    const auto small = run_qkv({"bench", "--tokens", "64", "--d-model", "96", "--repeat", "1", "--max-memory", "64MiB"});
    CHECK(small.status == 0);
    test::require_input_error(run_qkv({"bench", "--max-memory", "lots"}), "--max-memory is \"lots\"; expected a size");
}

TEST_CASE("under an address-space limit qkv computes or says it is out of memory, and never hangs",
          "[memory][slow][cli]") {
    if (!native_memory()) {
        SUCCEED("a sanitized or emulated qkv cannot run under an address-space limit");
        return;
    }
    // limits from below what qkv needs to start to more than it needs: each run
    // ends, by itself, with the result or one error and a hint
    const std::vector<std::pair<std::vector<std::string>, std::string>> runs = {
        {{"run", "illustrated", "-s", "output"}, ""},
        {{"run", "-", "-s", "output", "-f", "csv"},
         "inputs: {random: {rows: 4096, cols: 256, seed: 1}}\nheads: 4\nweights:\n"
         "  query: {random: {rows: 256, cols: 256, seed: 2}}\n  key: {random: {rows: 256, cols: 256, seed: 3}}\n"
         "  value: {random: {rows: 256, cols: 256, seed: 4}}\n  output: {random: {rows: 256, cols: 256, seed: 5}}\n"
         "mask: causal\n"},
        {{"bench", "--tokens", "2048", "--repeat", "1"}, ""},
    };
    for (const auto& [args, input] : runs) {
        std::set<int> statuses;
        for (std::uint64_t mib = 80; mib <= 720; mib += 40) {
            INFO(args.front() << " " << args.at(1) << " under " << mib << " MiB");
            test::CliRun run;
            run.args = args;
            run.input = input;
            run.address_limit = mib * k_mib;
            run.seconds = 60;
            const auto result = run_qkv(run);
            statuses.insert(result.status);
            if (result.status == 2) {
                CHECK(result.err.rfind("qkv: error: ", 0) == 0);
                CHECK(result.err.find("memory") != std::string::npos);
                CHECK(result.err.find("\n  hint: ") != std::string::npos);
            } else {
                CHECK(result.status == 0);
                // nothing but bench's progress, which a slow run shows
                CHECK(result.err.find("error") == std::string::npos);
            }
        }
        // the smallest limit is too small, the largest is enough
        CHECK(statuses == std::set<int>{0, 2});
    }
}

TEST_CASE("a worker's exception reaches the caller once every worker has stopped", "[memory][compute]") {
    for (int workers : {1, 2, 4}) {
        INFO(workers << " workers");
        std::atomic<int> ran{0};
        const auto work = [&ran](arma::uword item, int) {
            ++ran;
            if (item == 37) {
                throw std::bad_alloc();
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        };
        CHECK_THROWS_AS(engine_parts::parallel_for(workers, 1000, work), std::bad_alloc);
        // every item taken before 37 ran; then the others stopped taking items
        CHECK(ran.load() >= 38);
        CHECK(ran.load() < 500);
    }
    std::atomic<int> ran{0};
    engine_parts::parallel_for(3, 1000, [&ran](arma::uword, int) { ++ran; });
    CHECK(ran.load() == 1000);
}

TEST_CASE("qkv's threads: QKV_THREADS, else OPENBLAS_NUM_THREADS, else the CPUs", "[memory][cli]") {
    const auto threads_of = [](const std::map<std::string, std::string>& env) {
        test::CliRun run;
        run.args = {"bench", "--tokens", "64", "--d-model", "96", "--repeat", "1", "-f", "json"};
        run.env = env;
        const auto result = run_qkv(run);
        REQUIRE(result.status == 0);
        return nlohmann::json::parse(result.out).at("threads").get<int>();
    };
    CHECK(threads_of({{"QKV_THREADS", "3"}}) == 3);
    CHECK(threads_of({{"QKV_THREADS", "3"}, {"OPENBLAS_NUM_THREADS", "5"}}) == 3);
    CHECK(threads_of({{"OPENBLAS_NUM_THREADS", "1"}}) == 1);
    // with OpenBLAS's own threads (under an emulator, scripts/arm64-check,
    // they hang)
    if (std::getenv("QKV_TEST_BINARY") == nullptr) {
        CHECK(threads_of({{"OPENBLAS_NUM_THREADS", "5"}}) == 5);
        // and under a limit, where qkv starts again without them
        test::CliRun limited;
        limited.args = {"bench", "--tokens", "64", "--d-model", "96", "--repeat", "1", "-f", "json"};
        limited.env = {{"OPENBLAS_NUM_THREADS", "5"}};
        limited.address_limit = native_memory() ? 1024ULL << 20 : 0;
        const auto result = run_qkv(limited);
        REQUIRE(result.status == 0);
        CHECK(nlohmann::json::parse(result.out).at("threads").get<int>() == 5);
    }
    CHECK(threads_of({{"QKV_THREADS", "none"}}) >= 1);
}
