// The text skin of the lesson writer: narration wrapped at 78 columns, the
// tables of the text renderer, workings indented under their cell, questions
// with their answers. Colour (when on) makes numbers from the trace bold and
// says right or wrong in green or red.
#include "lesson/skins.hpp"

#include "render/palette.hpp"
#include "render/table.hpp"

#include <sstream>
#include <string_view>
#include <vector>

namespace qkv {

namespace {

constexpr std::size_t k_wrap_width = 78;

// a verdict stands out from the narration: bold as well as green or red
const std::string k_right_verdict = std::string(k_bold) + k_green;
const std::string k_wrong_verdict = std::string(k_bold) + k_red;

class TextLessonWriter : public LessonWriter {
public:
    TextLessonWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    void title(const Lesson& lesson, int number) override {
        const std::string heading =
            symbols((number > 0 ? "Lesson " + std::to_string(number) + " · " : std::string()) + lesson.title);
        m_out << styled(heading, k_bold) << '\n' << std::string(display_width(heading), '=') << '\n';
        wrap(symbols(lesson.summary), "", "");
    }

    void page(int page, int pages) override {
        if (page > 1) {
            const std::string rule = m_options.ascii ? "---" : "───";
            m_out << '\n' << styled(rule + " page " + std::to_string(page) + " of " + std::to_string(pages) + " " + rule, k_dim)
                  << '\n';
        }
    }

    void narration(const std::vector<Piece>& pieces) override {
        for (const auto& paragraph : paragraphs_of(marked_text(pieces))) {
            m_out << '\n';
            if (paragraph.rfind("- ", 0) == 0) {
                wrap(paragraph, "", "  ");
            } else {
                wrap(paragraph, "", "");
            }
        }
    }

    void steps(const Trace& trace, const RenderOptions& options) override {
        std::string text = render_steps_only(trace, options);
        while (!text.empty() && text.back() == '\n') {
            text.pop_back();
        }
        if (!text.empty()) {
            m_out << (text.front() == '\n' ? "" : "\n") << text << '\n';
        }
    }

    void workings(const std::vector<Explanation>& explanations) override {
        m_out << '\n';
        indented(explanations, "  ");
    }

    void question(const std::vector<Piece>& prompt) override {
        m_out << '\n';
        wrap(std::string(1, k_value_start) + "Question:" + k_value_end + " " + marked_text(prompt), "", "  ");
    }

    void answer(const Explanation& working) override {
        m_out << "  " << styled("Answer:", k_bold) << ' ' << symbols(working.heading) << '\n';
        working_lines(working);
    }

    void verdict(bool right, const std::string& given, const Explanation& working) override {
        if (right) {
            m_out << "  " << styled("Right.", k_right_verdict) << ' ' << symbols(working.heading) << '\n';
        } else {
            m_out << "  " << styled("Not quite:", k_wrong_verdict) << " you wrote " << given << "; "
                  << symbols(working.heading) << '\n';
        }
        working_lines(working);
    }

    void prompt(const std::string& text) override {
        m_out << styled(symbols(text), k_dim);
        m_out.flush();
    }

    void end(const Lesson& lesson, int number, const std::string& next) override {
        (void)lesson;
        m_out << '\n'
              << styled(number > 0 ? "End of lesson " + std::to_string(number) + "." : std::string("End of the lesson."),
                        k_bold);
        if (!next.empty()) {
            m_out << ' ' << symbols(next);
        }
        m_out << '\n';
    }

    void flush() override { m_out.flush(); }

private:
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    std::string styled(const std::string& text, std::string_view style) const {
        return qkv::styled(text, style, m_options.color);
    }

    // The working of a cell, under its heading.
    void working_lines(const Explanation& working) {
        for (const auto& line : working.lines) {
            m_out << "    " << symbols(line) << '\n';
        }
    }

    void indented(const std::vector<Explanation>& explanations, const std::string& indent) {
        std::ostringstream text;
        render_explanations(explanations, m_options, text);
        std::istringstream lines(text.str());
        std::string line;
        while (std::getline(lines, line)) {
            m_out << (line.empty() ? "" : indent) << symbols(line) << '\n';
        }
    }

    // Writes one paragraph wrapped at k_wrap_width; marked values are bold
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
        std::string line;
        std::size_t width = 0;
        bool in_value = false;  // a value may run over a line break
        auto emit = [&](const std::string& indent) {
            m_out << indent << line << (in_value && m_options.color ? k_reset : "") << '\n';
            line = in_value && m_options.color ? k_bold : "";
            width = 0;
        };
        std::string indent = first;
        for (const auto& word : words) {
            const std::size_t word_width = display_width(unmarked(word));
            if (width > 0 && display_width(indent) + width + 1 + word_width > k_wrap_width) {
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

    const RenderOptions& m_options;
    std::ostream& m_out;
};

}  // namespace

std::unique_ptr<LessonWriter> make_text_lesson_writer(const RenderOptions& options, std::ostream& out) {
    return std::make_unique<TextLessonWriter>(options, out);
}

}  // namespace qkv
