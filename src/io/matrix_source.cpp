// The three ways of writing a matrix: a list of rows, {file: x.csv}, and
// {random: {...}}. Every form is checked against the dimension and memory
// limits before anything is allocated.
#include "io/yaml_util.hpp"
#include "base/numbers.hpp"
#include "io/tensor_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qkv {

namespace {


bool fits_limits(YamlReader& yaml, const YAML::Node& node, const std::string& path, std::uint64_t rows,
                 std::uint64_t cols, const LoadOptions& options) {
    if (rows > k_max_dimension || cols > k_max_dimension) {
        yaml.error(node, path + " is " + std::to_string(rows) + " × " + std::to_string(cols) +
                             "; each dimension is limited to 65536",
                   "use a smaller example");
        return false;
    }
    const std::uint64_t bytes = rows * cols * 8;
    if (bytes > options.max_memory) {
        yaml.error(node, path + " is " + std::to_string(rows) + " × " + std::to_string(cols) + " and would need " +
                             size_text(bytes) + "; the memory limit is " + size_text(options.max_memory),
                   "raise the limit with --max-memory");
        return false;
    }
    // the matrices of one file are held together, so they share the limit
    if (yaml.matrix_bytes() + bytes > options.max_memory) {
        // reported once: the matrices after this one are then past the limit too
        if (yaml.matrix_bytes() <= options.max_memory) {
            yaml.error(node, path + " would need " + size_text(bytes) + ", and the matrices before it " +
                                 size_text(yaml.matrix_bytes()) + "; the memory limit is " +
                                 size_text(options.max_memory),
                       "raise the limit with --max-memory");
        }
        yaml.matrix_bytes() += bytes;
        return false;
    }
    return true;
}

std::optional<arma::mat> from_rows(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                   const LoadOptions& options) {
    if (node.size() == 0) {
        yaml.error(node, path + " is an empty list; expected at least one row", "write e.g. [[1, 0], [0, 1]]");
        return std::nullopt;
    }
    const YAML::Node first = node[0];
    if (!first.IsSequence()) {
        yaml.error(node, path + " is a flat list; expected a list of rows",
                   "wrap each row in brackets: [[1, 0, 1]] is one row of three numbers");
        return std::nullopt;
    }
    if (first.size() > 0 && first[0].IsSequence()) {
        // a list of matrices, as PyTorch prints a batch: one error, not one per row
        const YAML::Node inner = first[0];
        const std::string each = std::to_string(first.size()) + " × " + std::to_string(inner.size());
        const bool sequence = path == "inputs" || path == "context";
        yaml.error(node, path + " is a list of " + std::to_string(node.size()) +
                             (node.size() == 1 ? " matrix" : " matrices") + " (" + each +
                             "), as PyTorch prints a batch; expected one matrix, a list of rows",
                   sequence ? "qkv computes one sequence: take one item of the batch (x[0] in PyTorch)"
                            : "write one matrix here: a list of rows like [[1, 0], [0, 1]]");
        return std::nullopt;
    }
    const std::uint64_t rows = node.size();
    const std::uint64_t cols = first.size();
    if (cols == 0) {
        yaml.error(first, path + " row 1 is empty; expected numbers", "write e.g. [1, 0, 1]");
        return std::nullopt;
    }
    if (!fits_limits(yaml, node, path, rows, cols, options)) {
        return std::nullopt;
    }
    yaml.matrix_bytes() += rows * cols * 8;
    arma::mat result(rows, cols);
    bool ok = true;
    bool lengths_known = true;  // false once row 1 holds a decimal comma
    std::uint64_t i = 0;
    for (; i < rows && yaml.diagnostics().size() < Diagnostics::k_max_reported; ++i) {
        const YAML::Node row = node[i];
        const std::string row_path = path + " row " + std::to_string(i + 1);
        if (!row.IsSequence()) {
            yaml.error(row, row_path + " is " + yaml.describe(row) + "; expected a list of " + std::to_string(cols) +
                                " numbers",
                       "write each row in brackets");
            ok = false;
            continue;
        }
        if (yaml.decimal_comma(row, row_path)) {
            // row 1's length is then no guide to the others'
            lengths_known = lengths_known && i > 0;
            ok = false;
            continue;
        }
        if (row.size() != cols) {
            if (lengths_known) {
                yaml.error(row, row_path + " has " + numbers(row.size()) + "; row 1 has " + std::to_string(cols),
                           "every row of a matrix must have the same length");
            }
            ok = false;
            continue;
        }
        for (std::uint64_t j = 0; j < cols; ++j) {
            auto value = yaml.number(row[j], path + "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]");
            ok = ok && value.has_value();
            result(i, j) = value.value_or(0.0);
        }
    }
    if (i < rows) {
        yaml.diagnostics().stopped_early();
    }
    return ok ? std::optional(result) : std::nullopt;
}

// The file a {file: …} names, relative to the example's folder and inside it
// unless --allow-any-path; nullopt (with the error recorded) otherwise.
std::optional<std::filesystem::path> data_file(YamlReader& yaml, const YAML::Node& file_node, const std::string& path,
                                               const std::string& name, const Source& source,
                                               const LoadOptions& options) {
    namespace fs = std::filesystem;
    const fs::path given(name);
    // standard input and built-in examples read their files from the current folder
    const fs::path folder = source.folder.empty() ? fs::path(".") : fs::path(source.folder);
    const fs::path full = (given.is_absolute() ? given : folder / given).lexically_normal();
    if (!options.allow_any_path) {
        // lexically first (a/../../b), then with symbolic links resolved (a link inside pointing out)
        const auto escapes = [](const fs::path& inner, const fs::path& outer) {
            const fs::path relative = inner.lexically_relative(outer);
            return relative.empty() || *relative.begin() == "..";
        };
        std::error_code error;
        // absolute first: a relative path that does not exist would stay relative
        const fs::path real_full = fs::weakly_canonical(fs::absolute(full, error), error);
        const fs::path real_folder = error ? fs::path() : fs::weakly_canonical(fs::absolute(folder, error), error);
        if (given.is_absolute() || escapes(full, folder.lexically_normal()) ||
            (!error && escapes(real_full, real_folder))) {
            yaml.error(file_node, path + ".file \"" + name + "\" is outside the example's folder",
                       "keep data files in the YAML file's folder or below it, or pass --allow-any-path");
            return std::nullopt;
        }
    }
    std::error_code error;
    const fs::file_status status = fs::status(full, error);
    if (!fs::exists(status)) {
        yaml.error(file_node, path + ".file \"" + name + "\" does not exist" +
                                  (full.string() == name ? "" : " (looked for " + full.string() + ")"),
                   "paths are relative to the folder of the YAML file");
        return std::nullopt;
    }
    if (!fs::is_regular_file(status)) {
        yaml.error(file_node, path + ".file \"" + name + "\" is not a regular file",
                   "give the path of a .csv, .npy or .safetensors file");
        return std::nullopt;
    }
    return full;
}

// CSV: numbers separated by commas, one row per line; errors point into the CSV file.
std::optional<arma::mat> from_csv(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                  const Source& source, const LoadOptions& options) {
    const YAML::Node file_node = node["file"];
    auto name = yaml.string(file_node, path + ".file");
    if (!name) {
        return std::nullopt;
    }
    const auto found = data_file(yaml, file_node, path, *name, source, options);
    if (!found) {
        return std::nullopt;
    }
    const std::filesystem::path& full = *found;
    const std::string csv_name = full.string();  // errors inside the file name it like this
    std::ifstream in(full);
    if (!in) {
        yaml.error(file_node, path + ".file \"" + *name + "\" cannot be read", "check the file's permissions");
        return std::nullopt;
    }
    std::vector<std::vector<double>> rows;
    std::string line;
    int line_number = 0;
    Diagnostics& diagnostics = yaml.diagnostics();
    bool ok = true;
    while (std::getline(in, line)) {
        ++line_number;
        if (line_number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) {
            line.erase(0, 3);  // the byte-order mark that spreadsheet programs write first
        }
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        if (line.find_first_not_of(" \t") == std::string::npos) {
            continue;
        }
        std::vector<double> row;
        std::size_t start = 0;
        while (true) {
            const std::size_t comma = line.find(',', start);
            const std::string cell = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            auto value = parse_number(cell);
            if (!value || !std::isfinite(*value) || std::fabs(*value) > k_max_magnitude) {
                // point at the cell's first character, past any spaces
                const std::size_t shown = std::min(cell.find_first_not_of(" \t"), cell.size());
                const std::size_t last = cell.find_last_not_of(" \t");
                const std::string trimmed = last == std::string::npos ? "" : cell.substr(shown, last + 1 - shown);
                // the cell as the matrix entry it would have been: row (lines with numbers) and column
                const std::string entry = path + "[" + std::to_string(rows.size() + 1) + "," +
                                          std::to_string(row.size() + 1) + "] is \"" + trimmed + "\"";
                const bool too_large = value && std::isfinite(*value);
                diagnostics.add({csv_name, line_number, static_cast<int>(start + shown + 1),
                                 entry + (too_large ? "; numbers are limited to ±1e30" : "; expected a finite number"),
                                 too_large ? "larger values would overflow the products and the softmax; rescale the example"
                                           : "a CSV matrix holds only numbers separated by commas, without a header"});
                ok = false;
                break;
            }
            row.push_back(*value);
            if (row.size() > k_max_dimension) {
                break;
            }
            if (comma == std::string::npos) {
                break;
            }
            start = comma + 1;
        }
        if (!ok) {
            break;
        }
        if (!rows.empty() && row.size() != rows.front().size()) {
            diagnostics.add({csv_name, line_number, 1,
                             path + ": this row has " + std::to_string(row.size()) + " numbers; the first has " +
                                 std::to_string(rows.front().size()),
                             "every row of a matrix must have the same length"});
            return std::nullopt;
        }
        rows.push_back(std::move(row));
        if (!fits_limits(yaml, file_node, path, rows.size(), rows.front().size(), options)) {
            return std::nullopt;
        }
    }
    if (!ok) {
        return std::nullopt;
    }
    if (rows.empty()) {
        yaml.error(file_node, path + ".file \"" + *name + "\" holds no numbers",
                   "write one row of numbers per line, separated by commas");
        return std::nullopt;
    }
    yaml.matrix_bytes() += rows.size() * rows.front().size() * 8;
    arma::mat result(rows.size(), rows.front().size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t j = 0; j < rows[i].size(); ++j) {
            result(i, j) = rows[i][j];
        }
    }
    return result;
}

