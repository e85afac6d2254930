// An answer as a person writes it by hand: a number, a fraction (2/10) or
// an arithmetic expression (0.6439*(1-0.6439), exp(2)/(exp(2)+2*exp(4))),
// read as its value. `qkv check`'s answers and a lesson's replies read
// numbers with it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qkv {

// What an expression is worth, and how precisely it is written.
struct WrittenValue {
    double value = 0.0;
    // The decimals it is graded at: the most that any of its numbers carries,
    // or more where its value ends within 4 decimals (2/10 is 0.2, 1 decimal;
    // 1/3 never ends, and is graded as the exact value its numbers give).
    int decimals = 0;
};

// The longest expression read, and how deeply its parentheses may nest.
inline constexpr std::size_t k_max_expression_size = 1000;
inline constexpr int k_max_expression_depth = 50;

// `text` read as an arithmetic expression: numbers (0.25, 1e-3), + - * / ^
// (also −, ×, ·, ÷ and **), parentheses, exp( ), log( ) and ln( ) (natural),
// sqrt( ) and √, and the constant e (e^2 is exp(2)). Spaces may stand
// anywhere between. Nothing else: nullopt for any other text, for a value
// that is not finite (1/0) and for an expression past the limits above.
std::optional<WrittenValue> read_expression(std::string_view text);

// The number written with a decimal comma in `text` ("0,06" in "0,06" or
// "2*0,06"), or "" when there is none: what a learner used to a comma meant.
std::string decimal_comma_in(std::string_view text);
// The same number with a point: "0,06" → "0.06".
std::string with_point(std::string_view comma);

}  // namespace qkv
