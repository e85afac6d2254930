// The BLAS qkv is linked with: its name for `qkv --version` and `qkv bench`,
// the threads it uses (declared in engine.hpp, which sets them around its own
// threads), and the room its work buffers need under a memory limit.
#include "attention/engine.hpp"
#include "attention/engine_parts.hpp"

#include "base/diagnostics.hpp"

#include <armadillo>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#ifdef QKV_BLAS_OPENBLAS
extern "C" {
char* openblas_get_config();
char* openblas_get_corename();
void openblas_set_num_threads(int threads);
int openblas_get_parallel();
// OpenBLAS built for several CPUs (DYNAMIC_ARCH): forget the chosen kernels,
// and choose again (OPENBLAS_CORETYPE first, else the table of CPU models).
// Weak: an OpenBLAS built for one CPU has neither.
__attribute__((weak)) void gotoblas_dynamic_quit();
__attribute__((weak)) void gotoblas_dynamic_init();
}
#endif

namespace qkv {

namespace {

// OpenBLAS's x86-64 cores (the names of its driver/others/dynamic.c) and the
// widest vector instructions of their double-precision kernels.
struct CoreRow {
    std::string_view name;
    VectorLevel level;
};
constexpr CoreRow k_cores[] = {
    {"Katmai", VectorLevel::sse},          {"Coppermine", VectorLevel::sse},  {"Northwood", VectorLevel::sse},
    {"Prescott", VectorLevel::sse},        {"Banias", VectorLevel::sse},      {"Atom", VectorLevel::sse},
    {"Core2", VectorLevel::sse},           {"Penryn", VectorLevel::sse},      {"Dunnington", VectorLevel::sse},
    {"Nehalem", VectorLevel::sse},         {"Athlon", VectorLevel::sse},      {"Opteron", VectorLevel::sse},
    {"Opteron_SSE3", VectorLevel::sse},    {"Barcelona", VectorLevel::sse},   {"Nano", VectorLevel::sse},
    {"Bobcat", VectorLevel::sse},          {"Sandybridge", VectorLevel::avx}, {"Bulldozer", VectorLevel::avx},
    {"Piledriver", VectorLevel::avx},      {"Steamroller", VectorLevel::avx}, {"Excavator", VectorLevel::avx2},
    {"Haswell", VectorLevel::avx2},        {"Zen", VectorLevel::avx2},        {"SkylakeX", VectorLevel::avx512},
    {"Cooperlake", VectorLevel::avx512},   {"SapphireRapids", VectorLevel::avx512},
};

constexpr std::string_view k_level_names[] = {"SSE", "AVX", "AVX2", "AVX-512"};

// The core to ask for on a CPU of each level.
constexpr std::string_view k_core_for_level[] = {"", "Sandybridge", "Haswell", "SkylakeX"};

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

const CoreRow* core_row(std::string_view name) {
    for (const CoreRow& row : k_cores) {
        if (same_name(row.name, name)) {
            return &row;
        }
    }
    return nullptr;
}

// the core OpenBLAS's table chose, when choose_blas_kernels() replaced it
std::string g_table_core;  // NOLINT: set once by main() before any thread

}  // namespace

VectorLevel cpu_vector_level() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    // the compiler's CPU model also checks that the system saves the registers
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd")) {
        return VectorLevel::avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        return VectorLevel::avx2;
    }
    if (__builtin_cpu_supports("avx")) {
        return VectorLevel::avx;
    }
#endif
    return VectorLevel::sse;
}

std::string better_blas_core(std::string_view core, VectorLevel level) {
    const CoreRow* row = core_row(core);
    if (row == nullptr || row->level >= level) {
        return "";
    }
    return std::string(k_core_for_level[static_cast<int>(level)]);
}

std::string blas_core() {
#ifdef QKV_BLAS_OPENBLAS
    return openblas_get_corename();
#else
    return "";
#endif
}

std::string blas_table_core() { return g_table_core; }

