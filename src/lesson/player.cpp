#include "lesson/player.hpp"

#include "attention/attention.hpp"
#include "attention/steps.hpp"

#include <algorithm>
#include <set>

namespace qkv {

namespace {

class Player {
public:
    Player(const Lesson& lesson, const PlayOptions& options, LessonWriter& writer, Learner* learner)
        : m_lesson(lesson), m_options(options), m_writer(writer), m_learner(learner) {}

    PlayEnd play() {
        try {
            return play_pages();
        } catch (const LessonLeft& left) {
            return leave(left.end_of_input);
        }
    }

private:
    const Lesson& m_lesson;
    const PlayOptions& m_options;
    LessonWriter& m_writer;
    Learner* m_learner;
    int m_asked = 0;
    int m_right = 0;
    std::size_t m_met = 0;  // the questions met so far, for --answer
    int m_first_try = 0;
    int m_page = 1;   // the page being played, 1-based
    std::set<std::pair<int, StepId>> m_weights_shown;  // (model, w_query …): the weights shown so far
    std::set<std::string> m_workings_shown;            // the cells whose working has been shown

    // Records that the working of `ref` is shown; false when it was already.
    bool shown_once(const ValueRef& ref) {
        const CellRef& cell = ref.cell;
        const int head = cell_step(model_of(m_lesson, ref).trace, cell).head;
        return m_workings_shown
            .insert(std::to_string(ref.model) + ":" + step_text(cell.step) + "@" + std::to_string(head) + "[" +
                    std::to_string(cell.row) + "," + std::to_string(cell.col) + "]")
            .second;
    }

    PlayEnd play_pages() {
        m_writer.title(m_lesson, m_options.number);
        const int pages = static_cast<int>(m_lesson.pages.size());
        for (int p = std::max(0, m_options.first_page - 1); p < pages; ++p) {
            m_page = p + 1;
            m_writer.page(p + 1, pages);
            if (!play_page(m_lesson.pages[static_cast<std::size_t>(p)])) {
                return leave();
            }
            if (m_learner != nullptr && p + 1 < pages) {
                m_writer.flush();  // the page's end on the screen: leaving before it, this page is where to go on
                m_page = p + 2;    // leaving here, the next page is where to go on
                if (!next_page(p + 2, pages)) {
                    return PlayEnd::left;
                }
            }
        }
        m_writer.end(m_lesson, m_options.number, score(), m_options.next);
        m_writer.flush();
        return PlayEnd::finished;
    }

    // Waits for Enter before page `next`; false when the learner leaves.
    bool next_page(int next, int pages) {
        std::string ask = "\nPress Enter for page " + std::to_string(next) + " of " + std::to_string(pages) +
                          ", or q to leave: ";
        while (true) {
            m_writer.prompt(ask);
            const auto line = m_learner->read_line();
            if (!line) {
                leave(true);
                return false;
            }
            const Reply reply = read_reply(*line);
            if (reply.kind == Reply::leave) {
                leave();
                return false;
            }
            if (reply.kind == Reply::skip) {
                return true;
            }
            // typed text is not dropped in silence
            ask = "There is no question on this page. Press Enter for page " + std::to_string(next) +
                  ", or q to leave: ";
        }
    }

    std::string score() const {
        if (m_asked == 0) {
            return "";
        }
        std::string text = "Score: " + std::to_string(m_right) + " of " + std::to_string(m_asked) +
                           (m_asked == 1 ? " question" : " questions") + " right";
        if (m_right > m_first_try) {
            text += ", " + (m_first_try == 0 ? std::string("none") : std::to_string(m_first_try)) + " of them at the first try";
        }
        return text + ".";
    }

    PlayEnd leave(bool end_of_input = false) {
        // after q the terminal has already moved to a new line; at the end of input it has not
        m_writer.prompt(end_of_input ? "\n" : "");
        if (!m_options.resume.empty()) {
            m_writer.narration({{"To go on from here later: " + m_options.resume + " --page " + std::to_string(m_page), false}});
        }
        m_writer.flush();
        return PlayEnd::left;
    }

