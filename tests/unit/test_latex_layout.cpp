// LaTeX as a textbook sets it: booktabs tables that fit whatever \linewidth
// the document has (TeX chooses among the layouts qkv writes), tall tables in
// row blocks that break across pages, tables as floats with caption and
// label, weights shaded as in the SVG, the gaps of a summarised matrix, and
// the names in prose set as math. Compiled with pdflatex in one- and
// two-column documents and read back with pdftotext.
#include "builtin/builtin.hpp"
#include "render/html.hpp"
#include "render/latex.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using qkv::test::count_of;
using qkv::test::read_file;
using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::TempDir;

namespace {

// A document around a fragment: one column or two, with colortbl (through
// xcolor) or without it.
std::string document(const std::string& fragment, bool two_columns, bool colour = true) {
    return std::string("\\documentclass") + (two_columns ? "[twocolumn]" : "") + "{article}\n" +
           "\\usepackage{amsmath, amssymb, booktabs}\n" + (colour ? "\\usepackage[table]{xcolor}\n" : "") +
           "\\begin{document}\n" + fragment + "\\end{document}\n";
}

struct Compiled {
    std::string log;   // pdflatex's log
    std::string text;  // the PDF's text, as pdftotext reads it
};

// Compiles `tex` twice (so that references resolve), failing the test when pdflatex does.
Compiled compile(const TempDir& dir, const std::string& name, const std::string& tex) {
    dir.write(name + ".tex", tex);
    const std::string run = "cd " + dir.path() + " && pdflatex -interaction=nonstopmode -halt-on-error " + name + ".tex";
    shell(run);
    const auto result = shell(run);
    INFO(name << ": " << result.out.substr(result.out.size() > 3000 ? result.out.size() - 3000 : 0));
    REQUIRE(result.status == 0);
    Compiled compiled;
    compiled.log = read_file(dir.path() + "/" + name + ".log");
    compiled.text = shell("pdftotext -layout " + dir.path() + "/" + name + ".pdf -").out;
    return compiled;
}

// The words of a text that equal `word`.
std::size_t words_equal(const std::string& text, const std::string& word) {
    std::istringstream words(text);
    std::size_t count = 0;
    for (std::string w; words >> w;) {
        count += w == word ? 1 : 0;
    }
    return count;
}

void require_fits(const Compiled& compiled) {
    CHECK(compiled.log.find("Overfull \\hbox") == std::string::npos);
    CHECK(compiled.log.find("Overfull \\vbox") == std::string::npos);
}

const char* const k_wide_yaml = R"(
inputs: {random: {rows: 3, cols: 30, seed: 5}}
weights: {query: {random: {rows: 30, cols: 2, seed: 1}}, key: {random: {rows: 30, cols: 2, seed: 2}}, value: {random: {rows: 30, cols: 2, seed: 3}}}
)";

const char* const k_square_yaml = R"(
inputs: {random: {rows: 13, cols: 13, seed: 5}}
weights: {query: {random: {rows: 13, cols: 13, seed: 1}}, key: {random: {rows: 13, cols: 13, seed: 2}}, value: {random: {rows: 13, cols: 13, seed: 3}}}
)";

const char* const k_tall_yaml = R"(
inputs: {random: {rows: 45, cols: 3, seed: 5}}
weights: {query: {random: {rows: 3, cols: 2, seed: 1}}, key: {random: {rows: 3, cols: 2, seed: 2}}, value: {random: {rows: 3, cols: 2, seed: 3}}}
)";

}  // namespace

