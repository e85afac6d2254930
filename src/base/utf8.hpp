// UTF-8 text, in one place: whether bytes are well-formed UTF-8, the code
// points they hold, and the columns of a terminal they take.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qkv {

// Length of the UTF-8 sequence starting at text[i] (strict: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 when the bytes there are not UTF-8.
std::size_t utf8_sequence_length(const std::string& text, std::size_t i);

// True when text is well-formed UTF-8 (no overlong forms, surrogates or bytes past U+10FFFF).
bool valid_utf8(const std::string& text);

// One UTF-8 code point at text[at]: its value and its length in bytes (a
// stray byte that starts no code point is read as itself, one byte long).
std::pair<char32_t, std::size_t> decode_code_point(const std::string& text, std::size_t at);

// The columns one code point takes: 2 for East Asian wide and fullwidth
// characters (CJK, Hangul, fullwidth forms, most emoji), 0 for combining marks
// and zero-width characters, 1 for every other.
std::size_t code_point_width(char32_t code);

// Display width in terminal columns: the sum of its code points' widths.
std::size_t display_width(const std::string& text);
// The same for a line that may hold colour escapes (ESC [ … m), which take no column.
std::size_t visible_width(const std::string& line);

// `text`'s words in lines of at most `width` columns, one space between
// them (a longer word has a line to itself).
std::vector<std::string> word_lines(const std::string& text, std::size_t width);

// The code points in `text`: its bytes that do not continue a sequence (an
// editor's column in a line of UTF-8).
std::size_t code_point_count(std::string_view text);

}  // namespace qkv
