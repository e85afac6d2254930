// The LaTeX writer of documents (render/document.hpp): pure ASCII, a
// fragment to \input into a document that loads amsmath, amssymb and
// booktabs, or with --standalone a whole article for pdflatex. A step's
// heading is a starred subsection, its formula a display, its table a
// booktabs tabular that fits \linewidth (latex.hpp).
#include "render/document.hpp"
#include "render/latex.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <ostream>
#include <string>
#include <variant>

namespace qkv {

namespace {

// "$n = 3$ tokens, $d_{\mathrm{model}} = 4$, 1 head, …."
std::string dims_sentence(const Dims& d, bool cross) {
    return "$n = " + std::to_string(d.n) + "$" +
           (cross ? " queries, $m = " + std::to_string(d.m) + "$ keys" : " tokens") +
           ", $d_{\\mathrm{model}} = " + std::to_string(d.d_model) + "$, " + std::to_string(d.heads) +
           (d.heads == 1 ? " head" : " heads") + ", $d_k = " + std::to_string(d.d_k) + "$, $d_v = " +
           std::to_string(d.d_v) + "$, $d_{\\mathrm{out}} = " + std::to_string(d.d_out) + "$.\n";
}

std::string step_subsection(const StepHeading& heading) {
    // the id may break after an underscore: grad_scaled_scores is wider than a narrow column's heading
    const std::string id = tex_break_underscores(tex_escape(heading.id));
    // and the line may end before it with room to spare: a heading's lines are justified
    return "\n\\subsection*{" + tex_prose(joined_heading(heading, ": ", ", ")) + "\\hspace{0pt plus 4em} (\\texttt{" +
           id + "})}\n";
}

// Each block of a document as LaTeX, with the line breaks it needs around it.
class LatexBlocks {
public:
    explicit LatexBlocks(const DocumentStyle& style) : m_standalone(style.standalone) {}

