// A model's own numbers: one tensor of a NumPy .npy file or of a safetensors
// file (nothing outside src/io/ includes this). The readers look at a file's
// header, then read only the rows and columns asked for, so that one head's
// block of a checkpoint of gigabytes costs what the block holds. Every number
// is widened to float64 exactly: F64, F32, F16 and BF16, little- or
// big-endian (.npy), C or Fortran order (.npy).
#pragma once

#include <armadillo>

#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

namespace qkv::loading {

// What is wrong with a file or the tensor asked of it, with a hint.
struct TensorError : std::runtime_error {
    TensorError(const std::string& what, std::string hint) : std::runtime_error(what), hint(std::move(hint)) {}
    std::string hint;
};

// Where a tensor's numbers are in its file and how they are stored.
struct TensorLayout {
    std::uint64_t rows = 1;       // a vector (one dimension) is one row
    std::uint64_t cols = 1;
    int dimensions = 2;           // 1 for a vector
    std::string dtype;            // as the file names it: "<f4", "F32", "BF16", …
    int width = 8;                // bytes per number
    enum class Kind { f64, f32, f16, bf16 } kind = Kind::f64;
    bool big_endian = false;
    bool column_major = false;    // a .npy file in Fortran order
    std::uint64_t offset = 0;     // of the first number, from the file's start
};

// The layout of the array of a .npy file of `size` bytes. Throws TensorError.
TensorLayout npy_layout(std::istream& in, std::uint64_t size);
// The layout of the tensor `name` of a safetensors file of `size` bytes; a
// missing name is an error whose hint gives the closest names. Throws TensorError.
TensorLayout safetensors_layout(std::istream& in, std::uint64_t size, const std::string& name);
// Rows r0 … r1 − 1 and columns c0 … c1 − 1 of the tensor, as float64. Throws
// TensorError on a short read.
arma::mat read_tensor_block(std::istream& in, const TensorLayout& layout, std::uint64_t r0, std::uint64_t r1,
                            std::uint64_t c0, std::uint64_t c1);

}  // namespace qkv::loading
