// The BLAS kernels qkv runs on: OpenBLAS's choice replaced when its table of
// CPU models gives a core short of the CPU's vector instructions.
#include "support.hpp"

#include "attention/engine.hpp"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace qkv;

TEST_CASE("a core short of the CPU's widest instructions is replaced by the one for them", "[kernels]") {
    // the cores of Debian's OpenBLAS that qkv replaces, on each kind of CPU
    CHECK(better_blas_core("Prescott", VectorLevel::avx512) == "SkylakeX");
    CHECK(better_blas_core("prescott", VectorLevel::avx512) == "SkylakeX");
    CHECK(better_blas_core("Haswell", VectorLevel::avx512) == "SkylakeX");
    CHECK(better_blas_core("Zen", VectorLevel::avx512) == "SkylakeX");
    CHECK(better_blas_core("Sandybridge", VectorLevel::avx512) == "SkylakeX");
    CHECK(better_blas_core("Prescott", VectorLevel::avx2) == "Haswell");
    CHECK(better_blas_core("Nehalem", VectorLevel::avx2) == "Haswell");
    CHECK(better_blas_core("Bulldozer", VectorLevel::avx2) == "Haswell");
    CHECK(better_blas_core("Core2", VectorLevel::avx) == "Sandybridge");
    // those that already use the CPU's widest instructions stay
    CHECK(better_blas_core("SkylakeX", VectorLevel::avx512).empty());
    CHECK(better_blas_core("Cooperlake", VectorLevel::avx512).empty());
    CHECK(better_blas_core("SapphireRapids", VectorLevel::avx512).empty());
    CHECK(better_blas_core("Zen", VectorLevel::avx2).empty());
    CHECK(better_blas_core("Haswell", VectorLevel::avx2).empty());
    CHECK(better_blas_core("Excavator", VectorLevel::avx2).empty());
    CHECK(better_blas_core("Sandybridge", VectorLevel::avx).empty());
    CHECK(better_blas_core("Prescott", VectorLevel::sse).empty());
    // a name qkv does not know (a newer OpenBLAS's, another architecture's) stays
    CHECK(better_blas_core("NeoverseN2", VectorLevel::avx512).empty());
    CHECK(better_blas_core("", VectorLevel::avx512).empty());
}

#if defined(__x86_64__) && defined(__linux__)
TEST_CASE("the CPU's vector level is what /proc/cpuinfo says it has", "[kernels]") {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    std::set<std::string> flags;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("flags", 0) == 0) {
            std::istringstream words(line.substr(line.find(':') + 1));
            for (std::string flag; words >> flag;) {
                flags.insert(flag);
            }
            break;
        }
    }
    REQUIRE(!flags.empty());
    const auto has = [&flags](const char* flag) { return flags.count(flag) == 1; };
    VectorLevel expected = VectorLevel::sse;
    if (has("avx512f") && has("avx512vl") && has("avx512bw") && has("avx512dq") && has("avx512cd")) {
        expected = VectorLevel::avx512;
    } else if (has("avx2") && has("fma")) {
        expected = VectorLevel::avx2;
    } else if (has("avx")) {
        expected = VectorLevel::avx;
    }
    CHECK(cpu_vector_level() == expected);
}
#endif

// A product through BLAS against the sums written out.
static void check_a_product() {
    arma::mat A(67, 45);
    arma::mat B(45, 71);
    for (arma::uword i = 0; i < A.n_elem; ++i) {
        A(i) = static_cast<double>((i * 37) % 101) / 50.0 - 1.0;
    }
    for (arma::uword i = 0; i < B.n_elem; ++i) {
        B(i) = static_cast<double>((i * 53) % 97) / 48.0 - 1.0;
    }
    const arma::mat C = A * B;
    double worst = 0.0;
    for (arma::uword i = 0; i < C.n_rows; ++i) {
        for (arma::uword j = 0; j < C.n_cols; ++j) {
            double sum = 0.0;
            for (arma::uword k = 0; k < A.n_cols; ++k) {
                sum += A(i, k) * B(k, j);
            }
            worst = std::max(worst, std::abs(C(i, j) - sum));
        }
    }
    CHECK(worst < 1e-12);
}

TEST_CASE("OpenBLAS's kernels are chosen again from the CPU's features, and the user's core is kept", "[kernels]") {
    const std::string own = blas_core();
    if (own.empty() || blas_name().find("DYNAMIC_ARCH") == std::string::npos ||
        std::getenv("OPENBLAS_CORETYPE") != nullptr) {
        SUCCEED("OpenBLAS built for one CPU, another BLAS or a core named by the user: nothing to choose");
        return;
    }
    const VectorLevel level = cpu_vector_level();
    // as OpenBLAS's table chooses on a CPU newer than itself
    REQUIRE(use_blas_core("Prescott"));
    CHECK(blas_core() == "Prescott");
    check_a_product();
    choose_blas_kernels();
    const std::string better = better_blas_core("Prescott", level);
    if (better.empty()) {
        CHECK(blas_core() == "Prescott");
        CHECK(blas_table_core().empty());
    } else {
        CHECK(blas_core() == better);
        CHECK(blas_table_core() == "Prescott");
        CHECK(blas_name().find("kernels " + better + " chosen by qkv") != std::string::npos);
        CHECK(blas_name().find("(OpenBLAS's table gave Prescott)") != std::string::npos);
    }
    check_a_product();

    // a core the user names stays, whatever the CPU
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    REQUIRE(use_blas_core("Prescott"));
    choose_blas_kernels();
    CHECK(blas_core() == "Prescott");
    CHECK(blas_table_core().empty());
    CHECK(blas_name().find("OPENBLAS_CORETYPE=Prescott") != std::string::npos);
    unsetenv("OPENBLAS_CORETYPE");

    // names OpenBLAS does not know are not passed on (0.3.21 would stop the process)
    CHECK_FALSE(use_blas_core("NoSuchCore"));
    REQUIRE(use_blas_core(own));
    CHECK(blas_core() == own);
}
