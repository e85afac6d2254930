// qkv bench: times each step of attention on random float64 data of a given
// size, on the path `qkv run` takes for large inputs (attention/engine.hpp).
#include "attention/engine.hpp"
#include "attention/kernels.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"
#include "base/diagnostics.hpp"

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

namespace qkv::cli {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// Multiply-adds of the matrix products, counted twice (the usual GEMM
// convention): projections, scores, weighted sums and the output projection.
double flops(double n, double d_model, double heads) {
    const double width = d_model;  // H·d_k = H·d_v = d_out = d_model
    const double projections = 3 * 2 * n * d_model * width;
    const double per_head = 2 * 2 * n * n * (width / heads) * heads;
    const double output = 2 * n * width * d_model;
    return projections + per_head + output;
}

// Uniform in [low, high), like `{random: ...}`.
arma::mat uniform(arma::uword rows, arma::uword cols, double low, double high) {
    arma::mat M(rows, cols, arma::fill::randu);
    return low + (high - low) * M;
}

// the formats of bench's report
const std::vector<Format> k_bench_formats = {Format::text, Format::json};

std::string fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

double rounded(double value, int decimals) {
    const double factor = std::pow(10.0, decimals);
    return std::round(value * factor) / factor;
}

// Progress on stderr, only once the runs have lasted more than a second.
class Progress {
public:
    explicit Progress(int runs) : m_runs(runs), m_start(Clock::now()), m_terminal(isatty(STDERR_FILENO) == 1) {}

