// The BLAS qkv is linked with: its name for `qkv --version` and `qkv bench`,
// and the threads it uses (declared in engine.hpp, which sets them around
// its own threads).
#include "attention/engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#ifdef QKV_BLAS_OPENBLAS
extern "C" {
char* openblas_get_config();
int openblas_get_num_threads();
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

int blas_threads() {
#ifdef QKV_BLAS_OPENBLAS
    return openblas_get_num_threads();
#else
    return 1;
#endif
}

void set_blas_threads(int threads) {
#ifdef QKV_BLAS_OPENBLAS
    openblas_set_num_threads(std::max(threads, 1));
#else
    (void)threads;
#endif
}

int default_threads() {
#ifdef QKV_BLAS_OPENBLAS
    return std::max(openblas_get_num_threads(), 1);
#else
    return static_cast<int>(std::max(std::thread::hardware_concurrency(), 1U));
#endif
}

}  // namespace qkv
