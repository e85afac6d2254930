// Golden files of the document formats and of `qkv explain` for every built-in
// example: Markdown, LaTeX (standalone), SVG and explain compared exactly (they
// print at 4 decimals); CSV compared field by field with the numbers within
// 1e-12, as the JSON goldens are (BLAS kernels may differ in the last bits).
#include "builtin/builtin.hpp"
#include "support.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

using qkv::test::check_golden;
using qkv::test::lines_of;
using qkv::test::run_qkv;

namespace {

// The CSV of qkv ends each line with its value, after the last comma.
void check_csv_golden(const std::string& name, const std::string& actual) {
    const char* update = std::getenv("QKV_UPDATE_GOLDEN");
    if (update != nullptr && std::string(update) == "1") {
        check_golden(name, actual);
        return;
    }
    const auto got = lines_of(actual);
    const auto expected = lines_of(qkv::test::read_repo_file("tests/golden/" + name));
    REQUIRE(got.size() == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
        const auto cut_got = got[k].rfind(',');
        const auto cut_expected = expected[k].rfind(',');
        INFO(name << " line " << k + 1 << "\nexpected: " << expected[k] << "\ngot:      " << got[k]);
        REQUIRE(got[k].substr(0, cut_got) == expected[k].substr(0, cut_expected));
        const std::string g = got[k].substr(cut_got + 1);
        const std::string e = expected[k].substr(cut_expected + 1);
        if (k == 0 || e == "-inf") {
            REQUIRE(g == e);
            continue;
        }
        const double gv = std::stod(g);
        const double ev = std::stod(e);
        const double difference = std::fabs(gv - ev);
        REQUIRE((difference <= 1e-12 || difference <= 1e-12 * std::fabs(ev)));
    }
    SUCCEED(name << " agrees");
}

// Row 2 (or 1) of every step the example has, each per-head step once for
// its last head: the cells of the explain golden files.
std::vector<std::string> explain_cells(const std::string& yaml) {
    const qkv::Trace trace = qkv::test::compute_text(yaml);
    std::vector<std::string> cells;
    for (const auto& step : trace.steps) {
        const bool last_head = step.head == 0 || step.head == static_cast<int>(trace.dims.heads);
        if (!last_head) {
            continue;
        }
        std::string cell = step_text(step.id) + "[" + (step.values.n_rows >= 2 ? "2" : "1") + "]";
        if (step.head > 1) {
            cell += "@" + std::to_string(step.head);
        }
        cells.push_back(cell);
        if (step.id == "scores" || step.id == "weights" || step.id == "queries") {
            // one single cell as well
            cells.push_back(step_text(step.id) + "[1," + std::to_string(step.values.n_cols) + "]" +
                            (step.head > 1 ? "@" + std::to_string(step.head) : ""));
        }
    }
    return cells;
}

}  // namespace

TEST_CASE("every built-in example's Markdown, LaTeX, CSV and SVG match their golden files", "[formats][golden][cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const auto markdown = run_qkv({"run", name, "-f", "markdown"});
        REQUIRE(markdown.status == 0);
        check_golden(name + ".md", markdown.out);

        const auto latex = run_qkv({"run", name, "-f", "latex", "--standalone"});
        REQUIRE(latex.status == 0);
        check_golden(name + ".tex", latex.out);

        const auto csv = run_qkv({"run", name, "-f", "csv"});
        REQUIRE(csv.status == 0);
        check_csv_golden(name + ".csv", csv.out);

        const auto svg = run_qkv({"run", name, "-f", "svg"});
        REQUIRE(svg.status == 0);
        check_golden(name + ".svg", svg.out);
    }
}

TEST_CASE("every built-in example's explanations match their golden files", "[explain][golden][cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        std::vector<std::string> args = {"explain", name};
        for (const auto& cell : explain_cells(std::string(example.text))) {
            args.push_back(cell);
        }
        const auto result = run_qkv(args);
        INFO(result.err);
        REQUIRE(result.status == 0);
        check_golden(name + ".explain.txt", result.out);
    }
}
