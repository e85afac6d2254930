// LaTeX from explain, check and lesson (-f latex): a fragment whose first
// line names the packages it needs, or with --standalone a whole document;
// pure ASCII; compiled with pdflatex standalone and as a fragment in a one-
// and a two-column article, with no line running into the margin. Needs
// pdflatex (texlive-latex-base) for the [documents] tests.
#include "support.hpp"

#include "builtin/builtin.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace {

using qkv::test::CliRun;
using qkv::test::k_illustrated_answers;
using qkv::test::run_qkv;
using qkv::test::TempDir;

const char* const k_model = "examples/homework/three-words/model.yaml";
// scaling forgotten: 9 wrong scaled scores (3 told in words, "… and 6 more"),
// weights and outputs that follow from them
const char* const k_no_scaling = "examples/homework/three-words/mistake-no-scaling.yaml";

// qkv ARGS from the repository's root (paths in reports read as typed),
// which must exit with `status` and write nothing to stderr: its stdout.
std::string latex_of(const std::vector<std::string>& args, int status = 0, const std::string& input = "") {
    CliRun run;
    run.args = args;
    run.input = input;
    run.cwd = qkv::test::source_dir();
    const auto result = run_qkv(run);
    INFO("qkv " << args.front() << ": " << result.err);
    CHECK(result.status == status);
    CHECK(result.err.empty());
    return result.out;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// pdflatex's input: ASCII only, whatever the labels and the prose hold.
void require_ascii(const std::string& tex) {
    std::size_t outside = 0;
    for (const char c : tex) {
        outside += static_cast<unsigned char>(c) >= 0x80 ? 1 : 0;
    }
    CHECK(outside == 0);
}

// The \usepackage line a fragment's header comment asks for.
std::string needed_packages(const std::string& fragment) {
    const std::regex needs(R"(needs (\\usepackage\{[a-z, ]+\}))");
    std::smatch match;
    REQUIRE(std::regex_search(fragment, match, needs));
    return match[1].str() + "\n";
}

// A fragment in the smallest article that loads what it asks for: one column, or two.
std::string fragment_document(const std::string& fragment, bool two_columns) {
    return std::string("\\documentclass") + (two_columns ? "[twocolumn]" : "") + "{article}\n" +
           needed_packages(fragment) + "\\begin{document}\n" + fragment + "\\end{document}\n";
}

// Compiles `tex` as NAME.tex in `dir`: pdflatex succeeds, and nothing runs
// into the margin or off the page (no overfull box).
void require_compiles(const TempDir& dir, const std::string& name, const std::string& tex) {
    dir.write(name + ".tex", tex);
    const auto result =
        qkv::test::shell("cd " + dir.path() + " && pdflatex -interaction=nonstopmode -halt-on-error " + name + ".tex");
    INFO(name << ": " << result.out.substr(result.out.size() > 3000 ? result.out.size() - 3000 : 0));
    REQUIRE(result.status == 0);
    const std::string log = qkv::test::read_file(dir.path() + "/" + name + ".log");
    const std::size_t overfull = log.find("Overfull \\");
    INFO(name << ": " << (overfull == std::string::npos ? "" : log.substr(overfull, 400)));
    CHECK(overfull == std::string::npos);
}

// The command's LaTeX standalone, and as a fragment in one and two columns, all compiled.
void require_compiles_everywhere(const TempDir& dir, const std::string& name, const std::vector<std::string>& args,
                                 int status = 0, const std::string& input = "") {
    CAPTURE(name);
    const std::string standalone = latex_of(with(args, {"-f", "latex", "--standalone"}), status, input);
    const std::string fragment = latex_of(with(args, {"-f", "latex"}), status, input);
    require_ascii(standalone + fragment);
    require_compiles(dir, name + "-standalone", standalone);
    require_compiles(dir, name + "-one", fragment_document(fragment, false));
    require_compiles(dir, name + "-two", fragment_document(fragment, true));
}

bool pdflatex_installed() {
    return qkv::test::tool_installed("pdflatex", "texlive-latex-base", "the LaTeX of explain, check and lesson is not compiled");
}

}  // namespace

TEST_CASE("explain, check and lesson take -f latex: a fragment, or a document with --standalone", "[latex][cli]") {
    const std::vector<std::vector<std::string>> commands = {
        {"explain", "masked", "weights[2]"},
        {"check", k_model, "--answers", k_no_scaling},
        {"lesson", "scaling"},
    };
    for (const auto& command : commands) {
        CAPTURE(command.front());
        const int status = command.front() == "check" ? 1 : 0;
        const std::string fragment = latex_of(with(command, {"-f", "latex"}), status);
        CHECK(fragment.rfind("% qkv: ", 0) == 0);
        CHECK(fragment.find("\\documentclass") == std::string::npos);
        CHECK(fragment.find("\\end{document}") == std::string::npos);
        const std::string standalone = latex_of(with(command, {"-f", "latex", "--standalone"}), status);
        CHECK(standalone.rfind("\\documentclass", 0) == 0);
        CHECK(standalone.find("\\begin{document}") != std::string::npos);
        CHECK(standalone.ends_with("\\end{document}\n"));
        require_ascii(fragment + standalone);
        // --standalone only shapes LaTeX, as with run: other formats ignore it
        CHECK(latex_of(with(command, {"-f", "markdown", "--standalone"}), status) ==
              latex_of(with(command, {"-f", "markdown"}), status));
    }
}

