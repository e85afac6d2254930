// Examples and lessons compiled into the binary (generated from examples/*.yaml
// and lessons/*.yaml at build time by cmake/embed.cmake), so they work from
// any folder after install.
#pragma once

#include <string_view>
#include <vector>

namespace qkv {

struct BuiltinFile {
    std::string_view name;  // file name without .yaml, e.g. "illustrated"
    std::string_view text;  // the YAML
};

// In the order given by the index file of each folder (examples/INDEX, lessons/INDEX).
const std::vector<BuiltinFile>& builtin_examples();
const std::vector<BuiltinFile>& builtin_lessons();

// nullptr when there is none by that name.
const BuiltinFile* find_builtin_example(std::string_view name);

}  // namespace qkv
