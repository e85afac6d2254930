// A document for people to read, as a command builds it: a title and blocks
// in order (prose, headings, formulas, tables, notes, workings, a report's
// lines and marks), saying what each part is and nothing of how it looks.
// Each document format writes any document in one place: text in
// document_text.cpp, Markdown in markdown.cpp, LaTeX in document_latex.cpp,
// HTML in document_html.cpp. `qkv worksheet`, `qkv explain`, `qkv run` (in every
// document format), `run --decode`, `qkv check`'s report and a lesson written
// to a file (lesson/document_skin.cpp) are built this way.
//
// Text arrives in Unicode, as the trace holds it; each writer escapes it (and
// spells it in ASCII where its style or its format asks).
#pragma once

#include "attention/trace.hpp"
#include "render/formats.hpp"
#include "render/table.hpp"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qkv {

// Paragraphs of prose, a blank line between them.
struct Prose {
    std::string text;
};

// The example's sizes: "n = 3 tokens, d_model = 4, …".
struct Sizes {
    Dims dims;
    bool cross = false;  // queries from the inputs, keys and values from a context
};

// A heading below the title: "Given" (level 1), or a part within one
// ("Position 2 · sat", level 2).
struct Section {
    std::string text;
    int level = 1;
};

// A step's heading, "Step 5 · Scores · head 2", in its parts, with the step's
// id as users write it ("scores"); LaTeX joins the parts as "Step 5: Scores, head 2".
struct StepHeading {
    std::string number;  // "Step 5", "Given" for the example's weights, or empty where steps are not numbered
    std::string title;   // "Scores"
    std::string head;    // "head 2", "key/value head 1", or empty with one head
    std::string id;      // "scores"
    int head_index = 0;  // the step's head (0: not per head), for a unique anchor
};

// A given matrix's label: its name, its symbol and its shape.
struct Caption {
    std::string name;    // "Query weights, head 1"
    std::string symbol;  // LaTeX: "W_{Q}"
    arma::uword rows = 0;
    arma::uword cols = 0;
};

// A step's formula and the shape of its value.
struct Formula {
    std::string latex;  // "S = Q K^\top"
    std::string text;   // as the trace writes it in text: "S = Q·Kᵀ"
    arma::uword rows = 0;
    arma::uword cols = 0;
};

// A part of a heading: qkv's own notation ("scores[1,2] = 4    (Scores, row 1 \""),
// which a format writes as it is, or one of the example's labels ("cat"),
// which it escapes as text.
struct HeadingPart {
    std::string text;
    bool label = false;
};
// The parts as one text.
std::string joined(const std::vector<HeadingPart>& parts);

// A cell's arithmetic, as `qkv explain` writes it: its heading
// ("scores[1,2] = 4    (Scores, row 1 "a", column 2 "b")"), the step's
// formula, and the lines worked out, their columns lined up in a fixed-width font.
struct Working {
    std::vector<HeadingPart> heading;
    std::string formula;  // LaTeX ("S = Q K^\top"), shown by the formats that set math; may be empty
    std::vector<std::string> lines;
};

// What a table is for, which decides how its cells are drawn.
enum class TableRole {
    values,   // a step's numbers
    given,    // a matrix given to work from, every entry as it is
    blank,    // a step's cells left empty, to be written in by hand
    key,      // a step's true values, laid out as the blank table
    answers,  // a learner's numbers, each with its mark (a CellMark's verdict), a wrong one with its true value
};

// Where a format shows a wrong number's true value, after its mark: text in
// brackets ("✗ [0.1]"), every other format in parentheses ("✗ (0.1)").
// The words a legend ends the meaning of Mark::wrong with: "in brackets".
std::string_view true_value_open(Format format);
std::string_view true_value_close(Format format);
std::string true_value_words(Format format);

// A cell's working as a table offers it (a page: a button that opens it
// under the cell), with the cell's name ("scores[1,2]").
struct CellWorking {
    std::string name;
    Working working;
};

// A table numbered and named apart from the text, where the format floats
// its tables (LaTeX with --float): its name ("Scores, head 2"), the step's
// formula (LaTeX) and the label a reference names ("qkv:scores:head2").
struct Numbered {
    std::string name;
    std::string formula;
    std::string label;
};

