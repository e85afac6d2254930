// The document formats read by other programs: CSV parsed back, Markdown
// through pandoc, LaTeX through pdflatex, SVG through xmllint; and the text
// format's colour, ASCII, precision and summarising. Needs pandoc, pdflatex
// (texlive-latex-base, texlive-latex-recommended), xmllint (libxml2-utils) and
// Debian's python3, as ./bootstrap installs them.
#include "builtin/builtin.hpp"
#include "support.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using qkv::test::run_qkv;

namespace {

struct Shell {
    int status = -1;
    std::string out;  // stdout and stderr together
};

// Runs a shell command and collects its output (stderr included).
Shell shell(const std::string& command) {
    Shell result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    std::size_t got = 0;
    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        result.out.append(buffer, got);
    }
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// A fresh folder under /tmp, removed at the end of the test.
class TempDir {
public:
    TempDir() {
        char name[] = "/tmp/qkv-formats-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        m_path = name;
    }
    ~TempDir() { std::filesystem::remove_all(m_path); }
    const std::string& path() const { return m_path; }
    std::string write(const std::string& name, const std::string& content) const {
        const std::string file = m_path + "/" + name;
        std::ofstream(file, std::ios::binary) << content;
        return file;
    }

private:
    std::string m_path;
};

std::string run_ok(const std::vector<std::string>& args, const std::string& input = "") {
    const auto result = run_qkv(args, input);
    INFO("stderr: " << result.err);
    REQUIRE(result.status == 0);
    CHECK(result.err.empty());
    return result.out;
}

// RFC 4180 reader: quoted fields may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string field;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            record.push_back(field);
            field.clear();
        } else if (c == '\n') {
            record.push_back(field);
            field.clear();
            records.push_back(record);
            record.clear();
        } else {
            field += c;
        }
    }
    REQUIRE_FALSE(quoted);
    REQUIRE(field.empty());
    return records;
}

// Labels that need escaping in every format: CSV commas and quotes, Markdown
// pipes and HTML-like tags, LaTeX specials, XML entities.
const char* const k_awkward_yaml = R"(
title: 'Escapes: 50% & $x_1$ #{~^\} <b>'
tokens: ['a,b', 'say "hi"', '<s>', 'x|y & 5% $_^']
inputs: [[1, 0], [0, 1], [1, 1], [0.5, -0.5]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
mask: causal
)";

}  // namespace

TEST_CASE("CSV is one tidy table that parses back to the trace's numbers", "[formats][csv]") {
    const std::string out = run_ok({"run", "masked", "-f", "csv"});
    const auto records = parse_csv(out);
    REQUIRE(records.front() == std::vector<std::string>{"step", "head", "row", "col", "row_label", "col_label", "value"});

    const auto* example = qkv::find_builtin_example("masked");
    const qkv::Trace trace = qkv::test::compute_text(std::string(example->text));
    std::size_t cells = 0;
    for (const auto& step : trace.steps) {
        cells += step.values.n_elem;
    }
    REQUIRE(records.size() == cells + 1);
    for (std::size_t r = 1; r < records.size(); ++r) {
        const auto& record = records[r];
        REQUIRE(record.size() == 7);
        const int head = record[1].empty() ? 0 : std::stoi(record[1]);
        const qkv::Step* step = trace.find(record[0], head);
        REQUIRE(step != nullptr);
        CHECK(record[1].empty() == !qkv::is_per_head_step(record[0]));
        const auto i = static_cast<arma::uword>(std::stoul(record[2]) - 1);
        const auto j = static_cast<arma::uword>(std::stoul(record[3]) - 1);
        CHECK(record[4] == step->row_labels[i]);
        CHECK(record[5] == step->col_labels[j]);
        const double value = step->values(i, j);
        if (std::isinf(value)) {
            CHECK(record[6] == "-inf");
        } else {
            // full precision: the text reads back as the very same double
            CHECK(std::strtod(record[6].c_str(), nullptr) == value);
        }
    }
}