TEST_CASE("check refuses a class of answer files with -f latex, as with -f html", "[latex][cli][check]") {
    CliRun run;
    run.args = {"check", "model.yaml", "--answers", "answers/", "-f", "latex"};
    run.cwd = qkv::test::source_dir() + "/examples/homework/class";
    const auto result = run_qkv(run);
    qkv::test::require_input_error(result, "-f latex writes one learner's report; expected one answers file");
    CHECK(result.err.find("\n  hint: give one answers file, or use -f text, markdown, csv or json for a class\n") !=
          std::string::npos);
    // and a lesson names latex among the formats it is written in
    qkv::test::require_input_error(run_qkv({"lesson", "1", "-f", "svg"}),
                                   "a lesson is played as text or written as markdown, latex or html, not svg");
}

TEST_CASE("explain -f latex writes each cell's heading, formula and working", "[latex][cli][explain]") {
    const std::string masked = latex_of({"explain", "masked", "weights[3]", "head_output[2]", "-f", "latex", "--block-size", "2"});
    // the heading: the cell and its value, then where it is, smaller
    CHECK(masked.find("\\subsection*{\\raggedright weights[3] = [0.0551, 0.0134, 0.9316, 0]\\quad{\\normalfont\\small "
                      "(Attention weights, row 3 ``read'')}}") != std::string::npos);
    // the formula in display math, as the trace holds it
    CHECK(masked.find("\\operatorname{softmax}(S')") != std::string::npos);
    // the working: symbols as math, the masked key's exp(−∞), the online softmax's running sum ℓ
    CHECK(masked.find("exp($-\\infty$)") != std::string::npos);
    CHECK(masked.find("$\\ell$ = 1.2431 $\\cdot$ 0.0591 + exp(0) + exp($-\\infty$) = 1.0735") != std::string::npos);
    CHECK(masked.find("exp($-$2.8284)") != std::string::npos);   // a number's minus as math too
    // an output row's sum keeps its column: the "+" lines under the first term
    CHECK(masked.find("\\hspace*{1em}0.5000 $\\cdot$ [1, 0] = [0.5000, 0]\\quad ($<$s$>$)\\par") != std::string::npos);
    CHECK(masked.find("\\relax \\makebox[1em][l]{$+$}0 $\\cdot$ [3, 3] = [0, 0]\\quad (read)\\par") !=
          std::string::npos);
    CHECK(qkv::test::count_of(masked, "\\subsection*{") == 2);

    // several heads: the head is part of the cell's name; standalone has a title
    const std::string heads =
        latex_of({"explain", "two-heads", "scores[1,2]@2", "output[1]", "-f", "latex", "--standalone"});
    CHECK(heads.find("\\section*{\\raggedright The arithmetic of scores[1,2]@2 and output[1]}") != std::string::npos);
    CHECK(heads.find("scores[1,2]@2 = q$\\cdot$k = 0$\\cdot$1 + 1$\\cdot$1 = 1") != std::string::npos);
    CHECK(heads.find("\\[ S_{2} = Q_{2} K_{2}^\\top \\]") != std::string::npos);  // head 2 reads its own keys
}

