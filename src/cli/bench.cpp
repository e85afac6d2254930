// qkv bench: times each step of attention on random float64 data of a given
// size, on the path `qkv run` takes for large inputs (attention/bench.hpp).
#include "attention/bench.hpp"
#include "base/numbers.hpp"
#include "attention/engine.hpp"
#include "io/yaml_util.hpp"
#include "model/keys.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"
#include "base/diagnostics.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace qkv::cli {

namespace {

using Clock = std::chrono::steady_clock;

double rounded(double value, int decimals) {
    const double factor = std::pow(10.0, decimals);
    return std::round(value * factor) / factor;
}

// Progress on stderr, only once the timed runs have lasted more than a second.
class Progress {
public:
    explicit Progress(int runs) : m_runs(runs), m_start(Clock::now()), m_terminal(isatty(STDERR_FILENO) == 1) {}

    // 0 when the timed runs start, then the number of runs done.
    void done(int run) {
        if (run == 0) {
            m_start = Clock::now();
            return;
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - m_start).count();
        if (seconds < 1.0 || (!m_terminal && seconds - m_last < 1.0 && run != m_runs)) {
            return;
        }
        m_last = seconds;
        m_shown = true;
        std::cerr << (m_terminal ? "\r" : "") << "qkv bench: run " << run << " of " << m_runs << ", "
                  << fixed(seconds, 1) << " s" << (m_terminal ? "" : "\n") << std::flush;
    }

