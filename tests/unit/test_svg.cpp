// The SVG's colours and layout: weights on the sequential blue ramp, every
// other step on the diverging map centred on 0, each number black or white by
// contrast (WCAG's 4.5:1), one band of panels per step with its heads side by
// side and wrapping, masked cells hatched and named in the legend, --dark; and
// the README's recipe for a PNG (rsvg-convert, librsvg2-bin), whose pixels are
// read back by tests/documents/png_pixels.py with Debian's python3.
#include "render/html.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <set>
#include <sstream>

using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::TempDir;

namespace {

// A cell of a panel as the SVG draws it: its square, fill and tooltip.
struct Cell {
    double x = 0;
    double y = 0;
    double side = 0;
    std::string fill;
    std::string title;  // "we → read: 0.5000"
};

std::vector<Cell> cells(const std::string& svg) {
    std::vector<Cell> found;
    const std::regex rect(
        "<rect x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" width=\"([0-9.]+)\" height=\"[0-9.]+\" fill=\"([^\"]+)\"><title>([^<]*)</title>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it) {
        found.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), (*it)[4], (*it)[5]});
    }
    return found;
}

// A number written in a cell: where its middle is, its colour and its text.
struct Number {
    double x = 0;
    double y = 0;
    std::string fill;
    std::string text;
};

std::vector<Number> numbers(const std::string& svg) {
    std::vector<Number> found;
    const std::regex text("<text x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" fill=\"(#[0-9a-f]{6})\">([^<]*)</text>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
        found.push_back({std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3], (*it)[4]});
    }
    return found;
}

// The cell a number is written in.
const Cell* cell_under(const std::vector<Cell>& all, const Number& number) {
    for (const Cell& cell : all) {
        if (number.x > cell.x && number.x < cell.x + cell.side && number.y > cell.y && number.y < cell.y + cell.side) {
            return &cell;
        }
    }
    return nullptr;
}

// The panels' headings ("Attention weights · head 2") and where they stand.
struct Heading {
    double x = 0;
    double y = 0;
    std::string text;
};

std::vector<Heading> headings(const std::string& svg) {
    std::vector<Heading> found;
    const std::regex text("<text x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" font-size=\"14\" font-weight=\"bold\">([^<]*)</text>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
        found.push_back({std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3]});
    }
    return found;
}

const Heading& heading(const std::vector<Heading>& all, const std::string& text) {
    for (const Heading& h : all) {
        if (h.text == text) {
            return h;
        }
    }
    FAIL("no panel is headed " << text);
    return all.front();
}

double attribute(const std::string& svg, const std::string& name) {
    std::smatch match;
    REQUIRE(std::regex_search(svg, match, std::regex("<svg [^>]*\\b" + name + "=\"([0-9.]+)\"")));
    return std::stod(match[1]);
}

// CIELAB lightness L* (0 black … 100 white) of "#rrggbb", from WCAG's
// relative luminance Y, which contrast_ratio gives against black: (Y + 0.05) / 0.05.
double lightness(const std::string& colour) {
    const double y = qkv::contrast_ratio(colour, "#000000") * 0.05 - 0.05;
    return y > 0.008856 ? 116 * std::cbrt(y) - 16 : 903.3 * y;
}

int channel(const std::string& colour, int which) { return std::stoi(colour.substr(1 + 2 * which, 2), nullptr, 16); }

// Every number in every cell of `svg` against the colour of its cell.
void require_readable_numbers(const std::string& svg) {
    const auto all = cells(svg);
    const auto written = numbers(svg);
    REQUIRE_FALSE(written.empty());
    for (const Number& number : written) {
        const Cell* cell = cell_under(all, number);
        REQUIRE(cell != nullptr);
        CAPTURE(cell->title, cell->fill, number.fill);
        CHECK(qkv::contrast_ratio(cell->fill, number.fill) >= 4.5);
    }
}

// inputs of both signs, with 2 the largest magnitude: −2 and 2 are the map's two ends, 0 its middle
constexpr char k_signed_yaml[] = R"(
tokens: [a, b, c]
inputs: [[2, -2], [0, 1], [-1, 0.5]]
weights: {query: [[1], [0]], key: [[1], [0]], value: [[1], [0]]}
)";

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

