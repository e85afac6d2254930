// Vectorised loops for the large-input path of attention (attention/engine.cpp).
// kernels.cpp is the one file of qkv compiled with -ffast-math: that is what
// lets the compiler turn its std::exp loop into glibc's vector exp (libmvec,
// 4 or 8 doubles per call, chosen for the CPU at run time).
#pragma once

#include <cstddef>

namespace qkv::kernels {

// The unnormalised softmax of `count` columns of length m stored one after the
// other (column c starts at S + c·m), in place: each entry x becomes
// exp(x − max of its column), and sums[c] receives the column's sum. Blocked
// cells (−∞) become exactly 0. Entries more than 708 below their column's
// maximum also become 0 instead of a subnormal (slow, and below 1e−307 of the
// column's largest entry, which is exp(0) = 1).
void exp_columns(double* S, std::size_t m, std::size_t count, double* sums);

}  // namespace qkv::kernels
