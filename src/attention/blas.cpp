// The BLAS qkv is linked with: its name for `qkv --version` and `qkv bench`,
// the threads it uses (declared in engine.hpp, which sets them around its own
// threads), and the room its work buffers need under a memory limit.
#include "attention/engine.hpp"

#include "base/diagnostics.hpp"

#include <armadillo>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#ifdef QKV_BLAS_OPENBLAS
extern "C" {
char* openblas_get_config();
void openblas_set_num_threads(int threads);
int openblas_get_parallel();
}
#endif

namespace qkv {

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

int default_threads() {
    if (const int threads = thread_count(std::getenv("QKV_THREADS")); threads > 0) {
        return threads;
    }
#ifdef __linux__
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
        return std::clamp(CPU_COUNT(&cpus), 1, 256);
    }
#endif
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, 256U));
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
