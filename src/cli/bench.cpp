// qkv bench: times each step of an example's attention on the path `qkv run`
// takes for large inputs (attention/bench.hpp): an example file as it is, or
// one of random float64 data that the command writes from its flags, as a
// user would, and loads through the same loader; --set KEY=VALUE sets any key.
#include "attention/attention.hpp"
#include "attention/bench.hpp"
#include "base/numbers.hpp"
#include "attention/engine.hpp"
#include "io/loader.hpp"
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

// What the report says of an example's RoPE: its rotated width when only part of a head turns, and its scaling.
std::optional<arma::uword> rotated_width(const Model& model) {
    if (!model.rope || model.mla || model.rope->partial_rotary_factor == 1.0) {
        return std::nullopt;
    }
    return model.rope->rotated(model.d_k());
}

std::optional<std::string> scaling_name(const Model& model) {
    if (!model.rope || !model.rope->scaling) {
        return std::nullopt;
    }
    const char* const types[] = {"linear", "dynamic", "yarn", "llama3"};
    return types[static_cast<int>(model.rope->scaling->type)];
}

// The report as JSON, in the keys and order of BENCHMARK in man/qkv.1.
std::string json_report(const Model& model, const BenchResult& result, int repeat) {
    const auto or_null = [](const auto& value) {
        return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
    };
    nlohmann::ordered_json json;
    json["schema_version"] = 1;
    json["tokens"] = model.n();
    json["d_model"] = model.d_model();
    json["heads"] = model.n_heads();
    json["kv_heads"] = model.n_kv_heads();
    json["window"] = or_null(model.mask_kind == MaskKind::window ? std::optional(model.window) : std::nullopt);
    json["rope"] = model.rope && !model.mla;  // with mla, RoPE on the rope parts is part of it
    json["rope_dim"] = or_null(rotated_width(model));
    json["rope_scaling"] = or_null(scaling_name(model));
    json["qk_norm"] = model.qk_norm.has_value();
    json["mla"] = model.mla.has_value();
    for (const KeyRow* row : number_key_rows()) {
        json[std::string(row->name)] = or_null(model.*row->number->member);
    }
    json["backward"] = model.backward();
    json["threads"] = result.threads;
    json["blas"] = result.blas;
    json["repeat"] = repeat;
    json["total_ms"] = rounded(result.total_ms, 6);
    json["gflops"] = rounded(result.gflops, 3);
    json["peak_rss_mb"] = rounded(result.peak_rss_mb, 1);
    json["steps"] = nlohmann::ordered_json::array();
    for (const auto& [id, ms] : result.steps) {
        json["steps"].push_back({{"id", step_text(id)}, {"median_ms", rounded(ms, 6)}});
    }
    return json.dump() + "\n";
}

// What was measured, in words: "512 tokens, d_model 768, 12 heads (d_k 64), RoPE".
std::string measured(const Model& model) {
    std::string out = std::to_string(model.n()) + " tokens, d_model " + std::to_string(model.d_model()) + ", " +
                      std::to_string(model.n_heads()) + (model.n_heads() == 1 ? " head" : " heads") + " (d_k " +
                      std::to_string(model.d_k()) + ")";
    if (model.cross()) {
        out += ", " + std::to_string(model.m()) + " context rows";
    }
    if (model.n_kv_heads() != model.n_heads()) {
        out += ", " + std::to_string(model.n_kv_heads()) + " key/value " + (model.n_kv_heads() == 1 ? "head" : "heads");
    }
    if (model.mask_kind == MaskKind::window) {
        out += ", window " + std::to_string(model.window);
    } else if (model.mask_kind == MaskKind::causal) {
        out += ", causal";
    } else if (model.masked()) {
        out += ", masked";
    }
    if (model.rope && !model.mla) {
        const auto width = rotated_width(model);
        out += width ? ", RoPE on " + std::to_string(*width) + " of d_k" : std::string(", RoPE");
    }
    const auto scaling = scaling_name(model);
    if (model.rope && !model.mla && scaling) {
        out += " (" + *scaling + " scaling)";
    }
    if (model.qk_norm) {
        out += ", QK-norm";
    }
    if (model.mla) {
        const Mla& mla = *model.mla;
        out += ", latent attention (d_n " + std::to_string(mla.nope_dim) + ", d_r " + std::to_string(mla.rope_dim) +
               ", d_v " + std::to_string(mla.v_dim) + ", r " + std::to_string(mla.kv_rank) +
               (mla.q_rank ? ", r_q " + std::to_string(*mla.q_rank) : std::string()) + ")";
        out += scaling ? " (" + *scaling + " scaling)" : std::string();
    }
    if (model.alibi) {
        out += ", ALiBi";
    }
    if (model.sinks) {
        out += ", sinks";
    }
    for (const KeyRow* row : number_key_rows()) {
        if (const std::optional<double>& value = model.*row->number->member) {
            out += ", " + std::string(row->name) + " " + readable(*value);
        }
    }
    if (model.backward()) {
        out += ", forward and backward";
    }
    return out;
}

