// A document (document.hpp) as text for a terminal: the title in bold,
// underlined unless a report's lines follow it; headings in colour; prose and
// notes wrapped to 78 columns (or the terminal's --width) and indented by
// two, notes as "· …"; tables as `qkv run` draws them under their caption and
// shape, in blocks of columns where the terminal is narrower. One blank line
// between blocks (a table already ends with one), none under a heading, and
// one of its own before a step's heading. The opening, before the first
// heading, is at the margin. A report's lines (statements, marked lists, a
// legend) are never wrapped, follow the title and one another with no blank
// line, and are indented by two inside a part; the summary stands apart, in bold.
//
// A lesson's narration, its lead and its questions are at the margin, their
// values (and words that stand out) in bold, a list's items a paragraph each;
// a working is indented by two once the opening is over; the answers and
// verdicts on a question are its lines, right under it and indented. On a
// terminal of known width a line that is not prose (a heading, a formula, a
// working) is broken at a space where it would not fit, its rest indented.
#include "render/document.hpp"
#include "render/palette.hpp"
#include "render/render.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace qkv {

namespace {

constexpr std::size_t k_wrap_width = 78;

// the narrowest a line is wrapped to, however narrow the terminal
constexpr int k_narrowest = 20;

// Marks in text to be wrapped: bold from one to the other (a value, words
// that stand out), and a space inside a value, where no line breaks.
constexpr char k_bold_on = '\x01';
constexpr char k_bold_off = '\x02';
constexpr char k_unbroken = '\x03';

// The text as it shows, without its marks.
std::string shown(const std::string& text) {
    std::string plain;
    for (const char c : text) {
        if (c == k_unbroken) {
            plain += ' ';
        } else if (c != k_bold_on && c != k_bold_off) {
            plain += c;
        }
    }
    return plain;
}

// With colour, weights shaded as a heatmap, each row's largest one marked.
class HeatmapSkin : public TextTableSkin {
public:
    HeatmapSkin(const Table& table, bool ascii) : TextTableSkin(ascii), m_table(table) {}

protected:
    std::string cell(const std::string& text, int row, std::size_t col) const override {
        const double value = row < 0 ? arma::datum::nan : m_table.values[row][col];
        if (std::isnan(value)) {
            return text;
        }
        return shade(value, value == m_table.row_maxima[row]) + text + k_reset;
    }

private:
    // Background from dark (weight 0) to light (weight 1); the row's largest
    // weight is also bold and underlined.
    static std::string shade(double weight, bool row_max) {
        const int level = 236 + static_cast<int>(std::lround(std::clamp(weight, 0.0, 1.0) * 19.0));
        const int foreground = level > 247 ? 16 : 255;
        std::string code = shade_256(level, foreground);
        if (row_max) {
            code += k_row_max;
        }
        return code;
    }

    const Table& m_table;
};

// The columns of the widest line, colour escapes not counted.
std::size_t widest_line(const std::string& text) {
    std::size_t widest = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        widest = std::max(widest, visible_width(line));
    }
    return widest;
}

// Columns first … last − 1 of a table, with all its rows.
Table columns_of(const Table& table, std::size_t first, std::size_t last) {
    Table part = table;
    auto keep = [first, last](auto& items) {
        items.erase(items.begin() + static_cast<std::ptrdiff_t>(last), items.end());
        items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(first));
    };
    keep(part.col_labels);
    keep(part.cols);
    for (auto& row : part.cells) {
        keep(row);
    }
    for (auto& row : part.values) {
        keep(row);
    }
    for (auto& row : part.marks) {
        if (!row.empty()) {
            keep(row);
        }
    }
    return part;
}

class TextWriter {
public:
    TextWriter(const DocumentStyle& style, std::ostream& out)
        : m_style(style),
          m_out(out),
          m_blank(!style.continues),
          m_opening(!style.continues),
          m_written(style.continues) {}

