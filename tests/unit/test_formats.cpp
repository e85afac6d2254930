// The document formats read by other programs: CSV parsed back, Markdown
// through pandoc, LaTeX through pdflatex, SVG through xmllint; and the text
// format's colour, ASCII, precision and summarising. Needs pandoc, pdflatex
// (texlive-latex-base, texlive-latex-recommended), xmllint (libxml2-utils) and
// Debian's python3, as ./bootstrap installs them.
#include "builtin/builtin.hpp"
#include "render/table.hpp"
#include "attention/divisor.hpp"
#include "attention/steps.hpp"
#include "support.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::TempDir;
using qkv::test::count_of;

namespace {

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

TEST_CASE("CSV is one tidy table that parses back to the trace's numbers", "[formats][csv][cli]") {
    const std::string out = run_ok({"run", "masked", "-f", "csv"});
    const auto records = parse_csv(out);
    REQUIRE(records.front() == std::vector<std::string>{"step", "head", "row", "col", "row_label", "col_label", "value"});

    const auto* example = qkv::find_builtin_example("masked");
    const qkv::Trace trace = qkv::test::compute_text(std::string(example->text));
    std::size_t cells = 0;
    for (const auto& step : trace.steps) {
        // the example's weights only when --steps names them: a program reading the table gets the spec's steps
        cells += qkv::step_row(step.id).parameter ? 0 : step.values.n_elem;
    }
    REQUIRE(records.size() == cells + 1);
    const auto weights = parse_csv(run_ok({"run", "masked", "-f", "csv", "-s", "w_query,queries"}));
    REQUIRE(weights.size() == 1 + 3 * 2 + 4 * 2);  // W_Q is d_model × d_k = 3 × 2, Q is 4 × 2
    CHECK(weights[1][0] == "w_query");
    CHECK(weights[7][0] == "queries");
    for (std::size_t r = 1; r < records.size(); ++r) {
        const auto& record = records[r];
        REQUIRE(record.size() == 7);
        const int head = record[1].empty() ? 0 : std::stoi(record[1]);
        const qkv::Step* step = trace.find(record[0], head);
        REQUIRE(step != nullptr);
        CHECK(record[1].empty() == !qkv::is_per_head(qkv::test::step(record[0])));
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

TEST_CASE("CSV quotes labels with commas and quotes, and Python's csv module reads it", "[formats][csv][cli][documents]") {
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

TEST_CASE("Markdown renders through the README's pandoc command as headings, tables and math",
          "[formats][markdown][cli][documents]") {
    TempDir dir;
    const std::string readme_html = qkv::test::readme_pandoc_command("--mathjax");
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const std::string md = dir.write(name + ".md", run_ok({"run", name, "-f", "markdown"}));
        const auto made = shell(readme_html + " " + md + " -o " + dir.path() + "/" + name + ".html");
        INFO(made.out);
        REQUIRE(made.status == 0);
        std::ifstream file(dir.path() + "/" + name + ".html");
        const std::string html((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        const qkv::Trace trace = qkv::test::compute_text(std::string(example.text));
        const auto count = [&](const std::string& part) {
            std::size_t found = 0;
            for (std::size_t at = 0; (at = html.find(part, at)) != std::string::npos; ++at) {
                ++found;
            }
            return found;
        };
        CHECK(count("<table>") == trace.steps.size());
        CHECK(count("<h2 ") == trace.steps.size());
        CHECK(html.find("<h1 ") != std::string::npos);
        // each step's formula is math, and no dollar is left in the text
        CHECK(count("<span class=\"math inline\">") == trace.steps.size());
        const std::string body = html.substr(html.find("<body>"));
        CHECK(std::regex_replace(body, std::regex(R"(<span class="math inline">[^<]*</span>)"), "").find('$') ==
              std::string::npos);
    }
}

TEST_CASE("Markdown escapes pipes, tags and math in labels", "[formats][markdown][cli][documents]") {
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

TEST_CASE("LaTeX compiles with pdflatex, standalone and as a fragment", "[formats][latex][cli][documents]") {
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
    compile("fragment", "\\documentclass{article}\n\\usepackage{amsmath, amssymb, booktabs}\n\\begin{document}\n" + fragment +
                            "\\end{document}\n");
}

TEST_CASE("LaTeX escapes special characters and writes symbols as math", "[formats][latex][cli]") {
    const std::string out = run_ok({"run", "-", "-f", "latex", "-s", "masked_scores"}, k_awkward_yaml);
    // the title is prose: x_1 is set as math, as in a description
    CHECK(out.find("\\section*{\\raggedright Escapes: 50\\% \\& \\$$x_{1}$\\$ \\#\\{\\textasciitilde{}\\textasciicircum{}"
                   "\\textbackslash{}\\} $<$b$>$}") != std::string::npos);
    CHECK(out.find("x$|$y \\& 5\\% \\$\\_\\textasciicircum{}") != std::string::npos);
    CHECK(out.find("$-\\infty$") != std::string::npos);
    // pdflatex's input: ASCII only
    for (const char c : run_ok({"run", "masked", "-f", "latex", "--standalone"})) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
}

TEST_CASE("SVG is valid XML with one heatmap panel per head", "[formats][svg][cli][documents]") {
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

TEST_CASE("SVG escapes labels, marks blocked cells and leaves values out of large panels", "[formats][svg][cli][documents]") {
    TempDir dir;
    const std::string awkward = run_ok({"run", "-", "-f", "svg", "-s", "masked_scores,weights"}, k_awkward_yaml);
    CHECK(shell("xmllint --noout " + dir.write("awkward.svg", awkward)).status == 0);
    CHECK(awkward.find("&lt;s&gt;") != std::string::npos);
    CHECK(awkward.find("say &quot;hi&quot;") != std::string::npos);
    CHECK(awkward.find("url(#masked)") != std::string::npos);
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

TEST_CASE("text colour shades the weights and marks each row's largest only when asked", "[formats][text][cli]") {
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

TEST_CASE("text precision, ASCII and summarising", "[formats][text][cli]") {
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

TEST_CASE("the heads of a step share its number, so concat is step 9 with any number of heads", "[formats][text][cli]") {
    const std::string text = run_ok({"run", "two-heads", "--brief", "--color", "never"});
    CHECK(text.find("Step 2 · Queries · head 2") != std::string::npos);
    CHECK(text.find("Step 9 · Concatenated heads") != std::string::npos);
    CHECK(text.find("Step 10 · Output") != std::string::npos);
    const std::string markdown = run_ok({"run", "two-heads", "-f", "markdown", "-s", "concat"});
    CHECK(markdown.find("Step 9 · Concatenated heads") != std::string::npos);
}

namespace {

// Labels from many scripts: the nine Latin Extended-A letters utf8 inputenc
// does not know, Latin-1 letters and symbols, Greek, CJK and a decomposed é.
const char* const k_unicode_yaml = R"(
title: "Ħħĸ Ŀŀŉ Ŧŧſ: ½ µ ° © ¿ ¡ αβγ"
tokens: ['Łódź Šöß', 'œ ø å ç ñ', 'αβγ Ωο ς', '東京 Ðþ', "cafe\u0301 ½µ°©¿¡", 'Ħħĸ Ŀŀŉ Ŧŧſ Ąę']
inputs: [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [1, 2]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
)";

// Compiles a .tex file in `dir` with pdflatex; returns the log's text (empty
// when pdflatex failed, with the tail of its output as INFO).
std::string compile_tex(const TempDir& dir, const std::string& name, const std::string& tex) {
    dir.write(name + ".tex", tex);
    const auto result =
        shell("cd " + dir.path() + " && pdflatex -interaction=nonstopmode -halt-on-error " + name + ".tex");
    INFO(name << ": " << result.out.substr(result.out.size() > 3000 ? result.out.size() - 3000 : 0));
    CHECK(result.status == 0);
    CHECK(std::filesystem::exists(dir.path() + "/" + name + ".pdf"));
    std::ifstream log(dir.path() + "/" + name + ".log");
    std::stringstream text;
    text << log.rdbuf();
    return result.status == 0 ? text.str() : "";
}

// A fragment inside the smallest document: article, amsmath, and the font
// encoding given (OT1 when empty).
std::string fragment_document(const std::string& fragment, const std::string& preamble = "") {
    return "\\documentclass{article}\n" + preamble + "\\usepackage{amsmath, amssymb, booktabs}\n\\begin{document}\n" + fragment +
           "\\end{document}\n";
}

}  // namespace

TEST_CASE("LaTeX spells letters, Greek and symbols in ASCII and compiles in OT1 and T1", "[formats][latex][cli][documents]") {
    TempDir dir;
    const std::string standalone = run_ok({"run", "-", "-f", "latex", "--standalone"}, k_unicode_yaml);
    const std::string fragment = run_ok({"run", "-", "-f", "latex", "-s", "weights"}, k_unicode_yaml);
    // pdflatex's input: ASCII only, whatever the labels hold
    for (const char c : standalone + fragment) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
    // the spellings, as OT1 knows them
    CHECK(fragment.find("\\L{}\\'{o}d\\'{z} \\v{S}\\\"{o}\\ss{}") != std::string::npos);
    CHECK(fragment.find("\\oe{} \\o{} \\aa{} \\c{c} \\~{n}") != std::string::npos);
    CHECK(fragment.find("$\\alpha\\beta\\gamma$ $\\Omega o$ $\\varsigma$") != std::string::npos);
    CHECK(fragment.find("caf\\'{e} $\\frac{1}{2}\\mu^{\\circ}$\\copyright{}?`!`") != std::string::npos);
    // Ħ ĸ Ŧ ŧ, ogonek, eth and thorn have no OT1 glyph: "?"; ħ, Ŀ ŀ, ŉ and ſ have a spelling
    CHECK(fragment.find("?$\\hbar$? L$\\cdot$l$\\cdot$'n ??s ?? ") != std::string::npos);
    // CJK has no glyph in either font: one "?" a character
    CHECK(fragment.find("\n?? ?? ") != std::string::npos);
    CHECK(standalone.find("\\section*{\\raggedright ?$\\hbar$? L$\\cdot$l$\\cdot$'n ??s: $\\frac{1}{2}$ $\\mu$") !=
          std::string::npos);

    compile_tex(dir, "standalone", standalone);
    compile_tex(dir, "ot1", fragment_document(fragment));
    // T1 needs the EC fonts (bitmaps made by METAFONT) or Latin Modern
    const bool t1_fonts = shell("kpsewhich lmodern.sty").status == 0 ||
                          (shell("kpsewhich ecrm1000.tfm").status == 0 && shell("command -v mf").status == 0);
    if (t1_fonts) {
        const bool lmodern = shell("kpsewhich lmodern.sty").status == 0;
        compile_tex(dir, "t1",
                    fragment_document(fragment, std::string("\\usepackage[T1]{fontenc}\n") +
                                                    (lmodern ? "\\usepackage{lmodern}\n" : "")));
    }
}

TEST_CASE("long labels keep apart when cut, and whole with --full", "[formats][markdown][latex][text][cli]") {
    const std::string yaml = R"(
tokens: [transformer_layer_1, transformer_layer_2, a_rather_long_token_name]
inputs: [[1, 0], [0, 1], [1, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
)";
    // cut at the end they would both read "transformer_lay…": cut in the middle instead
    const std::string markdown = run_ok({"run", "-", "-f", "markdown", "-s", "weights"}, yaml);
    CHECK(markdown.find("transformer_lay…") == std::string::npos);
    CHECK(markdown.find("| transfor…layer_1 |") != std::string::npos);
    CHECK(markdown.find("| transfor…layer_2 |") != std::string::npos);
    // a label that is not confused with another is cut at the end as before
    CHECK(markdown.find("| a_rather_long_t… |") != std::string::npos);
    const std::string latex = run_ok({"run", "-", "-f", "latex", "-s", "weights"}, yaml);
    CHECK(latex.find("transfor\\ldots{}layer\\_1") != std::string::npos);
    CHECK(latex.find("transfor\\ldots{}layer\\_2") != std::string::npos);
    const std::string ascii = run_ok({"run", "-", "-s", "weights", "--ascii"}, yaml);
    CHECK(ascii.find("transfo...ayer_1 |") != std::string::npos);
    CHECK(ascii.find("transfo...ayer_2 |") != std::string::npos);

    // --full: every label whole, in every table format (LaTeX writes the
    // table in a few layouts, each repeating the labels)
    for (const std::string format : {"text", "markdown", "latex"}) {
        CAPTURE(format);
        const std::string full = run_ok({"run", "-", "-f", format, "-s", "weights", "--full"}, yaml);
        const std::string escaped = format == "latex" ? "\\_" : "_";
        const std::size_t tabulars = count_of(full, "\\begin{tabular}");
        const std::size_t expected = format == "latex" ? tabulars + count_of(full, "layout{%\n") : 2;  // rows and columns
        CHECK(count_of(full, "transformer" + escaped + "layer" + escaped + "1") == expected);
        CHECK(count_of(full, "a" + escaped + "rather" + escaped + "long" + escaped + "token" + escaped + "name") ==
              expected);
        CHECK(full.find("…") == std::string::npos);
        CHECK(full.find("\\ldots") == std::string::npos);
    }

    // labels equal to the shown form of another stay apart too
    CHECK(qkv::shown_labels({"abcdefghijklmnopq", "abcdefghijklmno…"}, 16, false, false) ==
          std::vector<std::string>{"abcdefgh…klmnopq", "abcdefghijklmno…"});
    CHECK(qkv::shown_labels({"same", "same"}, 16, false, false) == std::vector<std::string>{"same", "same"});
}

TEST_CASE("Markdown folds line breaks in titles into spaces", "[formats][markdown][cli][documents]") {
    TempDir dir;
    const std::string yaml = R"(
title: "First line\nsecond line # not closing"
tokens: [a, c]
inputs: [[1, 0], [0, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
)";
    const std::string out = run_ok({"run", "-", "-f", "markdown", "-s", "weights"}, yaml);
    CHECK(out.rfind("# First line second line \\# not closing\n", 0) == 0);
    const auto html = shell("pandoc -f gfm -t html --wrap=none " + dir.write("lines.md", out));
    REQUIRE(html.status == 0);
    CHECK(html.out.find("First line second line # not closing</h1>") != std::string::npos);
    CHECK(count_of(html.out, "<td") == 2 * 3);
}

TEST_CASE("whole numbers print without decimals up to 2^53, whatever their size", "[formats][text][cli]") {
    // from IEEE 754: every integer up to 2^53 = 9007199254740992 is exact in a double
    CHECK(qkv::is_whole_number(1e12));
    CHECK(qkv::is_whole_number(1e15));
    CHECK(qkv::is_whole_number(-9007199254740992.0));
    CHECK_FALSE(qkv::is_whole_number(9007199254740994.0));
    CHECK_FALSE(qkv::is_whole_number(0.5));
    CHECK(qkv::all_whole_numbers(qkv::test::rows({{1, 1e15}, {-arma::datum::inf, 2}})));

    const auto inputs = [](const std::string& big) {
        return "inputs: [[1, " + big + "], [2, 3]]\n"
               "weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}\n";
    };
    for (const std::string big : {"1e12", "1e15"}) {
        CAPTURE(big);
        const std::string out = run_ok({"run", "-", "-s", "inputs"}, inputs(big));
        CHECK(out.find(big == "1e12" ? " 1000000000000\n" : " 1000000000000000\n") != std::string::npos);
        CHECK(out.find(".0000") == std::string::npos);
        // explain agrees with the table
        const std::string explained = run_ok({"explain", "-", "inputs[1,2]"}, inputs(big));
        CHECK(explained.find(big == "1e12" ? "= 1000000000000 " : "= 1000000000000000 ") != std::string::npos);
    }
    // beyond 2^53 the matrix prints with decimals, like any other
    CHECK(run_ok({"run", "-", "-s", "inputs"}, inputs("1e16")).find(" 1.0000 ") != std::string::npos);
}

TEST_CASE("text tables count wide characters as two columns", "[formats][text][cli]") {
    CHECK(qkv::display_width("東京") == 4);
    CHECK(qkv::display_width("ab") == 2);
    CHECK(qkv::display_width("cafe\u0301") == 4);  // a combining accent takes no column
    CHECK(qkv::display_width("ｆｕｌｌ") == 8);    // fullwidth forms
    CHECK(qkv::truncate_label("東京大学東京大学東京大学", 9, false) == "東京大学…");

    const std::string yaml = R"(
tokens: ['東京', ab, 'ｆｕｌｌ']
inputs: [[1, 0], [0, 1], [1, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]], value: [[1, 0], [0, 1]]}
)";
    const std::string out = run_ok({"run", "-", "-s", "weights"}, yaml);
    // every line of the table has its bar (or cross) at the same column
    std::istringstream lines(out);
    std::string line;
    std::vector<std::size_t> bars;
    while (std::getline(lines, line)) {
        for (const std::string bar : {"│", "┼"}) {
            if (const auto at = line.find(bar); at != std::string::npos) {
                bars.push_back(qkv::display_width(line.substr(0, at)));
            }
        }
    }
    REQUIRE(bars.size() == 5);  // header, rule, three rows
    for (const auto column : bars) {
        CHECK(column == bars.front());
    }
    // the label column is as wide as ｆｕｌｌ, 8 columns
    CHECK(out.find("\n  東京     │ ") != std::string::npos);
    CHECK(out.find("\n  ab       │ ") != std::string::npos);
}

TEST_CASE("each kind of scale names its divisor in one set of words that every reader uses", "[formats]") {
    const std::string example = "inputs: [[1, 0, 1], [0, 1, 1]]\n"
                                "weights: {query: [[1, 0], [0, 1], [1, 1]], key: [[1, 0], [0, 1], [1, 1]], "
                                "value: [[1, 0], [0, 1], [1, 1]]}\n";
    const qkv::Model root = qkv::test::load_text(example);
    CHECK(qkv::divided(root, "S") == "S / √d_k = S / √2");
    CHECK(qkv::divided(root, "q·Kᵀ", false) == "q·Kᵀ / √d_k");
    CHECK(qkv::divided_latex(root, "dS'") == "\\frac{dS'}{\\sqrt{d_k}} = \\frac{dS'}{\\sqrt{2}}");
    CHECK(qkv::divisor_of(root).named == "√d_k = √2");
    CHECK(qkv::divisor_of(root).exact == "√2 ≈ 1.4142");
    const qkv::Model number = qkv::test::load_text(example + "scale: 2.5\n");
    CHECK(qkv::divided(number, "S") == "S / 2.5");
    CHECK(qkv::divided_latex(number, "S") == "S / 2.5");
    CHECK(qkv::divisor_of(number).named == "the example's scale 2.5");
    const qkv::Model none = qkv::test::load_text(example + "scale: none\n");
    CHECK(qkv::divided(none, "S") == "S");
    CHECK(qkv::divided_latex(none, "S") == "S");
    CHECK_FALSE(qkv::divisor_of(none).scaled);
    // and the step's own formula reads them
    const qkv::Trace trace = qkv::test::compute_text(example + "scale: 2.5\n");
    REQUIRE(trace.find(qkv::StepId::scaled_scores, 1) != nullptr);
    CHECK(trace.find(qkv::StepId::scaled_scores, 1)->formula == "S' = S / 2.5");
}

TEST_CASE("a divisor √d_k is written exactly when its root is whole, to four decimals otherwise", "[formats]") {
    CHECK(qkv::root_text(4) == "√4 = 2");
    CHECK(qkv::root_text(64) == "√64 = 8");
    CHECK(qkv::root_text(3) == "√3 ≈ 1.7321");
    CHECK(qkv::root_text(2) == "√2 ≈ 1.4142");
    // and a primed symbol takes its head's subscript in text, as the others do
    CHECK(qkv::formula_text("softmax(S'_2)", false) == "softmax(S'₂)");
    CHECK(qkv::formula_text("the sink's column", false) == "the sink's column");
}

TEST_CASE("the concat formula writes its subscripts one way, every head of up to three", "[formats][text][cli]") {
    const std::string text = run_ok({"run", "two-heads", "-s", "concat,output"});
    CHECK(text.find("[Z₁ Z₂]") != std::string::npos);
    CHECK(text.find("Z_2") == std::string::npos);
    const std::string ascii = run_ok({"run", "two-heads", "-s", "concat", "--ascii"});
    CHECK(ascii.find("[Z_1 Z_2]") != std::string::npos);
    CHECK(qkv::concat_formula(3) == "[Z_1 Z_2 Z_3]");
    CHECK(qkv::concat_formula(4) == "[Z_1 … Z_4]");
    CHECK(qkv::concat_formula(12, true) == "\\begin{bmatrix} Z_{1} & \\cdots & Z_{12} \\end{bmatrix}");
    CHECK(qkv::formula_text("[Z₁ … Z_12]", false) == "[Z₁ … Z₁₂]");
    CHECK(qkv::formula_text("[Z₁ … Z_12]", true) == "[Z_1 … Z_12]");
    // names with a letter after the underscore are left alone
    CHECK(qkv::formula_text("Q = X·W_Q + b_1x", false) == "Q = X·W_Q + b_1x");
}

TEST_CASE("SVG with --ascii is ASCII only, tooltips included", "[formats][svg][cli]") {
    const std::string out = run_ok({"run", "two-heads", "-f", "svg", "--ascii"});
    for (const char c : out) {
        CHECK(static_cast<unsigned char>(c) < 0x80);
    }
    CHECK(out.find("<title>like -&gt; like: 0.5760</title>") != std::string::npos);
}

namespace {

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream split(text);
    for (std::string line; std::getline(split, line);) {
        lines.push_back(line);
    }
    return lines;
}

}  // namespace

TEST_CASE("a text table wider than the width it is given is drawn in even blocks of columns", "[formats][text]") {
    // gqa's concat is 5 × 8 at four decimals: about 70 columns drawn whole
    const auto* example = qkv::find_builtin_example("gqa");
    REQUIRE(example != nullptr);
    const qkv::Trace trace = qkv::test::compute_text(std::string(example->text));
    qkv::RenderOptions options;
    options.steps = {qkv::StepId::concat};
    std::ostringstream whole;
    qkv::render_text(trace, options, whole);
    options.width = 44;
    std::ostringstream narrow;
    qkv::render_text(trace, options, narrow);
    std::size_t widest_whole = 0;
    for (const auto& line : split_lines(whole.str())) {
        widest_whole = std::max(widest_whole, qkv::display_width(line));
    }
    REQUIRE(widest_whole > 44);
    int headers = 0;
    std::string labels;
    for (const auto& line : split_lines(narrow.str())) {
        CAPTURE(line);
        if (line.find("│") != std::string::npos || line.find("┼") != std::string::npos) {
            CHECK(qkv::display_width(line) <= 44);
        }
        if (line.find(" d1 ") != std::string::npos || line.find(" d5 ") != std::string::npos) {
            ++headers;
            labels += line;
        }
    }
    // two blocks of four columns, every column once
    CHECK(headers == 2);
    for (int d = 1; d <= 8; ++d) {
        CHECK(labels.find("d" + std::to_string(d)) != std::string::npos);
    }
    CHECK(labels.find("d9") == std::string::npos);
}