TEST_CASE("CSV quotes labels with commas and quotes, and Python's csv module reads it", "[formats][csv]") {
    TempDir dir;
    const std::string out = run_ok({"run", "-", "-f", "csv", "-s", "weights"}, k_awkward_yaml);
    CHECK(out.find("weights,1,1,1,\"a,b\",\"a,b\",1.0\n") != std::string::npos);
    CHECK(out.find(",\"say \"\"hi\"\"\",") != std::string::npos);
    const auto records = parse_csv(out);
    REQUIRE(records.size() == 1 + 16);
    CHECK(records[5][4] == "say \"hi\"");
    CHECK(records[16][5] == "x|y & 5% $_^");

    // 4 × 4 weights, 16 rows, and the -inf of no cell (weights are never −∞)
    const std::string csv = dir.write("weights.csv", out);
    const auto python = shell("/usr/bin/python3 -c \"import csv,sys; rows=list(csv.DictReader(open(sys.argv[1]))); "
                              "print(len(rows), rows[4]['row_label'], round(sum(float(r['value']) for r in rows), 9))\" " +
                              csv);
    REQUIRE(python.status == 0);
    // four rows of weights, each summing to 1
    CHECK(python.out == "16 say \"hi\" 4.0\n");
}

TEST_CASE("Markdown renders through pandoc as headings and tables", "[formats][markdown]") {
    TempDir dir;
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const std::string md = dir.write(name + ".md", run_ok({"run", name, "-f", "markdown"}));
        const auto html = shell("pandoc -f gfm -t html " + md);
        REQUIRE(html.status == 0);
        const qkv::Trace trace = qkv::test::compute_text(std::string(example.text));
        std::size_t tables = 0;
        std::size_t headings = 0;
        for (std::size_t at = 0; (at = html.out.find("<table>", at)) != std::string::npos; ++at) {
            ++tables;
        }
        for (std::size_t at = 0; (at = html.out.find("<h2 ", at)) != std::string::npos; ++at) {
            ++headings;
        }
        CHECK(tables == trace.steps.size());
        CHECK(headings == trace.steps.size());
        CHECK(html.out.find("<h1 ") != std::string::npos);
    }
}

TEST_CASE("Markdown escapes pipes, tags and math in labels", "[formats][markdown]") {
    TempDir dir;
    const std::string out = run_ok({"run", "-", "-f", "markdown", "-s", "weights"}, k_awkward_yaml);
    CHECK(out.find("| x\\|y \\& 5% \\$\\_^ |") != std::string::npos);
    const auto html = shell("pandoc -f gfm -t html " + dir.write("awkward.md", out));
    REQUIRE(html.status == 0);
    // the label with a pipe stays in one cell: every row has the label and 4 numbers
    CHECK(html.out.find("<td style=\"text-align: left;\">x|y &amp; 5% $_^</td>") != std::string::npos);
    CHECK(html.out.find("&lt;s&gt;") != std::string::npos);
    CHECK(html.out.find("<s>") == std::string::npos);
    CHECK(html.out.find("<b>") == std::string::npos);
    std::size_t cells = 0;
    for (std::size_t at = 0; (at = html.out.find("<td", at)) != std::string::npos; ++at) {
        ++cells;
    }
    CHECK(cells == 4 * 5);
}

TEST_CASE("LaTeX compiles with pdflatex, standalone and as a fragment", "[formats][latex]") {
    TempDir dir;
    const auto compile = [&](const std::string& name, const std::string& tex) {
        dir.write(name + ".tex", tex);
        const auto result = shell("cd " + dir.path() + " && pdflatex -interaction=nonstopmode -halt-on-error " + name +
                                  ".tex");
        INFO(result.out.substr(result.out.size() > 3000 ? result.out.size() - 3000 : 0));
        CHECK(result.status == 0);
        CHECK(std::filesystem::exists(dir.path() + "/" + name + ".pdf"));
    };
    compile("masked", run_ok({"run", "masked", "-f", "latex", "--standalone"}));
    compile("awkward", run_ok({"run", "-", "-f", "latex", "--standalone"}, k_awkward_yaml));
    const std::string fragment = run_ok({"run", "two-heads", "-f", "latex"});
    CHECK(fragment.find("\\documentclass") == std::string::npos);
    compile("fragment", "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n" + fragment +
                            "\\end{document}\n");
}

