// The text skin of the lesson writer: narration wrapped to the terminal's
// width, the tables of the text renderer, workings indented under their cell,
// questions with their answers. Colour (when on) makes numbers from the trace
// bold and says right or wrong in green or red. With a height, the output
// pauses whenever the screen is full, so that nothing scrolls away unread.
#include "lesson/skins.hpp"

#include "render/palette.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

namespace qkv {

namespace {

// a verdict stands out from the narration: bold as well as green or red
const std::string k_right_verdict = std::string(k_bold) + k_green;
const std::string k_wrong_verdict = std::string(k_bold) + k_red;

// the narrowest width text is wrapped to, however narrow the terminal
constexpr int k_narrowest = 20;

class TextLessonWriter : public LessonWriter {
public:
    TextLessonWriter(const RenderOptions& options, std::ostream& out, Screen screen)
        : m_options(options), m_out(out), m_screen(std::move(screen)) {
        // two columns to spare, as 78 in an 80-column terminal
        m_wrap_width = static_cast<std::size_t>(std::max(k_narrowest, m_screen.width - 2));
    }

    void title(const Lesson& lesson, int number) override {
        const std::string heading =
            (number > 0 ? "Lesson " + std::to_string(number) + (m_options.ascii ? " - " : " · ") : std::string()) +
            symbols(lesson.title);
        wrap(std::string(1, k_value_start) + heading + k_value_end, "", "");
        m_text << std::string(std::min(display_width(heading), m_wrap_width), '=') << '\n';
        wrap(symbols(lesson.summary), "", "");
    }

    void page(int page, int pages) override {
        if (page > 1) {
            const std::string rule = m_options.ascii ? "---" : "───";
            m_text << '\n'
                   << styled(rule + " page " + std::to_string(page) + " of " + std::to_string(pages) + " " + rule, k_dim)
                   << '\n';
        }
    }

    void narration(const std::vector<Piece>& pieces) override {
        for (const auto& paragraph : paragraphs_of(marked_text(pieces))) {
            m_text << '\n';
            if (paragraph.rfind("- ", 0) == 0) {
                wrap(paragraph, "", "  ");
            } else {
                wrap(paragraph, "", "");
            }
        }
    }

    void steps(const LessonModel& entry, const RenderOptions& options) override {
        std::string text = render_steps_only(entry.trace, options);
        while (!text.empty() && text.back() == '\n') {
            text.pop_back();
        }
        if (text.empty()) {
            return;
        }
        // the tables stay as they are (a table cannot be wrapped); the prose
        // around them, formulas and notes, is wrapped like the narration
        m_text << (text.front() == '\n' ? "" : "\n");
        std::istringstream lines(text);
        std::string line;
        while (std::getline(lines, line)) {
            if (is_table_line(line)) {
                m_text << line << '\n';
            } else {
                long_line(line, 2);
            }
        }
    }

    void workings(const std::vector<Explanation>& explanations) override {
        m_text << '\n';
        std::ostringstream text;
        render_explanations(explanations, m_options, text);
        std::istringstream lines(text.str());
        std::string line;
        while (std::getline(lines, line)) {
            if (line.empty()) {
                m_text << '\n';
            } else {
                long_line("  " + symbols(line), 4);
            }
        }
    }

    void question(const std::vector<Piece>& prompt, const std::string& form,
                  const std::vector<Given>& given) override {
        m_text << '\n';
        std::string text = std::string(1, k_value_start) + "Question:" + k_value_end + " " + marked_text(prompt);
        if (!form.empty()) {
            text += " " + symbols(form);
        }
        wrap(text, "", "  ");
        if (!given.empty()) {
            std::string list;
            for (const auto& item : given) {
                list += (list.empty() ? "" : "; ") + symbols(item.text());
            }
            wrap("Given: " + list, "  ", "    ");
        }
    }

    void answer(const Explanation& working) override {
        wrap(std::string(1, k_value_start) + "Answer:" + k_value_end + " " + symbols(working.heading), "  ", "    ");
        working_lines(working);
    }

    void right(const Explanation& working) override {
        verdict_line(styled("Right.", k_right_verdict), symbols(working.heading));
        working_lines(working);
    }

