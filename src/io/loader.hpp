// Reads an example file (YAML) into a validated Model. This is the only part of
// qkv that sees YAML; every problem is reported with its FILE:LINE:COL.
#pragma once

#include "io/diagnostics.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <string>

namespace qkv {

// Where the text came from: a file path, "-" for standard input, or a
// built-in example (its name). The folder is where `{file: …}` paths resolve.
struct Source {
    std::string name;     // shown in error positions: a path, "<stdin>" or "builtin:NAME"
    std::string text;     // the YAML
    std::string folder;   // for relative `{file: ...}` paths; empty for stdin and built-ins
};

struct LoadOptions {
    std::uint64_t max_memory = std::uint64_t{4} << 30;  // bytes, estimated for the whole computation
    bool allow_any_path = false;                        // `{file: ...}` outside the YAML's folder
};

inline constexpr std::uint64_t k_max_dimension = 65536;

// Parse and validate; throws InputError listing every problem found.
Model load_model(const Source& source, const LoadOptions& options = {});

// Resolve a FILE|NAME|- argument: an existing path wins over a built-in name.
// Throws InputError when neither exists.
Source read_source(const std::string& file_or_name);

// Estimated peak bytes for computing and keeping the whole trace of a model.
std::uint64_t estimate_memory(std::uint64_t n, std::uint64_t m, std::uint64_t d_model, std::uint64_t heads,
                              std::uint64_t d_k, std::uint64_t d_v, std::uint64_t d_out);

}  // namespace qkv