    void operator()(const Prose& prose) {
        std::istringstream lines(prose.text);
        std::string line;
        std::string paragraph;
        const auto flush = [&] {
            if (!paragraph.empty()) {
                // the opening, before the first heading, at the margin and one
                // paragraph under the other; an explanation right under its formula
                if (!m_opening && !m_formula) {
                    separate();
                }
                m_formula = false;
                m_written = true;
                const std::string indent = m_opening ? "" : "  ";
                wrapped(paragraph, indent, indent, nullptr);
                m_blank = false;
                paragraph.clear();
            }
        };
        while (std::getline(lines, line)) {
            if (line.find_first_not_of(" \t") == std::string::npos) {
                flush();
            } else {
                paragraph += (paragraph.empty() ? "" : " ") + line.substr(line.find_first_not_of(" \t"));
            }
        }
        flush();
    }
    // in the opening, one line at the margin
    void operator()(const Sizes& sizes) {
        if (!m_opening) {
            (*this)(Prose{dims_line(sizes.dims, sizes.cross)});
            return;
        }
        m_written = true;
        m_lines = false;
        m_out << symbols(dims_line(sizes.dims, sizes.cross)) << '\n';
        m_blank = false;
    }
    void operator()(const Section& section) { heading(section.text); }
    // a blank line of its own before it, even after a table's
    void operator()(const StepHeading& step) {
        if (m_blank && m_written) {
            m_out << '\n';
        }
        heading(joined_heading(step, " · ", " · ") + "  [" + step.id + "]");
    }
    void operator()(const Caption& caption) {
        separate();
        m_lines = false;
        broken("  " + styled(symbols(caption.name), k_bold, m_style.color) + "    (" +
                   shape_text(caption.rows, caption.cols, m_style.ascii) + ")",
               2);
        m_blank = true;
    }
    void operator()(const Formula& formula) {
        separate();
        m_lines = false;
        broken("  " + symbols(formula_text(formula.text, m_style.ascii)) + "    (" +
                   shape_text(formula.rows, formula.cols, m_style.ascii) + ")",
               2);
        m_blank = false;
        m_formula = true;
    }
    void operator()(const TableBlock& block) {
        separate();
        m_lines = false;
        if (!block.caption.empty()) {
            broken("  " + styled(symbols(formula_text(block.caption, m_style.ascii)), k_bold, m_style.color) +
                       "    (" + block.table.shape + ")",
                   2);
        }
        if (block.role == TableRole::answers) {
            // each column's numbers right-aligned among themselves, each with its mark after it
            m_out << draw_table(drawn_marks(block.table, m_style.ascii, m_style.color, true_value_open(Format::text),
                                            true_value_close(Format::text)),
                                TextTableSkin(m_style.ascii, 2, Align::left));
        } else {
            fitted(block);
        }
        m_blank = true;
    }
    // a terminal sets no equations: the table shows the result
    void operator()(const Equations&) {}
    void operator()(const Aside& aside) {
        separate();
        m_lines = false;
        wrapped(aside.text, "  ", "  ", k_dim);
        m_blank = false;
    }
    void operator()(const Notes& notes) {
        for (const auto& note : notes.items) {
            wrapped("· " + note, "  ", "    ", k_dim);
        }
        m_blank = m_blank && notes.items.empty();  // a table's notes follow its blank line
        m_lines = m_lines && notes.items.empty();
    }
    // the heading in bold, the lines indented; at the margin in the opening
    // (explain's document), else indented by two (a lesson's)
    void operator()(const Working& working) {
        separate();
        m_lines = false;
        const std::string indent = m_opening ? "" : "  ";
        broken(indent + styled(symbols(joined(working.heading)), k_bold, m_style.color), 4);
        for (const auto& line : working.lines) {
            broken(indent + "  " + symbols(line), 4);
        }
        m_blank = false;
    }
    // "Mistake: …", the label in the tone's colour
    void operator()(const Statement& statement) {
        for (const auto& line : statement.lines) {
            const std::string label = line.label.empty()          ? ""
                                      : line.tone == Mark::none ? symbols(line.label)
                                                                : styled(symbols(line.label), mark_color(line.tone), m_style.color);
            report_line(label + (label.empty() || line.spans.empty() ? "" : " ") + spans(line.spans, false));
        }
    }
    void operator()(const MarkedList& list) {
        for (const auto& item : list.items) {
            report_line(mark(item.mark) + symbols(item.text));
        }
    }
    // "✓ right   ✗ wrong, the true value in brackets   …"
    void operator()(const Legend& legend) {
        std::string line;
        for (const auto& item : legend.items) {
            line += (line.empty() ? "" : "   ") + mark(item.mark) + symbols(item.text) +
                    (item.mark == Mark::wrong ? " " + true_value_words(Format::text) : "");
        }
        report_line(line);
    }
    void operator()(const Summary& summary) {
        separate();
        m_out << styled(symbols(summary.label + " " + summary.text), k_bold, m_style.color) << '\n';
        if (!summary.next.empty()) {
            m_out << resolved(spans(summary.next, false)) << '\n';
        }
        m_blank = false;
        m_lines = true;
    }
    // at the margin, a blank line before each paragraph (each item of a list too)
    void operator()(const Passage& passage) {
        for (const auto& paragraph : passage.paragraphs) {
            separate();
            wrapped(spans(paragraph.spans, true), paragraph.item ? "- " : "", paragraph.item ? "  " : "", nullptr);
            m_blank = false;
            m_lines = false;
        }
    }
    void operator()(const Lead& lead) {
        separate();
        wrapped(spans(lead.spans, true), "", "", nullptr);
        m_blank = false;
        m_lines = false;
    }
    // a line of its question's, right under it: the label in bold (in the
    // verdict's colour), then the working's heading and its lines
    void operator()(const Answer& answer) {
        wrapped(symbols(joined(answer.working.heading)), "  ", "    ", nullptr,
                verdict_label(answer.label + (answer.folded ? ":" : ""), answer.tone));
        for (const auto& line : answer.working.lines) {
            broken("    " + symbols(line), 6);
        }
        m_blank = false;
        m_lines = false;
    }
    // a line of its question's too: the label and the first sentence, the
    // others under them
    void operator()(const VerdictBlock& verdict) {
        const std::string label = verdict_label(verdict.label, verdict.tone);
        if (verdict.sentences.empty()) {
            m_out << "  " << label << '\n';
        }
        for (std::size_t i = 0; i < verdict.sentences.size(); ++i) {
            wrapped(verdict.sentences[i], i == 0 ? "  " : "    ", "    ", nullptr, i == 0 ? label : "");
        }
        m_blank = false;
        m_lines = false;
    }
    // at the margin, what is given indented under it, and the verdicts and answer right after
    void operator()(const QuestionBlock& question) {
        separate();
        wrapped(std::string(1, k_bold_on) + "Question:" + k_bold_off + " " + spans(question.prompt, true) +
                    (question.form.empty() ? "" : " " + question.form),
                "", "  ", nullptr);
        if (!question.given.empty()) {
            wrapped("Given: " + spans(question.given, false), "  ", "    ", nullptr);
        }
        m_blank = false;
        m_lines = false;
        blocks(question.blocks);
    }
    // after the first, a rule that says which page this is
    void operator()(const PageBlock& page) {
        if (page.number > 1) {
            separate();
            const std::string rule = m_style.ascii ? "---" : "───";
            m_out << styled(rule + " page " + std::to_string(page.number) + " of " + std::to_string(page.pages) + " " +
                                rule,
                            k_dim, m_style.color)
                  << '\n';
            m_blank = false;
        }
        blocks(page.blocks);
    }
        // a terminal has no pages
    void operator()(const Group& group) { blocks(group.blocks); }
    void operator()(const Part& part) {
        m_in_part = true;
        blocks(part.blocks);
        m_in_part = false;
    }