    void wrong(const std::string& given, const std::string& why, const Explanation* working) override {
        verdict_line(styled("Not quite:", k_wrong_verdict), "you wrote " + given + ".");
        if (!why.empty()) {
            wrap(symbols(why), "    ", "    ");
        }
        if (working == nullptr) {
            wrap("Try once more.", "    ", "    ");
            return;
        }
        wrap(std::string(1, k_value_start) + "Answer:" + k_value_end + " " + symbols(working->heading), "  ", "    ");
        working_lines(*working);
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
        std::vector<std::string> lines{""};
        std::istringstream split(shown.substr(newlines));
        for (std::string word; split >> word;) {
            std::string& line = lines.back();
            if (!line.empty() && display_width(line) + 1 + display_width(word) > m_wrap_width) {
                lines.push_back(word);
            } else {
                line += (line.empty() ? "" : " ") + word;
            }
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

    void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) override {
        if (!score.empty()) {
            m_text << '\n';
            wrap(std::string(1, k_value_start) + symbols(score) + k_value_end, "", "");
        }
        if (!lesson.try_it.empty()) {
            m_text << '\n';
            wrap(symbols(lesson.try_it), "", "");
        }
        std::string closing = std::string(1, k_value_start) +
                              (number > 0 ? "End of lesson " + std::to_string(number) + "." : std::string("End of the lesson.")) +
                              k_value_end;
        if (!next.empty()) {
            closing += " " + symbols(next);
        }
        m_text << '\n';
        wrap(closing, "", "");
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

    // A line of a table: it starts with a border, or with the row label of a
    // table (a line with a run of box-drawing or ASCII rules, or with │ / |).
    static bool is_table_line(const std::string& line) {
        return line.find("│") != std::string::npos || line.find("─") != std::string::npos ||
               line.find(" | ") != std::string::npos || line.find("-+-") != std::string::npos ||
               line.find("+--") != std::string::npos || line.find("|-") != std::string::npos;
    }

    // "Right." or "Not quite:", then the text, wrapped under it.
    void verdict_line(const std::string& styled_word, const std::string& text) {
        // the styled word is one word for the wrapping: its escapes take no columns
        m_text << "  " << styled_word;
        const std::size_t used = 2 + visible_width(styled_word);
        std::istringstream split(text);
        std::size_t width = used;
        for (std::string word; split >> word;) {
            const std::size_t w = display_width(word);
            if (width + 1 + w > m_wrap_width && width > 4) {
                m_text << "\n    ";
                width = 4;
            } else {
                m_text << ' ';
                width += 1;
            }
            m_text << word;
            width += w;
        }
        m_text << '\n';
    }

    // The working of a cell, under its heading.
    void working_lines(const Explanation& working) {
        for (const auto& line : working.lines) {
            long_line("    " + symbols(line), 6);
        }
    }

    // A line kept as it is when it fits, else broken at spaces, the rest
    // indented by `hang` columns more than its own indent.
    void long_line(const std::string& line, std::size_t hang) {
        if (visible_width(line) <= m_wrap_width) {
            m_text << line << '\n';
            return;
        }
        const std::size_t first = line.find_first_not_of(' ');
        const std::string indent = line.substr(0, first == std::string::npos ? 0 : first);
        std::vector<std::string> words;
        std::istringstream split(line);
        for (std::string word; split >> word;) {
            words.push_back(word);
        }
        std::string current = indent;
        std::size_t width = indent.size();
        bool first_word = true;
        const std::string continued = indent + std::string(hang, ' ');
        for (const auto& word : words) {
            const std::size_t w = visible_width(word);
            if (!first_word && width + 1 + w > m_wrap_width) {
                m_text << current << '\n';
                current = continued + word;
                width = continued.size() + w;
                continue;
            }
            current += (first_word ? "" : " ") + word;
            width += (first_word ? 0 : 1) + w;
            first_word = false;
        }
        m_text << current << '\n';
    }

    // Writes one paragraph wrapped at the wrap width; marked values are bold
    // with colour. `first` starts the first line, `rest` the others.
    void wrap(const std::string& paragraph, const std::string& first, const std::string& rest) {
        // "×" stays with its neighbours: a shape such as 2 × 3 is never split
        std::vector<std::string> words;
        std::istringstream split(paragraph);
        for (std::string word; split >> word;) {
            const bool glue = !words.empty() && (word == "×" || words.back().ends_with("×"));
            if (glue) {
                words.back() += k_value_space + word;
            } else {
                words.push_back(word);
            }
        }
        // a row of numbers wider than a line is broken after its commas
        const std::size_t room = m_wrap_width - std::min(m_wrap_width / 2, display_width(rest));
        std::vector<std::string> pieces;
        for (const auto& word : words) {
            if (display_width(unmarked(word)) <= room) {
                pieces.push_back(word);
                continue;
            }
            const std::string comma_space = std::string(",") + k_value_space;
            std::size_t start = 0;
            for (auto at = word.find(comma_space); at != std::string::npos; at = word.find(comma_space, start)) {
                pieces.push_back(word.substr(start, at + 1 - start));
                start = at + comma_space.size();
            }
            pieces.push_back(word.substr(start));
        }
        words = std::move(pieces);
        std::string line;
        std::size_t width = 0;
        bool in_value = false;  // a value may run over a line break
        auto emit = [&](const std::string& indent) {
            m_text << indent << line << (in_value && m_options.color ? k_reset : "") << '\n';
            line = in_value && m_options.color ? k_bold : "";
            width = 0;
        };
        std::string indent = first;
        for (const auto& word : words) {
            const std::size_t word_width = display_width(unmarked(word));
            if (width > 0 && display_width(indent) + width + 1 + word_width > m_wrap_width) {
                emit(indent);
                indent = rest;
            }
            if (width > 0) {
                line += ' ';
                width += 1;
            }
            for (const char c : word) {
                if (c == k_value_start) {
                    in_value = true;
                    line += m_options.color ? k_bold : "";
                } else if (c == k_value_end) {
                    in_value = false;
                    line += m_options.color ? k_reset : "";
                } else if (c == k_value_space) {
                    line += ' ';
                } else {
                    line += c;
                }
            }
            width += word_width;
        }
        if (width > 0) {
            emit(indent);
        }
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