    std::vector<Piece> filled(const Narration& narration) const {
        return fill(m_lesson, narration, m_options.render.precision, m_options.render.ascii);
    }

    // false when the learner leaves
    bool play_page(const Page& page) {
        const LessonModel& entry = m_lesson.models[static_cast<std::size_t>(page.model)];
        if (!page.say.empty()) {
            m_writer.narration(filled(page.say));
        }
        if (page.ask && page.ask->predict && !ask(*page.ask)) {
            return false;
        }
        show(page, entry);
        std::vector<Explanation> workings;
        for (const auto& ref : page.explain) {
            // a working is shown once: not again after a question's answer showed it
            if (!shown_once(ref)) {
                continue;
            }
            const LessonModel& owner = model_of(m_lesson, ref);
            workings.push_back(explain_cell(owner.model, owner.trace, ref.cell, m_options.render,
                                            static_cast<arma::uword>(page.block_size)));
        }
        if (!workings.empty()) {
            m_writer.workings(workings);
        }
        if (!page.then.empty()) {
            m_writer.narration(filled(page.then));
        }
        if (page.ask && !page.ask->predict) {
            return ask(*page.ask);
        }
        return true;
    }

    void show(const Page& page, const LessonModel& entry) {
        if (page.show.empty()) {
            return;
        }
        RenderOptions options = m_options.render;
        options.steps.clear();
        const auto add = [&](StepId id) {
            if (m_options.steps.empty() ||
                std::find(m_options.steps.begin(), m_options.steps.end(), id) != m_options.steps.end()) {
                options.steps.push_back(id);
            }
        };
        for (const auto& id : page.show) {
            // the weights a step uses come before it, the first time the lesson shows that step
            for (const StepId weight : step_parameters(id)) {
                if (m_weights_shown.insert({page.model, weight}).second) {
                    add(weight);
                }
            }
            add(id);
            if (step_row(id).parameter) {
                m_weights_shown.insert({page.model, id});
            }
        }
        if (options.steps.empty()) {
            return;
        }
        options.head = page.head;
        if (page.head == 0 && m_options.head <= static_cast<int>(entry.trace.dims.heads)) {
            options.head = m_options.head;
        }
        m_writer.steps(entry, options);
    }