TEST_CASE("SVG draws signed steps on the diverging map centred on 0, weights on the blue ramp", "[svg][cli]") {
    const std::string svg = run_ok({"run", "-", "-f", "svg", "-s", "inputs,weights"}, k_signed_yaml);
    const auto all = cells(svg);
    const auto fill_of = [&](const std::string& title) {
        for (const Cell& cell : all) {
            if (cell.title == title) {
                return cell.fill;
            }
        }
        FAIL("no cell has the tooltip " << title);
        return std::string();
    };
    // the inputs' limits are ±2 (their largest magnitude): 2 and −2 at the ends, 0 neutral, 1 and −1 halfway
    CHECK(fill_of("a → d1: 2.0000") == "#67001f");
    CHECK(fill_of("a → d2: -2.0000") == "#053061");
    CHECK(fill_of("b → d1: 0.0000") == "#f7f7f7");
    CHECK(fill_of("b → d2: 1.0000") == qkv::diverging_colour(0.5));
    CHECK(fill_of("c → d1: -1.0000") == qkv::diverging_colour(-0.5));
    CHECK(fill_of("c → d2: 0.5000") == qkv::diverging_colour(0.25));
    // the scale bar reads from −2 to 2 with 0 marked in its middle
    CHECK(svg.find(">-2.00</text>") != std::string::npos);
    CHECK(svg.find(">0</text>") != std::string::npos);
    CHECK(svg.find(">2.00</text>") != std::string::npos);

    // weights: the blue ramp from 0 to 1, whatever their smallest and largest
    const auto doc = nlohmann::json::parse(run_ok({"run", "-", "-f", "json", "-s", "weights"}, k_signed_yaml));
    const auto& weights = doc["steps"][0]["values"];
    const std::vector<std::string> tokens = {"a", "b", "c"};
    for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t j = 0; j < 3; ++j) {
            const double w = weights[i][j].get<double>();
            char value[32];
            std::snprintf(value, sizeof value, "%.4f", w);
            CHECK(fill_of(tokens[i] + " → " + tokens[j] + ": " + value) == qkv::ramp_colour(w));
        }
    }
    CHECK(svg.find(">0.00</text>") != std::string::npos);
    CHECK(svg.find(">1.00</text>") != std::string::npos);
}

TEST_CASE("every number in an SVG reads at 4.5:1 or more on its cell, light and dark", "[svg][cli]") {
    for (const std::string name : {"illustrated", "two-heads", "masked", "gqa", "backward"}) {
        for (const bool dark : {false, true}) {
            std::vector<std::string> args = {"run", name, "-f", "svg", "-s", "inputs,queries,scores,weights,output"};
            if (dark) {
                args.push_back("--dark");
            }
            CAPTURE(name, dark);
            require_readable_numbers(run_ok(args));
        }
    }
    require_readable_numbers(run_ok({"run", "-", "-f", "svg", "-s", "inputs,scores"}, k_signed_yaml));
}

TEST_CASE("SVG gives each step one row of panels, its heads side by side", "[svg][cli]") {
    const std::string svg = run_ok({"run", "two-heads", "-f", "svg", "-s", "scores,weights"});
    const auto all = headings(svg);
    REQUIRE(all.size() == 4);
    const Heading& scores_1 = heading(all, "Scores · head 1");
    const Heading& scores_2 = heading(all, "Scores · head 2");
    const Heading& weights_1 = heading(all, "Attention weights · head 1");
    const Heading& weights_2 = heading(all, "Attention weights · head 2");
    CHECK(scores_1.y == scores_2.y);
    CHECK(scores_1.x < scores_2.x);
    CHECK(weights_1.y == weights_2.y);
    CHECK(weights_1.x == scores_1.x);
    CHECK(weights_1.y > scores_1.y);
    // a scale for each step
    CHECK(svg.find("id=\"scale2\"") != std::string::npos);
    CHECK(svg.find("id=\"scale3\"") == std::string::npos);
}