    void blocks(const std::vector<Block>& blocks) {
        for (const Block& block : blocks) {
            std::visit(*this, block);
        }
    }

    // in bold, wrapped; over a report, its lines right under it, anything else
    // after a blank line; over anything else, underlined, and its opening
    // right under it
    void title(const std::string& text, bool report) {
        const std::string line = symbols(one_line(text));
        wrapped(line, "", "", k_bold);
        m_written = true;
        if (report) {
            m_blank = false;
            m_lines = true;
            return;
        }
        m_out << std::string(std::min(display_width(line), wrap_width()), '=') << '\n';
        m_blank = true;
    }

    void heading(const std::string& text) {
        m_opening = false;
        separate();
        broken(styled(symbols(one_line(text)), k_heading, m_style.color), 2);
        m_blank = true;  // what follows a heading sits right under it
        m_lines = false;
    }

private:
    std::string symbols(const std::string& text) const { return m_style.ascii ? to_ascii(text) : text; }

    // a mark in its colour and a space after it; nothing for none
    std::string mark(Mark mark) const {
        return mark == Mark::none ? ""
                                  : styled(mark_symbol(mark, m_style.ascii), mark_color(mark), m_style.color) + " ";
    }

    // code as it is, to be copied (in prose between backticks, which set it
    // apart from the words around it); formula notation as text writes it; a
    // value, and words that stand out, marked bold for wrapped()
    std::string spans(const std::vector<Span>& spans, bool quoted_code) const {
        std::string text;
        for (const auto& span : spans) {
            text += span.kind == SpanKind::code      ? (quoted_code ? "`" + span.text + "`" : span.text)
                    : span.kind == SpanKind::formula ? symbols(formula_text(span.text, m_style.ascii))
                    : span.kind == SpanKind::value   ? k_bold_on + unbroken(symbols(span.text)) + k_bold_off
                    : span.kind == SpanKind::strong  ? k_bold_on + symbols(span.text) + k_bold_off
                                                     : symbols(span.text);
        }
        return text;
    }