// splitmix64: tiny, and the same sequence on every machine for a given seed.
std::uint64_t next_random(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

std::optional<arma::mat> from_random(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                     const LoadOptions& options) {
    const YAML::Node spec = node["random"];
    if (!spec.IsMap()) {
        yaml.error(spec, path + ".random is " + yaml.describe(spec) + "; expected a map",
                   "write {random: {rows: 3, cols: 4, seed: 1}}");
        return std::nullopt;
    }
    const std::size_t errors_before = yaml.diagnostics().size();
    const std::vector<std::string> known = {"rows", "cols", "seed", "low", "high"};
    yaml.check_keys(spec, path + ".random", known);
    // a misspelt key (sed: 1) must not fall back to its default
    const bool unknown_key = yaml.diagnostics().size() > errors_before;
    if (!spec["rows"] || !spec["cols"]) {
        // a misspelt rows or cols is reported once, as an unknown key
        if (!(spec["rows"] || yaml.has_misspelling_of(spec, "rows", known)) ||
            !(spec["cols"] || yaml.has_misspelling_of(spec, "cols", known))) {
            yaml.error(spec, path + ".random needs rows and cols", "write {random: {rows: 3, cols: 4, seed: 1}}");
        }
        return std::nullopt;
    }
    auto rows = yaml.integer(spec["rows"], path + ".random.rows", 1, std::int64_t{1} << 40);
    auto cols = yaml.integer(spec["cols"], path + ".random.cols", 1, std::int64_t{1} << 40);
    auto seed = spec["seed"] ? yaml.integer(spec["seed"], path + ".random.seed", 0, std::int64_t{1} << 53) : std::optional<std::int64_t>(0);
    auto low = spec["low"] ? yaml.number(spec["low"], path + ".random.low") : std::optional<double>(-1.0);
    auto high = spec["high"] ? yaml.number(spec["high"], path + ".random.high") : std::optional<double>(1.0);
    if (!rows || !cols || !seed || !low || !high) {
        return std::nullopt;
    }
    if (!(*low < *high)) {
        std::ostringstream what;
        what << path << ".random has low " << *low << " ≥ high " << *high;
        yaml.error(spec, what.str(), "low must be below high");
        return std::nullopt;
    }
    if (unknown_key) {
        return std::nullopt;
    }
    if (!fits_limits(yaml, node, path, *rows, *cols, options)) {
        return std::nullopt;
    }
    yaml.matrix_bytes() += static_cast<std::uint64_t>(*rows) * static_cast<std::uint64_t>(*cols) * 8;
    arma::mat result(*rows, *cols);
    std::uint64_t state = static_cast<std::uint64_t>(*seed);
    // filled row by row, so that a matrix reads the same way it is written
    for (long i = 0; i < *rows; ++i) {
        for (long j = 0; j < *cols; ++j) {
            const double unit = static_cast<double>(next_random(state) >> 11) * 0x1.0p-53;
            result(i, j) = *low + (*high - *low) * unit;
        }
    }
    return result;
}

// A tensor of a .npy or safetensors file (tensor_file.hpp), or the block of
// it that rows: [a, b] and cols: [a, b] give (1-based, both ends included).
// Every error is reported at the {file: …} itself.
std::optional<arma::mat> from_tensor(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                     const Source& source, const LoadOptions& options, bool safetensors) {
    const YAML::Node file_node = node["file"];
    auto name = yaml.string(file_node, path + ".file");
    if (!name) {
        return std::nullopt;
    }
    std::string tensor;
    if (safetensors) {
        const auto given = yaml.string(node["tensor"], path + ".tensor");
        if (!node["tensor"]) {
            yaml.error(node, path + " names a safetensors file but no tensor; expected tensor: NAME",
                       "add the tensor's name as the file stores it, e.g. "
                       "tensor: model.layers.0.self_attn.q_proj.weight");
        }
        if (!given) {
            return std::nullopt;
        }
        tensor = *given;
    }
    const auto full = data_file(yaml, file_node, path, *name, source, options);
    if (!full) {
        return std::nullopt;
    }
    const std::string where = path + ".file \"" + *name + "\"";
    std::ifstream in(*full, std::ios::binary);
    std::error_code error;
    const std::uint64_t size = std::filesystem::file_size(*full, error);
    if (!in || error) {
        yaml.error(file_node, where + " cannot be read", "check the file's permissions");
        return std::nullopt;
    }
    try {
        const loading::TensorLayout layout =
            safetensors ? loading::safetensors_layout(in, size, tensor) : loading::npy_layout(in, size);
        // rows: [a, b] and cols: [a, b] within the tensor's rows and columns
        const auto range = [&](const char* key, std::uint64_t extent) -> std::optional<std::pair<std::uint64_t, std::uint64_t>> {
            const YAML::Node given = node[key];
            if (!given) {
                return std::pair<std::uint64_t, std::uint64_t>{0, extent};
            }
            const std::string at = path + "." + key;
            const std::string hint = std::string("write ") + key + ": [FIRST, LAST], counted from 1, both included";
            if (!given.IsSequence() || given.size() != 2) {
                yaml.error(given, at + " is " + yaml.describe(given) + "; expected [FIRST, LAST]", hint);
                return std::nullopt;
            }
            const auto first = yaml.integer(given[0], at + "[1]", 1, static_cast<std::int64_t>(extent), hint);
            const auto last = yaml.integer(given[1], at + "[2]", 1, static_cast<std::int64_t>(extent), hint);
            if (!first || !last) {
                return std::nullopt;
            }
            if (*last < *first) {
                yaml.error(given, at + " is [" + std::to_string(*first) + ", " + std::to_string(*last) +
                                      "]; expected FIRST ≤ LAST", hint);
                return std::nullopt;
            }
            return std::pair<std::uint64_t, std::uint64_t>{static_cast<std::uint64_t>(*first - 1),
                                                           static_cast<std::uint64_t>(*last)};
        };
        const auto rows = range("rows", layout.rows);
        const auto cols = range("cols", layout.cols);
        if (!rows || !cols) {
            return std::nullopt;
        }
        const std::uint64_t r = rows->second - rows->first;
        const std::uint64_t c = cols->second - cols->first;
        if (!fits_limits(yaml, node, path, r, c, options)) {
            return std::nullopt;
        }
        yaml.matrix_bytes() += r * c * 8;
        arma::mat result = loading::read_tensor_block(in, layout, rows->first, rows->second, cols->first, cols->second);
        for (arma::uword j = 0; j < result.n_cols; ++j) {
            for (arma::uword i = 0; i < result.n_rows; ++i) {
                const double value = result(i, j);
                if (!std::isfinite(value) || std::fabs(value) > k_max_magnitude) {
                    yaml.error(node, path + "[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "] is " +
                                         shortest(value) + " in " + *name +
                                         (std::isfinite(value) ? "; numbers are limited to ±1e30"
                                                               : "; expected a finite number"),
                               "give a tensor of finite numbers");
                    return std::nullopt;
                }
            }
        }
        return result;
    } catch (const loading::TensorError& problem) {
        yaml.error(node, where + ": " + problem.what(), problem.hint);
        return std::nullopt;
    }
}

}  // namespace