TEST_CASE("prose sets qkv's names as math and leaves identifiers as text", "[latex][unit]") {
    CHECK(qkv::tex_prose("its row times W_Q.") == "its row times $W_{Q}$.");
    CHECK(qkv::tex_prose("4 tokens, d_model = 3") == "4 tokens, $d_{\\mathrm{model}}$ = 3");
    CHECK(qkv::tex_prose("Dividing by √d_k keeps") == "Dividing by $\\sqrt{d_{k}}$ keeps");
    CHECK(qkv::tex_prose("hence Aᵀ.") == "hence $A^\\top$.");
    CHECK(qkv::tex_prose("S = Q·Kᵀ: query") == "S = Q$\\cdot K^\\top$: query");
    // a word with one index, as a formula writes it; an identifier stays text
    CHECK(qkv::tex_prose("z = weight_j·v_j") == "z = $\\mathrm{weight}_{j}\\cdot v_{j}$");
    CHECK(qkv::tex_prose("row_2 of head_output") == "$\\mathrm{row}_{2}$ of head\\_output");
    CHECK(qkv::tex_prose("grad_q_k") == "grad\\_q\\_k");
    // two hyphens are an option's, not an en dash
    CHECK(qkv::tex_prose("without --decode") == "without -{}-decode");
    CHECK(qkv::tex_escape("a - b") == "a - b");
    CHECK(qkv::tex_prose("angle p·θ_k, position") == "angle p$\\cdot\\theta_{k}$, position");
    CHECK(qkv::tex_prose("as W_K was written (grad_output:)") == "as $W_{K}$ was written (grad\\_output:)");
    CHECK(qkv::tex_prose("rotate_half and a_b_c") == "rotate\\_half and a\\_b\\_c");
    CHECK(qkv::tex_prose("x_1 and x_12b") == "$x_{1}$ and $x_{12b}$");
    CHECK(qkv::tex_prose("50% of $5") == "50\\% of \\$5");
    // exponents, a possessive after a name, gradients, roots of numbers
    CHECK(qkv::tex_prose("θ_k = 10000^(−2k/d_k), d_k = 4") == "$\\theta_{k}$ = $10000^{-2k/d_{k}}$, $d_{k}$ = 4");
    CHECK(qkv::tex_prose("sin(p / 10000^(2i/d_model))") == "sin(p / $10000^{2i/d_{\\mathrm{model}}}$)");
    CHECK(qkv::tex_prose("head 1 of 2: 2^-4)") == "head 1 of 2: $2^{-4}$)");
    CHECK(qkv::tex_prose("permuting W_Q's columns") == "permuting $W_{Q}$'s columns");
    CHECK(qkv::tex_prose("dW_Q = Xᵀ·dQ, so dX adds") == "$dW_{Q}$ = $X^\\top\\cdot dQ$, so $dX$ adds");
    CHECK(qkv::tex_prose("divisor = 1.4142 (√2), √0.5") == "divisor = 1.4142 ($\\sqrt{2}$), $\\sqrt{0.5}$");
    // a caret with nothing to raise, or no exponent, stays a caret; words starting with d stay words
    CHECK(qkv::tex_prose("a ^ b and x^") == "a \\textasciicircum{} b and x\\textasciicircum{}");
    CHECK(qkv::tex_prose("do Dogs dX2") == "do Dogs dX2");
}

TEST_CASE("a small table is one booktabs tabular with no vertical rules", "[latex][cli]") {
    const std::string out = run_ok({"run", "illustrated", "-f", "latex", "-s", "weights"});
    CHECK(out.find("\\begin{center}\n\\begin{tabular}{@{}lrrr@{}}\n\\toprule\n") != std::string::npos);
    CHECK(count_of(out, "\\midrule\n") == 1);
    CHECK(count_of(out, "\\bottomrule\n\\end{tabular}\n\\end{center}") == 1);
    CHECK(out.find("\\hline") == std::string::npos);
    CHECK(out.find("layout{%\n") == std::string::npos);  // no layouts to choose from
}

TEST_CASE("a wide table fits one- and two-column documents, every column once", "[latex][cli][documents]") {
    TempDir dir;
    const std::string fragment = run_ok({"run", "-", "-f", "latex", "--full", "-s", "inputs"}, k_wide_yaml);
    CHECK(count_of(fragment, "\\qkvlastlayout{%\n") == 1);
    CHECK(count_of(fragment, "\\qkvlayout{%\n") >= 1);
    std::size_t blocks[2] = {0, 0};
    for (const bool two : {false, true}) {
        CAPTURE(two);
        const Compiled compiled = compile(dir, two ? "two" : "one", document(fragment, two));
        require_fits(compiled);
        // the chosen layout shows each column once, and the row labels once a block
        for (int j = 1; j <= 30; ++j) {
            CHECK(words_equal(compiled.text, "d" + std::to_string(j)) == 1);
        }
        blocks[two ? 1 : 0] = words_equal(compiled.text, "x1");
        CHECK(blocks[two ? 1 : 0] == words_equal(compiled.text, "x3"));
    }
    // a narrower line takes more blocks than a wide one
    CHECK(blocks[0] >= 2);
    CHECK(blocks[1] > blocks[0]);
}