    std::string operator()(const Prose& prose) const {
        const std::string text = latex_paragraphs(prose.text);
        return text.empty() ? "" : text + "\n\n";
    }
    // the paragraph before it goes on into the display (blocks())
    std::string operator()(const Equations& equations) const { return equations.latex; }
    std::string operator()(const Sizes& sizes) const { return dims_sentence(sizes.dims, sizes.cross) + "\n"; }
    std::string operator()(const Section& section) const {
        return std::string("\n\\") + (section.level == 1 ? "subsection*{" : "subsubsection*{") + tex_escape(section.text) +
               "}\n";
    }
    std::string operator()(const StepHeading& heading) const { return step_subsection(heading); }
    std::string operator()(const Caption& caption) const {
        return "\n\\noindent\\textbf{" + tex_escape(caption.name) + "} \\quad $" + caption.symbol + "$ \\quad ($" +
               std::to_string(caption.rows) + " \\times " + std::to_string(caption.cols) + "$)\n";
    }
    // with its shape, or without it where the line is too narrow for both
    std::string operator()(const Formula& formula) const {
        return latex_display({formula.latex + " \\qquad (" + std::to_string(formula.rows) + " \\times " +
                                  std::to_string(formula.cols) + ")",
                              formula.latex});
    }
    // a caption as a line of its own over the table, with the table's shape
    std::string operator()(const TableBlock& block) const {
        const std::string caption = block.caption.empty() ? ""
                                                          : "\n\\noindent\\textbf{" + tex_prose(block.caption) + "} (" +
                                                                tex_escape(block.table.shape) + ")\n";
        return caption + table(block);
    }
    // set apart, in italics
    std::string operator()(const Aside& aside) const {
        return "\n\\medskip\\noindent\\emph{" + tex_prose(aside.text) + "}\n";
    }
    std::string operator()(const Notes& notes) const { return latex_itemize(notes.items); }
    // a labelled line a paragraph of its own ("\noindent\textbf{Mistake:} …"); a line
    // holding code ragged right, as a path breaks only after its slashes
    std::string operator()(const Statement& statement) const {
        std::string out;
        for (const auto& line : statement.lines) {
            const bool code = std::any_of(line.spans.begin(), line.spans.end(),
                                          [](const Span& span) { return span.kind == SpanKind::code; });
            if (!line.label.empty()) {
                out += "\n\\noindent\\textbf{" + tex_escape(line.label) + "}" +
                       (line.spans.empty() ? "" : " " + spans(line.spans)) + "\n";
            } else if (code) {
                out += "{\\raggedright " + spans(line.spans) + "\\par}\n\n";
            } else {
                out += spans(line.spans) + "\n";
            }
        }
        return out;
    }
    std::string operator()(const VerdictBlock& verdict) const { return (*this)(statement_of(verdict)); }
    std::string operator()(const MarkedList& list) const {
        if (list.items.empty()) {
            return "";
        }
        std::string out = "\\begin{itemize}\n";
        for (const auto& item : list.items) {
            out += "  \\item[" + mark(item.mark) + "] " + text(item.text) + "\n";
        }
        return out + "\\end{itemize}\n";
    }
    std::string operator()(const Legend& legend) const {
        std::string out;
        for (const auto& item : legend.items) {
            out += (out.empty() ? "\\noindent " : "\\quad ") + (item.mark == Mark::none ? "" : mark(item.mark) + " ") +
                   tex_escape(item.text) + (item.mark == Mark::wrong ? " " + true_value_words(Format::latex) : "");
        }
        return out.empty() ? "" : out + "\n";
    }
    std::string operator()(const Summary& summary) const {
        std::string out = "\n\\bigskip\n\\noindent\\textbf{" + tex_escape(summary.label) + "} " + text(summary.text) + "\n";
        if (!summary.next.empty()) {
            out += "\n{\\raggedright\\noindent " + spans(summary.next) + "\\par}\n";
        }
        return out;
    }
    // under the title a section's heading; on a page, under its steps' headings
    std::string operator()(const Working& working) const {
        return latex_cell_working(joined(working.heading), working.formula, working.lines,
                                  m_pages > 0 ? "subsubsection*" : "subsection*");
    }
    // after a blank line: a paragraph of its own even after a list or a table
    std::string operator()(const Passage& passage) const {
        std::string out = "\n";
        bool in_list = false;
        for (const auto& paragraph : passage.paragraphs) {
            if (paragraph.item != in_list) {
                out += paragraph.item ? "\\begin{itemize}\n" : "\\end{itemize}\n\n";
                in_list = paragraph.item;
            }
            out += paragraph.item ? "  \\item " + spans(paragraph.spans) + "\n" : spans(paragraph.spans) + "\n\n";
        }
        return in_list ? out + "\\end{itemize}\n" : out;
    }
    std::string operator()(const Lead& lead) const { return "\\emph{" + spans(lead.spans) + "}\n\n"; }
    // a handout cannot fold: the label runs in, a folded answer's as an aside
    // ("Answer:" in italics), the working under it
    std::string operator()(const Answer& answer) const {
        const std::string label = answer.folded ? "\\textit{" + tex_escape(answer.label) + ":}"
                                                : "\\textbf{" + tex_escape(answer.label) + "}";
        return "\n\\noindent" + label + " " +
               latex_cell_heading(joined(answer.working.heading)) + "\n" + latex_cell_lines(answer.working.lines) +
               "\\medskip\n";
    }
    std::string operator()(const QuestionBlock& question) const {
        std::string out = "\n\\medskip\\noindent\\textbf{Question.} " + spans(question.prompt) +
                          (question.form.empty() ? "" : " \\emph{" + tex_prose(question.form) + "}") + "\n";
        if (!question.given.empty()) {
            // ragged right: a line of long numbers in typewriter type has few places to break
            out += "\n{\\raggedright\\noindent\\textit{Given:} " + spans(question.given) + "\\par}\n";
        }
        return out + blocks(question.blocks);
    }
    std::string operator()(const PageBlock& page) const {
        ++m_pages;
        std::string out = blocks(page.blocks);
        --m_pages;
        return out;
    }
    // in a minipage, which a page break cannot split, unless it has more
    // lines of tables than a page holds at a sheet's row height
    std::string operator()(const Group& group) const {
        const std::string part = blocks(group.blocks);
        if (!latex_fits_page(part)) {
            return part;
        }
        return "\n\\par\\noindent\\begin{minipage}{\\linewidth}" + part + "\\end{minipage}\n\\par\\bigskip\n";
    }
    std::string operator()(const Part& part) const { return blocks(part.blocks); }