    // a value's spaces, where wrapped() does not break a line
    static std::string unbroken(std::string text) {
        std::replace(text.begin(), text.end(), ' ', k_unbroken);
        return text;
    }

    // a line's marks as they show: bold (with colour), and spaces
    std::string resolved(const std::string& line) const {
        std::string out;
        for (const char c : line) {
            out += c == k_bold_on    ? (m_style.color ? k_bold : "")
                   : c == k_bold_off ? (m_style.color ? k_reset : "")
                   : c == k_unbroken ? std::string(" ")
                                     : std::string(1, c);
        }
        return out;
    }

    // a question's label in bold, in the colour of its verdict where it has one
    std::string verdict_label(const std::string& label, Mark tone) const {
        return styled(symbols(label), std::string(k_bold) + (tone == Mark::none ? "" : mark_color(tone)), m_style.color);
    }

    // a line of a report: right under the one before it, a blank line after anything else
    void report_line(const std::string& line) {
        if (!m_lines) {
            separate();
        }
        m_out << (m_in_part ? "  " : "") << resolved(line) << '\n';
        m_blank = false;
        m_lines = true;
    }

    void separate() {
        if (!m_blank) {
            m_out << '\n';
        }
        m_written = true;
        m_formula = false;
    }

    // prose: two columns short of the terminal's, 78 at most
    std::size_t wrap_width() const { return std::min(k_wrap_width, line_width()); }
    // any other line: two columns short of the terminal's (any, where it is not known)
    std::size_t line_width() const {
        return m_style.width > 0 ? static_cast<std::size_t>(std::max(k_narrowest, m_style.width - 2))
                                 : std::string::npos;
    }

    // A table of values; with colour, weights shaded; one wider than the
    // terminal drawn in blocks of columns, one under the other: as few blocks
    // as fit, then as even as they can be.
    void fitted(const TableBlock& block) {
        const Table& table = block.table;
        const auto draw = [&](const Table& part) {
            return m_style.color && block.shaded ? draw_table(part, HeatmapSkin(part, m_style.ascii))
                                                 : draw_table(part, TextTableSkin(m_style.ascii));
        };
        const auto fits = [&](const std::string& drawn) {
            return m_style.width <= 0 || widest_line(drawn) <= static_cast<std::size_t>(m_style.width);
        };
        const std::string whole = draw(table);
        if (fits(whole) || table.col_labels.size() < 2) {
            m_out << whole;
            return;
        }
        std::vector<std::size_t> starts;
        const std::size_t n = table.col_labels.size();
        for (std::size_t first = 0; first < n;) {
            std::size_t last = first + 1;  // one past the block's last column; a block holds one column at least
            while (last < n && fits(draw(columns_of(table, first, last + 1)))) {
                ++last;
            }
            starts.push_back(first);
            first = last;
        }
        const std::size_t even = (n + starts.size() - 1) / starts.size();
        bool evenly = true;
        for (std::size_t first = 0; first < n && evenly; first += even) {
            evenly = fits(draw(columns_of(table, first, std::min(n, first + even))));
        }
        if (evenly) {
            starts.clear();
            for (std::size_t first = 0; first < n; first += even) {
                starts.push_back(first);
            }
        }
        for (std::size_t b = 0; b < starts.size(); ++b) {
            m_out << draw(columns_of(table, starts[b], b + 1 < starts.size() ? starts[b + 1] : n));
        }
    }