TEST_CASE("LaTeX escapes special characters and writes symbols as math", "[formats][latex]") {
    const std::string out = run_ok({"run", "-", "-f", "latex", "-s", "masked_scores"}, k_awkward_yaml);
    CHECK(out.find("\\section*{Escapes: 50\\% \\& \\$x\\_1\\$ \\#\\{\\~{}\\^{}\\textbackslash{}\\} "
                   "$<$b$>$}") != std::string::npos);
    CHECK(out.find("x$|$y \\& 5\\% \\$\\_\\^{}") != std::string::npos);
    CHECK(out.find("$-\\infty$") != std::string::npos);
    // pdflatex's input: ASCII only
    for (const char c : run_ok({"run", "masked", "-f", "latex", "--standalone"})) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
}

TEST_CASE("SVG is valid XML with one heatmap panel per head", "[formats][svg]") {
    TempDir dir;
    const std::string out = run_ok({"run", "two-heads", "-f", "svg"});
    const auto lint = shell("xmllint --noout " + dir.write("two-heads.svg", out));
    INFO(lint.out);
    CHECK(lint.status == 0);
    CHECK(out.find("Attention weights · head 1") != std::string::npos);
    CHECK(out.find("Attention weights · head 2") != std::string::npos);
    // 3 × 3 cells per head, each with a tooltip naming query and key, and the value written in it
    std::size_t cells = 0;
    for (std::size_t at = 0; (at = out.find("<title>", at)) != std::string::npos; ++at) {
        ++cells;
    }
    CHECK(cells == 1 + 2 * 9);
    CHECK(out.find("<title>like → like: 0.5760</title>") != std::string::npos);
    CHECK(out.find("<g font-size=\"11\" text-anchor=\"middle\">") != std::string::npos);
    CHECK(out.find(">0.5760</text>") != std::string::npos);
    CHECK(out.find("linearGradient") != std::string::npos);

    const std::string one = run_ok({"run", "two-heads", "-f", "svg", "--head", "2"});
    CHECK(one.find("head 1") == std::string::npos);
    CHECK(one.find("head 2") != std::string::npos);
}

TEST_CASE("SVG escapes labels, marks blocked cells and leaves values out of large panels", "[formats][svg]") {
    TempDir dir;
    const std::string awkward = run_ok({"run", "-", "-f", "svg", "-s", "masked_scores,weights"}, k_awkward_yaml);
    CHECK(shell("xmllint --noout " + dir.write("awkward.svg", awkward)).status == 0);
    CHECK(awkward.find("&lt;s&gt;") != std::string::npos);
    CHECK(awkward.find("say &quot;hi&quot;") != std::string::npos);
    CHECK(awkward.find("url(#blocked)") != std::string::npos);
    CHECK(awkward.find("Masked scores") != std::string::npos);

    const std::string large_yaml = R"(
inputs: {random: {rows: 40, cols: 4, seed: 3}}
weights: {query: {random: {rows: 4, cols: 2, seed: 1}}, key: {random: {rows: 4, cols: 2, seed: 2}}, value: {random: {rows: 4, cols: 2, seed: 4}}}
)";
    const std::string large = run_ok({"run", "-", "-f", "svg"}, large_yaml);
    CHECK(shell("xmllint --noout " + dir.write("large.svg", large)).status == 0);
    CHECK(large.find("<g font-size=\"11\" text-anchor=\"middle\">") == std::string::npos);
    CHECK(large.find("<title>x40 → x40: ") != std::string::npos);

    const std::string huge_yaml = R"(
inputs: {random: {rows: 300, cols: 2, seed: 3}}
weights: {query: [[1], [0]], key: [[1], [0]], value: [[1], [0]]}
)";
    qkv::test::require_input_error(run_qkv({"run", "-", "-f", "svg"}, huge_yaml), "draws at most 256 × 256");
}

