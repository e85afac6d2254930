// What differs between C++ libraries and machines, checked on this one: the
// reading of doubles without std::from_chars (libc++ before 20).
#include "support.hpp"

#include "base/parse.hpp"

#include <cmath>
#include <cstring>

using namespace qkv;

TEST_CASE("doubles read by strtod, where from_chars is missing, as from_chars reads them", "[portability]") {
    for (const char* text : {"0", "1", "-2.5", "0.1", ".5", "1e-3", "6.02214076e23", "-0", "1e308", "4.9e-324",
                             "123456789012345678", "3.14159265358979323846", "2.", "7E2"}) {
        INFO(text);
        const char* last = text + std::strlen(text);
        double expected = -1.0;
        const auto [expected_end, expected_error] = std::from_chars(text, last, expected);
        REQUIRE(expected_error == std::errc());
        double value = -1.0;
        const auto [end, error] = parse_double_strtod(text, last, value);
        CHECK(error == std::errc());
        CHECK(end == expected_end);
        CHECK(std::memcmp(&value, &expected, sizeof value) == 0);  // bit for bit, -0 included
    }
    // where from_chars stops, the number stops; what it refuses, strtod refuses
    for (const char* text : {"1.5abc", "2e", "0x10", " 1", "", "abc", "-"}) {
        INFO("\"" << text << "\"");
        const char* last = text + std::strlen(text);
        double expected = 0.0;
        const auto reference = std::from_chars(text, last, expected);
        double value = 0.0;
        const auto result = parse_double_strtod(text, last, value);
        CHECK((result.ec == std::errc()) == (reference.ec == std::errc()));
        if (reference.ec == std::errc()) {
            CHECK(result.ptr == reference.ptr);
            CHECK(value == expected);
        }
    }
}