    std::string blocks(const std::vector<Block>& blocks) const {
        std::string out;
        for (std::size_t k = 0; k < blocks.size(); ++k) {
            // a formula's explanation runs on into its equations or its table,
            // as a paragraph that they end: no blank line, whose \partopsep
            // would set the table apart from it
            const bool continued = (k > 0 && std::holds_alternative<Formula>(blocks[k - 1])) ||
                                   (k + 1 < blocks.size() && std::holds_alternative<Equations>(blocks[k + 1]));
            if (continued && std::holds_alternative<Prose>(blocks[k])) {
                const std::string text = latex_paragraphs(std::get<Prose>(blocks[k]).text);
                out += text.empty() ? "" : text + "\n";
                continue;
            }
            out += std::visit(*this, blocks[k]);
        }
        return out;
    }

private:
    // prose, its underscores places to break (a step's id: grad_scaled_scores)
    static std::string text(const std::string& text) { return tex_break_underscores(tex_prose(text)); }
    static std::string mark(Mark mark) { return tex_escape(mark_symbol(mark, false)); }
    // code in a fixed-width font, which TeX does not hyphenate: it may break
    // after a slash, a comma or an underscore, so that a path or a command
    // fits a column; a value in bold, its spaces unbreakable but after a
    // comma (a vector may break after its commas; "4 × 2" stays whole)
    static std::string spans(const std::vector<Span>& spans) {
        std::string out;
        for (const auto& span : spans) {
            if (span.kind == SpanKind::code) {
                std::string tex;
                for (const char c : tex_break_underscores(tex_escape(span.text))) {
                    tex += c;
                    tex += c == '/' || c == ',' ? "\\allowbreak{}" : "";
                }
                out += "\\texttt{" + tex + "}";
            } else if (span.kind == SpanKind::value) {
                std::string tex;
                const std::string value = text(span.text);
                for (std::size_t i = 0; i < value.size(); ++i) {
                    tex += value[i] != ' ' ? std::string(1, value[i]) : i > 0 && value[i - 1] == ',' ? " " : "~";
                }
                out += "\\textbf{" + tex + "}";
            } else if (span.kind == SpanKind::strong) {
                out += "\\textbf{" + text(span.text) + "}";
            } else {
                out += text(span.text);
            }
        }
        return out;
    }


    // a step's values as run draws them; a given matrix fitted to the line;
    // a blank table (or the key's) with room to write in; a learner's answers marked
    std::string table(const TableBlock& block) const {
        switch (block.role) {
            case TableRole::values:
                return latex_table(block.table, values_style(block));
            case TableRole::answers:
                // latex_table spells the marks
                return latex_table(drawn_marks(block.table, false, false, true_value_open(Format::latex),
                                               true_value_close(Format::latex)),
                                   {});
            case TableRole::given:
                return latex_given_table(block.table, m_standalone);
            case TableRole::blank:
            case TableRole::key:
                break;
        }
        return latex_sheet_table(block.table, block.role == TableRole::blank, m_standalone);
    }

    // weights shaded, but not where the mask blocks them; a float numbered and named
    static LatexTableStyle values_style(const TableBlock& block) {
        LatexTableStyle style{.shade_weights = block.shaded, .blocked = block.blocked};
        if (block.numbered) {
            const std::string name = tex_escape(block.numbered->name);
            style.floating = true;
            style.caption = name + ": $" + block.numbered->formula + "$";
            style.short_caption = name;
            style.label = block.numbered->label;
        }
        return style;
    }

    bool m_standalone;
    mutable int m_pages = 0;  // pages being written, around the block being written
};

}  // namespace

void write_latex_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    if (style.body_only) {
        out << LatexBlocks(style).blocks(document.blocks);
        return;
    }
    out << latex_begin(style.standalone, to_ascii(one_line(document.purpose)));
    if (style.standalone || document.title_in_fragment) {
        // ragged right: a long title (an example's, or a list of cells) breaks between words
        out << "\\section*{\\raggedright " << tex_prose(full_title(document)) << "}\n\n";
    }
    // narration holds commands and vectors that do not hyphenate: rather more
    // space between words than a line that runs into the margin, in a group
    // around the whole (a group around less would leave the paragraph after
    // it to the \everypar of the heading or the table before it)
    const bool narrated = std::any_of(document.blocks.begin(), document.blocks.end(), [](const Block& block) {
        return std::holds_alternative<Passage>(block) || std::holds_alternative<PageBlock>(block);
    });
    const std::string body = LatexBlocks(style).blocks(document.blocks);
    out << (narrated ? "\\begingroup\\setlength{\\emergencystretch}{3em}\n" + body + "\\par\\endgroup\n" : body)
        << latex_end(style.standalone);
}

}  // namespace qkv