TEST_CASE("text colour shades the weights and marks each row's largest only when asked", "[formats][text]") {
    const std::string plain = run_ok({"run", "illustrated", "-s", "weights"});
    CHECK(plain.find('\x1b') == std::string::npos);
    CHECK(run_ok({"run", "illustrated", "--color", "never"}).find('\x1b') == std::string::npos);
    // NO_COLOR and TERM=dumb keep auto colour off (stdout here is a pipe anyway)
    qkv::test::CliRun no_color;
    no_color.args = {"run", "illustrated"};
    no_color.env = {{"NO_COLOR", "1"}, {"TERM", "xterm-256color"}};
    CHECK(qkv::test::run_qkv(no_color).out.find('\x1b') == std::string::npos);

    const std::string coloured = run_ok({"run", "illustrated", "-s", "weights,scores", "--color", "always"});
    // 9 weights shaded; the row maxima, worked by hand from the scores [2,4,4], [4,16,12], [4,12,10]:
    // row 1 has two equal largest weights (0.4683), rows 2 and 3 one each: 4 marks
    std::size_t shaded = 0;
    std::size_t marked = 0;
    for (std::size_t at = 0; (at = coloured.find("\x1b[48;5;", at)) != std::string::npos; ++at) {
        ++shaded;
    }
    for (std::size_t at = 0; (at = coloured.find("\x1b[1;4m", at)) != std::string::npos; ++at) {
        ++marked;
    }
    CHECK(shaded == 9);
    CHECK(marked == 4);
}

TEST_CASE("text precision, ASCII and summarising", "[formats][text]") {
    CHECK(run_ok({"run", "illustrated", "-s", "weights", "-p", "2"}).find(" 0.06 ") != std::string::npos);
    CHECK(run_ok({"run", "illustrated", "-s", "weights", "-p", "0"}).find(" 0.0634") == std::string::npos);

    const std::string ascii = run_ok({"run", "-", "--ascii"}, k_awkward_yaml);
    for (const char c : ascii) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
    CHECK(ascii.find("-inf") != std::string::npos);
    CHECK(ascii.find("4 x 4") != std::string::npos);

    const std::string yaml = R"(
inputs: {random: {rows: 13, cols: 13, seed: 5}}
weights: {query: {random: {rows: 13, cols: 2, seed: 1}}, key: {random: {rows: 13, cols: 2, seed: 2}}, value: {random: {rows: 13, cols: 2, seed: 3}}}
)";
    // 13 × 13 is over the 12 × 12 limit: 6 first, a gap, 5 last in each direction
    const std::string summarised = run_ok({"run", "-", "-s", "inputs"}, yaml);
    CHECK(summarised.find("x6 ") != std::string::npos);
    CHECK(summarised.find("x7 ") == std::string::npos);
    CHECK(summarised.find("x8 ") == std::string::npos);
    CHECK(summarised.find("x9 ") != std::string::npos);
    CHECK(summarised.find("d7") == std::string::npos);
    CHECK(summarised.find("…") != std::string::npos);
    const std::string full = run_ok({"run", "-", "-s", "inputs", "--full"}, yaml);
    CHECK(full.find("x7 ") != std::string::npos);
    CHECK(full.find("d7") != std::string::npos);
    // Markdown and LaTeX tables are summarised the same way
    CHECK(run_ok({"run", "-", "-s", "inputs", "-f", "markdown"}, yaml).find("| x7 ") == std::string::npos);
    CHECK(run_ok({"run", "-", "-s", "inputs", "-f", "markdown", "--full"}, yaml).find("| x7 ") != std::string::npos);
    CHECK(run_ok({"run", "-", "-s", "inputs", "-f", "latex"}, yaml).find("$\\cdots$") != std::string::npos);
}

TEST_CASE("the heads of a step share its number, so concat is step 9 with any number of heads", "[formats][text]") {
    const std::string text = run_ok({"run", "two-heads", "--brief", "--color", "never"});
    CHECK(text.find("Step 2 · Queries · head 2") != std::string::npos);
    CHECK(text.find("Step 9 · Concatenated heads") != std::string::npos);
    CHECK(text.find("Step 10 · Output") != std::string::npos);
    const std::string markdown = run_ok({"run", "two-heads", "-f", "markdown", "-s", "concat"});
    CHECK(markdown.find("Step 9 · Concatenated heads") != std::string::npos);
}