TEST_CASE("a summarised table fits a two-column document and shows its gaps as dots", "[latex][cli][documents]") {
    TempDir dir;
    const std::string fragment = run_ok({"run", "-", "-f", "latex", "-s", "inputs,scores"}, k_square_yaml);
    require_fits(compile(dir, "square", document(fragment, true)));
    // in the layout with all the columns, the left-out row: \vdots under
    // every kept column, \ddots where it crosses the left-out column
    std::istringstream lines(fragment);
    std::size_t gap_rows = 0;
    for (std::string line; std::getline(lines, line);) {
        if (count_of(line, " & ") != 12) {
            continue;  // a row of a layout cut into blocks of columns
        }
        if (line.rfind("$\\vdots$", 0) == 0) {
            ++gap_rows;
            CHECK(count_of(line, "$\\vdots$") == 12);  // the label and 11 kept columns
            CHECK(count_of(line, "$\\ddots$") == 1);
            CHECK(line.find("$\\cdots$") == std::string::npos);
        } else if (line.rfind("x1 ", 0) == 0) {
            CHECK(count_of(line, "$\\cdots$") == 1);
        }
    }
    CHECK(gap_rows >= 2);  // one in each step's table
}

TEST_CASE("a tall table breaks into row blocks, each under the header", "[latex][cli][documents]") {
    TempDir dir;
    const std::string fragment = run_ok({"run", "-", "-f", "latex", "--full", "-s", "inputs"}, k_tall_yaml);
    CHECK(count_of(fragment, "\\begin{tabular}") == 3);  // 45 rows: 15 in each of 3 blocks
    for (const bool two : {false, true}) {
        const Compiled compiled = compile(dir, two ? "two" : "one", document(fragment, two));
        require_fits(compiled);
        CHECK(words_equal(compiled.text, "d1") == 3);
        for (int i = 1; i <= 45; ++i) {
            CHECK(words_equal(compiled.text, "x" + std::to_string(i)) == 1);
        }
    }
}

TEST_CASE("weights are shaded on the SVG's ramp, and masked cells are left white", "[latex][cli][documents]") {
    const std::string out = run_ok({"run", "masked", "-f", "latex", "-s", "weights"});
    // 4 × 4 weights, 7 of them masked
    CHECK(count_of(out, "\\qkvcell{") == 9);
    // weight 1 (the first token attends only to itself): the darkest blue, white digits
    CHECK(out.find("\\qkvcell{0.031,0.188,0.420}{1}{$1.0000$}") != std::string::npos);
    CHECK(qkv::ramp_colour(1.0) == "#08306b");
    // the other steps are not shaded
    const std::string scores = run_ok({"run", "masked", "-f", "latex", "-s", "scores,output"});
    CHECK(count_of(scores, "\\qkvcell{") == 0);

    // with colortbl the cells are coloured; without it the fragment still compiles
    TempDir dir;
    const Compiled coloured = compile(dir, "coloured", document(out, false, true));
    const Compiled plain = compile(dir, "plain", document(out, false, false));
    CHECK(coloured.text.find("1.0000") != std::string::npos);
    CHECK(plain.text.find("1.0000") != std::string::npos);
    const auto pixels = shell("pdftoppm -r 20 -png " + dir.path() + "/coloured.pdf " + dir.path() + "/c && pdftoppm -r 20 -png " +
                              dir.path() + "/plain.pdf " + dir.path() + "/p");
    REQUIRE(pixels.status == 0);
    CHECK(read_file(dir.path() + "/c-1.png") != read_file(dir.path() + "/p-1.png"));
}