TEST_CASE("SVG wraps many heads into a grid of bounded width", "[svg][cli]") {
    // 8 heads of 6 tokens: 8 panels of 6 × 6 cells side by side would be over 2000 px wide
    const std::string yaml = R"(
heads: 8
inputs: {random: {rows: 6, cols: 16, seed: 3}}
weights: {query: {random: {rows: 16, cols: 16, seed: 1}}, key: {random: {rows: 16, cols: 16, seed: 2}},
          value: {random: {rows: 16, cols: 16, seed: 4}}}
)";
    const std::string svg = run_ok({"run", "-", "-f", "svg"}, yaml);
    CHECK(attribute(svg, "width") <= 1200);
    const auto all = headings(svg);
    REQUIRE(all.size() == 8);
    // more than one line of panels, the lines starting at the same x, each head once
    std::set<double> lines;
    std::set<double> columns;
    for (const Heading& h : all) {
        lines.insert(h.y);
        columns.insert(h.x);
    }
    CHECK(lines.size() >= 2);
    CHECK(columns.size() < 8);
    CHECK(heading(all, "Attention weights · head 1").x == heading(all, "Attention weights · head 5").x);
    CHECK(heading(all, "Attention weights · head 1").y < heading(all, "Attention weights · head 8").y);

    // four heads (gqa) stay a sensible width too
    CHECK(attribute(run_ok({"run", "gqa", "-f", "svg", "-s", "scores,weights"}), "width") <= 1200);
}

TEST_CASE("SVG hatches masked cells, weights included, and names the hatch in the legend", "[svg][cli]") {
    // masked: causal, and no query sees <pad>; the blocked cells are the −∞ of masked_scores
    const auto doc = nlohmann::json::parse(run_ok({"run", "masked", "-f", "json", "-s", "masked_scores"}));
    std::size_t blocked = 0;
    for (const auto& row : doc["steps"][0]["values"]) {
        for (const auto& value : row) {
            blocked += value.is_string() && value.get<std::string>() == "-inf" ? 1 : 0;
        }
    }
    // causal: the 6 cells above the diagonal; <pad>: the last key for the last query too
    REQUIRE(blocked == 7);
    for (const auto& args : std::vector<std::vector<std::string>>{{"run", "masked", "-f", "svg"},
                                                                  {"run", "masked", "-f", "svg", "-s", "weights"},
                                                                  {"run", "masked", "-f", "svg", "-s", "masked_scores"}}) {
        CAPTURE(args);
        const std::string svg = run_ok(args);
        const auto all = cells(svg);
        REQUIRE(all.size() == 16);
        std::size_t hatched = 0;
        for (const Cell& cell : all) {
            const bool masked = cell.fill == "url(#masked)";
            CAPTURE(cell.title);
            CHECK(masked == (cell.title.find("(masked)") != std::string::npos));
            hatched += masked ? 1 : 0;
        }
        CHECK(hatched == blocked);
        // no number over the hatch: the 7 unmasked cells only
        CHECK(numbers(svg).size() == 16 - blocked);
        CHECK(svg.find("<pattern id=\"masked\"") != std::string::npos);
        const bool weights = args.back() != "masked_scores";
        CHECK(svg.find(weights ? ">masked (0)</text>" : ">masked (−∞)</text>") != std::string::npos);
    }
    // nothing masked, no hatch and no legend for it
    const std::string open = run_ok({"run", "two-heads", "-f", "svg"});
    CHECK(open.find("masked") == std::string::npos);
}