// The report as a table of the steps, with what the numbers were measured on.
std::string text_report(const Model& model, const BenchResult& result, int repeat, const std::string& data) {
    std::string out = "qkv bench: " + measured(model) + ", float64, " + data + "\n";
    out += "BLAS: " + result.blas + "\n";
    out += "per-head products: " + std::string(result.own_products ? "qkv's own" : "BLAS") +
           "; qkv's loops: " + result.kernels_target + "\n";
    out += "threads: " + std::to_string(result.threads) + "; median of " + std::to_string(repeat) +
           (repeat == 1 ? " run" : " runs") + " after a warm-up\n\n";
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

// The flags that size and shape bench's own example, which an example file sets itself.
constexpr const char* k_shape_flags[] = {"--tokens", "--d-model", "--heads", "--kv-heads", "--window", "--rope",
                                        "--rope-dim", "--rope-scaling", "--qk-norm", "--mla"};

// The sizes bench's example has, from its flags.
struct Sizes {
    arma::uword n, d_model, heads, kv_heads, d_k;
    // --mla: DeepSeek-V3's proportions per head (d_n = d_v = 128, d_r = 64, r = 512,
    // r_q = 1536) scaled to d_n = d_model / heads
    arma::uword d_n, d_r, r, r_q;
};

Sizes sizes_of(const BenchOptions& options) {
    Sizes sizes{};
    sizes.n = static_cast<arma::uword>(options.tokens);
    sizes.d_model = static_cast<arma::uword>(options.d_model);
    sizes.heads = static_cast<arma::uword>(options.heads);
    sizes.kv_heads = options.kv_heads > 0 ? static_cast<arma::uword>(options.kv_heads) : sizes.heads;
    sizes.d_k = sizes.d_model / sizes.heads;
    sizes.d_n = sizes.d_k;
    sizes.d_r = sizes.d_n / 2;
    sizes.r = 4 * sizes.d_n;
    sizes.r_q = 12 * sizes.d_n;
    return sizes;
}

// {random: ...} of rows × cols in ±bound (every weight ±1/√(its inputs), as nn.Linear starts)
std::string random_matrix(arma::uword rows, arma::uword cols, int seed, bool weight = true) {
    const std::string bound = shortest(1.0 / std::sqrt(static_cast<double>(rows)));
    return "{random: {rows: " + std::to_string(rows) + ", cols: " + std::to_string(cols) +
           (weight ? ", low: -" + bound + ", high: " + bound : std::string()) + ", seed: " + std::to_string(seed) +
           "}}";
}

// The example bench times without a file, as a user would write it: random
// data of the size its flags give, and each variant's key (its origin, the flag).
std::vector<KeySetting> bench_example(const BenchOptions& options) {
    const Sizes s = sizes_of(options);
    const std::string size_flags = "--tokens " + std::to_string(s.n) + " --d-model " + std::to_string(s.d_model);
    const std::string head_flags = "--d-model " + std::to_string(s.d_model) + " --heads " + std::to_string(s.heads);
    std::vector<KeySetting> example;
    example.push_back({"inputs", random_matrix(s.n, s.d_model, 1, false), size_flags});
    example.push_back({"heads", std::to_string(s.heads), "--heads " + std::to_string(s.heads)});
    if (options.mla) {
        const arma::uword H = s.heads;
        example.push_back({"mla",
                           "{kv_rank: " + std::to_string(s.r) + ", rope_dim: " + std::to_string(s.d_r) +
                               ", nope_dim: " + std::to_string(s.d_n) + ", v_dim: " + std::to_string(s.d_n) +
                               ", q_rank: " + std::to_string(s.r_q) + "}",
                           "--mla"});
        example.push_back({"weights",
                           "{q_a_proj: " + random_matrix(s.d_model, s.r_q, 2) +
                               ", q_b_proj: " + random_matrix(s.r_q, H * (s.d_n + s.d_r), 3) +
                               ", kv_a_proj_with_mqa: " + random_matrix(s.d_model, s.r + s.d_r, 4) +
                               ", kv_b_proj: " + random_matrix(s.r, H * 2 * s.d_n, 5) +
                               ", o_proj: " + random_matrix(H * s.d_n, s.d_model, 6) + "}",
                           "--mla " + head_flags});
    } else {
        if (options.kv_heads > 0) {
            example.push_back({"kv_heads", std::to_string(s.kv_heads), "--kv-heads " + std::to_string(s.kv_heads)});
        }
        example.push_back({"weights",
                           "{query: " + random_matrix(s.d_model, s.heads * s.d_k, 2) +
                               ", key: " + random_matrix(s.d_model, s.kv_heads * s.d_k, 3) +
                               ", value: " + random_matrix(s.d_model, s.kv_heads * s.d_k, 4) +
                               ", output: " + random_matrix(s.heads * s.d_k, s.d_model, 5) + "}",
                           head_flags});
    }
    if (options.window > 0) {
        example.push_back({"mask", "{window: " + std::to_string(options.window) + "}",
                           "--window " + std::to_string(options.window)});
    }
    // RoPE: base 10000, style half; each scaling with the settings of a checkpoint that uses it
    std::string rope;
    std::string rope_flags;
    if (options.rope_dim > 0) {
        rope += "partial_rotary_factor: " + shortest(static_cast<double>(options.rope_dim) / static_cast<double>(s.d_k));
        rope_flags += " --rope-dim " + std::to_string(options.rope_dim);
    }
    if (!options.rope_scaling.empty()) {
        const std::string& type = options.rope_scaling;
        const std::string original = type == "yarn"     ? "4096"  // DeepSeek-V3's, without its mscale
                                     : type == "llama3" ? "8192"  // Llama 3.1's
                                                        : std::to_string(std::max<arma::uword>(s.n / 2, 1));
        rope += std::string(rope.empty() ? "" : ", ") + "scaling: {rope_type: " + type +
                ", factor: " + (type == "yarn" ? "40" : "8") +
                (type == "linear" ? std::string() : ", original_max_position_embeddings: " + original) +
                (type == "llama3" ? ", low_freq_factor: 1, high_freq_factor: 4" : "") + "}";
        rope_flags += " --rope-scaling " + type;
    }
    if (options.rope || options.mla || !rope.empty()) {
        example.push_back({"rope", rope.empty() ? std::string("true") : "{" + rope + "}",
                           rope_flags.empty() ? (options.mla ? "--mla" : "--rope") : rope_flags.substr(1)});
    }
    if (options.qk_norm) {
        example.push_back({"qk_norm", "true", "--qk-norm"});
    }
    for (const KeyRow* row : number_key_rows()) {
        const std::string name(row->name);
        if (options.numbers_given.at(name)) {
            const std::string value = shortest(options.numbers.at(name));
            example.push_back({name, value, std::string(row->number->flag) + " " + value});
        }
    }
    return example;
}

// Bytes bench's example is estimated to need (estimate_memory), held against
// --max-memory before any of it is made.
std::uint64_t example_bytes(const BenchOptions& options, int threads) {
    const Sizes s = sizes_of(options);
    MemoryShape shape;
    shape.n = s.n;
    shape.m = s.n;
    shape.d_model = s.d_model;
    shape.heads = s.heads;
    shape.kv_heads = options.mla ? s.heads : s.kv_heads;
    shape.d_k = options.mla ? s.d_n + s.d_r : s.d_k;
    shape.d_v = s.d_k;
    shape.d_out = s.d_model;
    shape.rope = options.rope || options.rope_dim > 0 || !options.rope_scaling.empty() || options.mla;
    shape.window = static_cast<arma::uword>(options.window);
    shape.backward = options.backward;
    shape.threads = threads;
    // nothing kept but the output; the backward's dO besides
    return estimate_memory(shape, 0, 0) + (options.backward ? 8 * s.n * s.d_model : 0);
}

// --mla: its own sizes, RoPE on its rope parts, and the forward pass alone
void check_latent_flags(const BenchOptions& options) {
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
    if ((options.d_model / options.heads) % 4 != 0) {
        throw InputError(usage_error("--mla needs d_model / heads divisible by 4; d_model " +
                                         std::to_string(options.d_model) + " / " + std::to_string(options.heads) +
                                         " heads is " + std::to_string(options.d_model / options.heads),
                                     "d_n = d_model / heads and d_r = d_n / 2, which RoPE turns in pairs; e.g. "
                                     "--d-model 768 --heads 12"));
    }
}

// The flags that make bench's example, checked together before it is written.
void check_flags(const BenchOptions& options) {
    for (const KeyRow* row : number_key_rows()) {
        const std::string name(row->name);
        const double value = options.numbers.at(name);
        if (options.numbers_given.at(name)) {
            if (const std::optional<std::string> problem = number_key_problem(value)) {
                throw InputError(usage_error(std::string(row->number->flag) + " " + shortest(value) + ": " + *problem,
                                             std::string(row->number->help)));
            }
        }
    }
    const int d_k = options.d_model / options.heads;
    const int kv_heads = options.kv_heads > 0 ? options.kv_heads : options.heads;
    if (options.d_model % options.heads != 0) {
        throw InputError(usage_error("--d-model " + std::to_string(options.d_model) + " is not divisible by --heads " +
                                         std::to_string(options.heads),
                                     "each head gets d_model / heads columns; e.g. --d-model 768 --heads 12"));
    }
    if (options.heads % kv_heads != 0) {
        throw InputError(usage_error("--heads " + std::to_string(options.heads) + " is not divisible by --kv-heads " +
                                         std::to_string(kv_heads),
                                     "each key/value head serves heads / kv-heads query heads; e.g. --heads 12 "
                                     "--kv-heads 4"));
    }
    if (options.mla) {
        check_latent_flags(options);
    }
    if (options.rope_dim > 0 && (options.rope_dim % 2 != 0 || options.rope_dim > d_k)) {
        throw InputError(usage_error("--rope-dim " + std::to_string(options.rope_dim) +
                                         " is not an even number of at most d_k = " + std::to_string(d_k),
                                     "the rotated width is taken in pairs within a head; e.g. --rope-dim 16 of d_k 64"));
    }
    if (options.rope_scaling == "dynamic" && (options.rope_dim > 0 ? options.rope_dim : d_k) <= 2) {
        throw InputError(usage_error("--rope-scaling dynamic turns a width of 2; expected 4 or more",
                                     "dynamic scaling raises the base to the power d_rot/(d_rot − 2)"));
    }
    const bool rope = options.rope || options.rope_dim > 0 || !options.rope_scaling.empty();
    if (rope && options.rope_dim == 0 && d_k % 2 != 0) {
        throw InputError(usage_error("--rope needs an even d_k; d_model " + std::to_string(options.d_model) + " / " +
                                         std::to_string(options.heads) + " heads is " + std::to_string(d_k),
                                     "RoPE turns the elements of each query and key in pairs"));
    }
}

// --set KEY=VALUE, each a key of the example
std::vector<KeySetting> settings_of(const BenchOptions& options) {
    std::vector<KeySetting> settings;
    for (const std::string& setting : options.set) {
        const std::size_t equals = setting.find('=');
        if (equals == std::string::npos || equals == 0) {
            throw InputError(usage_error("--set is \"" + setting + "\"; expected KEY=VALUE",
                                         "write a key of an example file and its value as the file would: "
                                         "--set mask=causal, or --set 'rope={base: 500000}'"));
        }
        settings.push_back({setting.substr(0, equals), setting.substr(equals + 1), "--set " + setting});
    }
    return settings;
}

}  // namespace

