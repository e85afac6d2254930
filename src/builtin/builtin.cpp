#include "builtin/builtin.hpp"

namespace qkv {

const BuiltinFile* find_builtin_example(std::string_view name) {
    for (const auto& example : builtin_examples()) {
        if (example.name == name) {
            return &example;
        }
    }
    return nullptr;
}

}  // namespace qkv