TEST_CASE("SVG for a dark page with --dark, which the other formats refuse", "[svg][cli]") {
    const std::string light = run_ok({"run", "masked", "-f", "svg", "-s", "scores,weights"});
    const std::string dark = run_ok({"run", "masked", "-f", "svg", "-s", "scores,weights", "--dark"});
    const std::regex page("<rect width=\"100%\" height=\"100%\" fill=\"(#[0-9a-f]{6})\"/>");
    const std::regex ink("<svg [^>]* fill=\"(#[0-9a-f]{6})\">");
    std::smatch match;
    REQUIRE(std::regex_search(light, match, page));
    const std::string light_page = match[1];
    REQUIRE(std::regex_search(dark, match, page));
    const std::string dark_page = match[1];
    REQUIRE(std::regex_search(dark, match, ink));
    const std::string dark_ink = match[1];
    CHECK(lightness(light_page) > 90);
    CHECK(lightness(dark_page) < 20);
    // the titles and labels light on the dark page, and every other colour of text readable on it
    CHECK(qkv::contrast_ratio(dark_page, dark_ink) >= 7);
    const std::regex text_fill("<text [^>]*fill=\"(#[0-9a-f]{6})\"[^>]*>[^<]*(keys|queries|rows|columns)");
    for (auto it = std::sregex_iterator(dark.begin(), dark.end(), text_fill); it != std::sregex_iterator(); ++it) {
        CHECK(qkv::contrast_ratio(dark_page, (*it)[1]) >= 4.5);
    }
    // the cells keep their colours: a value has one colour in both pictures
    const auto light_cells = cells(light);
    const auto dark_cells = cells(dark);
    REQUIRE(light_cells.size() == dark_cells.size());
    for (std::size_t k = 0; k < light_cells.size(); ++k) {
        CHECK(light_cells[k].fill == dark_cells[k].fill);
    }

    for (const std::string format : {"text", "markdown", "html", "json"}) {
        CAPTURE(format);
        const auto refused = run_qkv({"run", "masked", "-f", format, "--dark"});
        qkv::test::require_input_error(refused, "--dark is given with -f " + format + "; expected -f svg");
        CHECK(refused.err.find("  hint: add -f svg, or leave out --dark") != std::string::npos);
    }
}

TEST_CASE("rsvg-convert makes a PNG of the SVG with the colours the SVG names", "[svg][cli][documents]") {
    if (shell("command -v rsvg-convert").status != 0) {
        WARN("rsvg-convert is not installed (librsvg2-bin): the README's PNG recipe is not checked");
        return;
    }
    TempDir dir;
    for (const bool dark : {false, true}) {
        CAPTURE(dark);
        std::vector<std::string> args = {"run", "masked", "-f", "svg", "-s", "scores,weights"};
        if (dark) {
            args.push_back("--dark");
        }
        const std::string svg = run_ok(args);
        const std::string png = dir.path() + (dark ? "/dark.png" : "/light.png");
        // the README's recipe
        const auto converted = shell("rsvg-convert -o " + png + " " + dir.write("weights.svg", svg));
        INFO(converted.out);
        REQUIRE(converted.status == 0);

        // a diverging cell (a negative score), a masked weight, and the page
        const std::vector<Cell> drawn = cells(svg);
        const Cell* negative = nullptr;
        const Cell* masked = nullptr;
        for (const Cell& cell : drawn) {
            if (negative == nullptr && cell.fill[0] == '#' && channel(cell.fill, 2) > channel(cell.fill, 0) + 40) {
                negative = &cell;
            }
            if (cell.fill == "url(#masked)") {
                masked = &cell;
            }
        }
        REQUIRE(negative != nullptr);
        REQUIRE(masked != nullptr);
        const auto point = [](double x, double y) {
            return std::to_string(static_cast<int>(x)) + "," + std::to_string(static_cast<int>(y));
        };
        const auto read = shell("/usr/bin/python3 " + qkv::test::source_dir() + "/tests/documents/png_pixels.py " + png +
                                " 2,2 " + point(negative->x + 3, negative->y + 3) + " " +
                                point(masked->x + 3, masked->y + 3) + "," +
                                point(masked->x + masked->side - 3, masked->y + masked->side - 3));
        INFO(read.out);
        REQUIRE(read.status == 0);
        std::istringstream lines(read.out);
        int width = 0;
        int height = 0;
        std::string page;
        std::string cell;
        std::string lightest;
        std::string darkest;
        std::string kind;
        lines >> width >> height >> page >> cell >> lightest >> darkest >> kind;
        // the SVG's size in pixels (rsvg-convert rounds a fraction up)
        CHECK(std::abs(width - attribute(svg, "width")) < 1);
        CHECK(std::abs(height - attribute(svg, "height")) < 1);
        CHECK(page == (dark ? "#121212" : "#ffffff"));
        CHECK(cell == negative->fill);
        // the hatch: grey, its light ground (#bdbdbd) and dark lines (#525252) both there,
        // give or take the smoothing of the lines' edges
        CHECK(kind == "grey");
        CHECK(std::abs(channel(lightest, 0) - 0xbd) <= 10);
        CHECK(std::abs(channel(darkest, 0) - 0x52) <= 10);
    }
}
