# Cross-compiling qkv for arm64 with Debian's cross toolchain
# (crossbuild-essential-arm64) against a sysroot of Debian's arm64 packages,
# unpacked by scripts/arm64-check. Programs built here run under
# qemu-aarch64-static, which CTest and the Catch2 test discovery use as the
# emulator.
#   cmake -S . -B build-arm64/build -DCMAKE_TOOLCHAIN_FILE=cmake/arm64-toolchain.cmake \
#         -DQKV_ARM64_SYSROOT=/abs/path/to/sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# try_compile's test projects read this file too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES QKV_ARM64_SYSROOT)
if(NOT QKV_ARM64_SYSROOT)
    message(FATAL_ERROR "set QKV_ARM64_SYSROOT to the unpacked arm64 packages (scripts/arm64-check makes it)")
endif()
# libraries, headers and CMake packages from the sysroot only; programs (cmake,
# gzip) from the host
set(CMAKE_FIND_ROOT_PATH ${QKV_ARM64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# OpenBLAS's library is in a folder of its own (Debian links it by alternatives,
# which an unpacked package does not have)
list(APPEND CMAKE_LIBRARY_PATH ${QKV_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/openblas-pthread)
# the libraries' own dependencies (libgfortran of OpenBLAS) at link time
string(APPEND CMAKE_EXE_LINKER_FLAGS_INIT " -Wl,-rpath-link,${QKV_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")

# qemu reads every library, the C library's included, from the sysroot
find_program(QKV_QEMU qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${QKV_QEMU} -L ${QKV_ARM64_SYSROOT})