    // Asks a question; a wrong answer may be tried once more. False when the learner leaves.
    bool ask(const Question& question) {
        m_writer.question(filled(question.prompt), answer_form(m_lesson, question),
                          question_given(m_lesson, question, m_options.render));
        const Explanation working = question_working(m_lesson, question, m_options.render);
        if (question.kind == Question::Kind::number) {
            shown_once(question.answer);  // every way through the question below shows its working, or leaves
        }
        if (m_learner == nullptr) {
            const std::size_t index = m_met++;
            const std::string reply = index < m_options.answers.size() ? trimmed(m_options.answers[index]) : "";
            if (reply.empty()) {
                m_writer.answer(working);
                return true;
            }
            // an answer given beforehand: graded once, as a terminal grades a last try
            ++m_asked;
            const Graded graded = grade_reply(m_lesson, question, reply, m_options.render.precision);
            if (graded.valid && graded.right) {
                ++m_right;
                ++m_first_try;
                m_writer.right(working);
                return true;
            }
            m_writer.wrong(graded.written.empty() ? reply : graded.written,
                           !graded.valid ? (graded.hint.empty() ? "" : graded.hint + " ") +
                                               "That is not an answer of this question's kind " +
                                               answer_form(m_lesson, question) + "."
                           : graded.why.empty() ? graded.expected
                                                : graded.why,
                           &working);
            return true;
        }
        ++m_asked;
        int tries = 0;
        std::string ask_again = "Your answer (Enter shows it, q leaves): ";
        while (true) {
            m_writer.prompt(ask_again);
            const auto line = m_learner->read_line();
            if (!line) {
                m_writer.prompt("\n");
                return false;
            }
            const std::string reply = trimmed(*line);
            const Reply kind = read_reply(reply);
            if (kind.kind == Reply::leave) {
                return false;
            }
            if (kind.kind == Reply::skip) {
                m_writer.answer(working);
                return true;
            }
            const Graded graded = grade_reply(m_lesson, question, reply, m_options.render.precision);
            if (!graded.valid) {
                ask_again = graded.again;
                continue;
            }
            ++tries;
            if (graded.right) {
                ++m_right;
                m_first_try += tries == 1 ? 1 : 0;
                m_writer.right(working);
                return true;
            }
            // a second try between two options would give the answer away
            const bool either_or = question.kind == Question::Kind::choice && question.options.size() == 2;
            // the mistake the answer shows, or else what was expected and from which numbers
            const std::string& why = graded.why.empty() ? graded.expected : graded.why;
            if (tries == 1 && !either_or) {
                m_writer.wrong(graded.written.empty() ? reply : graded.written, why, nullptr);
                ask_again = "Your second try (Enter shows the answer, q leaves): ";
                continue;
            }
            m_writer.wrong(graded.written.empty() ? reply : graded.written, why, &working);
            return true;
        }
    }
};

}  // namespace

Explanation question_working(const Lesson& lesson, const Question& question, const RenderOptions& options) {
    switch (question.kind) {
        case Question::Kind::number: {
            // on a page that reads the keys in blocks, the answer is worked block by block too
            const LessonModel& entry = model_of(lesson, question.answer);
            const Page* page = page_of(lesson, question);
            const int block = step_row(question.answer.cell.step).online && page != nullptr ? page->block_size : 0;
            return explain_cell(entry.model, entry.trace, question.answer.cell, options,
                                static_cast<arma::uword>(std::max(block, 0)));
        }
        case Question::Kind::shape: {
            const Step& step = shape_step(lesson, question);
            Explanation working;
            const std::string name = step_text(step.id) + (step.head > 0 && lesson.models.at(static_cast<std::size_t>(
                                                                                  question.answer.model))
                                                                                      .trace.dims.heads > 1
                                                               ? " (head " + std::to_string(step.head) + ")"
                                                               : std::string());
            working.heading = name + " is " + shape_text(step.values.n_rows, step.values.n_cols);
            working.lines.push_back(std::to_string(step.values.n_rows) + " rows and " +
                                    std::to_string(step.values.n_cols) + " columns");
            return working;
        }
        case Question::Kind::choice: {
            // a sentence, then the number behind each option; the right one
            // is the option whose number is the largest (or the smallest)
            const std::size_t best = right_option(lesson, question);
            Explanation working;
            const Option& right = question.options[best];
            const bool numbered = question.row.is_cell && right.label != std::to_string(best + 1);
            // a key of a row by its token and number; a named option as a sentence: "It grows."
            std::string sentence = right.label;
            if (!question.row.is_cell && !sentence.empty() && sentence.front() >= 'a' && sentence.front() <= 'z') {
                sentence.front() = static_cast<char>(sentence.front() - 'a' + 'A');
            }
            working.heading = question.row.is_cell
                                  ? right.label + (numbered ? " (" + std::to_string(best + 1) + ")" : std::string())
                                  : sentence + ".";
            // options from several models say which model each number comes from
            bool one_model = true;
            for (const auto& option : question.options) {
                one_model = one_model && option.value.model == question.options.front().value.model;
            }
            for (const auto& option : question.options) {
                const double value = resolve(lesson, option.value).front();
                const LessonModel& owner = lesson.models.at(static_cast<std::size_t>(option.value.model));
                const std::string title = owner.trace.title.empty() ? "the model " + owner.name : owner.trace.title;
                working.lines.push_back(option.label + ": " + option.value.cell.text + " = " + format_value({value}, NumberStyle{}, options.precision, options.ascii) +
                                        (one_model ? std::string() : "    (" + title + ")"));
            }
            if (question.row.is_cell) {
                const bool two = question.options.size() == 2;
                working.lines.push_back(right.label + " has the " +
                                        (question.smallest ? (two ? "smaller" : "smallest") : (two ? "larger" : "largest")) +
                                        " value");
            }
            return working;
        }
    }
    return {};
}

PlayEnd play_lesson(const Lesson& lesson, const PlayOptions& options, LessonWriter& writer, Learner* learner) {
    Player player(lesson, options, writer, learner);
    return player.play();
}

}  // namespace qkv