TEST_CASE("check -f latex writes the marks, the wrong cells, the diagnosis and the summary", "[latex][cli][check]") {
    const std::string report = latex_of({"check", k_model, "--answers", k_no_scaling, "-f", "latex"}, 1);
    CHECK(report.find("\\section*{\\raggedright Checking answers: Homework $\\cdot$ three words, causal attention}") !=
          std::string::npos);
    CHECK(report.find("$\\checkmark$ right\\quad $\\boxtimes$ wrong, the true value in parentheses\\quad "
                      "$\\rightarrow$ follows from your earlier answers") != std::string::npos);
    // each answered step: its heading and its table
    CHECK(qkv::test::count_of(report, "\\subsection*{") == 4);
    CHECK(report.find("\\subsection*{Step 6: Scaled scores\\hspace{0pt plus 4em} (\\texttt{scaled\\_\\allowbreak{}scores})}") !=
          std::string::npos);
    CHECK(report.find("\\begin{tabular}") != std::string::npos);
    CHECK(report.find("(1.2)") != std::string::npos);   // the true value of scaled_scores[1,1], after the learner's 2
    // three wrong cells in words, then how many more, as the text report says
    CHECK(qkv::test::count_of(report, "\\item[$\\boxtimes$] scaled\\_\\allowbreak{}scores[") == 3);
    CHECK(report.find("\\item[] \\ldots{} and 6 more wrong cells.") != std::string::npos);
    CHECK(report.find("5 follow from your scaled") != std::string::npos);
    CHECK(report.find("\\textbf{Mistake:} Scaling forgotten") != std::string::npos);
    CHECK(report.find("\\textbf{Correct:} S' = S / ") != std::string::npos);
    CHECK(report.find("\\textbf{Summary:} 36 answered cells in 4 steps: 16 right, 9 wrong, 11 follow from your "
                      "earlier answers. First mistake: scaled\\_\\allowbreak{}scores.") != std::string::npos);
    CHECK(report.find("To see how the true value is worked out: \\texttt{qkv explain examples/\\allowbreak{}") !=
          std::string::npos);

    // all right: no mistake, no hint to explain, exit 0
    const std::string right =
        latex_of({"check", k_model, "--answers", "examples/homework/three-words/right.yaml", "-f", "latex"});
    CHECK(right.find("\\textbf{Mistake:}") == std::string::npos);
    CHECK(right.find("qkv explain") == std::string::npos);
    CHECK(right.find("All right.") != std::string::npos);
}

TEST_CASE("lesson -f latex writes the narration, the steps and each question with its answer", "[latex][cli][lesson]") {
    const std::string lesson = latex_of({"lesson", "scaling", "-f", "latex"});
    CHECK(lesson.find("\\section*{\\raggedright Lesson 2: Why the scores are scaled}") != std::string::npos);
    // filled-in values in bold; a vector may break after its commas
    CHECK(lesson.find("\\textbf{[1, 2, 3, 4]}") != std::string::npos);
    // e¹⁰ is one exponent, not two superscripts in a row
    CHECK(lesson.find("e$^{10}$") != std::string::npos);
    CHECK(lesson.find("\\texttt{scores}") != std::string::npos);   // run's steps, its tables among them
    CHECK(lesson.find("\\textbf{Question.} The scores are not scaled yet") != std::string::npos);
    CHECK(lesson.find("\\textit{Answer:} weights[1,4] = 0.6439") != std::string::npos);
    CHECK(lesson.find("\\emph{End of lesson 2. Next: qkv lesson 3 (words).}") != std::string::npos);
    // the group that lets narration's lines stretch is closed
    CHECK(qkv::test::count_of(lesson, "\\begingroup") == qkv::test::count_of(lesson, "\\endgroup"));
}

TEST_CASE("run --decode -f latex walks the cache position by position", "[latex][cli][decode]") {
    const std::string decode = latex_of({"run", "gqa", "--decode", "-f", "latex"});
    CHECK(decode.find("\\subsection*{Decoding with a key/value cache}") != std::string::npos);
    // an option in prose keeps its two hyphens
    CHECK(decode.find("(qkv run without -{}-decode)") != std::string::npos);
    CHECK(decode.find("\\subsubsection*{Position 2 $\\cdot$ read}") != std::string::npos);
    // a caption's formula with its index set as math
    CHECK(decode.find("z = $\\Sigma_{j}$ $\\mathrm{weight}_{j}\\cdot v_{j}$") != std::string::npos);
    CHECK(decode.find("key/value head 2 $\\cdot$ cache: keys k and values v") != std::string::npos);
    // and no format the table of formats does not name
    const auto refused = run_qkv({"run", "gqa", "--decode", "-f", "svg"});
    qkv::test::require_input_error(refused, "--decode cannot be written as svg; expected -f text, markdown, latex, json "
                                            "or html");
}

TEST_CASE("run --decode's LaTeX compiles standalone and in one- and two-column documents",
          "[latex][cli][decode][documents]") {
    if (!pdflatex_installed()) {
        return;
    }
    TempDir dir;
    for (const std::string example : {"gqa", "alibi-window", "sinks", "rope", "mla"}) {
        require_compiles_everywhere(dir, example, {"run", example, "--decode"});
    }
}

TEST_CASE("explain's LaTeX compiles standalone and in one- and two-column documents", "[latex][cli][explain][documents]") {
    if (!pdflatex_installed()) {
        return;
    }
    TempDir dir;
    require_compiles_everywhere(dir, "two-heads",
                                {"explain", "two-heads", "scores[1,2]@2", "weights[2]@1", "concat[1]", "output[2,1]"});
    require_compiles_everywhere(dir, "masked", {"explain", "masked", "weights[3]", "head_output[4]", "--block-size", "2"});
}

