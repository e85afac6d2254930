// Every Markdown qkv writes, read as its readers read it: through the README's
// pandoc commands to HTML (the formulas become math, no "$" is left as text)
// and to PDF with pandoc's default engine, pdflatex; as plain GFM, which must
// leave each formula whole, as GitHub needs; and with --ascii as pure ASCII.
// Needs pandoc, pdflatex with lmodern and pdftotext (poppler-utils), as
// ./bootstrap test installs them.
#include "builtin/builtin.hpp"
#include "support.hpp"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::TempDir;
using qkv::test::read_file;
using qkv::test::count_of;

namespace {

struct Document {
    std::string name;      // what wrote it, for the failure message
    std::string markdown;
};

// qkv ARGS run from the repository's root: its standard output, after checking
// that it exits with `status` and says nothing on stderr.
std::string markdown_of(const std::vector<std::string>& args, int status = 0) {
    qkv::test::CliRun run;
    run.args = args;
    run.cwd = qkv::test::source_dir();
    const auto result = run_qkv(run);
    INFO(result.err);
    REQUIRE(result.status == status);
    REQUIRE(result.err.empty());
    return result.out;
}

// Every kind of Markdown qkv writes: run for each example and with --decode,
// explain, a check report with more wrong cells than it lists, every lesson,
// and a worksheet and its key.
std::vector<Document> every_markdown(bool ascii) {
    const std::vector<std::string> options = ascii ? std::vector<std::string>{"-f", "markdown", "--ascii"}
                                                   : std::vector<std::string>{"-f", "markdown"};
    const auto with = [&](std::vector<std::string> args) {
        args.insert(args.end(), options.begin(), options.end());
        return args;
    };
    std::vector<Document> documents;
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        documents.push_back({"run " + name, markdown_of(with({"run", name}))});
    }
    documents.push_back({"run --decode", markdown_of(with({"run", "rope", "--decode"}))});
    documents.push_back({"run --decode mla", markdown_of(with({"run", "mla", "--decode"}))});
    documents.push_back({"explain", markdown_of(with({"explain", "masked", "weights[2,1]", "scaled_scores[3]"}))});
    // exit status 1: the answers have wrong cells
    documents.push_back({"check", markdown_of(with({"check", "examples/homework/three-words/model.yaml", "--answers",
                                                    "examples/homework/three-words/mistake-no-scaling.yaml"}),
                                              1)});
    for (const auto& lesson : qkv::builtin_lessons()) {
        const std::string name(lesson.name);
        documents.push_back({"lesson " + name, markdown_of(with({"lesson", name}))});
    }
    documents.push_back({"worksheet", markdown_of(with({"worksheet", "backward", "--backward"}))});
    documents.push_back({"worksheet --key", markdown_of(with({"worksheet", "masked", "--key"}))});
    return documents;
}

// The part of an HTML page between <body> and </body>.
std::string body_of(const std::string& page) {
    const std::size_t start = page.find("<body>");
    const std::size_t end = page.rfind("</body>");
    REQUIRE(start != std::string::npos);
    REQUIRE(end != std::string::npos);
    return page.substr(start, end - start);
}

// Text as it reads: white space as single spaces, the typographer's quotes,
// ellipsis and circumflex (pandoc's smart punctuation, pdflatex's \ldots and
// \^{}) as typed, and pandoc's HTML apostrophe as one.
std::string normalized(const std::string& text) {
    std::string out = std::regex_replace(text, std::regex("\\s+"), " ");
    const std::pair<const char*, const char*> typed[] = {{"\xE2\x80\x99", "'"}, {"\xE2\x80\x9C", "\""},
                                                         {"\xE2\x80\x9D", "\""}, {"\xE2\x80\xA6", "..."},
                                                         {"\xCB\x86", "^"}, {"&#39;", "'"}, {"\\. \\. \\.", "..."}};
    for (const auto& [from, to] : typed) {
        out = std::regex_replace(out, std::regex(from), to);
    }
    return out;
}