std::string size_text(std::uint64_t bytes) {
    static const char* const k_units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        ++unit;
    }
    std::string number = fixed(value, value < 10 && unit > 0 ? 1 : 0);
    if (number.size() > 2 && number.compare(number.size() - 2, 2, ".0") == 0) {
        number.resize(number.size() - 2);
    }
    return number + " " + k_units[unit];
}

std::optional<arma::mat> read_matrix(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                     const Source& source, const LoadOptions& options) {
    if (node.IsSequence()) {
        return from_rows(yaml, node, path, options);
    }
    // a spec with an unknown key is not read: its matrix would only add errors about its shape
    const std::size_t errors_before = yaml.diagnostics().size();
    if (node.IsMap() && node["file"] && !node["random"]) {
        // the reader by the file's extension: .csv, .npy or .safetensors
        const YAML::Node file = node["file"];
        const std::string name = file.IsScalar() ? file.Scalar() : "";
        const auto ends_with = [&name](const std::string& tail) {
            return name.size() >= tail.size() &&
                   std::equal(tail.rbegin(), tail.rend(), name.rbegin(),
                              [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
        };
        const bool npy = ends_with(".npy");
        const bool safetensors = ends_with(".safetensors");
        yaml.check_keys(node, path,
                        safetensors ? std::vector<std::string>{"file", "tensor", "rows", "cols"}
                        : npy       ? std::vector<std::string>{"file", "rows", "cols"}
                                    : std::vector<std::string>{"file"});
        if (yaml.diagnostics().size() > errors_before) {
            return std::nullopt;
        }
        if (npy || safetensors) {
            return from_tensor(yaml, node, path, source, options, safetensors);
        }
        return from_csv(yaml, node, path, source, options);
    }
    if (node.IsMap() && node["random"] && !node["file"]) {
        yaml.check_keys(node, path, {"random"});
        if (yaml.diagnostics().size() > errors_before) {
            return std::nullopt;
        }
        return from_random(yaml, node, path, options);
    }
    yaml.error(node, path + " is " + yaml.describe(node) + "; expected a matrix",
               "write a list of rows like [[1, 0], [0, 1]], or {file: m.csv}, or {random: {rows: 2, cols: 2}}");
    return std::nullopt;
}

}  // namespace qkv