TEST_CASE("a soft-capped example's LaTeX, with its working and gradients, compiles everywhere",
          "[latex][cli][softcap][documents]") {
    if (!pdflatex_installed()) {
        return;
    }
    // the cap's working, the mask and the softmax reading S_c, and the gradient through the cap
    const std::string capped = "inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]\n"
                               "weights: {query: [[1, 0], [0, 1], [1, 1]], key: [[0, 1], [1, 0], [1, 1]],\n"
                               "          value: [[1, 2], [2, 0], [0, 1]]}\n"
                               "softcap: 2\nmask: causal\nalibi: true\n";
    const std::string latex = latex_of({"run", "-", "-f", "latex", "--backward"}, 0, capped);
    CHECK(latex.find("S_{c} = c \\tanh\\left(S'/c\\right) \\approx c \\tanh\\left(\\begin{bmatrix}") !=
          std::string::npos);
    CHECK(latex.find("{S_{c}}_{ij} = -\\infty") != std::string::npos);
    CHECK(latex.find("(S_{c} + B) + M") != std::string::npos);  // with ALiBi the mask reads S_c + B
    TempDir dir;
    require_compiles_everywhere(dir, "capped", {"run", "-", "--backward"}, 0, capped);
    require_compiles_everywhere(dir, "capped-explain", {"explain", "-", "capped_scores[2,1]", "masked_scores[3]",
                                                        "grad_scaled_scores[3,2]", "--backward"}, 0, capped);
}

TEST_CASE("QK-norm and scaled RoPE with shared key/value heads, forward and back, compile everywhere",
          "[latex][cli][qk_norm][rope][documents]") {
    if (!pdflatex_installed()) {
        return;
    }
    // the norm's fraction, RoPE of the normed rows, and the keys' gradient summed over the query heads that
    // share them, whose rotated queries carry a subscript of their own before the head's
    const std::string example = "inputs: [[1, 0, 2], [0, 1, 1], [2, 1, 0]]\n"
                                "heads: 2\nkv_heads: 1\n"
                                "weights: {query: [[1, 0, 2, 1], [0, 1, 1, 0], [1, 1, 0, 2]], key: [[0, 1], [1, 0], "
                                "[1, 1]],\n          value: [[1, 2], [2, 0], [0, 1]]}\n"
                                "qk_norm: {offset: 1, query: [0.5, -0.25]}\nmask: causal\n"
                                "rope: {scaling: {rope_type: yarn, factor: 4, original_max_position_embeddings: 64}}\n";
    const std::string latex = latex_of({"run", "-", "-f", "latex", "--backward"}, 0, example);
    CHECK(latex.find("\\sum_h dS_h^\\top {Q_{\\mathrm{rot}}}_h") != std::string::npos);
    CHECK(latex.find("\\frac{q}{\\sqrt{\\operatorname{mean}(q^2) + \\epsilon}}") != std::string::npos);
    TempDir dir;
    require_compiles_everywhere(dir, "normed", {"run", "-", "--backward"}, 0, example);
    require_compiles_everywhere(dir, "normed-explain", {"explain", "-", "normed_queries[2,1]@2", "rotated_keys[3]",
                                                        "grad_queries[3,2]@1", "grad_q_norm[1,2]", "--backward"},
                                0, example);
}

TEST_CASE("check's LaTeX compiles standalone and in one- and two-column documents", "[latex][cli][check][documents]") {
    if (!pdflatex_installed()) {
        return;
    }
    TempDir dir;
    require_compiles_everywhere(dir, "no-scaling", {"check", k_model, "--answers", k_no_scaling}, 1);
    require_compiles_everywhere(dir, "illustrated", {"check", "illustrated", "--answers", "-"}, 1, k_illustrated_answers);
}

TEST_CASE("every lesson's LaTeX compiles standalone and in one- and two-column documents",
          "[latex][cli][lesson][documents]") {
    if (!pdflatex_installed()) {
        return;
    }
    TempDir dir;
    for (const auto& lesson : qkv::builtin_lessons()) {
        const std::string name(lesson.name);
        // run's tables are latex_table's to fit a narrow column; the rest is the lesson's
        require_compiles_everywhere(dir, name, {"lesson", name});
    }
}

TEST_CASE("the LaTeX of explain, check and a lesson match their golden files", "[latex][cli][golden]") {
    qkv::test::check_golden("two-heads.explain.tex",
                            latex_of({"explain", "two-heads", "scores[1,2]@2", "output[1]", "-f", "latex"}));
    qkv::test::check_golden("check-three-words-mistake-no-scaling.tex",
                            latex_of({"check", k_model, "--answers", k_no_scaling, "-f", "latex"}, 1));
    qkv::test::check_golden("lesson-scaling.tex", latex_of({"lesson", "scaling", "-f", "latex", "--standalone"}));
}