    // `text` in lines of at most wrap_width() columns, the first after `first`,
    // the others after `indent`; the words (not the indent) in `style`, the
    // marked ones in bold. "×" stays with its neighbours (a shape such as
    // 2 × 3 is never split), but for a bracket after it (a product such as
    // 2 × (d_k + d_v) may break there), and a value wider than a line breaks
    // after its commas.
    // A `label` (styled already) is the first line's first word.
    void wrapped(const std::string& text, const std::string& first, const std::string& indent, const char* style,
                 const std::string& label = "") {
        const std::size_t width = wrap_width();
        std::vector<std::string> words;
        std::istringstream split(symbols(text));
        for (std::string word; split >> word;) {
            if (!words.empty() && (word == "×" || (words.back().ends_with("×") && !word.starts_with("(")))) {
                words.back() += k_unbroken + word;
            } else {
                words.push_back(word);
            }
        }
        const std::size_t room = width - std::min(width / 2, visible_width(indent));
        std::vector<std::string> pieces;
        for (const auto& word : words) {
            const std::string comma = std::string(",") + k_unbroken;
            std::size_t start = 0;
            if (display_width(shown(word)) > room) {
                for (auto at = word.find(comma); at != std::string::npos; at = word.find(comma, start)) {
                    pieces.push_back(word.substr(start, at + 1 - start));
                    start = at + comma.size();
                }
            }
            pieces.push_back(word.substr(start));
        }
        std::string line = label;
        std::size_t used = visible_width(label);  // the line's columns
        bool bold = false;                        // bold may run on over a line's end
        const std::string* lead = &first;
        const auto flush = [&] {
            m_out << *lead << (style == nullptr ? line : styled(line, style, m_style.color))
                  << (bold && m_style.color ? k_reset : "") << '\n';
            lead = &indent;
            line = bold && m_style.color ? k_bold : "";
            used = 0;
        };
        for (const auto& word : pieces) {
            const std::size_t columns = display_width(shown(word));
            if (used > 0 && visible_width(*lead) + used + 1 + columns > width) {
                flush();
            }
            if (used > 0) {
                line += ' ';
                ++used;
            }
            for (const char c : word) {
                bold = c == k_bold_on || (bold && c != k_bold_off);
            }
            line += resolved(word);
            used += columns;
        }
        if (used > 0) {
            flush();
        }
    }

    // A line as it is where it fits the terminal, else broken at its spaces,
    // the rest indented by `hang` columns more than the line.
    void broken(const std::string& line, std::size_t hang) {
        if (visible_width(line) <= line_width()) {
            m_out << line << '\n';
            return;
        }
        const std::string indent(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '), ' ');
        const std::string rest = indent + std::string(hang, ' ');
        std::istringstream split(line);
        std::string current = indent;
        std::size_t used = indent.size();
        bool first = true;
        for (std::string word; split >> word;) {
            const std::size_t columns = visible_width(word);
            if (!first && used + 1 + columns > line_width()) {
                m_out << current << '\n';
                current = rest + word;
                used = rest.size() + columns;
                continue;
            }
            current += (first ? "" : " ") + word;
            used += (first ? 0 : 1) + columns;
            first = false;
        }
        m_out << current << '\n';
    }

    const DocumentStyle& m_style;
    std::ostream& m_out;
    bool m_blank;          // the next block needs no blank line before it
    bool m_lines = false;  // the last thing written is a report's line (or the title), which a report line follows directly
    bool m_in_part = false;
    bool m_opening;          // no heading yet: prose and sizes at the margin
    bool m_formula = false;  // the last thing written is a formula, which prose follows directly
    bool m_written;          // anything written yet
};

}  // namespace

void write_text_document(const Document& document, const DocumentStyle& style, std::ostream& out) {
    TextWriter writer(style, out);
    if (document.title_in_fragment && !style.body_only) {
        const bool report = !document.blocks.empty() && (std::holds_alternative<Statement>(document.blocks.front()) ||
                                                         std::holds_alternative<Legend>(document.blocks.front()));
        writer.title(full_title(document, " · "), report);
    }
    writer.blocks(document.blocks);
}

}  // namespace qkv
