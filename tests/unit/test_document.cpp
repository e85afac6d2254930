// The neutral document (render/document.hpp): one document, built by hand
// with every kind of block, written in text, Markdown, LaTeX and HTML. Each
// writer is held to what its format needs of each block, and to writing
// nothing for an empty one; and each command writes every format that its
// row in the table of formats names.
#include "render/document.hpp"
#include "render/palette.hpp"
#include "render/render.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>

namespace {

using namespace qkv;

Table two_by_two() {
    Trace trace;
    Step step;
    step.values = arma::mat{{1.5, 2.0}, {-0.25, 4.0}};
    step.row_labels = {"<s>", "cat"};
    step.col_labels = {"d1", "d2"};
    RenderOptions options;
    options.full = true;
    options.precision = 2;
    return build_table(step, options);
}

Document every_block() {
    Document document;
    document.title = "Scores & *weights*";
    document.purpose = "a test of every block";
    StepHeading heading{"Step 5", "Scores", "head 2", "scores", 2};
    Dims dims;
    dims.n = 2;
    dims.m = 2;
    dims.d_model = 2;
    dims.d_k = 2;
    dims.d_v = 2;
    dims.d_out = 2;
    document.blocks = {
        Prose{"First paragraph,\nstill the first.\n\nSecond <paragraph>."},
        Sizes{dims, false},
        Section{"Given"},
        Group{{Caption{"Query weights", "W_{Q}", 2, 2}, TableBlock{.table = two_by_two(), .role = TableRole::given}}},
        Notes{{"Scale: divide by √2."}},
        Group{{heading, Formula{"S = Q K^\\top", "S = Q·Kᵀ", 2, 2}, TableBlock{.table = two_by_two(), .role = TableRole::blank},
               Notes{{}}}},
        Prose{""},
        TableBlock{.table = two_by_two(), .caption = "q = x₁·W_Q"},
    };
    return document;
}

std::string written(Format format, const DocumentStyle& style = {}) {
    std::ostringstream out;
    write_document(every_block(), format, style, out);
    return out.str();
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) {
        ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("a step's heading is kept in parts and joined by each format", "[document]") {
    const StepHeading heading{"Step 5", "Scores", "key/value head 1", "scores", 1};
    CHECK(joined_heading(heading, " · ", " · ") == "Step 5 · Scores · key/value head 1");
    CHECK(joined_heading(heading, ": ", ", ") == "Step 5: Scores, key/value head 1");
    // a lesson numbers no step, and one head names none
    CHECK(joined_heading({"", "Weights", "", "weights", 0}, ": ", ", ") == "Weights");
}

TEST_CASE("Markdown writes each block once with a blank line between blocks", "[document]") {
    const std::string md = written(Format::markdown);
    CHECK(md ==
          "# Scores \\& \\*weights\\*\n"
          "\n"
          "First paragraph, still the first.\n"
          "\n"
          "Second \\<paragraph\\>.\n"
          "\n"
          "n = 2 tokens, d_model = 2, heads = 1, d_k = 2, d_v = 2, d_out = 2\n"
          "\n"
          "## Given\n"
          "\n"
          "**Query weights** $W_{Q}$ (2 × 2)\n"
          "\n"
          "|       |    d1 |   d2 |\n"
          "| :---- | ----: | ---: |\n"
          "| \\<s\\> |  1.50 | 2.00 |\n"
          "| cat   | -0.25 | 4.00 |\n"
          "\n"
          "- Scale: divide by √2.\n"
          "\n"
          "## Step 5 · Scores · head 2 `scores`\n"
          "\n"
          "$S = Q K^\\top$ (2 × 2)\n"
          "\n"
          "|       |     d1 |     d2 |\n"
          "| :---- | -----: | -----: |\n"
          "| \\<s\\> |        |        |\n"
          "| cat   |        |        |\n"
          "\n"
          "**q = x₁·W_Q** (2 × 2)\n"
          "\n"
          "|       |    d1 |   d2 |\n"
          "| :---- | ----: | ---: |\n"
          "| \\<s\\> |  1.50 | 2.00 |\n"
          "| cat   | -0.25 | 4.00 |\n");
    // ASCII: the symbols spelled out, the markup the same
    const std::string ascii = written(Format::markdown, {.ascii = true});
    CHECK(ascii.find("$W_{Q}$ (2 x 2)") != std::string::npos);
    CHECK(ascii.find("- Scale: divide by sqrt 2.") != std::string::npos);
}

TEST_CASE("LaTeX keeps a group on one page and writes nothing for an empty block", "[document]") {
    const std::string fragment = written(Format::latex);
    CHECK(fragment.starts_with("% qkv"));
    CHECK(fragment.find("a test of every block") != std::string::npos);
    CHECK(fragment.find("\\section*{\\raggedright Scores \\& *weights*}") != std::string::npos);
    CHECK(count(fragment, "\\begin{minipage}{\\linewidth}") == 2);
    CHECK(count(fragment, "\\end{minipage}") == 2);
    CHECK(fragment.find("\\subsection*{Step 5: Scores, head 2\\hspace{0pt plus 4em} (\\texttt{scores})}") !=
          std::string::npos);
    // the formula with its shape, or without it where the line is too narrow for both
    CHECK(fragment.find("\\qkvfresh\n\\qkvdisplay{S = Q K^\\top \\qquad (2 \\times 2)}%\n"
                        "\\qkvlastdisplay{S = Q K^\\top}%\n") != std::string::npos);
    CHECK(fragment.find("\\noindent\\textbf{Query weights} \\quad $W_{Q}$ \\quad ($2 \\times 2$)") !=
          std::string::npos);
    // one list: the empty notes and the empty prose write nothing
    CHECK(count(fragment, "\\begin{itemize}") == 1);
    CHECK(fragment.find("\n\n\n\n") == std::string::npos);
    CHECK(fragment.find("\\end{document}") == std::string::npos);
    const std::string whole = written(Format::latex, {.standalone = true});
    CHECK(whole.find("\\documentclass{article}") != std::string::npos);
    CHECK(whole.ends_with("\\end{document}\n"));
}

TEST_CASE("LaTeX runs an explanation into its equations and table, and shades and floats a step's table",
          "[document]") {
    const StepHeading heading{"Step 7", "Weights", "head 2", "weights", 2};
    const Formula formula{"A = \\mathrm{softmax}(S)", "A = softmax(S)", 2, 2};
    TableBlock table{.table = two_by_two(), .shaded = true, .blocked = {{false, true}, {false, false}}};
    table.numbered = Numbered{"Weights, head 2", "A = \\mathrm{softmax}(S)", "qkv:weights:head2"};
    Document document;
    document.title = "Weights";
    document.blocks = {Part{"weights-h2", {heading, formula, Prose{"Each row sums to 1."}, Equations{"\\[ E \\]\n"},
                                           table, Notes{{"A note."}}}},
                       Part{"weights-h1", {heading, formula, Prose{"Explained again."}, TableBlock{.table = two_by_two()}}}};
    std::ostringstream latex;
    write_document(document, Format::latex, {}, latex);
    const std::string tex = latex.str();
    // no blank line: the equations, or the table, end the explanation's paragraph
    CHECK(tex.find("Each row sums to 1.\n\\[ E \\]\n") != std::string::npos);
    CHECK(tex.find("Explained again.\n\\begin{center}") != std::string::npos);
    // every weight shaded but the one the mask blocks
    CHECK(count(tex, "\\qkvcell{") == 3);
    CHECK(tex.find("$2.00$") != std::string::npos);
    CHECK(tex.find("{$2.00$}") == std::string::npos);
    // a float with its caption, the list of tables' entry and the label
    CHECK(tex.find("\\begin{table}[htbp]\n\\centering\n\\caption[Weights, head 2]{Weights, head 2: $A = "
                   "\\mathrm{softmax}(S)$}\\label{qkv:weights:head2}") != std::string::npos);
    CHECK(count(tex, "\\begin{table}") == 1);
    // the formats that set no display math leave the equations out; only LaTeX floats
    for (const Format format : {Format::text, Format::markdown, Format::html}) {
        std::ostringstream out;
        write_document(document, format, {}, out);
        CHECK(out.str().find("[ E") == std::string::npos);
        CHECK(out.str().find("qkv:weights") == std::string::npos);
        CHECK(out.str().find("Each row sums to 1.") != std::string::npos);
    }
}

TEST_CASE("a document's blocks alone leave out its title and, in LaTeX, its preamble", "[document]") {
    Document document;
    document.title = "Headline";
    document.purpose = "a test of the body alone";
    document.blocks = {Prose{"Body text."}, Notes{{"A note."}}};
    for (const Format format : {Format::text, Format::markdown, Format::latex, Format::html}) {
        CAPTURE(format_name(format));
        std::ostringstream whole;
        write_document(document, format, {.standalone = true}, whole);
        std::ostringstream body;
        write_document(document, format, {.standalone = true, .body_only = true}, body);
        CHECK(whole.str().find("Headline") != std::string::npos);
        CHECK(body.str().find("Headline") == std::string::npos);
        CHECK(body.str().find("Body text.") != std::string::npos);
        CHECK(body.str().find("A note.") != std::string::npos);
        CHECK(body.str().find("a test of the body alone") == std::string::npos);
    }
    std::ostringstream tex;
    write_document(document, Format::latex, {.standalone = true, .body_only = true}, tex);
    CHECK(tex.str().find("\\documentclass") == std::string::npos);
    CHECK(tex.str().find("\\providecommand") == std::string::npos);
    CHECK(tex.str().find("\\end{document}") == std::string::npos);
}

namespace {

// A lesson's document in small: a lead, two pages of narration (a value, code,
// a list), a question with its answer folded away, a verdict and a worked answer.
Document lesson_like() {
    const Working working{{{"weights[1,1] = 0.0634    (Weights, row 1 \""}, {"<s>", true}, {"\")"}},
                          "A = \\mathrm{softmax}(S)",
                          {"exp(−2) / 2.1353", "= 0.0634"}};
    Document document;
    document.title = "Lesson 1";
    document.subject = "Three inputs";
    document.purpose = "Lesson 1: Three inputs";
    document.blocks = {
        Lead{{{"Queries and keys, "}, {"qkv run", SpanKind::code}}},
        PageBlock{.number = 1,
                  .pages = 2,
                  .blocks = {Passage{{{{{"The first is "}, {"[1, 0, 1, 0]", SpanKind::value}, {"."}}},
                                      {{{"one"}}, true},
                                      {{{"two"}}, true},
                                      {{{"After the list."}}}}},
                             Notes{{"A note."}},
                             Passage{{{{{"After the notes."}}}}}}},
        PageBlock{.number = 2,
                  .pages = 2,
                  .blocks = {QuestionBlock{.prompt = {{"What weight? "}, {"3 × 3", SpanKind::value}},
                                           .form = "(at least 2 decimals)",
                                           .given = {{"scores[1] = [2, 4, 4]", SpanKind::code}, {" (Another model)"}},
                                           .blocks = {Answer{.label = "Answer", .folded = true, .working = working}}},
                             QuestionBlock{.prompt = {{"Again?"}},
                                           .blocks = {VerdictBlock{.label = "Not quite:",
                                                                   .tone = Mark::wrong,
                                                                   .sentences = {"you wrote 7."}},
                                                      Answer{.label = "Right.", .tone = Mark::right, .working = working}}},
                             working}},
        Part{.id = "end", .blocks = {Statement{{{.label = "Score: 1 of 2 questions right.", .spans = {}}}},
                                     Aside{"End of lesson 1."}}},
    };
    return document;
}

std::string lesson_in(Format format, const DocumentStyle& style = {}) {
    std::ostringstream out;
    write_document(lesson_like(), format, style, out);
    return out.str();
}

}  // namespace

TEST_CASE("a lesson's pages, narration and questions in Markdown", "[document]") {
    const std::string md = lesson_in(Format::markdown);
    INFO(md);
    CHECK(md.starts_with("# Lesson 1: Three inputs\n\n*Queries and keys, `qkv run`*\n\n"));
    // a value is plain text; the items of a list one under the other
    CHECK(md.find("The first is \\[1, 0, 1, 0\\].\n\n- one\n- two\n\nAfter the list.\n") != std::string::npos);
    CHECK(md.find("**Question.** What weight? 3 × 3 (at least 2 decimals)\n\n*Given:* `scores[1] = [2, 4, 4]` (Another "
                  "model)\n\n<details>\n<summary>Answer</summary>\n\n`weights[1,1] = 0.0634    (Weights, row 1 \"<s>\")`\n\n"
                  "```text\nexp(−2) / 2.1353\n= 0.0634\n```\n\n</details>\n") != std::string::npos);
    CHECK(md.find("**Not quite:** you wrote 7.\n\n**Right.** `weights[1,1]") != std::string::npos);
    // a label alone has no space after it
    CHECK(md.find("**Score: 1 of 2 questions right.**\n\n*End of lesson 1.*\n") != std::string::npos);
    // the working on the page
    CHECK(md.find("### weights[1,1] = 0.0634    (Weights, row 1 \"\\<s\\>\")") != std::string::npos);
}

TEST_CASE("a lesson's pages, narration and questions on a page", "[document]") {
    const std::string html = lesson_in(Format::html);
    INFO(html);
    CHECK(html.find("<h1>Lesson 1: Three inputs</h1>\n<p class=\"note\">Queries and keys, <code>qkv run</code></p>\n"
                    "<section class=\"page\" id=\"page-1\">\n") != std::string::npos);
    // a value in bold, its spaces unbroken; the items one list
    CHECK(html.find("<p>The first is <strong>[1,&#160;0,&#160;1,&#160;0]</strong>.</p>\n<ul>\n<li>one</li>\n<li>two</li>\n"
                    "</ul>\n<p>After the list.</p>\n") != std::string::npos);
    // after the first page, which page it is
    CHECK(html.find("<section class=\"page\" id=\"page-2\">\n<p class=\"note\">Page 2 of 2</p>\n") != std::string::npos);
    CHECK(count(html, "Page 1 of") == 0);
    // a question is a box holding its answer, folded or under its verdict
    CHECK(html.find("<div class=\"question\">\n<p><strong>Question.</strong> What weight? <strong>3&#160;×&#160;3</strong> "
                    "<span class=\"note\">(at least 2 decimals)</span></p>\n<p class=\"given\"><em>Given:</em> "
                    "<code>scores[1] = [2, 4, 4]</code> (Another model)</p>\n<details>\n<summary>Answer</summary>\n"
                    "<div class=\"working\">\n<h3>weights[1,1] = 0.0634    (Weights, row 1 &quot;&lt;s&gt;&quot;)</h3>") !=
          std::string::npos);
    CHECK(html.find("<p><strong class=\"verdict-wrong\">Not quite:</strong> you wrote 7.</p>\n<p class=\"verdict-right\">"
                    "<strong>Right.</strong></p>\n<div class=\"working\">\n") != std::string::npos);
    CHECK(count(html, "<div class=\"question\">") == 2);
    CHECK(html.find("</details>\n</div>\n") != std::string::npos);
    CHECK(html.find("<section id=\"end\">\n<p><strong>Score: 1 of 2 questions right.</strong></p>\n"
                    "<p class=\"note\">End of lesson 1.</p>\n</section>\n") != std::string::npos);
}

TEST_CASE("a lesson's pages, narration and questions in LaTeX", "[document]") {
    const std::string tex = lesson_in(Format::latex);
    INFO(tex);
    CHECK(tex.starts_with("% qkv: Lesson 1: Three inputs\n"));
    // narration may stretch its spaces, in one group around the whole
    CHECK(count(tex, "\\begingroup\\setlength{\\emergencystretch}{3em}\n") == 1);
    CHECK(tex.find("\\section*{\\raggedright Lesson 1: Three inputs}\n\n\\begingroup\\setlength{\\emergencystretch}{3em}\n"
                   "\\emph{Queries and keys, \\texttt{qkv run}}\n") != std::string::npos);
    CHECK(tex.find("\\par\\endgroup\n") != std::string::npos);
    // a value in bold, breaking after its commas only; a paragraph after a list or the notes starts afresh
    CHECK(tex.find("\nThe first is \\textbf{[1, 0, 1, 0]}.\n\n\\begin{itemize}\n  \\item one\n  \\item two\n"
                   "\\end{itemize}\n\nAfter the list.\n\n") != std::string::npos);
    CHECK(tex.find("\\end{itemize}\n\nAfter the notes.") != std::string::npos);
    CHECK(tex.find("\\textbf{Question.} What weight? \\textbf{3~$\\times$~3} \\emph{(at least 2 decimals)}") !=
          std::string::npos);
    CHECK(tex.find("\\noindent\\textit{Given:} \\texttt{scores[1] = [2,\\allowbreak{} 4,\\allowbreak{} 4]} (Another "
                   "model)") != std::string::npos);
    // a handout cannot fold: a folded answer's label is an aside, a verdict's in bold
    CHECK(tex.find("\\noindent\\textit{Answer:} weights[1,1] = 0.0634") != std::string::npos);
    CHECK(tex.find("\\noindent\\textbf{Not quite:} you wrote 7.\n") != std::string::npos);
    CHECK(tex.find("\\noindent\\textbf{Right.} weights[1,1]") != std::string::npos);
    // a working on a page sits under the page's step headings
    CHECK(tex.find("\\subsubsection*{\\raggedright weights[1,1]") != std::string::npos);
    CHECK(tex.find("\\noindent\\textbf{Score: 1 of 2 questions right.}\n") != std::string::npos);
    CHECK(tex.find("\\medskip\\noindent\\emph{End of lesson 1.}\n") != std::string::npos);
}

TEST_CASE("a lesson's pages, narration and questions in text", "[document]") {
    const std::string text = lesson_in(Format::text, {.width = 32});
    // narration at the margin, a blank line before each paragraph (an item
    // too); a value never broken at its spaces; code between backticks; the
    // verdicts and answers right under their question, indented
    CHECK(text == "Lesson 1 · Three inputs\n"
                  "=======================\n"
                  "Queries and keys, `qkv run`\n"
                  "\n"
                  "The first is [1, 0, 1, 0].\n"
                  "\n"
                  "- one\n"
                  "\n"
                  "- two\n"
                  "\n"
                  "After the list.\n"
                  "  · A note.\n"
                  "\n"
                  "After the notes.\n"
                  "\n"
                  "─── page 2 of 2 ───\n"
                  "\n"
                  "Question: What weight? 3 × 3\n"
                  "  (at least 2 decimals)\n"
                  "  Given: scores[1] = [2, 4, 4]\n"
                  "    (Another model)\n"
                  "  Answer: weights[1,1] =\n"
                  "    0.0634 (Weights, row 1\n"
                  "    \"<s>\")\n"
                  "    exp(−2) / 2.1353\n"
                  "    = 0.0634\n"
                  "\n"
                  "Question: Again?\n"
                  "  Not quite: you wrote 7.\n"
                  "  Right. weights[1,1] = 0.0634\n"
                  "    (Weights, row 1 \"<s>\")\n"
                  "    exp(−2) / 2.1353\n"
                  "    = 0.0634\n"
                  "\n"
                  "weights[1,1] = 0.0634\n"
                  "    (Weights, row 1 \"<s>\")\n"
                  "  exp(−2) / 2.1353\n"
                  "  = 0.0634\n"
                  "\n"
                  "  Score: 1 of 2 questions right.\n"
                  "\n"
                  "  End of lesson 1.\n");
}

namespace {

std::string text_of(const std::vector<Block>& blocks, DocumentStyle style) {
    Document document;
    document.blocks = blocks;
    style.body_only = true;
    std::ostringstream out;
    write_document(document, Format::text, style, out);
    return out.str();
}

}  // namespace

TEST_CASE("text keeps a value's bold over a line's end and tones a verdict's label", "[document]") {
    const std::string bold = k_bold, reset = k_reset;
    const std::string text = text_of(
        {Passage{{{{{"The row is "}, {"[1, 0, 1, 0, 2, 2, 1, 0, 1]", SpanKind::value}, {" and "}, {"more words", SpanKind::strong}}}}},
         QuestionBlock{.prompt = {{"Again?"}},
                       .blocks = {VerdictBlock{.label = "Not quite:",
                                               .tone = Mark::wrong,
                                               .sentences = {"you wrote 7.", "It is a sum of four products."}}}}},
        {.color = true, .width = 24});
    // the value is wider than a line: it breaks after a comma, bold on both lines
    CHECK(text == "The row is " + bold + "[1, 0, 1," + reset + "\n" + bold + "0, 2, 2, 1, 0, 1]" + reset + " and\n" +
                      bold + "more words" + reset + "\n"
                      "\n" +
                      bold + "Question:" + reset + " Again?\n" +
                      "  " + bold + k_red + "Not quite:" + reset + " you wrote\n"
                      "    7.\n"
                      "    It is a sum of\n"
                      "    four products.\n");
}

TEST_CASE("text written on from text above it sets its first block apart and indents a working", "[document]") {
    const Working working{{{"scores[1,2] = 4    (Scores, row 1, column 2)"}}, "", {"q·k = 1·4 + 0·4 + 2·0 = 4"}};
    // explain's document: the working at the margin, whole without a width
    CHECK(text_of({working}, {}) == "scores[1,2] = 4    (Scores, row 1, column 2)\n  q·k = 1·4 + 0·4 + 2·0 = 4\n");
    // a lesson's, on a terminal of 30 columns: set apart, indented, broken at
    // a space where it would not fit, the rest indented by four more
    CHECK(text_of({working}, {.width = 30, .continues = true}) == "\n"
                                                                  "  scores[1,2] = 4 (Scores,\n"
                                                                  "      row 1, column 2)\n"
                                                                  "    q·k = 1·4 + 0·4 + 2·0 =\n"
                                                                  "        4\n");
}

TEST_CASE("text breaks a heading wider than the terminal, and keeps a shape whole", "[document]") {
    const std::vector<Block> blocks{StepHeading{.number = "Step 5", .title = "Scores", .head = "", .id = "scores"},
                                    Formula{"S = QK^T", "S = Q·Kᵀ", 3, 3},
                                    Prose{"Each of 2 heads × (d_k + d_v) numbers makes a 3 × 4 table."}};
    CHECK(text_of(blocks, {}) ==
          "Step 5 · Scores  [scores]\n  S = Q·Kᵀ    (3 × 3)\n  Each of 2 heads × (d_k + d_v) numbers makes a 3 × 4 table.\n");
    // "3 × 4" is never split; "× (" may be
    CHECK(text_of(blocks, {.width = 22}) == "Step 5 · Scores\n"
                                            "  [scores]\n"
                                            "  S = Q·Kᵀ (3 × 3)\n"
                                            "  Each of 2 heads ×\n"
                                            "  (d_k + d_v)\n"
                                            "  numbers makes a\n"
                                            "  3 × 4 table.\n");
}

TEST_CASE("HTML puts a group in a section and leaves a blank table's cells empty", "[document]") {
    const std::string html = written(Format::html);
    CHECK(html.starts_with("<!DOCTYPE html>"));
    CHECK(html.find("<h1>Scores &amp; *weights*</h1>") != std::string::npos);
    CHECK(count(html, "<section>\n") == 2);
    CHECK(html.find("<h2 id=\"scores-h2\">Step 5 · Scores · head 2 <code>scores</code></h2>") != std::string::npos);
    CHECK(html.find("<h3>Query weights <span class=\"math\">W<sub>Q</sub></span>") != std::string::npos);
    CHECK(html.find("<p>Second &lt;paragraph&gt;.</p>") != std::string::npos);
    // the blank table's four cells are empty boxes; the given and the values' tables show their numbers
    CHECK(count(html, "<td class=\"blank\"></td>") == 4);
    CHECK(count(html, "<td>-0.25</td>") == 2);
    CHECK(count(html, "<ul class=\"note\">") == 1);
    CHECK(html.find("<caption>q = x₁·W_Q (2 × 2)</caption>") != std::string::npos);
    CHECK(html.ends_with("</html>\n"));
}

TEST_CASE("text wraps prose and notes and puts no blank line under a heading", "[document]") {
    Document document;
    document.title = "Decoding";
    document.blocks = {
        Section{"Position 1 · one", 2},
        Prose{std::string(30, 'a') + " " + std::string(30, 'b') + " " + std::string(30, 'c')},
        Notes{{"a note"}},
        TableBlock{.table = two_by_two(), .caption = "q = x₁·W_Q"},
        Notes{{"under the table"}},
    };
    std::ostringstream out;
    write_document(document, Format::text, {}, out);
    const std::string a(30, 'a'), b(30, 'b'), c(30, 'c');
    CHECK(out.str() == "Decoding\n"
                       "========\n"
                       "Position 1 · one\n"
                       "  " + a + " " + b + "\n"
                       "  " + c + "\n"
                       "  · a note\n"
                       "\n"
                       "  q = x₁·W_Q    (2 × 2)\n" +
                           draw_table(two_by_two(), TextTableSkin(false)) + "  · under the table\n");
    // the opening, before the first heading, at the margin; a step's heading
    // with a blank line of its own, even after a table's; prose wrapped two
    // columns short of --width
    Document more;
    more.title = "More";
    more.blocks = {Prose{a + " " + b}, Section{"Given"}, TableBlock{.table = two_by_two()},
                   StepHeading{"Step 1", "Inputs", "", "inputs", 0}, Prose{a + " " + b}};
    std::ostringstream narrow;
    write_document(more, Format::text, {.width = 50}, narrow);
    CHECK(narrow.str() == "More\n"
                          "====\n" +
                              a + "\n" + b +
                              "\n"
                              "\n"
                              "Given\n" +
                              draw_table(two_by_two(), TextTableSkin(false)) +
                              "\n"
                              "Step 1 · Inputs  [inputs]\n"
                              "  " + a + "\n"
                              "  " + b + "\n");
    more.title_in_fragment = false;
    more.blocks = {Prose{"more"}};
    std::ostringstream alone;
    write_document(more, Format::text, {}, alone);
    CHECK(alone.str() == "more\n");
}

namespace {

// A report as `qkv check` builds one: the title of what, the lines of a
// report, a legend, a part with a marked table, and the summary.
Table answers_table() {
    Table table = two_by_two();
    table.marks.assign(2, std::vector<CellMark>(2));
    table.marks[0][0] = {.verdict = Mark::wrong, .true_value = "1.25"};
    table.marks[0][1].verdict = Mark::right;
    table.marks[1][0].verdict = Mark::carried;
    table.marks[1][1].verdict = Mark::right;
    return table;
}

Document report() {
    const Table table = answers_table();
    Document document;
    document.title = "Checking answers";
    document.subject = "Two <tokens>";
    document.purpose = "checking answers: Two <tokens>";
    document.blocks = {
        Statement{{{.spans = {{"Answers from "}, {"a/b_c.yaml", SpanKind::code}, {". Rounded."}}}}},
        Legend{{{Mark::right, "right"}, {Mark::wrong, "wrong, the true value"}, {Mark::none, "~ not answered"}}},
        Part{"check-scores-h2",
             {StepHeading{"Step 5", "Scores", "head 2", "scores", 2}, Formula{"S = Q K^\\top", "S = Q·Kᵀ", 2, 2},
              TableBlock{.table = table, .role = TableRole::answers}, Statement{{{.spans = {{"4 answered."}}}}},
              MarkedList{{{Mark::wrong, "scores[1,1]: you wrote 1.5"}, {Mark::none, "… and 1 more."}}},
              Statement{{{.label = "Mistake:", .spans = {{"Swapped."}}, .tone = Mark::wrong},
                         {.label = "Correct:", .spans = {{"Z_2 = A·V", SpanKind::formula}}}}}}},
        Summary{.label = "Summary:",
                .text = "4 answered cells.",
                .tone = Mark::wrong,
                .next = {{"See: "}, {"qkv explain m.yaml 'scores[1,1]'", SpanKind::code}}},
    };
    return document;
}

std::string report_in(Format format, const DocumentStyle& style = {}) {
    std::ostringstream out;
    write_document(report(), format, style, out);
    return out.str();
}

}  // namespace

TEST_CASE("a report's lines follow one another, indented in a part, the summary apart", "[document]") {
    const Table drawn = drawn_marks(answers_table(), false, false, "[", "]");
    CHECK(report_in(Format::text) ==
          "Checking answers · Two <tokens>\n"
          "Answers from a/b_c.yaml. Rounded.\n"
          "✓ right   ✗ wrong, the true value in brackets   ~ not answered\n"
          "\n"
          "Step 5 · Scores · head 2  [scores]\n"
          "  S = Q·Kᵀ    (2 × 2)\n"
          "\n" +
              draw_table(drawn, TextTableSkin(false, 2, Align::left)) +
              "  4 answered.\n"
              "  ✗ scores[1,1]: you wrote 1.5\n"
              "  … and 1 more.\n"
              "  Mistake: Swapped.\n"
              "  Correct: Z₂ = A·V\n"
              "\n"
              "Summary: 4 answered cells.\n"
              "See: qkv explain m.yaml 'scores[1,1]'\n");
    // a wrong number's true value in brackets, its mark after each number
    CHECK(draw_table(drawn, TextTableSkin(false, 2, Align::left)).find("1.50 ✗ [1.25]") != std::string::npos);
    // ASCII spells the marks and the symbols, and leaves code as it is
    const std::string ascii = report_in(Format::text, {.ascii = true});
    CHECK(ascii.find("ok right   X wrong, the true value in brackets") != std::string::npos);
    CHECK(ascii.find("  Correct: Z_2 = A*V\n") != std::string::npos);
    CHECK(ascii.find("... and 1 more.") != std::string::npos);
    // colour: the marks and the mistake's label in their tones, the summary in bold
    const std::string color = report_in(Format::text, {.color = true});
    CHECK(color.find(std::string(k_red) + "Mistake:" + k_reset + " Swapped.") != std::string::npos);
    CHECK(color.find(std::string(k_green) + "✓" + k_reset + " right") != std::string::npos);
    CHECK(color.find(std::string(k_bold) + "Summary: 4 answered cells." + k_reset) != std::string::npos);
    CHECK(color.find(std::string(k_red) + "✗" + k_reset + " [1.25]") != std::string::npos);
}

TEST_CASE("Markdown writes a report's labelled lines as one paragraph and its code as code", "[document]") {
    const std::string md = report_in(Format::markdown);
    CHECK(md.starts_with("# Checking answers: Two \\<tokens\\>\n\n"
                         "Answers from `a/b_c.yaml`. Rounded.\n\n"
                         "✓ right · ✗ wrong, the true value in parentheses · \\~ not answered\n\n"
                         "## Step 5 · Scores · head 2 `scores`\n"));
    CHECK(md.find("1.50 ✗ (1.25)") != std::string::npos);
    CHECK(md.find("-0.25 →") != std::string::npos);
    CHECK(md.find("\n4 answered.\n\n- ✗ scores\\[1,1\\]: you wrote 1.5\n- … and 1 more.\n\n") != std::string::npos);
    CHECK(md.find("**Mistake:** Swapped.  \n**Correct:** Z_2 = A·V\n") != std::string::npos);
    CHECK(md.ends_with("\n**Summary:** 4 answered cells.\n\nSee: `qkv explain m.yaml 'scores[1,1]'`\n"));
    const std::string ascii = report_in(Format::markdown, {.ascii = true});
    CHECK(ascii.find("ok right; X wrong, the true value in parentheses; \\~ not answered") != std::string::npos);
}

TEST_CASE("LaTeX sets a report's marks as symbols and its code in type", "[document]") {
    const std::string tex = report_in(Format::latex);
    CHECK(tex.find("% qkv: checking answers: Two <tokens>") != std::string::npos);
    CHECK(tex.find("\\section*{\\raggedright Checking answers: Two $<$tokens$>$}") != std::string::npos);
    // a path breaks after its slashes, in a ragged-right paragraph
    // code breaks after a slash, a comma or an underscore
    CHECK(tex.find("{\\raggedright Answers from \\texttt{a/\\allowbreak{}b\\_\\allowbreak{}c.yaml}. Rounded.\\par}") !=
          std::string::npos);
    CHECK(tex.find("\\noindent $\\checkmark$ right\\quad $\\boxtimes$ wrong, the true value in parentheses\\quad "
                   "\\textasciitilde{} not answered\n") != std::string::npos);
    CHECK(tex.find("(1.25)") != std::string::npos);
    CHECK(tex.find("\\item[$\\boxtimes$] scores[1,1]: you wrote 1.5\n  \\item[] \\ldots{} and 1 more.") !=
          std::string::npos);
    CHECK(tex.find("\n\\noindent\\textbf{Mistake:} Swapped.\n\n\\noindent\\textbf{Correct:} ") != std::string::npos);
    CHECK(tex.find("\\bigskip\n\\noindent\\textbf{Summary:} 4 answered cells.\n") != std::string::npos);
    CHECK(tex.find("{\\raggedright\\noindent See: \\texttt{qkv explain m.yaml 'scores[1,\\allowbreak{}1]'}\\par}") !=
          std::string::npos);
}

TEST_CASE("HTML writes a report's summary first and each part as a section with its anchor", "[document]") {
    const std::string html = report_in(Format::html);
    CHECK(html.find("<h1>Checking answers: Two &lt;tokens&gt;</h1>") != std::string::npos);
    const auto summary = html.find("<p class=\"verdict-wrong\"><strong>Summary:</strong> 4 answered cells.</p>\n"
                                   "<p class=\"note\">See: <code>qkv explain m.yaml &apos;scores[1,1]&apos;</code></p>");
    REQUIRE(summary != std::string::npos);
    CHECK(summary < html.find("Answers from"));
    CHECK(html.find("<p>Answers from <code>a/b_c.yaml</code>. Rounded.</p>") != std::string::npos);
    CHECK(html.find("<p class=\"note\"><span class=\"verdict-right\">✓</span> right · <span class=\"verdict-wrong\">✗</span> "
                    "wrong, the true value in parentheses · ~ not answered</p>") != std::string::npos);
    // the section is the anchor: its heading has none of its own
    CHECK(html.find("<section id=\"check-scores-h2\">\n<h2>Step 5 · Scores · head 2 <code>scores</code></h2>") != std::string::npos);
    CHECK(html.find("<td class=\"wrong\">1.50 ✗ (1.25)</td>") != std::string::npos);
    CHECK(html.find("<td class=\"carried\">-0.25 →</td>") != std::string::npos);
    CHECK(html.find("<li><span class=\"verdict-wrong\">✗</span> scores[1,1]: you wrote 1.5</li>\n<li>… and 1 more.</li>") !=
          std::string::npos);
    CHECK(html.find("<p><strong class=\"verdict-wrong\">Mistake:</strong> Swapped.</p>\n<p><strong>Correct:</strong> Z₂ = A·V</p>") !=
          std::string::npos);
}

TEST_CASE("a page opens each cell's working from the cell and shades weights", "[document]") {
    TableBlock table{.table = two_by_two(), .shaded = true};
    table.workings.assign(2, std::vector<CellWorking>(2));
    for (std::size_t i = 0; i < 2; ++i) {
        for (std::size_t j = 0; j < 2; ++j) {
            const std::string name = "weights[" + std::to_string(i + 1) + "," + std::to_string(j + 1) + "]";
            table.workings[i][j] = {name, Working{{{name + " = …"}}, "", {"exp(x) / Σ", "= <1>"}}};
        }
    }
    Document document;
    document.title = "Weights";
    document.blocks = {Aside{"Select any number."}, Part{"w-h1", {table}}};
    std::ostringstream page;
    write_document(document, Format::html, {}, page);
    const std::string html = page.str();
    CHECK(html.find("<p class=\"note\">Select any number.</p>") != std::string::npos);
    // each cell a button for the popover named by the part and the cell's row and column
    CHECK(count(html, "<button type=\"button\" class=\"cell\"") == 4);
    CHECK(html.find("popovertarget=\"w-h1-2-1\" aria-label=\"weights[2,1] = -0.25\">-0.25</button>") !=
          std::string::npos);
    CHECK(html.find("<div popover=\"auto\" id=\"w-h1-1-2\" class=\"working\">") != std::string::npos);
    CHECK(html.find("<h3>weights[1,2] = …</h3>\n<pre>exp(x) / Σ\n= &lt;1&gt;\n</pre>") != std::string::npos);
    // shaded, each row's largest marked
    CHECK(count(html, "<td class=\"shade") == 4);
    CHECK(count(html, "<td class=\"shade max\"") == 2);
    // ASCII: the working spelled out as well
    std::ostringstream ascii;
    write_document(document, Format::html, {.ascii = true}, ascii);
    CHECK(ascii.str().find("<h3>weights[1,2] = ...</h3>\n<pre>exp(x) / sum") != std::string::npos);
    // the blocks alone, for a page its caller writes
    std::ostringstream body;
    write_document(document, Format::html, {.body_only = true}, body);
    CHECK(body.str().starts_with("<p class=\"note\">Select any number.</p>\n<section id=\"w-h1\">"));
    CHECK(body.str().find("<html") == std::string::npos);
    // the formats that cannot open a working show the numbers, and the aside as a remark
    std::ostringstream md;
    write_document(document, Format::markdown, {}, md);
    CHECK(md.str().find("*Select any number.*") != std::string::npos);
    CHECK(md.str().find("exp(x)") == std::string::npos);
    std::ostringstream text;
    write_document(document, Format::text, {}, text);
    CHECK(text.str().find("  Select any number.\n") != std::string::npos);
    CHECK(text.str().find("-0.25") != std::string::npos);
}

TEST_CASE("a working keeps its columns and escapes only the example's labels", "[document]") {
    Document document;
    document.title = "The arithmetic of scores[1,2]";
    document.purpose = "the arithmetic of scores[1,2]";
    document.title_in_fragment = false;
    document.blocks = {Working{{{"scores[1,2] = 4    (Scores, row 1 \"", false},
                                {"<s>*", true},
                                {"\")", false}},
                               "S = Q K^\\top",
                               {"q = [1, 2]", "    1·3", "  + 2·1"}}};
    const auto written_as = [&](Format format, const DocumentStyle& style) {
        std::ostringstream out;
        write_document(document, format, style, out);
        return out.str();
    };
    // Markdown: no title in a fragment; the notation as it is, the label escaped
    CHECK(written_as(Format::markdown, {}) ==
          "### scores[1,2] = 4    (Scores, row 1 \"\\<s\\>\\*\")\n\n```text\nq = [1, 2]\n    1·3\n  + 2·1\n```\n");
    CHECK(written_as(Format::text, {}) == "scores[1,2] = 4    (Scores, row 1 \"<s>*\")\n  q = [1, 2]\n      1·3\n    + 2·1\n");
    const std::string fragment = written_as(Format::latex, {});
    CHECK(fragment.find("\\section*") == std::string::npos);
    CHECK(fragment.find("\\subsection*{\\raggedright scores[1,2] = 4\\quad") != std::string::npos);
    CHECK(fragment.find("\\[ S = Q K^\\top \\]") != std::string::npos);
    CHECK(fragment.find("\\hangindent") != std::string::npos);
    // a whole document shows the title
    CHECK(written_as(Format::latex, {.standalone = true}).find("\\section*{\\raggedright The arithmetic of scores[1,2]}") !=
          std::string::npos);
    const std::string html = written_as(Format::html, {});
    CHECK(html.find("<h1>The arithmetic of scores[1,2]</h1>") != std::string::npos);
    CHECK(html.find("<div class=\"working\">") != std::string::npos);
    CHECK(html.find("&lt;s&gt;*") != std::string::npos);
}

TEST_CASE("a format that is not a document's is refused", "[document]") {
    for (const Format format : all_formats()) {
        const bool document = format == Format::text || format == Format::markdown || format == Format::latex ||
                              format == Format::html;
        CHECK(is_document_format(format) == document);
        std::ostringstream out;
        if (document) {
            CHECK_NOTHROW(write_document(every_block(), format, {}, out));
        } else {
            CHECK_THROWS_AS(write_document(every_block(), format, {}, out), std::logic_error);
        }
    }
}

TEST_CASE("each command writes every format its row in the table of formats names", "[document][cli]") {
    // a command and a view of one, as a user runs them; -f NAME is added
    const std::vector<std::pair<Writer, std::vector<std::string>>> commands = {
        {Writer::run, {"run", "illustrated"}},
        {Writer::decode, {"run", "gqa", "--decode"}},
        {Writer::explain, {"explain", "illustrated", "scores[1,2]"}},
        {Writer::worksheet, {"worksheet", "illustrated"}},
        {Writer::check,
         {"check", "examples/homework/three-words/model.yaml", "--answers", "examples/homework/three-words/right.yaml"}},
        {Writer::lesson, {"lesson", "1"}},
    };
    for (const auto& [writer, args] : commands) {
        for (const Format format : formats_of(writer)) {
            qkv::test::CliRun run;
            run.args = args;
            run.args.insert(run.args.end(), {"-f", format_name(format)});
            run.cwd = qkv::test::source_dir();
            const auto result = qkv::test::run_qkv(run);
            INFO("qkv " + [&] {
                std::string line;
                for (const auto& arg : run.args) {
                    line += (line.empty() ? "" : " ") + arg;
                }
                return line;
            }());
            CHECK(result.status == 0);
            CHECK(result.err.empty());
            CHECK(result.out.size() > 100);
        }
    }
}