bool use_blas_core(const std::string& core) {
#if defined(QKV_BLAS_OPENBLAS) && defined(__x86_64__)
    // only names OpenBLAS knows: with another, OpenBLAS 0.3.21 stops the process
    if (core_row(core) == nullptr || std::strstr(openblas_get_config(), "DYNAMIC_ARCH") == nullptr ||
        gotoblas_dynamic_quit == nullptr || gotoblas_dynamic_init == nullptr) {
        return false;
    }
    g_table_core.clear();
    const char* before = std::getenv("OPENBLAS_CORETYPE");
    const std::string saved = before != nullptr ? before : "";
    setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    if (before != nullptr) {
        setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
    } else {
        unsetenv("OPENBLAS_CORETYPE");
    }
    return same_name(blas_core(), core);
#else
    (void)core;
    return false;
#endif
}

void choose_blas_kernels() {
#ifdef QKV_BLAS_OPENBLAS
    if (const char* named = std::getenv("OPENBLAS_CORETYPE"); named != nullptr && named[0] != '\0') {
        return;  // the user's choice
    }
    const std::string table = blas_core();
    const std::string better = better_blas_core(table, cpu_vector_level());
    if (!better.empty() && use_blas_core(better)) {
        g_table_core = table;
    }
#endif
}

std::string blas_name() {
    std::string name = "none";
#ifdef QKV_BLAS_OPENBLAS
    name = openblas_get_config();
    switch (openblas_get_parallel()) {
        case 0:
            name += " (sequential)";
            break;
        case 1:
            name += " (pthreads)";
            break;
        case 2:
            name += " (OpenMP)";
            break;
        default:
            break;
    }
    if (const char* core = std::getenv("OPENBLAS_CORETYPE"); core != nullptr && core[0] != '\0') {
        name += " OPENBLAS_CORETYPE=" + std::string(core);
    }
    if (!g_table_core.empty()) {
        name += ", kernels " + blas_core() + " chosen by qkv for the CPU's " +
                std::string(k_level_names[static_cast<int>(cpu_vector_level())]) + " (OpenBLAS's table gave " +
                g_table_core + ")";
    }
#endif
    return name;
}

void single_threaded_blas_calls() {
#ifdef QKV_BLAS_OPENBLAS
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

namespace {

constexpr std::uint64_t k_mib = std::uint64_t{1} << 20;
constexpr std::uint64_t k_unlimited = std::numeric_limits<std::uint64_t>::max();

#ifdef ARMA_USE_BLAS
// OpenBLAS maps a work buffer of BUFFER_SIZE and a page for each thread that
// calls it at the same time, the first time it needs one, and keeps it; when
// it cannot map one it tries again, forever. Debian's OpenBLAS 0.3.21 maps
// 128 MiB and a page on x86-64 and 32 MiB on arm64; the larger is assumed
// everywhere.
constexpr std::uint64_t k_blas_buffer = 128 * k_mib + 4096;
#else
constexpr std::uint64_t k_blas_buffer = 0;
#endif

// Memory besides the BLAS buffers that has to stay free for qkv to get as far
// as its own checks: the loader's matrices and the C++ library's small needs.
constexpr std::uint64_t k_spare = 16 * k_mib;

// A positive whole number of threads, or 0 when `text` is not one.
int thread_count(const char* text) {
    if (text == nullptr) {
        return 0;
    }
    int value = 0;
    const char* end = text + std::strlen(text);
    const auto [last, error] = std::from_chars(text, end, value);
    return error == std::errc() && last == end && value > 0 ? std::min(value, 256) : 0;
}

// The value of `field` ("VmSize:", "VmData:") in /proc/self/status, in
// bytes; 0 where there is no such file.
std::uint64_t status_bytes(const std::string& field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0) {
            return std::strtoull(line.c_str() + field.size(), nullptr, 10) * 1024;
        }
    }
    return 0;
}

// The soft limit of `resource` in bytes, or k_unlimited.
std::uint64_t soft_limit(int resource) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
        return k_unlimited;
    }
    return limit.rlim_cur;
}