    ~Progress() {
        if (m_shown && m_terminal) {
            std::cerr << '\n';
        }
    }

private:
    int m_runs;
    Clock::time_point m_start;
    bool m_terminal;
    double m_last = 0.0;
    bool m_shown = false;
};

// The report as JSON, in the keys and order of BENCHMARK in man/qkv.1.
std::string json_report(const BenchSpec& spec, const BenchResult& result) {
    nlohmann::ordered_json json;
    json["schema_version"] = 1;
    json["tokens"] = spec.tokens;
    json["d_model"] = spec.d_model;
    json["heads"] = spec.heads;
    json["kv_heads"] = spec.kv_head_count();
    json["window"] = spec.window > 0 ? nlohmann::ordered_json(spec.window) : nlohmann::ordered_json(nullptr);
    json["rope"] = spec.rope;
    json["rope_dim"] = spec.rope_dim > 0 ? nlohmann::ordered_json(spec.rope_dim) : nlohmann::ordered_json(nullptr);
    json["rope_scaling"] =
        spec.rope_scaling.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(spec.rope_scaling);
    json["qk_norm"] = spec.qk_norm;
    json["mla"] = spec.mla;
    for (const KeyRow* row : number_key_rows()) {
        const auto given = spec.numbers.find(std::string(row->name));
        json[std::string(row->name)] =
            given != spec.numbers.end() ? nlohmann::ordered_json(given->second) : nlohmann::ordered_json(nullptr);
    }
    json["backward"] = spec.backward;
    json["threads"] = result.threads;
    json["blas"] = result.blas;
    json["repeat"] = spec.repeat;
    json["total_ms"] = rounded(result.total_ms, 6);
    json["gflops"] = rounded(result.gflops, 3);
    json["peak_rss_mb"] = rounded(result.peak_rss_mb, 1);
    json["steps"] = nlohmann::ordered_json::array();
    for (const auto& [id, ms] : result.steps) {
        json["steps"].push_back({{"id", step_text(id)}, {"median_ms", rounded(ms, 6)}});
    }
    return json.dump() + "\n";
}

// The report as a table of the steps, with what the numbers were measured on.
std::string text_report(const BenchSpec& spec, const BenchResult& result) {
    const Mla mla = bench_latent_sizes(spec);
    const arma::uword d_k = spec.mla ? mla.nope_dim + mla.rope_dim : spec.d_model / spec.heads;
    std::string out;
    out += "qkv bench: " + std::to_string(spec.tokens) + " tokens, d_model " + std::to_string(spec.d_model) + ", " +
           std::to_string(spec.heads) + (spec.heads == 1 ? " head" : " heads") + " (d_k " + std::to_string(d_k) + ")";
    if (spec.kv_head_count() != spec.heads) {
        out += ", " + std::to_string(spec.kv_head_count()) + " key/value " +
               (spec.kv_head_count() == 1 ? "head" : "heads");
    }
    if (spec.window > 0) {
        out += ", window " + std::to_string(spec.window);
    }
    if (spec.rope && !spec.mla) {
        out += spec.rope_dim > 0 ? ", RoPE on " + std::to_string(spec.rope_dim) + " of d_k" : std::string(", RoPE");
        out += spec.rope_scaling.empty() ? std::string() : " (" + spec.rope_scaling + " scaling)";
    }
    if (spec.qk_norm) {
        out += ", QK-norm";
    }
    if (spec.mla) {
        out += ", latent attention (d_n " + std::to_string(mla.nope_dim) + ", d_r " + std::to_string(mla.rope_dim) +
               ", d_v " + std::to_string(mla.v_dim) + ", r " + std::to_string(mla.kv_rank) + ", r_q " +
               std::to_string(*mla.q_rank) + ")";
        out += spec.rope_scaling.empty() ? std::string() : " (" + spec.rope_scaling + " scaling)";
    }
    for (const auto& [name, value] : spec.numbers) {
        out += ", " + name + " " + readable(value);
    }
    if (spec.backward) {
        out += ", forward and backward";
    }
    out += ", float64, random data\n";
    out += "BLAS: " + result.blas + "\n";
    out += "per-head products: " + std::string(result.own_products ? "qkv's own" : "BLAS") +
           "; qkv's loops: " + result.kernels_target + "\n";
    out += "threads: " + std::to_string(result.threads) + "; median of " + std::to_string(spec.repeat) +
           (spec.repeat == 1 ? " run" : " runs") + " after a warm-up\n\n";
    out += "  step                 median ms   share\n";
    for (const auto& [id, ms] : result.steps) {
        out += fmt::format("  {:<20} {:>9}  {:>5} %\n", step_text(id), fixed(ms, 3), fixed(100.0 * ms / result.total_ms, 1));
    }
    out += fmt::format("  {:<20} {:>9}\n\n", "total", fixed(result.total_ms, 3));
    out += "  " + fixed(result.gflops, 1) + " GFLOP/s (matrix products, 2 per multiply-add)\n";
    out += "  peak memory " + fixed(result.peak_rss_mb, 1) + " MB\n";
    out += "  the scaling is part of scores; the heads write their columns of concat in place\n";
    return out;
}

// --mla: its own sizes, RoPE on its rope parts, and the forward pass alone
void check_latent_flags(const BenchSpec& spec, const BenchOptions& options) {
    const auto refuse = [](const std::string& flag) {
        throw InputError(usage_error("--mla is given with " + flag + "; expected --mla alone",
                                     "latent attention has one key/value latent for every head, turns the last d_r "
                                     "elements of each head and is timed forward only; remove " + flag));
    };
    if (options.kv_heads != 0) {
        refuse("--kv-heads");
    }
    if (options.rope_dim != 0) {
        refuse("--rope-dim");
    }
    if (options.qk_norm) {
        refuse("--qk-norm");
    }
    if (options.backward) {
        refuse("--backward");
    }
    if ((spec.d_model / spec.heads) % 4 != 0) {
        throw InputError(usage_error("--mla needs d_model / heads divisible by 4; d_model " +
                                         std::to_string(spec.d_model) + " / " + std::to_string(spec.heads) +
                                         " heads is " + std::to_string(spec.d_model / spec.heads),
                                     "d_n = d_model / heads and d_r = d_n / 2, which RoPE turns in pairs; e.g. "
                                     "--d-model 768 --heads 12"));
    }
}

}  // namespace

CLI::App* setup_bench(CLI::App& app, BenchOptions& options) {
    Bindings bindings;
    bindings.bind("--tokens", &options.tokens)
        .bind("--d-model", &options.d_model)
        .bind("--heads", &options.heads)
        .bind("--kv-heads", &options.kv_heads)
        .bind("--window", &options.window)
        .bind("--rope", &options.rope)
        .bind("--rope-dim", &options.rope_dim)
        .bind("--rope-scaling", &options.rope_scaling)
        .bind("--qk-norm", &options.qk_norm)
        .bind("--mla", &options.mla)
        .bind("--backward", &options.backward)
        .bind("--repeat", &options.repeat)
        .bind("--threads", &options.threads)
        .bind("--max-memory", &options.max_memory)
        .bind("--format", &options.format);
    for (const KeyRow* row : number_key_rows()) {
        const std::string name(row->name);
        bindings.bind(row->number->flag, &options.numbers[name], &options.numbers_given[name]);
    }
    return add_command(app, CommandId::bench, bindings);
}

