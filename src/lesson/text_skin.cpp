// The text skin of the lesson writer: a lesson played on a terminal. Each
// thing the player says is a small document (render/document.hpp), the blocks
// a lesson written to a file holds, which the text writer writes as it is
// said, going on from what is above it: narration wrapped to the terminal's
// width, run's steps, workings indented under them, questions with their
// verdicts and answers. Colour (when on) makes numbers from the trace bold and
// says right or wrong in green or red. With a height, the output pauses
// whenever the screen is full, so that nothing scrolls away unread.
#include "lesson/skins.hpp"

#include "render/palette.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

namespace qkv {

namespace {

// the narrowest width a prompt is wrapped to, however narrow the terminal
constexpr int k_narrowest = 20;

class TextLessonWriter : public LessonWriter {
public:
    TextLessonWriter(const RenderOptions& options, std::ostream& out, Screen screen)
        : m_options(options), m_out(out), m_screen(std::move(screen)) {
        // two columns to spare, as 78 in an 80-column terminal
        m_wrap_width = static_cast<std::size_t>(std::max(k_narrowest, m_screen.width - 2));
    }

    // "Lesson 1 · Three inputs, by hand", underlined, and the summary under it
    void title(const Lesson& lesson, int number) override {
        Document document;
        document.title = (number > 0 ? "Lesson " + std::to_string(number) + (m_options.ascii ? " - " : " · ")
                                     : std::string()) +
                         symbols(lesson.title);
        document.blocks.push_back(Lead{spans_of(symbols(lesson.summary))});
        write_document(document, Format::text, style(m_options), m_text);
    }

    // after the first, a rule that says which page this is
    void page(int page, int pages) override { write({PageBlock{.number = page, .pages = pages, .blocks = {}}}); }

    void narration(const std::vector<Piece>& pieces) override { write({passage_of(marked_text(pieces))}); }

    void steps(const LessonModel& entry, const RenderOptions& options) override {
        write(run_steps(entry.trace, options), options);
    }

    void workings(const std::vector<Explanation>& explanations) override {
        std::vector<Block> blocks;
        for (const auto& explanation : explanations) {
            blocks.push_back(working_of(explanation));
        }
        write(std::move(blocks));
    }

    void question(const std::vector<Piece>& prompt, const std::string& form,
                  const std::vector<Given>& given) override {
        write({question_of(prompt, form, given, m_options.ascii)});
    }

    void answer(const Explanation& working) override { write({answer_of("Answer", Mark::none, true, working)}); }

    void right(const Explanation& working) override { write({answer_of("Right.", Mark::right, false, working)}); }

    void wrong(const std::string& given, const std::string& why, const Explanation* working) override {
        std::vector<Block> blocks{wrong_verdict(given, why, working != nullptr, m_options.ascii)};
        if (working != nullptr) {
            blocks.push_back(answer_of("Answer", Mark::none, true, *working));
        }
        write(std::move(blocks));
    }

    void prompt(const std::string& text) override {
        drain();
        const std::string shown = symbols(text);
        const std::size_t newlines = std::min(shown.find_first_not_of('\n'), shown.size());
        if (newlines == shown.size()) {
            m_out << shown;
            m_out.flush();
            return;
        }
        // wrapped like the narration; the learner types on its last line,
        // and their Enter ends it: the screen then holds the prompt alone
        std::vector<std::string> lines = word_lines(shown.substr(newlines), m_wrap_width);
        if (lines.empty()) {
            lines.emplace_back();
        }
        if (m_screen.height > 0 && m_rows + static_cast<int>(newlines + lines.size()) > m_screen.height) {
            more();
        }
        m_out << std::string(newlines, '\n');
        for (std::size_t i = 0; i < lines.size(); ++i) {
            m_out << styled(lines[i] + (i + 1 == lines.size() ? " " : ""), k_dim) << (i + 1 == lines.size() ? "" : "\n");
        }
        m_out.flush();
        m_rows = static_cast<int>(lines.size());
    }

    // the score, what to try on one's own numbers, and where to go next
    void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) override {
        std::vector<Block> blocks;
        if (!score.empty()) {
            blocks.push_back(Passage{{{.spans = {{symbols(score), SpanKind::strong}}}}});
        }
        if (!lesson.try_it.empty()) {
            blocks.push_back(passage_of(symbols(lesson.try_it)));
        }
        Paragraph closing{.spans = {{number > 0 ? "End of lesson " + std::to_string(number) + "." : "End of the lesson.",
                                     SpanKind::strong}}};
        if (!next.empty()) {
            const std::vector<Span> after = spans_of(" " + symbols(next));
            closing.spans.insert(closing.spans.end(), after.begin(), after.end());
        }
        blocks.push_back(Passage{{std::move(closing)}});
        write(std::move(blocks));
    }