    void done(int run) {
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

}  // namespace

CLI::App* setup_bench(CLI::App& app, BenchOptions& options) {
    CLI::App* command = app.add_subcommand("bench", "Time every step on random data of a given size");
    command->add_option("--tokens", options.tokens, "Tokens n (default 512)")->check(whole_number(1, 65536))->type_name("N");
    command->add_option("--d-model", options.d_model, "Width d_model (default 768)")
        ->check(whole_number(1, 65536))
        ->type_name("D");
    command->add_option("--heads", options.heads, "Heads H, dividing d_model (default 12)")
        ->check(whole_number(1, 65536))
        ->type_name("H");
    command->add_option("--repeat", options.repeat, "Timed runs, after one warm-up (default 10)")
        ->check(whole_number(1, 100000))
        ->type_name("R");
    command->add_option("--threads", options.threads, "Threads sharing every step (default: as many as BLAS uses)")
        ->check(whole_number(1, 256))
        ->type_name("T");
    command
        ->add_option("-f,--format", options.format,
                     "Output format: " + join_list(format_names(k_bench_formats), " or "))
        ->check(CLI::IsMember(format_names(k_bench_formats)))
        ->type_name("FORMAT");
    return command;
}

int run_bench(const BenchOptions& options) {
    const arma::uword n = static_cast<arma::uword>(options.tokens);
    const arma::uword d_model = static_cast<arma::uword>(options.d_model);
    const arma::uword heads = static_cast<arma::uword>(options.heads);
    if (d_model % heads != 0) {
        throw InputError(usage_error("--d-model " + std::to_string(d_model) + " is not divisible by --heads " +
                                         std::to_string(heads),
                                     "each head gets d_model / heads columns; e.g. --d-model 768 --heads 12"));
    }
    // X, the weights, Q, K, V, the concatenation and the output, in doubles
    const double bytes = 8.0 * (6.0 * static_cast<double>(n) * static_cast<double>(d_model) +
                                4.0 * static_cast<double>(d_model) * static_cast<double>(d_model));
    if (bytes > 4.0 * (1ULL << 30)) {
        throw InputError(usage_error("this size needs about " + fixed(bytes / (1ULL << 30), 1) +
                                         " GiB; the limit is 4 GiB",
                                     "use fewer tokens or a smaller --d-model"));
    }
    const int threads = options.threads > 0 ? options.threads : default_threads();
    const arma::uword d_k = d_model / heads;

    // random data: inputs in [−1, 1), weights in ±1/√d_model (as nn.Linear starts)
    arma::arma_rng::set_seed(1);
    const arma::mat X = uniform(n, d_model, -1.0, 1.0);
    const double bound = 1.0 / std::sqrt(static_cast<double>(d_model));
    PackedWeights weights;
    weights.heads = heads;
    weights.d_k = d_k;
    weights.d_v = d_k;
    weights.set_projections(uniform(d_model, d_model, -bound, bound), uniform(d_model, d_model, -bound, bound),
                            uniform(d_model, d_model, -bound, bound));
    weights.W_O = uniform(d_model, d_model, -bound, bound);

    EngineRequest request;
    request.X = &X;
    request.C = &X;
    request.weights = &weights;
    request.scale = std::sqrt(static_cast<double>(d_k));
    request.threads = threads;  // nothing kept: only the output, as `qkv run --steps output`

    // one warm-up run (first touches of memory), then the timed runs; the
    // workspace keeps the large matrices' memory from run to run
    StepTimes times;
    request.times = &times;
    EngineWorkspace workspace;
    request.workspace = &workspace;
    workspace.output = run_engine(request).output;
    std::vector<double> totals;
    std::vector<StepId> order;
    std::map<StepId, std::vector<double>> per_step;
    Progress progress(options.repeat);
    for (int run = 1; run <= options.repeat; ++run) {
        const auto start = Clock::now();
        EngineResult result = run_engine(request);
        totals.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        workspace.output = std::move(result.output);
        for (const auto& [id, ms] : times) {
            if (per_step.find(id) == per_step.end()) {
                order.push_back(id);
            }
            per_step[id].push_back(ms);
        }
        progress.done(run);
    }

    const double total_ms = median(totals);
    const double gflops = flops(static_cast<double>(n), static_cast<double>(d_model), static_cast<double>(heads)) /
                          (total_ms * 1e-3) / 1e9;
    const double rss = peak_rss_mb();
    const std::string blas = blas_name();

    std::string out;
    if (parse_format(options.format) == Format::json) {
        nlohmann::ordered_json json;
        json["schema_version"] = 1;
        json["tokens"] = n;
        json["d_model"] = d_model;
        json["heads"] = heads;
        json["threads"] = threads;
        json["blas"] = blas;
        json["repeat"] = options.repeat;
        json["total_ms"] = rounded(total_ms, 6);
        json["gflops"] = rounded(gflops, 3);
        json["peak_rss_mb"] = rounded(rss, 1);
        json["steps"] = nlohmann::ordered_json::array();
        for (const auto& id : order) {
            json["steps"].push_back({{"id", step_text(id)}, {"median_ms", rounded(median(per_step[id]), 6)}});
        }
        out = json.dump() + "\n";
    } else {
        out += "qkv bench: " + std::to_string(n) + " tokens, d_model " + std::to_string(d_model) + ", " +
               std::to_string(heads) + (heads == 1 ? " head" : " heads") + " (d_k " + std::to_string(d_k) +
               "), float64, random data\n";
        out += "BLAS: " + blas + "\n";
        out += "per-head products: " +
               std::string(kernels::products_supported() ? "qkv's own (AVX-512)" : "BLAS") + "; softmax exp: " +
               std::string(kernels::isa_name(kernels::best_isa())) + "\n";
        out += "threads: " + std::to_string(threads) + "; median of " + std::to_string(options.repeat) +
               (options.repeat == 1 ? " run" : " runs") + " after a warm-up\n\n";
        out += "  step          median ms   share\n";
        for (const auto& id : order) {
            const double ms = median(per_step[id]);
            char line[128];
            std::snprintf(line, sizeof line, "  %-13s %9.3f  %5.1f %%\n", step_text(id).c_str(), ms, 100.0 * ms / total_ms);
            out += line;
        }
        char line[160];
        std::snprintf(line, sizeof line, "  %-13s %9.3f\n\n", "total", total_ms);
        out += line;
        out += "  " + fixed(gflops, 1) + " GFLOP/s (matrix products, 2 per multiply-add)\n";
        out += "  peak memory " + fixed(rss, 1) + " MB\n";
        out += "  the scaling is part of scores; the heads write their columns of concat in place\n";
    }
    write_stdout(out);
    return 0;
}

}  // namespace qkv::cli
