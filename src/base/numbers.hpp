// Every number qkv writes as text is laid out here: the shortest text that
// reads back as the same double (JSON, CSV, worksheets, the example's own
// numbers), or a fixed number of decimals (tables, reports, hints). The
// shortest form is found by fmt and laid out as std::to_chars lays it out,
// so the text is the same wherever qkv is built, with or without a
// std::to_chars for doubles.
#pragma once

#include <string>

namespace qkv {

// Room for the longest shortest form: "-2.2250738585072014e-308" and the
// digits of the largest whole number, 1.7976931348623157e308, written out.
inline constexpr int k_shortest_size = 330;

// The shortest text that reads back as `value`, fixed or scientific,
// whichever is shorter (fixed on a tie), as std::to_chars(first, last, value)
// writes it: 0.25, 1e-04, 2.5e-05, 100, 1e+22, 1152921504606846976. Infinities
// and NaN are "inf", "-inf" and "nan". Writes at most k_shortest_size
// characters from `out` and returns the end.
char* write_shortest(char* out, double value);
std::string shortest(double value);

// A number of the example's as a person reads it (a RoPE base, a slope, a
// sink, a divisor, a worksheet's given): a whole number in full up to 2^53
// (10000, 1000000, 0 for −0), any other in its shortest form (0.0625, 2.5e-05).
std::string readable(double value);

// The shortest digits laid out without an exponent, as
// std::to_chars(first, last, value, std::chars_format::fixed) writes them:
// 0.0001, 2.5, 1e22 as 10000000000000000000000.
std::string shortest_fixed(double value);

// `value` with `decimals` digits after the point, rounded as printf rounds
// the double it holds: fixed(2.5, 2) is "2.50".
std::string fixed(double value, int decimals);

// fixed(), without trailing zeros or a trailing point: trimmed(2.5, 4) is
// "2.5", trimmed(1.0 / 6, 4) "0.1667", trimmed(3, 4) "3".
std::string trimmed(double value, int decimals);

// `value` in scientific form with `decimals` digits after the point: "1.50e-03".
std::string scientific(double value, int decimals);

}  // namespace qkv