struct TableBlock {
    Table table;
    TableRole role = TableRole::values;
    // A caption over the table, as formula text ("q = x₁·W_Q"), shown with
    // the table's shape; none where a Caption or a step's heading names it.
    std::string caption = "";
    // Weights, shaded as a heatmap where the format shades them (a page,
    // LaTeX, text in colour), a page marking each row's largest.
    bool shaded = false;
    // Scores, shaded on a page as the weights are, each by where it lies
    // between the smallest and the largest of its row's kept finite values
    // (a row of equal ones as its weights: 1/k each).
    bool row_shaded = false;
    // Each kept cell's working, by the table's row and column (none at a
    // gap), where the format can show it on demand (a page); or none at all.
    std::vector<std::vector<CellWorking>> workings = {};
    // The cells the mask blocks, by the table's row and column (none, or one
    // per cell): a shading format leaves them white, as their weight is 0 by
    // the mask and not by the numbers.
    std::vector<std::vector<bool>> blocked = {};
    // Where the format floats tables: how this one is numbered and named.
    std::optional<Numbered> numbered = std::nullopt;
};

// A step's working written out as equations, in LaTeX already laid out to
// fit the line (the alternatives latex_working() offers TeX), continuing the
// paragraph before it. A format that sets display math (LaTeX) writes it;
// the others leave it out.
struct Equations {
    std::string latex;
};

// A remark on how to read the document, apart from what it says ("Select
// any number to see how it was worked out.").
struct Aside {
    std::string text;
};

// Short remarks under a table, as a list; none writes nothing.
struct Notes {
    std::vector<std::string> items;
};

// A piece of a line: text as it is; code (a file or a command, in a
// fixed-width font, copied as it is: never spelled in ASCII); text in
// qkv's notation for formulas ("Z_2" is Z₂ where the format can write it);
// a number of the example's in prose ("[1, 0, 1, 0]"), set in bold where the
// format can and never broken at its spaces; or words that stand out (a
// lesson's score), in bold where the format can.
enum class SpanKind { text, code, formula, value, strong };
struct Span {
    std::string text;
    SpanKind kind = SpanKind::text;
};

// A line of a report: an optional label ("Mistake:") and what it says, kept
// whole (text never wraps it); its tone colours the label, or on a page the
// line when it has none.
struct StatementLine {
    std::string label = "";
    std::vector<Span> spans;
    Mark tone = Mark::none;
};

// Lines of a report that belong together, one under the other. In text,
// report lines (statements, marked lists, legends) follow one another with no
// blank line, and are indented inside a part.
struct Statement {
    std::vector<StatementLine> lines;
};

// A list whose items may each carry a mark: "✗ scores[1,2]: you wrote 7; …".
struct MarkedItem {
    Mark mark = Mark::none;
    std::string text;
};
struct MarkedList {
    std::vector<MarkedItem> items;
};

// What the marks of an answers table mean, in one line: each item's mark (or
// none, for "~ not answered") and its meaning; a format ends the meaning of
// Mark::wrong with where it shows the true value (true_value_words).
struct Legend {
    std::vector<MarkedItem> items;
};

// The verdict on the whole document ("Summary: 12 answered cells …"), toned
// right or wrong, and what to do next (may be empty). A page shows it first,
// under its title; every other format last.
struct Summary {
    std::string label;
    std::string text;
    Mark tone = Mark::none;
    std::vector<Span> next = {};
};

// Paragraphs of prose made of spans (a lesson's narration), each a
// paragraph or an item of a list: items that follow one another make one list.
struct Paragraph {
    std::vector<Span> spans;
    bool item = false;
};
struct Passage {
    std::vector<Paragraph> paragraphs;
};

// What the document is about, in a line under its title (a lesson's summary).
struct Lead {
    std::vector<Span> spans;
};

// A question's answer, worked out: its label ("Answer", "Right."), toned
// by its verdict, and the working; `folded`: kept closed until the reader
// opens it, where the format can fold (a page, Markdown). The working's
// heading names a cell ("weights[1,1] = 0.0634    (…)"), or is a sentence
// (the answer to a question of shape or of choice) when `sentence`.
struct Answer {
    std::string label;
    Mark tone = Mark::none;
    bool folded = false;
    Working working;
    bool sentence = false;
};

// The verdict on an answer the reader gave: its label ("Not quite:"), toned,
// and what it says, a sentence each ("you wrote 7.", why that is wrong, what
// to do now). Text sets the first sentence beside the label and the others
// under it; the other formats run them on as one line of a report.
struct VerdictBlock {
    std::string label;
    Mark tone = Mark::none;
    std::vector<std::string> sentences;
};
// The verdict as that line of a report.
Statement statement_of(const VerdictBlock& verdict);

// Blocks kept on one page, where the format has pages.
struct Group;
// The blocks about one thing (a step checked), under an anchor a page can link to.
struct Part;
// A question to the reader, and what follows it about its answer.
struct QuestionBlock;
// Page `number` of `pages` of a document read page by page (a lesson).
struct PageBlock;