TEST_CASE("LaTeX tables as floats with --float: a caption, and a label to refer to", "[latex][cli][documents]") {
    const std::string out = run_ok({"run", "two-heads", "-f", "latex", "--float", "--label-prefix", "ex:two"});
    const std::string plain = run_ok({"run", "two-heads", "-f", "latex"});
    CHECK(count_of(out, "\\begin{table}[htbp]") == count_of(plain, "\\begin{center}"));
    CHECK(out.find("\\caption[Attention weights, head 2]{Attention weights, head 2: $A_{2} = "
                   "\\operatorname{softmax}(S'_{2})$}\\label{ex:two:weights:head2}") != std::string::npos);
    CHECK(out.find("\\label{ex:two:output}") != std::string::npos);
    CHECK(run_ok({"run", "two-heads", "-f", "latex", "--float"}).find("\\label{qkv:inputs}") != std::string::npos);
    qkv::test::check_golden("two-heads.float.tex", out);

    // referred to from the text, listed in a list of tables, with hyperref too, in two columns
    TempDir dir;
    const std::string tex = "\\documentclass[twocolumn]{article}\n\\usepackage{amsmath, amssymb, booktabs}\n"
                            "\\usepackage[table]{xcolor}\n\\usepackage{hyperref}\n\\begin{document}\n"
                            "\\listoftables\nThe weights of head 2 are in Table~\\ref{ex:two:weights:head2}.\n" +
                            out + "\\end{document}\n";
    const Compiled compiled = compile(dir, "floats", tex);
    require_fits(compiled);
    CHECK(compiled.log.find("undefined") == std::string::npos);
    // the 20th table: the inputs, head 1's three weights and 6 steps, then head 2's weights and queries to weights
    CHECK(compiled.text.find("are in Table 20.") != std::string::npos);
    CHECK(compiled.text.find("Table 20: Attention weights, head 2") != std::string::npos);

    // a table too tall for a float is set in place, numbered and captioned all the same
    const std::string tall = run_ok({"run", "-", "-f", "latex", "--full", "-s", "inputs", "--float"}, k_tall_yaml);
    CHECK(tall.find("\\begin{table}") == std::string::npos);
    CHECK(tall.find("\\refstepcounter{table}\\label{qkv:inputs}") != std::string::npos);
    const Compiled in_place = compile(dir, "tall", document(tall, true));
    require_fits(in_place);
    CHECK(in_place.text.find("Table 1: Inputs") != std::string::npos);
}

TEST_CASE("LaTeX floats: --float and --label-prefix are refused where they mean nothing", "[latex][cli]") {
    const auto refused = [](const std::vector<std::string>& args, const std::string& what) {
        const auto result = run_qkv(args);
        CAPTURE(args);
        CHECK(result.status == 2);
        CHECK(result.out.empty());
        CHECK(result.err.rfind("qkv: error: " + what, 0) == 0);
        CHECK(result.err.find("hint: ") != std::string::npos);
    };
    refused({"run", "masked", "-f", "markdown", "--float"}, "--float is given with -f markdown; expected -f latex");
    refused({"run", "masked", "-f", "latex", "--float", "--label-prefix", "a b"},
            "--label-prefix is \"a b\"; expected letters, digits and : - . _");
    refused({"run", "masked", "-f", "latex", "--float", "--label-prefix", "x}\\input{y"},
            "--label-prefix is \"x}\\input{y\"");
    refused({"run", "masked", "-f", "latex", "--label-prefix", "ex"}, "--label-prefix is given without --float");
}

TEST_CASE("every example's LaTeX fits one- and two-column documents with no overfull box", "[latex][cli][documents]") {
    TempDir dir;
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        if (name == "llama-layer") {
            continue;  // a real-sized layer: its summarised tables are those of any other 12-wide matrix
        }
        const std::string fragment = run_ok({"run", name, "-f", "latex"});
        const std::string floats = run_ok({"run", name, "-f", "latex", "--float"});
        for (const bool two : {false, true}) {
            CAPTURE(name, two);
            require_fits(compile(dir, "fragment", document(fragment, two)));
            require_fits(compile(dir, "floats", document(floats, two)));
        }
        CAPTURE(name);
        const Compiled standalone = compile(dir, "standalone", run_ok({"run", name, "-f", "latex", "--standalone"}));
        require_fits(standalone);
    }
    // the backward pass of mla: its latents' and weights' gradients
    const std::string backward = run_ok({"run", "mla", "--backward", "-f", "latex"});
    for (const bool two : {false, true}) {
        CAPTURE(two);
        require_fits(compile(dir, "backward", document(backward, two)));
    }
}
