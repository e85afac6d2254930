// The HTML skin of the lesson writer: the lesson as one self-contained page
// (OUTPUT FORMATS in man/qkv.1.in), a handout like the Markdown skin. Each page of the lesson is a
// <section>; its tables are run's (render_html_steps), every cell a button
// whose popover holds its working; each question is a box with its answer and
// working folded away in <details>, which opens without JavaScript.
#include "lesson/skins.hpp"

#include "render/html.hpp"
#include "render/table.hpp"

#include <string>

namespace qkv {

namespace {

// Prose with its filled-in values in <strong> and its `code spans` in <code>,
// everything else escaped. A value's spaces do not break (&#160;, which XML reads too), as on the terminal.
std::string inline_html(const std::string& marked) {
    const auto escape = [](const std::string& text) { return xml_escape(text); };
    return styled_inline(marked, {escape, escape, "<strong>", "</strong>", "<code>", "</code>",
                                  [](const std::string&) { return std::string("&#160;"); }});
}

class HtmlLessonWriter : public LessonWriter {
public:
    HtmlLessonWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    void title(const Lesson& lesson, int number) override {
        const std::string heading =
            (number > 0 ? "Lesson " + std::to_string(number) + (m_options.ascii ? " - " : " · ") : std::string()) +
            symbols(lesson.title);
        html_begin(m_out, heading);
        m_out << "<p class=\"note\">" << inline_html(symbols(lesson.summary)) << "</p>\n";
    }

    void page(int page, int pages) override {
        close_page();
        m_page = page;
        m_tables = 0;
        m_out << "<section class=\"page\" id=\"page-" << page << "\">\n";
        if (page > 1) {
            // where the text lesson draws its "─── page 2 of 6 ───" rule
            m_out << "<p class=\"note\">Page " << page << " of " << pages << "</p>\n";
        }
        m_page_open = true;
    }

    // Paragraphs as <p>, list items ("- …") gathered into one <ul>.
    void narration(const std::vector<Piece>& pieces) override {
        close_question();
        bool in_list = false;
        for (const auto& paragraph : paragraphs_of(marked_text(pieces))) {
            const bool item = paragraph.rfind("- ", 0) == 0;
            if (item != in_list) {
                m_out << (item ? "<ul>\n" : "</ul>\n");
                in_list = item;
            }
            m_out << (item ? "<li>" + inline_html(paragraph.substr(2)) + "</li>\n"
                           : "<p>" + inline_html(paragraph) + "</p>\n");
        }
        if (in_list) {
            m_out << "</ul>\n";
        }
    }

    // Each call's tables get ids of their own ("p3-t1-scores"): the same step
    // may be shown on several pages, and ids must not repeat on the page.
    void steps(const LessonModel& entry, const RenderOptions& options) override {
        close_question();
        const std::string id_prefix = "p" + std::to_string(m_page) + "-t" + std::to_string(++m_tables) + "-";
        const CellWorkings cell_workings = html_workings(entry.model, entry.trace, options);
        render_html_steps(entry.trace, options, m_out, cell_workings, id_prefix);
    }

    void workings(const std::vector<Explanation>& explanations) override {
        close_question();
        for (const auto& explanation : explanations) {
            m_out << "<div class=\"working\">\n" << html_working(ascii_working(explanation)) << "</div>\n";
        }
    }

    void question(const std::vector<Piece>& prompt, const std::string& form,
                  const std::vector<Given>& given) override {
        m_out << "<div class=\"question\">\n<p><strong>Question.</strong> " << inline_html(marked_text(prompt))
              << (form.empty() ? "" : " <span class=\"note\">" + xml_escape(symbols(form)) + "</span>") << "</p>\n";
        if (!given.empty()) {
            m_out << "<p class=\"given\"><em>Given:</em> ";
            for (std::size_t i = 0; i < given.size(); ++i) {
                m_out << (i == 0 ? "" : "; ") << "<code>" << xml_escape(symbols(given[i].numbers)) << "</code>"
                      << (given[i].model.empty() ? "" : " (" + xml_escape(symbols(given[i].model)) + ")");
            }
            m_out << "</p>\n";
        }
        m_question_open = true;
    }

    // A handout: the answer folded away until the reader opens it.
    void answer(const Explanation& working) override {
        m_out << "<details>\n<summary>Answer</summary>\n<div class=\"working\">\n"
              << html_working(ascii_working(working)) << "</div>\n</details>\n";
        close_question();
    }

    void right(const Explanation& working) override {
        m_out << "<p class=\"verdict-right\"><strong>Right.</strong></p>\n<div class=\"working\">\n"
              << html_working(ascii_working(working)) << "</div>\n";
        close_question();
    }

    void wrong(const std::string& given, const std::string& why, const Explanation* working) override {
        m_out << "<p class=\"verdict-wrong\"><strong>Not quite:</strong> you wrote " << xml_escape(symbols(given))
              << "." << (why.empty() ? "" : " " + xml_escape(symbols(why)))
              << (working == nullptr ? " Try once more." : "") << "</p>\n";
        if (working != nullptr) {
            m_out << "<details>\n<summary>Answer</summary>\n<div class=\"working\">\n"
                  << html_working(ascii_working(*working)) << "</div>\n</details>\n";
            close_question();
        }
    }

    void prompt(const std::string& text) override { (void)text; }

    void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) override {
        close_page();
        m_out << "<section class=\"end\" id=\"end\">\n";
        if (!score.empty()) {
            m_out << "<p><strong>" << xml_escape(symbols(score)) << "</strong></p>\n";
        }
        if (!lesson.try_it.empty()) {
            for (const auto& paragraph : paragraphs_of(symbols(lesson.try_it))) {
                m_out << "<p>" << inline_html(paragraph) << "</p>\n";
            }
        }
        m_out << "<p class=\"note\">"
              << (number > 0 ? "End of lesson " + std::to_string(number) + "." : std::string("End of the lesson."))
              << (next.empty() ? "" : " " + xml_escape(symbols(next))) << "</p>\n</section>\n";
        html_end(m_out);
    }

    void flush() override { m_out.flush(); }

private:
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    HtmlWorking ascii_working(const Explanation& explanation) const {
        HtmlWorking working{symbols(explanation.heading), {}};
        for (const auto& line : explanation.lines) {
            working.lines.push_back(symbols(line));
        }
        return working;
    }

    void close_question() {
        if (m_question_open) {
            m_out << "</div>\n";
            m_question_open = false;
        }
    }

    void close_page() {
        close_question();
        if (m_page_open) {
            m_out << "</section>\n";
            m_page_open = false;
        }
    }

    const RenderOptions& m_options;
    std::ostream& m_out;
    int m_page = 0;
    int m_tables = 0;            // tables written on this page so far
    bool m_page_open = false;
    bool m_question_open = false;
};

}  // namespace

std::unique_ptr<LessonWriter> make_html_lesson_writer(const RenderOptions& options, std::ostream& out) {
    return std::make_unique<HtmlLessonWriter>(options, out);
}

}  // namespace qkv