int run_bench(const BenchOptions& options) {
    BenchSpec spec;
    spec.tokens = static_cast<arma::uword>(options.tokens);
    spec.d_model = static_cast<arma::uword>(options.d_model);
    spec.heads = static_cast<arma::uword>(options.heads);
    spec.kv_heads = static_cast<arma::uword>(options.kv_heads);
    spec.window = static_cast<arma::uword>(options.window);
    spec.rope = options.rope || options.rope_dim > 0 || !options.rope_scaling.empty();
    spec.rope_scaling = options.rope_scaling;
    spec.rope_dim = static_cast<arma::uword>(options.rope_dim);
    spec.qk_norm = options.qk_norm;
    spec.mla = options.mla;
    spec.backward = options.backward;
    for (const KeyRow* row : number_key_rows()) {
        const std::string name(row->name);
        if (!options.numbers_given.at(name)) {
            continue;
        }
        const double value = options.numbers.at(name);
        if (const std::optional<std::string> problem = number_key_problem(value)) {
            throw InputError(usage_error(std::string(row->number->flag) + " " + shortest(value) + ": " + *problem,
                                         std::string(row->number->help)));
        }
        spec.numbers[name] = value;
    }
    spec.repeat = options.repeat;
    spec.threads = options.threads;
    if (spec.d_model % spec.heads != 0) {
        throw InputError(usage_error("--d-model " + std::to_string(spec.d_model) + " is not divisible by --heads " +
                                         std::to_string(spec.heads),
                                     "each head gets d_model / heads columns; e.g. --d-model 768 --heads 12"));
    }
    if (spec.heads % spec.kv_head_count() != 0) {
        throw InputError(usage_error("--heads " + std::to_string(spec.heads) + " is not divisible by --kv-heads " +
                                         std::to_string(spec.kv_head_count()),
                                     "each key/value head serves heads / kv-heads query heads; e.g. --heads 12 "
                                     "--kv-heads 4"));
    }
    if (spec.mla) {
        check_latent_flags(spec, options);
    }
    if (spec.rope_dim > 0 && (spec.rope_dim % 2 != 0 || spec.rope_dim > spec.d_model / spec.heads)) {
        throw InputError(usage_error("--rope-dim " + std::to_string(spec.rope_dim) + " is not an even number of at most d_k = " +
                                         std::to_string(spec.d_model / spec.heads),
                                     "the rotated width is taken in pairs within a head; e.g. --rope-dim 16 of d_k 64"));
    }
    if (spec.rope_scaling == "dynamic" && (spec.rope_dim > 0 ? spec.rope_dim : spec.d_model / spec.heads) <= 2) {
        throw InputError(usage_error("--rope-scaling dynamic turns a width of 2; expected 4 or more",
                                     "dynamic scaling raises the base to the power d_rot/(d_rot − 2)"));
    }
    if (spec.rope && spec.rope_dim == 0 && (spec.d_model / spec.heads) % 2 != 0) {
        throw InputError(usage_error("--rope needs an even d_k; d_model " + std::to_string(spec.d_model) + " / " +
                                         std::to_string(spec.heads) + " heads is " +
                                         std::to_string(spec.d_model / spec.heads),
                                     "RoPE turns the elements of each query and key in pairs"));
    }
    const std::uint64_t limit = memory_limit(options.max_memory);
    const std::uint64_t bytes = bench_bytes(spec);
    if (bytes > limit) {
        throw InputError(usage_error("this size needs about " + size_text(bytes) + "; the limit is " +
                                         size_text(limit),
                                     "use fewer tokens or a smaller --d-model, or raise the limit with --max-memory"));
    }
    if (const std::uint64_t room = memory_room(); bytes > room) {
        throw InputError(usage_error("this size needs about " + size_text(bytes) +
                                         "; the memory limit of this process leaves " + size_text(room),
                                     "use fewer tokens or a smaller --d-model, or raise the limit (ulimit -v)"));
    }
    Progress progress(options.repeat);
    const BenchResult result = run_benchmark(spec, [&progress](int done) { progress.done(done); });
    write_stdout(parse_format(options.format) == Format::json ? json_report(spec, result)
                                                              : text_report(spec, result));
    return 0;
}

}  // namespace qkv::cli