// a formula as pandoc writes it for MathJax: <span class="math inline">\(S = Q K^\top\)</span>
const std::regex k_math_span(R"re(<span class="math (inline|display)">\\[(\[]([^<]*)\\[)\]]</span>)re");

}  // namespace

TEST_CASE("every Markdown qkv writes shows its formulas as math through the README's pandoc command, and GFM "
          "leaves each formula whole",
          "[formats][markdown][cli][documents]") {
    if (!qkv::test::tool_installed("pandoc", "pandoc", "the Markdown is not rendered")) {
        return;
    }
    TempDir dir;
    // every document in one file, so that pandoc runs once for each reading
    std::string all;
    for (const auto& document : every_markdown(false)) {
        all += document.markdown + "\n\n";
    }
    const std::string md = dir.write("all.md", all);
    const std::string readme_html = qkv::test::readme_pandoc_command("--mathjax");
    CHECK(readme_html.find("tex_math_dollars") != std::string::npos);
    const auto html = shell(readme_html + " " + md + " -o " + dir.path() + "/all.html");
    INFO(html.out);
    REQUIRE(html.status == 0);
    const std::string body = normalized(body_of(read_file(dir.path() + "/all.html")));

    // the formulas are math, and nothing of them is left as text: no dollar, no LaTeX command
    std::vector<std::string> formulas;
    for (auto it = std::sregex_iterator(body.begin(), body.end(), k_math_span); it != std::sregex_iterator(); ++it) {
        formulas.push_back((*it)[2]);
    }
    CHECK(formulas.size() > 100);
    const std::string text = std::regex_replace(body, k_math_span, "");
    CHECK(text.find('$') == std::string::npos);
    CHECK_FALSE(std::regex_search(text, std::regex(R"(\\[a-zA-Z])")));

    // read as GFM without math, as GitHub reads the text around it, every
    // formula keeps each of its characters between its dollars: GFM took no
    // backslash for an escape and no underscore for emphasis
    const auto plain = shell("pandoc -f gfm -t html " + md);
    REQUIRE(plain.status == 0);
    const std::string plain_text = normalized(plain.out);
    CHECK(count_of(plain_text, "$") == 2 * formulas.size());
    for (const auto& formula : formulas) {
        CAPTURE(formula);
        CHECK(plain_text.find('$' + formula + '$') != std::string::npos);
    }
}

TEST_CASE("labels that hold backticks stay inside their code in a lesson handout and in explain's Markdown",
          "[formats][markdown][cli][documents]") {
    if (!qkv::test::tool_installed("pandoc", "pandoc", "the Markdown is not rendered")) {
        return;
    }
    TempDir dir;
    const std::string model = R"(title: Ticks
tokens: ["a```b", "c`d"]
inputs: [[1, 0], [0, 1]]
weights:
  query: [[1, 0], [0, 1]]
  key: [[1, 1], [0, 1]]
  value: [[1, 0], [1, 1]]
)";
    std::string inline_model;
    for (const auto& line : qkv::test::lines_of(model)) {
        inline_model += "  " + line + "\n";
    }
    const std::string lesson = dir.write("ticks.yaml", "title: Ticks lesson\nsummary: labels with backticks\nmodel:\n" +
                                                           inline_model + R"(script:
  - ask: What is the score of query 1 against key 2?
    answer: scores[1,2]
)");
    const std::string example = dir.write("model.yaml", model);
    const std::string heading = R"(scores[1,2] = 0    (Scores, row 1 "a```b", column 2 "c`d"))";
    const std::string working = R"(q = queries[1] (a```b) = [1, 0]    (query 1)