    void flush() override {
        drain();
        m_out.flush();
    }

private:
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    std::string styled(const std::string& text, std::string_view style) const {
        return qkv::styled(text, style, m_options.color);
    }

    // How the text writer writes for this terminal (the steps' options may differ in the rest).
    DocumentStyle style(const RenderOptions& options) const {
        return {.ascii = options.ascii, .color = options.color, .width = m_screen.width};
    }

    // The blocks as text, going on from what is written; the text ends at its
    // last line, as what comes next sets itself apart.
    void write(std::vector<Block> blocks) { write(std::move(blocks), m_options); }
    void write(std::vector<Block> blocks, const RenderOptions& options) {
        Document document;
        document.blocks = std::move(blocks);
        DocumentStyle going_on = style(options);
        going_on.body_only = true;
        going_on.continues = true;
        std::ostringstream text;
        write_document(document, Format::text, going_on, text);
        std::string written = text.str();
        while (written.ends_with("\n\n")) {
            written.pop_back();
        }
        m_text << written;
    }

    // A line of a table: it starts with a border, or with the row label of a
    // table (a line with a run of box-drawing or ASCII rules, or with │ / |).
    static bool is_table_line(const std::string& line) {
        return line.find("│") != std::string::npos || line.find("─") != std::string::npos ||
               line.find(" | ") != std::string::npos || line.find("-+-") != std::string::npos ||
               line.find("+--") != std::string::npos || line.find("|-") != std::string::npos;
    }

    // Writes what has been written so far to the terminal, line by line,
    // pausing when the screen is full, and before a table that would be cut
    // in two when it fits on a screen of its own.
    void drain() {
        const std::string text = m_text.str();
        m_text.str("");
        std::vector<std::string> lines;
        std::size_t start = 0;
        while (start < text.size()) {
            const std::size_t end = text.find('\n', start);
            lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
            start = end == std::string::npos ? text.size() : end + 1;
        }
        const bool last_complete = !text.empty() && text.back() == '\n';
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (m_screen.height > 0 && is_table_line(lines[i]) && (i == 0 || !is_table_line(lines[i - 1]))) {
                int table = 0;
                for (std::size_t j = i; j < lines.size() && is_table_line(lines[j]); ++j) {
                    table += rows_of(lines[j]);
                }
                if (m_rows + table > m_screen.height - 1 && table <= m_screen.height - 2) {
                    more();
                }
            }
            const int rows = rows_of(lines[i]);
            if (m_screen.height > 0 && m_rows + rows > m_screen.height - 1) {
                more();
            }
            const bool complete = i + 1 < lines.size() || last_complete;
            m_out << lines[i] << (complete ? "\n" : "");
            m_rows += rows;
        }
    }

    // The rows a line takes on the terminal: a line wider than it wraps.
    int rows_of(const std::string& line) const {
        const std::size_t columns = static_cast<std::size_t>(std::max(1, m_screen.width));
        return static_cast<int>(std::max<std::size_t>(1, (visible_width(line) + columns - 1) / columns));
    }

    // The screen is full: wait for Enter (q leaves).
    void more() {
        m_out << styled(m_options.ascii ? "-- more: Enter, or q to leave --" : "── more: Enter, or q to leave ──", k_dim);
        m_out.flush();
        const auto line = m_screen.read_line ? m_screen.read_line() : std::nullopt;
        const auto first = line ? line->find_first_not_of(" \t\r") : std::string::npos;
        const bool quit = first != std::string::npos && (line->substr(first, 1) == "q" || line->substr(first, 1) == "Q");
        if (!line || quit) {
            // leaving: what is still written (where to go on from) is not paged, so no prompt follows
            m_screen.height = 0;
            if (!line) {
                m_out << '\n';
            }
            throw LessonLeft{!line};
        }
        m_rows = 1;
    }

    const RenderOptions& m_options;
    std::ostream& m_out;
    Screen m_screen;
    std::size_t m_wrap_width = 78;
    std::ostringstream m_text;   // written, not yet on the terminal
    int m_rows = 0;              // rows shown since the learner last pressed Enter
};

}  // namespace

std::unique_ptr<LessonWriter> make_text_lesson_writer(const RenderOptions& options, std::ostream& out, Screen screen) {
    return std::make_unique<TextLessonWriter>(options, out, std::move(screen));
}

}  // namespace qkv