using Block = std::variant<Prose, Sizes, Section, StepHeading, Caption, Formula, TableBlock, Equations, Aside, Notes,
                           Working, Statement, MarkedList, Legend, Summary, Passage, Lead, Answer, VerdictBlock, Group, Part,
                           QuestionBlock, PageBlock>;

struct Group {
    std::vector<Block> blocks;
};

struct Part {
    std::string id;
    std::vector<Block> blocks;
};

struct PageBlock {
    int number = 1;
    int pages = 1;
    std::vector<Block> blocks;
};

// What is asked; how to answer it ("(rows × columns)", may be empty); the
// numbers it is worked from, as code ("queries[2] = [2, 2, 2]"), with any
// words between them; then the verdicts and the answer. (Defined after the
// other blocks: its members' defaults need every kind of block complete.)
struct QuestionBlock {
    std::vector<Span> prompt;
    std::string form = "";
    std::vector<Span> given = {};
    std::vector<Block> blocks = {};
};

struct Document {
    std::string title;
    // What the title is of, after it: "Checking answers" of "Homework · three
    // words" ("Checking answers: Homework · three words"; text "… · …"); may be empty.
    std::string subject = "";
    std::string purpose;  // what the document is, for LaTeX's header: "a worksheet, an exercise to work by hand"
    std::vector<Block> blocks;
    // Whether the title heads the document where it is a fragment to paste
    // into another (text, Markdown, LaTeX without --standalone); a whole
    // document (HTML, LaTeX with --standalone) always shows it.
    bool title_in_fragment = true;
};

// How a document is written, where the format gives a choice.
struct DocumentStyle {
    bool ascii = false;       // text, Markdown and HTML: ASCII only (LaTeX always is)
    bool standalone = false;  // LaTeX: a whole document rather than a fragment to \input
    bool color = false;       // text: ANSI colour (already resolved from --color)
    // the blocks alone, for a document that its caller writes around them (a
    // lesson on a terminal): no title, and in LaTeX no preamble or layout macros
    bool body_only = false;
    // text: the terminal's columns (0: any): prose wraps two columns short of
    // them (and at 78 at most), a line that is not prose (a heading, a formula,
    // a working) is broken at a space where it would not fit, and a wider
    // table is drawn in blocks of columns
    int width = 0;
    // text: the blocks go on from text already written (a lesson on a
    // terminal is written as it is played): the first is set apart from what
    // is above it, and the opening is over (workings are indented)
    bool continues = false;
};

// The arithmetic of one cell of a step, 0-based matrix row and column, as
// `qkv explain` works it out (the command supplies it: render/ knows no explain).
using CellWorkings = std::function<Working(const Step& step, arma::uword row, arma::uword col)>;

struct RenderOptions;  // render/render.hpp
struct Model;          // model/model.hpp

// What run's document may hold beyond the trace, where its caller has it.
struct RunExtras {
    // every kept cell's working, with an aside saying that a number can be selected
    CellWorkings workings = {};
    // the example: each step's working as equations (Equations, latex_working())
    const Model* model = nullptr;
    // before each part's anchor, keeping several traces' anchors on one page apart
    std::string id_prefix = "";
};

// The start of `qkv run`'s documents: the example's title (or a default), its
// description (left out with options.brief) and its sizes.
Document run_header(const Trace& trace, const RenderOptions& options);

// `qkv run`'s document of the steps options.steps and options.head choose:
// the header, then each step as a part (its anchor extras.id_prefix and the
// step's id and head) holding its heading, formula, explanation and working
// as equations (left out with options.brief), table (weights shaded, the
// masked ones apart; numbered with options.floats) and notes. Run writes
// every document format this way.
Document run_document(const Trace& trace, const RenderOptions& options, const RunExtras& extras = {});

// The parts of run_document() alone, each step's.
std::vector<Block> run_steps(const Trace& trace, const RenderOptions& options, const RunExtras& extras = {});

// The title and its subject as one line: "Checking answers: Homework".
std::string full_title(const Document& document, std::string_view separator = ": ");

// The heading of a step of `trace` in its parts.
StepHeading step_heading_of(const Trace& trace, const Step& step);
// The parts joined: number, title and head, with `separator` before the title
// and `head_separator` before the head.
std::string joined_heading(const StepHeading& heading, std::string_view separator, std::string_view head_separator);
// A step's formula, with the shape of its value.
Formula formula_of(const Step& step);

// The document formats: those whose row in the table of formats
// (formats.cpp) has a writer of documents.
bool is_document_format(Format format);
// Writes `document` in `format` with its row's writer; throws
// std::logic_error for a format that is not a document format. (The writers
// are named only by their rows: each is declared where the table is.)
void write_document(const Document& document, Format format, const DocumentStyle& style, std::ostream& out);

}  // namespace qkv