k = keys[2] (c`d) = [0, 1]    (key 2: column 2 of Kᵀ)
scores[1,2] = q·k = 1·0 + 0·1 = 0)";
    for (const auto& args : {std::vector<std::string>{"lesson", lesson, "-f", "markdown"},
                             std::vector<std::string>{"explain", example, "scores[1,2]", "-f", "markdown"}}) {
        CAPTURE(args[0]);
        const std::string md = dir.write(args[0] + ".md", markdown_of(args));
        const auto html = shell("pandoc -f gfm -t html " + md);
        REQUIRE(html.status == 0);
        // the working is one block of code, every line whole
        CHECK(html.out.find("<code>" + working + "</code></pre>") != std::string::npos);
        if (args[0] == "lesson") {
            CHECK(html.out.find("<p><code>" + heading + "</code></p>") != std::string::npos);
        }
    }
}

TEST_CASE("Markdown with --ascii is pure ASCII: run, explain, check, every lesson, the list of lessons and worksheets",
          "[formats][markdown][cli]") {
    auto documents = every_markdown(true);
    documents.push_back({"lesson --ascii (the list)", markdown_of({"lesson", "--ascii"})});
    for (const auto& document : documents) {
        CAPTURE(document.name);
        std::size_t line = 1;
        for (const char c : document.markdown) {
            line += c == '\n' ? 1 : 0;
            if (static_cast<unsigned char>(c) >= 0x80) {
                CAPTURE(line);
                FAIL_CHECK("a byte outside ASCII");
                break;
            }
        }
    }
}

TEST_CASE("Markdown with --ascii becomes a PDF through pandoc's default engine, pdflatex",
          "[formats][markdown][cli][documents][slow]") {
    if (!qkv::test::tool_installed("pandoc", "pandoc", "no PDF is made") ||
        !qkv::test::tool_installed("pdflatex", "texlive-latex-base", "no PDF is made") ||
        !qkv::test::tool_installed("lmodern.sty", "lmodern", "pandoc's LaTeX template needs it; no PDF is made") ||
        !qkv::test::tool_installed("pdftotext", "poppler-utils", "the PDF's text is not read")) {
        return;
    }
    TempDir dir;
    // every document in one file, so that pdflatex runs once
    std::string all;
    std::vector<std::string> titles;
    for (const auto& document : every_markdown(true)) {
        all += document.markdown + "\n\n";
        // each document's first heading, as it reads once set
        const std::size_t heading = document.markdown.find("# ");
        const std::size_t end = document.markdown.find('\n', heading);
        std::string title;
        for (const char c : document.markdown.substr(heading + 2, end - heading - 2)) {
            if (c != '\\' && c != '`') {
                title += c;
            }
        }
        titles.push_back(normalized(title));
    }
    const std::string md = dir.write("all.md", all);
    // pandoc's own Markdown, as `pandoc in.md -o out.pdf` reads it, and the README's command
    const std::vector<std::string> commands = {"pandoc", qkv::test::readme_pandoc_command(".pdf")};
    for (const auto& command : commands) {
        CAPTURE(command);
        const std::string pdf = dir.path() + "/all.pdf";
        std::filesystem::remove(pdf);
        const auto made = shell(command + " " + md + " -o " + pdf);
        INFO(made.out);
        REQUIRE(made.status == 0);
        REQUIRE(read_file(pdf).rfind("%PDF-", 0) == 0);

        const auto text = shell("pdftotext -enc UTF-8 " + pdf + " -");
        REQUIRE(text.status == 0);
        const std::string words = normalized(text.out);
        for (const auto& title : titles) {
            CHECK_THAT(words, Catch::Matchers::Contains(title));
        }
        // the formulas were typeset, not written out: the prose of --ascii
        // writes ^T, sqrt and -inf, only typeset math has ⊤, √ and −∞
        CHECK_THAT(words, Catch::Matchers::Contains("\u22A4"));
        CHECK_THAT(words, Catch::Matchers::Contains("\u221A"));
        CHECK_THAT(words, Catch::Matchers::Contains("\u2212\u221E where blocked"));
        CHECK(words.find("\\sqrt") == std::string::npos);
        CHECK(words.find("\\top") == std::string::npos);
        CHECK(words.find('$') == std::string::npos);
        CHECK_THAT(words, Catch::Matchers::Contains("... and 6 more wrong cells."));
    }
}
