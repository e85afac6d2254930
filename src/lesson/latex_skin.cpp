// The LaTeX skin of the lesson writer: the lesson as a document (a fragment,
// or with --standalone a whole article), a handout like the Markdown skin.
// The narration is paragraphs and itemize lists with the filled-in values in
// bold; the steps are run's LaTeX; each question is followed by its answer
// and working as explain writes them. Pure ASCII, as render/latex.hpp writes.
#include "lesson/skins.hpp"

#include "render/latex.hpp"
#include "render/table.hpp"

#include <string>

namespace qkv {

namespace {

// Code set in typewriter, which TeX does not hyphenate: it may break after
// a comma, a slash or an underscore, so that a long command fits a column.
std::string code_latex(const std::string& code) {
    std::string out;
    for (const char c : tex_break_underscores(tex_escape(code))) {
        out += c;
        if (c == ',' || c == '/') {
            out += "\\allowbreak{}";
        }
    }
    return out;
}

// Prose with its filled-in values in bold (their spaces unbreakable but
// after a comma) and its `code spans` in typewriter, everything else escaped.
std::string inline_latex(const std::string& marked) {
    return styled_inline(marked, {[](const std::string& text) { return tex_break_underscores(tex_prose(text)); },
                                  code_latex, "\\textbf{", "}", "\\texttt{", "}",
                                  // a vector may break after its commas; "4 × 2" stays whole
                                  [](const std::string& written) {
                                      return std::string(!written.empty() && written.back() == ',' ? " " : "~");
                                  }});
}

class LatexLessonWriter : public LessonWriter {
public:
    LatexLessonWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    void title(const Lesson& lesson, int number) override {
        const std::string heading =
            (number > 0 ? "Lesson " + std::to_string(number) + ": " : std::string()) + lesson.title;
        m_out << latex_begin(m_options.standalone, to_ascii(one_line(heading)));
        m_out << "\\section*{\\raggedright " << tex_prose(heading) << "}\n\n\\emph{"
              << tex_prose(lesson.summary) << "}\n";
        // narration holds commands and vectors that do not hyphenate: rather
        // more space between words than a line that runs into the margin
        m_out << "\n\\begingroup\\setlength{\\emergencystretch}{3em}\n";
    }

    void page(int page, int pages) override {
        (void)page;
        (void)pages;
    }

    // Paragraphs, and list items ("- …") gathered into one itemize.
    void narration(const std::vector<Piece>& pieces) override {
        bool in_list = false;
        for (const auto& paragraph : paragraphs_of(marked_text(pieces))) {
            const bool item = paragraph.rfind("- ", 0) == 0;
            if (item != in_list) {
                m_out << (item ? "\n\\begin{itemize}\n" : "\\end{itemize}\n");
                in_list = item;
            }
            m_out << (item ? "  \\item " + inline_latex(paragraph.substr(2)) + "\n"
                           : "\n" + inline_latex(paragraph) + "\n");
        }
        if (in_list) {
            m_out << "\\end{itemize}\n";
        }
    }

    // run's LaTeX for the steps, without its title: the lesson has its own
    void steps(const LessonModel& entry, const RenderOptions& options) override {
        RenderOptions fragment = options;
        fragment.standalone = false;
        std::string text = render_steps_only(entry.trace, fragment);
        while (!text.empty() && text.front() == '\n') {
            text.erase(0, 1);
        }
        // (step_subsection lets a step id in a heading break after its underscores)
        if (!text.empty()) {
            m_out << '\n' << text;
        }
    }

    void workings(const std::vector<Explanation>& explanations) override {
        for (const auto& explanation : explanations) {
            m_out << latex_cell_working(explanation.heading, explanation.latex, explanation.lines, "subsubsection*");
        }
    }

    void question(const std::vector<Piece>& prompt, const std::string& form,
                  const std::vector<Given>& given) override {
        m_out << "\n\\medskip\\noindent\\textbf{Question.} " << inline_latex(marked_text(prompt))
              << (form.empty() ? "" : " \\emph{" + tex_prose(form) + "}") << "\n";
        if (!given.empty()) {
            std::string list;
            for (const auto& item : given) {
                list += (list.empty() ? "" : "; ") + ("`" + item.numbers + "`") +
                        (item.model.empty() ? "" : " (" + item.model + ")");
            }
            m_out << "\n\\noindent\\textit{Given:} " << inline_latex(list) << "\n";
        }
    }

    void answer(const Explanation& working) override {
        m_out << "\n\\noindent\\textit{Answer:} " << latex_cell_heading(working.heading) << "\n" << latex_cell_lines(working.lines);
        m_out << "\\medskip\n";
    }

    void right(const Explanation& working) override {
        m_out << "\n\\noindent\\textbf{Right.} " << latex_cell_heading(working.heading) << "\n" << latex_cell_lines(working.lines);
        m_out << "\\medskip\n";
    }

    void wrong(const std::string& given, const std::string& why, const Explanation* working) override {
        m_out << "\n\\noindent\\textbf{Not quite:} you wrote " << tex_escape(given) << "."
              << (why.empty() ? "" : " " + tex_prose(why));
        if (working == nullptr) {
            m_out << " Try once more.\n";
            return;
        }
        m_out << "\n\n\\noindent\\textbf{Answer:} " << latex_cell_heading(working->heading) << "\n" << latex_cell_lines(working->lines)
              << "\\medskip\n";
    }

    void prompt(const std::string& text) override { (void)text; }

    void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) override {
        if (!score.empty()) {
            m_out << "\n\\medskip\\noindent\\textbf{" << tex_prose(score) << "}\n";
        }
        for (const auto& paragraph : paragraphs_of(lesson.try_it)) {
            m_out << "\n" << inline_latex(paragraph) << "\n";
        }
        m_out << "\n\\medskip\\noindent\\emph{"
              << (number > 0 ? "End of lesson " + std::to_string(number) + "." : std::string("End of the lesson."))
              << (next.empty() ? "" : " " + tex_prose(next)) << "}\n\\par\\endgroup\n";
        m_out << latex_end(m_options.standalone);
    }

    void flush() override { m_out.flush(); }

private:
    const RenderOptions& m_options;
    std::ostream& m_out;
};

}  // namespace

std::unique_ptr<LessonWriter> make_latex_lesson_writer(const RenderOptions& options, std::ostream& out) {
    return std::make_unique<LatexLessonWriter>(options, out);
}

}  // namespace qkv
