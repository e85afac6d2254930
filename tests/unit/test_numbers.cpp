// Numbers as text: the one place qkv lays out a number (base/numbers.hpp), and
// the arithmetic a learner writes as an answer (base/expression.hpp).
#include "base/expression.hpp"
#include "base/numbers.hpp"

#include <catch2/catch.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace {

#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
std::string library_shortest(double value) {
    char buffer[400];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

std::string library_fixed(double value) {
    char buffer[400];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed).ptr);
}
#endif

}  // namespace

TEST_CASE("the shortest form reads back as the same double and is laid out as std::to_chars lays it out",
          "[unit][numbers]") {
    // by hand: fixed or scientific, whichever is shorter, fixed on a tie
    CHECK(qkv::shortest(0.25) == "0.25");
    CHECK(qkv::shortest(0.0001) == "1e-04");      // 5 characters against 6
    CHECK(qkv::shortest(0.00025) == "0.00025");   // 7 against 7: fixed
    CHECK(qkv::shortest(2.5e-05) == "2.5e-05");
    CHECK(qkv::shortest(100.0) == "100");
    CHECK(qkv::shortest(1e6) == "1e+06");
    CHECK(qkv::shortest(1e22) == "1e+22");
    CHECK(qkv::shortest(std::ldexp(1.0, 60)) == "1152921504606846976");  // a whole number written exactly
    CHECK(qkv::shortest(-0.0) == "-0");
    CHECK(qkv::shortest(0.1 + 0.2) == "0.30000000000000004");
    CHECK(qkv::shortest(5e-324) == "5e-324");
    CHECK(qkv::shortest(1.7976931348623157e308) == "1.7976931348623157e+308");
    CHECK(qkv::shortest(-std::numeric_limits<double>::infinity()) == "-inf");
    CHECK(qkv::shortest(std::numeric_limits<double>::quiet_NaN()) == "nan");
    CHECK(qkv::shortest_fixed(0.0001) == "0.0001");
    CHECK(qkv::shortest_fixed(1e22) == "10000000000000000000000");
    CHECK(qkv::shortest_fixed(-2.5) == "-2.5");
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    // and the same text as the C++ library's on random bit patterns, round
    // numbers, powers of two and ten, and large whole numbers
    std::mt19937_64 random(2026);
    std::uniform_real_distribution<double> uniform(-10, 10);
    int differences = 0;
    const auto compare = [&](double value) {
        if (qkv::shortest(value) != library_shortest(value) || qkv::shortest_fixed(value) != library_fixed(value)) {
            ++differences;
            UNSCOPED_INFO(library_shortest(value) << " written as " << qkv::shortest(value));
        }
    };
    for (int i = 0; i < 200000; ++i) {
        std::uint64_t bits = random();
        double value = 0;
        std::memcpy(&value, &bits, sizeof value);
        if (!std::isnan(value)) {
            compare(value);
        }
        compare(uniform(random));
        compare(std::round(uniform(random) * 1e4) / 1e4);
        compare(std::ldexp(1.0, static_cast<int>(random() % 2000) - 1000));
        compare(std::round(std::ldexp(uniform(random), static_cast<int>(random() % 80))));
        compare(std::pow(10.0, static_cast<int>(random() % 600) - 300) * static_cast<double>(1 + random() % 9));
    }
    CHECK(differences == 0);
#endif
}

TEST_CASE("fixed decimals round the double as printf does, and trimmed drops the zeros", "[unit][numbers]") {
    CHECK(qkv::fixed(2.5, 2) == "2.50");
    CHECK(qkv::fixed(1.005, 2) == "1.00");  // the double is 1.00499999999999989…
    CHECK(qkv::fixed(-0.25, 1) == "-0.2");  // halfway: to even, as printf
    CHECK(qkv::fixed(1e300, 1).size() == 303);
    CHECK(qkv::trimmed(2.5, 4) == "2.5");
    CHECK(qkv::trimmed(1.0 / 6, 4) == "0.1667");
    CHECK(qkv::trimmed(3, 4) == "3");
    CHECK(qkv::trimmed(120, 0) == "120");
    CHECK(qkv::scientific(0.0015, 2) == "1.50e-03");
}

TEST_CASE("a given number reads as a person writes it: whole numbers in full, the rest shortest", "[unit][numbers]") {
    CHECK(qkv::readable(10000) == "10000");
    CHECK(qkv::readable(1e6) == "1000000");
    CHECK(qkv::readable(-0.0) == "0");
    CHECK(qkv::readable(0.0625) == "0.0625");
    CHECK(qkv::readable(std::ldexp(1.0, -16)) == "1.52587890625e-05");
    CHECK(qkv::readable(1e20) == "1e+20");
}