CLI::App* setup_bench(CLI::App& app, BenchOptions& options) {
    Bindings bindings;
    bindings.bind("file", &options.file)
        .bind("--tokens", &options.tokens, &options.given["--tokens"])
        .bind("--d-model", &options.d_model, &options.given["--d-model"])
        .bind("--heads", &options.heads, &options.given["--heads"])
        .bind("--kv-heads", &options.kv_heads, &options.given["--kv-heads"])
        .bind("--window", &options.window, &options.given["--window"])
        .bind("--rope", &options.rope, &options.given["--rope"])
        .bind("--rope-dim", &options.rope_dim, &options.given["--rope-dim"])
        .bind("--rope-scaling", &options.rope_scaling, &options.given["--rope-scaling"])
        .bind("--qk-norm", &options.qk_norm, &options.given["--qk-norm"])
        .bind("--mla", &options.mla, &options.given["--mla"])
        .bind("--set", &options.set)
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
    LoadOptions loading;
    loading.max_memory = memory_limit(options.max_memory);
    loading.backward = options.backward;
    loading.kept_steps = {StepId::output};
    Source source;
    std::vector<KeySetting> example;
    if (options.file) {
        // the example as its file has it: its size and variants are its own
        for (const char* flag : k_shape_flags) {
            if (options.given.at(flag)) {
                throw InputError(usage_error(std::string(flag) + " is given with an example; expected one or the other",
                                             "the example's keys set its size and variants; change one with "
                                             "--set KEY=VALUE"));
            }
        }
        for (const KeyRow* row : number_key_rows()) {
            if (options.numbers_given.at(std::string(row->name))) {
                throw InputError(usage_error(std::string(row->number->flag) +
                                                 " is given with an example; expected one or the other",
                                             "write --set " + std::string(row->name) + "=VALUE"));
            }
        }
        source = read_source(*options.file);
    } else {
        check_flags(options);
        source.name = "qkv bench";
        example = bench_example(options);
        const int threads = options.threads > 0 ? options.threads : default_threads();
        const std::uint64_t bytes = example_bytes(options, threads);
        if (bytes > loading.max_memory) {
            throw InputError(usage_error("this size needs about " + size_text(bytes) + "; the limit is " +
                                             size_text(loading.max_memory),
                                         "use fewer tokens or a smaller --d-model, or raise the limit with "
                                         "--max-memory"));
        }
        if (const std::uint64_t room = memory_room(); bytes > room) {
            throw InputError(usage_error("this size needs about " + size_text(bytes) +
                                             "; the memory limit of this process leaves " + size_text(room),
                                         "use fewer tokens or a smaller --d-model, or raise the limit (ulimit -v)"));
        }
    }
    const std::vector<KeySetting> set = settings_of(options);
    example.insert(example.end(), set.begin(), set.end());
    const Model model = load_model(source, example, loading);
    ComputeOptions fast;
    fast.kernels = Kernels::fast;
    if (!use_fast_path(model, fast)) {
        throw InputError(usage_error(source.name + ": the large-input path does not compute every step of this example",
                                     "qkv bench times the path qkv run takes for large inputs, which does not "
                                     "compute hand rounding (round:) or the backward pass of mla"));
    }
    BenchRuns runs;
    runs.repeat = options.repeat;
    runs.threads = options.threads;
    Progress progress(options.repeat);
    const BenchResult result = run_benchmark(model, runs, [&progress](int done) { progress.done(done); });
    write_stdout(parse_format(options.format) == Format::json
                     ? json_report(model, result, options.repeat)
                     : text_report(model, result, options.repeat, options.file ? "the example's data" : "random data"));
    return 0;
}

}  // namespace qkv::cli