// The address space a thread's stack takes: glibc gives each new thread the
// stack limit (ulimit -s), or 8 MiB when there is none.
std::uint64_t thread_stack_bytes() {
    const std::uint64_t stack = soft_limit(RLIMIT_STACK);
    return stack == k_unlimited ? 8 * k_mib : std::max(stack, 64 * std::uint64_t{1024});
}

std::string mib_text(std::uint64_t bytes) { return std::to_string(bytes / k_mib) + " MiB"; }

}  // namespace

void use_single_threaded_blas(char** argv) {
    const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
    if (std::getenv("QKV_THREADS") == nullptr) {
        // the user's OPENBLAS_NUM_THREADS is the number of qkv's threads; ""
        // when there is none (and marks the environment as already seen)
        setenv("QKV_THREADS", blas != nullptr ? blas : "", 1);
    }
#if defined(QKV_BLAS_OPENBLAS) && defined(__linux__)
    if (openblas_get_parallel() != 1 || (blas != nullptr && std::strcmp(blas, "1") == 0)) {
        return;  // no threads of its own, or one already
    }
    if (memory_room() == k_unlimited) {
        return;  // its threads wait for work that never comes, and cost nothing
    }
    const std::string before = blas != nullptr ? blas : "";
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
    // no /proc: carry on with OpenBLAS's threads, in the environment as it was
    if (before.empty()) {
        unsetenv("OPENBLAS_NUM_THREADS");
    } else {
        setenv("OPENBLAS_NUM_THREADS", before.c_str(), 1);
    }
#else
    (void)argv;
#endif
}

int engine_parts::usable_cpus() {
#ifdef __linux__
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
        return std::clamp(CPU_COUNT(&cpus), 1, 256);
    }
#endif
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, 256U));
}

int default_threads() {
    if (const int threads = thread_count(std::getenv("QKV_THREADS")); threads > 0) {
        return threads;
    }
    return engine_parts::usable_cpus();
}

std::uint64_t memory_room() {
    std::uint64_t room = k_unlimited;
    for (const auto& [resource, field] : {std::pair{RLIMIT_AS, "VmSize:"}, std::pair{RLIMIT_DATA, "VmData:"}}) {
        const std::uint64_t limit = soft_limit(resource);
        if (limit != k_unlimited) {
            const std::uint64_t used = status_bytes(field);
            room = std::min(room, limit > used ? limit - used : 0);
        }
    }
    return room;
}

void reserve_blas_buffer() {
    const std::uint64_t room = memory_room();
    if (room == k_unlimited || k_blas_buffer == 0) {
        return;
    }
    if (room < k_blas_buffer + k_spare) {
        throw InputError(Diagnostic{"", 0, 0,
                                    "out of memory: BLAS needs " + mib_text(k_blas_buffer) +
                                        " of address space for its work buffer, and the memory limit leaves " +
                                        mib_text(room),
                                    "raise the limit (ulimit -v, ulimit -d) by at least " +
                                        mib_text(k_blas_buffer + k_spare - room + k_mib - 1)});
    }
    // One product too large for OpenBLAS's small-matrix kernels (which need
    // no buffer) makes it map the buffer now; it keeps it for every later
    // product of one thread at a time.
    const arma::mat a(128, 128, arma::fill::ones);
    const arma::mat product = a * a;
    (void)product;
}

int threads_within_limit(int threads, std::uint64_t per_thread) {
    const std::uint64_t room = memory_room();
    if (threads <= 1 || room == k_unlimited) {
        return std::max(threads, 1);
    }
    // the first thread uses the buffer reserve_blas_buffer() mapped; each
    // other one maps its own, and its stack
    const std::uint64_t each = k_blas_buffer + thread_stack_bytes() + per_thread;
    const std::uint64_t usable = room > k_spare ? room - k_spare : 0;
    return static_cast<int>(std::min<std::uint64_t>(1 + usable / each, static_cast<std::uint64_t>(threads)));
}

}  // namespace qkv
