#include "lesson/player.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace qkv {

namespace {

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
        return "";
    }
    const auto last = text.find_last_not_of(" \t\r");
    return text.substr(first, last - first + 1);
}

class Player {
public:
    Player(const Lesson& lesson, const PlayOptions& options, LessonWriter& writer, Learner* learner)
        : m_lesson(lesson), m_options(options), m_writer(writer), m_learner(learner) {}

    PlayEnd play() {
        m_writer.title(m_lesson, m_options.number);
        const int pages = static_cast<int>(m_lesson.pages.size());
        for (int p = 0; p < pages; ++p) {
            m_writer.page(p + 1, pages);
            if (!play_page(m_lesson.pages[static_cast<std::size_t>(p)])) {
                return leave();
            }
            if (m_learner != nullptr && p + 1 < pages) {
                m_writer.prompt("\nPress Enter for page " + std::to_string(p + 2) + " of " + std::to_string(pages) +
                                ", or q to leave: ");
                const auto line = m_learner->read_line();
                if (!line || read_reply(*line).kind == Reply::leave) {
                    return leave(!line);
                }
            }
        }
        m_writer.end(m_lesson, m_options.number, m_options.next);
        m_writer.flush();
        return PlayEnd::finished;
    }

private:
    const Lesson& m_lesson;
    const PlayOptions& m_options;
    LessonWriter& m_writer;
    Learner* m_learner;

    const LessonModel& model_of(const Page& page) const { return m_lesson.models[static_cast<std::size_t>(page.model)]; }

    PlayEnd leave(bool end_of_input = false) {
        // after q the terminal has already moved to a new line; at the end of input it has not
        m_writer.prompt(end_of_input ? "\n" : "");
        m_writer.flush();
        return PlayEnd::left;
    }

    std::vector<Piece> filled(const Narration& narration) const {
        return fill(m_lesson, narration, m_options.render.precision, m_options.render.ascii);
    }

    // false when the learner leaves
    bool play_page(const Page& page) {
        const LessonModel& entry = model_of(page);
        if (!page.say.empty()) {
            m_writer.narration(filled(page.say));
        }
        show(page, entry);
        if (!page.explain.empty()) {
            std::vector<Explanation> workings;
            for (const auto& ref : page.explain) {
                const LessonModel& owner = m_lesson.models[static_cast<std::size_t>(ref.model)];
                workings.push_back(explain_cell(owner.model, owner.trace, ref.cell, m_options.render,
                                                static_cast<arma::uword>(page.block_size)));
            }
            m_writer.workings(workings);
        }
        if (!page.then.empty()) {
            m_writer.narration(filled(page.then));
        }
        if (page.ask) {
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
        for (const auto& id : page.show) {
            if (m_options.steps.empty() ||
                std::find(m_options.steps.begin(), m_options.steps.end(), id) != m_options.steps.end()) {
                options.steps.push_back(id);
            }
        }
        if (options.steps.empty()) {
            return;
        }
        options.head = page.head;
        if (page.head == 0 && m_options.head <= static_cast<int>(entry.trace.dims.heads)) {
            options.head = m_options.head;
        }
        m_writer.steps(entry.trace, options);
    }

    bool ask(const Question& question) {
        m_writer.question(filled(question.prompt));
        const LessonModel& entry = m_lesson.models[static_cast<std::size_t>(question.answer.model)];
        const Explanation working = explain_cell(entry.model, entry.trace, question.answer.cell, m_options.render);
        if (m_learner == nullptr) {
            m_writer.answer(working);
            return true;
        }
        const double expected = cell_value(entry.trace, question.answer.cell);
        std::string ask_again = "Your answer (Enter shows it, q leaves): ";
        while (true) {
            m_writer.prompt(ask_again);
            const auto line = m_learner->read_line();
            if (!line) {
                m_writer.prompt("\n");
                return false;
            }
            const Reply reply = read_reply(*line);
            switch (reply.kind) {
                case Reply::leave:
                    return false;
                case Reply::skip:
                    m_writer.answer(working);
                    return true;
                case Reply::number:
                    m_writer.verdict(is_right(reply.value, expected, question.tolerance), trimmed(*line), working);
                    return true;
                case Reply::not_a_number:
                    ask_again = "Please type a number, Enter to see the answer, or q to leave: ";
                    break;
            }
        }
    }
};

}  // namespace

Reply read_reply(const std::string& line) {
    std::string text = trimmed(line);
    Reply reply;
    if (text.empty()) {
        reply.kind = Reply::skip;
        return reply;
    }
    if (text == "q" || text == "Q" || text == "quit") {
        reply.kind = Reply::leave;
        return reply;
    }
    const std::string minus = "−";
    if (text.rfind(minus, 0) == 0) {
        text = "-" + text.substr(minus.size());
    }
    const char* begin = text.data();
    if (*begin == '+') {
        ++begin;
    }
    double value = 0.0;
    const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
        reply.kind = Reply::not_a_number;
        return reply;
    }
    reply.kind = Reply::number;
    reply.value = value;
    return reply;
}

bool is_right(double given, double expected, double tolerance) {
    // a hair of slack so that a tolerance of 0.005 accepts 0.47 for 0.475 despite binary fractions
    return std::fabs(given - expected) <= tolerance * (1.0 + 1e-9) + 1e-12;
}

PlayEnd play_lesson(const Lesson& lesson, const PlayOptions& options, LessonWriter& writer, Learner* learner) {
    Player player(lesson, options, writer, learner);
    return player.play();
}

}  // namespace qkv
