// The colour maps of the SVG heatmaps: the diverging map is centred on 0,
// symmetric and tells the signs apart, and black or white text reads on
// every colour of it and of the blue ramp (WCAG's 4.5:1).
#include "render/html.hpp"
#include "support.hpp"

#include <cmath>

namespace {

// CIELAB lightness L* (0 black … 100 white) of "#rrggbb", from WCAG's
// relative luminance Y, which contrast_ratio gives against black: (Y + 0.05) / 0.05.
double lightness(const std::string& colour) {
    const double y = qkv::contrast_ratio(colour, "#000000") * 0.05 - 0.05;
    return y > 0.008856 ? 116 * std::cbrt(y) - 16 : 903.3 * y;
}

int channel(const std::string& colour, int which) { return std::stoi(colour.substr(1 + 2 * which, 2), nullptr, 16); }

}  // namespace

TEST_CASE("the diverging map is centred on 0, symmetric, and tells the signs apart", "[svg][unit]") {
    // ColorBrewer's RdBu: its middle, neutral grey, and its two ends
    CHECK(qkv::diverging_colour(0.0) == "#f7f7f7");
    CHECK(qkv::diverging_colour(-1.0) == "#053061");
    CHECK(qkv::diverging_colour(1.0) == "#67001f");
    CHECK(qkv::diverging_colour(-7.0) == qkv::diverging_colour(-1.0));
    const double neutral = lightness(qkv::diverging_colour(0.0));
    double previous = neutral;
    for (int k = 1; k <= 100; ++k) {
        const double t = k / 100.0;
        const std::string up = qkv::diverging_colour(t);
        const std::string down = qkv::diverging_colour(-t);
        CAPTURE(t, up, down);
        // v and −v equally far from the neutral middle (in CIELAB lightness, within 5 of 100: RdBu's own stops differ by up to 4), each side darker the farther out
        CHECK(std::abs((neutral - lightness(up)) - (neutral - lightness(down))) <= 5.0);
        CHECK(lightness(up) < previous + 0.5);
        previous = lightness(up);
        // the sign is the hue: red above 0, blue below
        CHECK(channel(up, 0) > channel(up, 2));
        CHECK(channel(down, 2) > channel(down, 0));
    }
}

TEST_CASE("black or white text reads at 4.5:1 or more on every colour of both maps", "[svg][unit]") {
    for (int k = -200; k <= 200; ++k) {
        const std::string diverging = qkv::diverging_colour(k / 200.0);
        const std::string sequential = qkv::ramp_colour(std::abs(k) / 200.0);
        CAPTURE(k, diverging, sequential);
        CHECK(qkv::contrast_ratio(diverging, qkv::text_colour_on(diverging)) >= 4.5);
        CHECK(qkv::contrast_ratio(sequential, qkv::text_colour_on(sequential)) >= 4.5);
    }
}
