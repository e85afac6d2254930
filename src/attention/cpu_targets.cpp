// Which of Highway's targets this CPU runs: the three functions of libhwy
// that Highway's dispatch (HWY_EXPORT, HWY_DYNAMIC_DISPATCH in kernels.cpp)
// calls, defined here so that qkv uses Highway's headers only. Debian's
// libhwy.so (1.0.3) measures its timer for about 5 ms of CPU whenever it is
// loaded, which more than doubled the time of a small `qkv run`.
//
// A target counts when the CPU has every extension Highway compiles it for
// (the GCC target attributes of hwy/ops/set_macros-inl.h); on x86-64 the
// compiler's CPU model answers, which also checks that the operating system
// saves the AVX and AVX-512 registers. The tests check the list against the
// CPU's flags and run every target on it.
#include <hwy/targets.h>

#include <atomic>
#include <cstdint>

#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#elif HWY_ARCH_ARM_A64 && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace hwy {

namespace {

#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
// F16C, which clang's __builtin_cpu_supports does not name: CPUID leaf 1.
bool has_f16c() {
    unsigned eax = 0;
    unsigned ebx = 0;
    unsigned ecx = 0;
    unsigned edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
#endif

// The targets of this CPU, found once.
std::int64_t detected_targets() {
    std::int64_t targets = HWY_ENABLED_BASELINE;  // what every CPU of the architecture runs
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
    const bool ssse3 = __builtin_cpu_supports("sse3") && __builtin_cpu_supports("ssse3");
    const bool sse4 = ssse3 && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
                      __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("aes");
    const bool avx2 = sse4 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                      __builtin_cpu_supports("fma") && has_f16c();
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    targets |= (ssse3 ? HWY_SSSE3 : 0) | (sse4 ? HWY_SSE4 : 0) | (avx2 ? HWY_AVX2 : 0) | (avx512 ? HWY_AVX3 : 0);
#elif HWY_ARCH_ARM_A64 && defined(__linux__)
    // NEON is in every arm64 CPU; SVE and SVE2 the kernel reports. The
    // targets for one vector length (SVE_256, SVE2_128) are left out: the
    // general ones run at every length.
    targets |= HWY_NEON;
    if ((getauxval(AT_HWCAP) & HWCAP_SVE) != 0) {
        targets |= HWY_SVE;
    }
    if ((getauxval(AT_HWCAP2) & HWCAP2_SVE2) != 0) {
        targets |= HWY_SVE2;
    }
#endif
    return targets;
}

// The set SetSupportedTargetsForTest gave; 0 when none was.
std::atomic<std::int64_t> g_targets_for_test{0};

}  // namespace

int64_t SupportedTargets() {
    static const std::int64_t detected = detected_targets();
    const std::int64_t for_test = g_targets_for_test.load();
    return for_test != 0 ? for_test : detected;
}

void SetSupportedTargetsForTest(int64_t targets) {
    g_targets_for_test.store(targets);
    GetChosenTarget().Update(SupportedTargets());
}

ChosenTarget& GetChosenTarget() {
    static ChosenTarget chosen;
    return chosen;
}

}  // namespace hwy
