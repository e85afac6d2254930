// The Markdown skin of the lesson writer: the lesson as a document, with the
// narration as paragraphs, the steps as the Markdown renderer writes them, and
// each question followed by its answer and working.
#include "lesson/skins.hpp"

#include "render/table.hpp"

#include <sstream>

namespace qkv {

namespace {

// Escapes what Markdown would read as markup in prose; `code spans` are kept.
std::string escape(const std::string& text) {
    std::string result;
    bool in_code = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '`') {
            in_code = !in_code;
            result += c;
            continue;
        }
        if (in_code) {
            result += c;
            continue;
        }
        switch (c) {
            case '<':
                result += "&lt;";
                break;
            case '>':
                result += "&gt;";
                break;
            case '&':
                result += "&amp;";
                break;
            case '*':
            case '\\':
            case '|':
            case '$':
            case '#':
                result += '\\';
                result += c;
                break;
            default:
                result += c;
        }
    }
    return result;
}

class MarkdownLessonWriter : public LessonWriter {
public:
    MarkdownLessonWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    void title(const Lesson& lesson, int number) override {
        m_out << "# " << (number > 0 ? "Lesson " + std::to_string(number) + (m_options.ascii ? " - " : " · ") : std::string())
              << escape(symbols(lesson.title)) << "\n\n*" << escape(symbols(lesson.summary)) << "*\n";
    }

    void page(int page, int pages) override {
        (void)page;
        (void)pages;
    }

    void narration(const std::vector<Piece>& pieces) override {
        for (const auto& paragraph : paragraphs_of(marked_text(pieces))) {
            const bool item = paragraph.rfind("- ", 0) == 0;
            m_out << (item && m_last_was_item ? "" : "\n") << (item ? "- " + prose(paragraph.substr(2)) : prose(paragraph))
                  << '\n';
            m_last_was_item = item;
        }
        m_last_was_item = false;
    }

    void steps(const LessonModel& entry, const RenderOptions& options) override {
        std::string text = render_steps_only(entry.trace, options);
        while (!text.empty() && text.front() == '\n') {
            text.erase(0, 1);
        }
        while (!text.empty() && text.back() == '\n') {
            text.pop_back();
        }
        if (!text.empty()) {
            m_out << '\n' << text << '\n';
        }
    }

    void workings(const std::vector<Explanation>& explanations) override {
        std::ostringstream text;
        render_explanations(explanations, m_options, text);
        m_out << '\n' << text.str();
    }

    void question(const std::vector<Piece>& prompt, const std::string& form,
                  const std::vector<Given>& given) override {
        m_out << "\n**Question.** " << prose(marked_text(prompt)) << (form.empty() ? "" : " " + escape(m_options.ascii ? to_ascii(form) : form)) << '\n';
        if (!given.empty()) {
            std::string list;
            for (const auto& item : given) {
                list += (list.empty() ? "" : "; ") + markdown_code_span(symbols(item.numbers)) +
                        (item.model.empty() ? "" : " (" + escape(symbols(item.model)) + ")");
            }
            m_out << "\n*Given:* " << list << '\n';
        }
    }

    // A cell's heading as code ("`weights[1,1] = 0.0634 (…)`"); a shape's or a
    // choice's, a sentence, as prose.
    std::string heading(const Explanation& working) const {
        return working.heading_parts.empty() ? escape(symbols(working.heading))
                                                : markdown_code_span(symbols(working.heading));
    }

    // A handout: the answer folded away until the reader opens it.
    void answer(const Explanation& working) override {
        m_out << "\n<details>\n<summary>Answer</summary>\n\n" << heading(working) << "\n";
        working_block(working);
        m_out << "\n</details>\n";
    }

    void right(const Explanation& working) override {
        m_out << "\n**Right.** " << heading(working) << "\n";
        working_block(working);
    }

    void wrong(const std::string& given, const std::string& why, const Explanation* working) override {
        m_out << "\n**Not quite:** you wrote " << escape(given) << "." << (why.empty() ? "" : " " + escape(why));
        if (working == nullptr) {
            m_out << " Try once more.\n";
            return;
        }
        m_out << "\n\n**Answer:** " << heading(*working) << "\n";
        working_block(*working);
    }

    void prompt(const std::string& text) override { (void)text; }

    void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) override {
        if (!score.empty()) {
            m_out << "\n**" << escape(score) << "**\n";
        }
        if (!lesson.try_it.empty()) {
            m_out << '\n' << prose(symbols(lesson.try_it)) << '\n';
        }
        m_out << "\n*" << (number > 0 ? "End of lesson " + std::to_string(number) + "." : std::string("End of the lesson."))
              << (next.empty() ? "" : " " + escape(next)) << "*\n";
    }

    void flush() override { m_out.flush(); }

private:
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    // Narration without the value marks, escaped.
    static std::string prose(const std::string& marked) { return escape(unmarked(marked)); }

    void working_block(const Explanation& working) {
        if (working.lines.empty()) {
            return;
        }
        std::vector<std::string> lines;
        for (const auto& line : working.lines) {
            lines.push_back(symbols(line));
        }
        m_out << '\n' << markdown_code_block(lines);
    }

    const RenderOptions& m_options;
    std::ostream& m_out;
    bool m_last_was_item = false;
};

}  // namespace

std::unique_ptr<LessonWriter> make_markdown_lesson_writer(const RenderOptions& options, std::ostream& out) {
    return std::make_unique<MarkdownLessonWriter>(options, out);
}

}  // namespace qkv
