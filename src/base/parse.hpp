// Reading a double from text in the same way on every C++ library.
#pragma once

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>
#include <system_error>

namespace qkv {

// std::from_chars by strtod: the number at the start of [first, last), with no
// leading space and no hexadecimal "0x" (qkv never changes the "C" locale).
// Used where the C++ library has no std::from_chars for doubles (libc++
// before 20).
inline std::from_chars_result parse_double_strtod(const char* first, const char* last, double& value) {
    // up to an x, so that "0x10" is 0 followed by more, as from_chars reads it
    std::string text(first, last);
    text = text.substr(0, text.find_first_of("xX"));
    if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())) != 0) {
        return {first, std::errc::invalid_argument};
    }
    char* end = nullptr;
    const double parsed = std::strtod(text.c_str(), &end);
    const auto used = static_cast<std::size_t>(end - text.c_str());
    if (used == 0) {
        return {first, std::errc::invalid_argument};
    }
    value = parsed;
    return {first + used, std::errc()};
}

// std::from_chars for a double (general format), or parse_double_strtod where
// the library lacks it.
inline std::from_chars_result parse_double(const char* first, const char* last, double& value) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    return std::from_chars(first, last, value);
#else
    return parse_double_strtod(first, last, value);
#endif
}

}  // namespace qkv
