// Small readers over yaml-cpp nodes that record a positioned Diagnostic instead
// of throwing. Used by the loaders in io/ only.
#pragma once

#include "base/diagnostics.hpp"
#include "io/loader.hpp"

#include <armadillo>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

// A YAML number as qkv accepts it: decimal, optional sign and exponent.
// Also recognises .inf/.nan spellings (returned as non-finite values).
std::optional<double> parse_number(const std::string& text);

// A map key as text (non-scalar keys are described, not thrown on).
std::string key_text(const YAML::Node& key);

// A key that is not qkv's but that people bring from elsewhere (PyTorch's
// modules), with what qkv makes of it: check_keys reports it in these words
// instead of as an unknown key.
struct ForeignKey {
    std::string name;
    std::string what;  // after "KEY: ", e.g. "qkv computes attention as in evaluation, …"
    std::string hint;
};

class YamlReader {
public:
    YamlReader(const Source& source, Diagnostics& diagnostics) : m_source(source), m_diagnostics(diagnostics) {}

    // Parse the whole text; syntax errors become diagnostics (an empty node is returned).
    YAML::Node parse_document();

    void error(const YAML::Node& node, const std::string& what, const std::string& hint);
    void error_at(const YAML::Mark& mark, const std::string& what, const std::string& hint);
    // The diagnostic error_at would record, without recording it.
    Diagnostic at(const YAML::Mark& mark, const std::string& what, const std::string& hint) const;
    // Reports keys of `map` not in `known`, with a "did you mean" hint, or
    // in the words of `foreign` for a key it names.
    void check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& known,
                    const std::vector<ForeignKey>& foreign = {});

    // Each returns nullopt when the node is absent (no error) or malformed (error recorded).
    std::optional<std::string> string(const YAML::Node& node, const std::string& path);
    std::optional<std::vector<std::string>> labels(const YAML::Node& node, const std::string& path);
    std::optional<std::int64_t> integer(const YAML::Node& node, const std::string& path, std::int64_t min,
                                        std::int64_t max, const std::string& hint = "");
    std::optional<double> number(const YAML::Node& node, const std::string& path);
    // A flat list of numbers (a single-row nested list is accepted too), or
    // {file: …} of one row or one column when a file reader is set.
    std::optional<arma::rowvec> vector(const YAML::Node& node, const std::string& path);
    // How a {file: …} in place of a vector is read: the model's loader, which
    // knows the example's folder and limits, reads it as a matrix (read_matrix).
    using FileReader = std::function<std::optional<arma::mat>(const YAML::Node& node, const std::string& path)>;
    void set_file_reader(FileReader reader) { m_file_reader = std::move(reader); }

    // The text between the brackets of a list written [a, b, c], as in the
    // file; empty for a list written as lines of `- a`, or one not found there.
    std::string flow_text(const YAML::Node& node) const;
    // A list written [a, b, c] whose numbers are separated by a comma and a
    // space but which also holds a comma between two digits ("[0,5, 2]", which
    // YAML reads as 0, 5, 2): records an error naming "0,5" and returns true.
    // A list with no space after any comma ([0,1,1]) is three numbers.
    bool decimal_comma(const YAML::Node& list, const std::string& path);

    // True when map holds an unknown key (one not in known) that is a misspelling
    // of key: its "unknown key" error then says all, and "KEY is missing" would
    // only repeat it.
    bool has_misspelling_of(const YAML::Node& map, const std::string& key,
                            const std::vector<std::string>& known) const;

    // "a map", "a list of 3 items", "\"abc\"" — for "found …" messages.
    std::string describe(const YAML::Node& node) const;

    const Source& source() const { return m_source; }
    Diagnostics& diagnostics() { return m_diagnostics; }
    // Bytes of the matrices read so far, held against --max-memory together.
    std::uint64_t& matrix_bytes() { return m_matrix_bytes; }

private:
    FileReader m_file_reader;
    const Source& m_source;
    Diagnostics& m_diagnostics;
    std::uint64_t m_matrix_bytes = 0;
};

// The minus sign of typeset text (U+2212), as copied from slides and PDFs:
// example files and answer files read it as '-'.
inline const std::string k_unicode_minus = "\u2212";
// The text with each Unicode minus written as '-': "−0.71" → "-0.71", "−∞" → "-∞".
std::string with_ascii_minus(std::string text);

// "512 KiB", "3.5 MiB", "4 GiB": a size for messages.
std::string size_text(std::uint64_t bytes);

// A matrix in any of its written forms: a list of rows, {file: x.csv} or
// {random: {rows, cols, seed, low, high}}. Limits and paths are checked here.
std::optional<arma::mat> read_matrix(YamlReader& yaml, const YAML::Node& node, const std::string& path,
                                     const Source& source, const LoadOptions& options);

}  // namespace qkv
