// Input errors with their position, collected so that every problem in a file
// is reported at once. Printed as
//   qkv: error: FILE:LINE:COL: WHAT
//     hint: HOW TO FIX
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace qkv {

struct Diagnostic {
    std::string file;   // empty when the problem is not in a file
    int line = 0;       // 1-based; 0 when unknown
    int column = 0;     // 1-based; 0 when unknown
    std::string what;
    std::string hint;   // may be empty
};

// Thrown when input cannot be used; holds every problem found (exit 2).
class InputError : public std::runtime_error {
public:
    explicit InputError(std::vector<Diagnostic> diagnostics);
    explicit InputError(Diagnostic diagnostic);
    const std::vector<Diagnostic>& diagnostics() const { return m_diagnostics; }

private:
    std::vector<Diagnostic> m_diagnostics;
};

// Collects problems up to a cap; throws them all together.
class Diagnostics {
public:
    static constexpr std::size_t k_max_reported = 20;

    void add(Diagnostic diagnostic);
    bool empty() const { return m_items.empty(); }
    std::size_t size() const { return m_items.size(); }
    // Called by a reader that stops looking once the cap is reached, so that
    // the last line says more problems may follow.
    void stopped_early() { m_stopped = true; }
    // Throws InputError when anything was added.
    void throw_if_any() const;

private:
    std::vector<Diagnostic> m_items;
    std::size_t m_dropped = 0;
    bool m_stopped = false;
};

// "FILE:LINE:COL: WHAT" (the parts that are known).
std::string format_where_what(const Diagnostic& diagnostic);

// Text made safe for one line of a terminal: control characters and bytes that
// are not UTF-8 are written escaped (\n, \x01, \xff), and text longer than
// max_bytes is cut with "…". Every InputError's fields pass through it.
std::string printable_line(const std::string& text, std::size_t max_bytes = 1000);

// Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(const std::string& a, const std::string& b);
// The closest candidate within a small distance, or "" when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);
// "a, b, c": the items of a hint's list.
std::string comma_list(const std::vector<std::string>& items);
// "did you mean scores? " when a candidate is close to WORD, else "": the start of a hint.
// The candidate is written between `before` and `after`: "did you mean bias.query? ",
// "did you mean \"sky\"? ".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates,
                         const std::string& before = "", const std::string& after = "");

// "1 number", "3 numbers": a count and its noun, plural when it is not 1.
inline std::string numbers(std::size_t count) {
    return std::to_string(count) + (count == 1 ? " number" : " numbers");
}

}  // namespace qkv