TEST_CASE("an answer written as arithmetic is read as its value, at the decimals its numbers carry",
          "[unit][numbers]") {
    const auto row = GENERATE(table<std::string, double, int>({
        {"2/10", 0.2, 1},                                            // its value ends at 1 decimal
        {"1/4", 0.25, 2},
        {"1/3", 1.0 / 3.0, 0},                                       // runs on: graded as the exact value
        {"0.6439*(1-0.6439)", 0.6439 * (1 - 0.6439), 4},             // the most decimals of its numbers
        {"exp(2)/(exp(2)+2*exp(4))", std::exp(2.0) / (std::exp(2.0) + 2 * std::exp(4.0)), 0},
        {"e^2 / (e^2 + 2 e^4)", 0.0, -1},                           // no product without a sign
        {"e^2/(e^2+2*e^4)", std::exp(2.0) / (std::exp(2.0) + 2 * std::exp(4.0)), 0},
        {" 4 / sqrt(3) ", 4 / std::sqrt(3.0), 0},
        {"4/√3", 4 / std::sqrt(3.0), 0},
        {"2^3^2", 512.0, 0},                                         // a power binds to the right
        {"2**3", 8.0, 0},
        {"-2^2", -4.0, 0},                                           // as on paper
        {"2^-1", 0.5, 1},
        {"−0.5 × 2", -1.0, 1},
        {"3 · 2 ÷ 4", 1.5, 1},
        {"log(e)", 1.0, 0},
        {"ln(1)", 0.0, 0},
        {"6.03e-06*2", 1.206e-05, 8},
        {"1e3/4", 250.0, 0},
        {".5+.25", 0.75, 2},
        {"((1+2))*3", 9.0, 0},
        {"0.5", 0.5, 1},
        {"0.50", 0.5, 2},
        {"1/0", 0.0, -1},                                            // not finite
        {"log(0)", 0.0, -1},
        {"sqrt(-1)", 0.0, -1},
        {"2 3", 0.0, -1},
        {"2*", 0.0, -1},
        {"(1+2", 0.0, -1},
        {"1+2)", 0.0, -1},
        {"exp 2", 0.0, -1},
        {"cos(0)", 0.0, -1},
        {"0,06", 0.0, -1},
        {"inf", 0.0, -1},
        {"", 0.0, -1},
        {".", 0.0, -1},
        {"2e", 0.0, -1},
        {"two", 0.0, -1},
    }));
    const std::string text = std::get<0>(row);
    CAPTURE(text);
    const auto read = qkv::read_expression(text);
    if (std::get<2>(row) < 0) {
        CHECK_FALSE(read);
        return;
    }
    REQUIRE(read);
    CHECK(std::fabs(read->value - std::get<1>(row)) <= 1e-15 * std::max(1.0, std::fabs(std::get<1>(row))));
    CHECK(read->decimals == std::get<2>(row));
}

TEST_CASE("an expression past its limits is refused, not read at any depth", "[unit][numbers]") {
    CHECK(qkv::read_expression(std::string(40, '(') + "1" + std::string(40, ')')));
    CHECK_FALSE(qkv::read_expression(std::string(60, '(') + "1" + std::string(60, ')')));
    CHECK_FALSE(qkv::read_expression(std::string(5000, '(') + "1" + std::string(5000, ')')));
    CHECK_FALSE(qkv::read_expression(std::string(3000, '-') + "1"));
    std::string powers = "1";
    for (int i = 0; i < 400; ++i) {
        powers += "^1";
    }
    CHECK_FALSE(qkv::read_expression(powers));
    std::string sum = "1";
    for (int i = 0; i < 300; ++i) {
        sum += "+1";
    }
    REQUIRE(qkv::read_expression(sum));  // long, not deep
    CHECK(qkv::read_expression(sum)->value == 301.0);
}

TEST_CASE("a number written with a decimal comma is found, with its sign, and written with a point",
          "[unit][numbers]") {
    CHECK(qkv::decimal_comma_in("0,06") == "0,06");
    CHECK(qkv::decimal_comma_in("2*0,06") == "0,06");
    CHECK(qkv::decimal_comma_in("−1,5") == "−1,5");
    CHECK(qkv::decimal_comma_in("[0,33, 0,67]") == "0,33");
    CHECK(qkv::decimal_comma_in("1, 2") == "");
    CHECK(qkv::decimal_comma_in("0.06") == "");
    CHECK(qkv::with_point("0,06") == "0.06");
}
