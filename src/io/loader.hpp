// Reads an example file (YAML) into a validated Model, reporting every problem
// with its FILE:LINE:COL. YAML stays inside src/io/: its files (this loader,
// the lessons' and the answers' loaders, their shared readers) may include
// yaml-cpp, and no file outside src/io/ may; here YAML::Node is only declared.
#pragma once

#include "attention/step_id.hpp"
#include "base/diagnostics.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

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
    bool backward = false;                              // --backward: grad_output: ones unless the file gives it
    // The steps whose matrices the computation will keep (empty: all), and the
    // head whose steps it keeps (0: every head), for the memory estimate.
    std::vector<StepId> kept_steps;
    int kept_head = 0;
};

inline constexpr std::uint64_t k_max_dimension = 65536;
// The size of an example file (or of standard input) that qkv reads.
inline constexpr std::uint64_t k_max_file_bytes = std::uint64_t{64} << 20;
// Lists and maps inside one another; an example file needs about six levels.
inline constexpr std::size_t k_max_yaml_depth = 64;
// The largest magnitude of a number in an example: with every dimension at its
// limit, products of such numbers still stay far from overflowing a double.
inline constexpr double k_max_magnitude = 1e30;
// Values that aliases (*name) may repeat in one document ("billion laughs").
inline constexpr std::uint64_t k_max_alias_values = 1000000;
// Values (numbers, strings, lists, maps) written in one document: yaml-cpp
// keeps each as a node of a few hundred bytes, so this bounds the memory and
// time of reading a file; larger matrices come from {file: ...} or {random: ...}.
inline constexpr std::uint64_t k_max_yaml_values = 1u << 20;

// Parse and validate; throws InputError listing every problem found.
Model load_model(const Source& source, const LoadOptions& options = {});
// The same for a node of a document parsed elsewhere (a lesson's inline
// model); errors are positioned in source, the document the node belongs to.
Model load_model(const Source& source, const YAML::Node& root, const LoadOptions& options = {});

// A key of an example set from the command line (`qkv bench --set KEY=VALUE`,
// or an example bench writes from its flags): `value` is YAML, as the file
// would write it after "key:".
struct KeySetting {
    std::string key;
    std::string value;
    std::string origin;  // where it came from, which a problem in it names: "--set mask=causal"
};
// The example of `source` with each setting in place of the key of the same
// name at its top level (or added; a later setting of a key wins), parsed and
// validated. A problem in a setting is reported at its origin. `source` may be
// empty: the example is then the settings alone.
Model load_model(const Source& source, const std::vector<KeySetting>& settings, const LoadOptions& options = {});

// Resolve a FILE|NAME|- argument: an existing path wins over a built-in name.
// Throws InputError when neither exists.
Source read_source(const std::string& file_or_name);

}  // namespace qkv
