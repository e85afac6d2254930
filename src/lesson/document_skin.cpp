// The lesson as a document (render/document.hpp), for every document format
// but the terminal's: a handout in Markdown, LaTeX (a fragment, or with
// --standalone a whole article) or HTML (one self-contained page). The
// writer gathers what the player says into blocks, each page of the lesson a
// page of the document, and the format's writer writes it at the end:
// narration as passages with the filled-in values marked, the steps as run's
// parts (on a page, every cell holding its working), each question with what
// follows about its answer, the answer folded away where the format can fold.
#include "lesson/skins.hpp"

#include "explain/explain.hpp"
#include "render/document.hpp"
#include "render/html.hpp"
#include "render/table.hpp"

#include <string>
#include <utility>

namespace qkv {

namespace {

class DocumentLessonWriter : public LessonWriter {
public:
    DocumentLessonWriter(const RenderOptions& options, std::ostream& out) : m_options(options), m_out(out) {}

    // "Lesson 1: Three inputs, by hand", a lesson file's by its title alone, and its summary
    void title(const Lesson& lesson, int number) override {
        m_document.title = number > 0 ? "Lesson " + std::to_string(number) : symbols(lesson.title);
        m_document.subject = number > 0 ? symbols(lesson.title) : "";
        m_document.purpose = full_title(m_document);
        m_document.blocks.push_back(Lead{spans_of(symbols(lesson.summary))});
    }

    void page(int page, int pages) override {
        m_question = nullptr;
        m_page = page;
        m_tables = 0;
        m_document.blocks.push_back(PageBlock{.number = page, .pages = pages, .blocks = {}});
    }

    void narration(const std::vector<Piece>& pieces) override { add(passage_of(marked_text(pieces))); }

    // Each call's parts get anchors of their own ("p3-t1-scores"): the same
    // step may be shown on several pages, and anchors must not repeat. A page
    // opens each cell's working from the cell; the other formats have no use
    // for the workings.
    void steps(const LessonModel& entry, const RenderOptions& options) override {
        const std::string id_prefix = "p" + std::to_string(m_page) + "-t" + std::to_string(++m_tables) + "-";
        std::vector<Block> parts =
            m_options.format == Format::html
                ? worked_steps(entry.trace, options, html_workings(entry.model, entry.trace, options), id_prefix)
                : run_steps(entry.trace, options, {.id_prefix = id_prefix});
        for (Block& part : parts) {
            add(std::move(part));
        }
    }

    void workings(const std::vector<Explanation>& explanations) override {
        for (const auto& explanation : explanations) {
            add(working_of(explanation));
        }
    }

    void question(const std::vector<Piece>& prompt, const std::string& form,
                  const std::vector<Given>& given) override {
        add(question_of(prompt, form, given, m_options.ascii));
        m_question = &std::get<QuestionBlock>(current().back());
    }

    // Playing straight through: the answer, folded away until the reader opens it.
    void answer(const Explanation& working) override { answer_block(answer_of("Answer", Mark::none, true, working)); }

    void right(const Explanation& working) override { answer_block(answer_of("Right.", Mark::right, false, working)); }

    void wrong(const std::string& given, const std::string& why, const Explanation* working) override {
        answer_block(wrong_verdict(given, why, working != nullptr, m_options.ascii));
        if (working != nullptr) {
            // folded as when playing straight through: a page may still ask again (the playground does)
            answer_block(answer_of("Answer", Mark::none, true, *working));
        }
    }

    void prompt(const std::string& text) override { (void)text; }

    // The score, what to try on one's own numbers and where to go next, after the last page.
    void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) override {
        m_question = nullptr;
        Part end{.id = "end", .blocks = {}};
        if (!score.empty()) {
            end.blocks.push_back(Statement{{{.label = symbols(score), .spans = {}}}});
        }
        if (!lesson.try_it.empty()) {
            end.blocks.push_back(passage_of(symbols(lesson.try_it)));
        }
        end.blocks.push_back(Aside{(number > 0 ? "End of lesson " + std::to_string(number) + "."
                                               : std::string("End of the lesson.")) +
                                   (next.empty() ? "" : " " + symbols(next))});
        m_document.blocks.push_back(std::move(end));
        write_document(m_document, m_options.format,
                       {.ascii = m_options.ascii, .standalone = m_options.standalone, .color = m_options.color}, m_out);
    }

    void flush() override { m_out.flush(); }

private:
    std::string symbols(const std::string& text) const { return m_options.ascii ? to_ascii(text) : text; }

    // The blocks being added to: the page's, or before the first page the document's.
    std::vector<Block>& current() {
        if (!m_document.blocks.empty() && std::holds_alternative<PageBlock>(m_document.blocks.back())) {
            return std::get<PageBlock>(m_document.blocks.back()).blocks;
        }
        return m_document.blocks;
    }

    // A block of the page's own: what follows a question ends it.
    void add(Block block) {
        m_question = nullptr;
        current().push_back(std::move(block));
    }

    // A block about the question's answer, inside the question (or on the page, when none is open).
    void answer_block(Block block) {
        if (m_question == nullptr) {
            current().push_back(std::move(block));
            return;
        }
        m_question->blocks.push_back(std::move(block));
    }

    const RenderOptions& m_options;
    std::ostream& m_out;
    Document m_document;
    QuestionBlock* m_question = nullptr;  // the question its answer's blocks go into, until something else follows it
    int m_page = 0;
    int m_tables = 0;  // steps written on this page so far
};

}  // namespace

std::unique_ptr<LessonWriter> make_document_lesson_writer(const RenderOptions& options, std::ostream& out) {
    return std::make_unique<DocumentLessonWriter>(options, out);
}

}  // namespace qkv
