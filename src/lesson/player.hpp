// Plays a lesson: page by page, narration, tables, workings and questions,
// through a LessonWriter. With a Learner (a terminal) it pauses between pages
// and asks the questions; without one it plays straight through with the
// answers shown, so that the lesson reads as a document.
#pragma once

#include "lesson/lesson.hpp"
#include "lesson/writer.hpp"
#include "render/render.hpp"

#include <optional>
#include <string>
#include <vector>

namespace qkv {

// The person at the terminal.
class Learner {
public:
    virtual ~Learner() = default;
    // One line typed by the learner (without its newline), or nullopt at the
    // end of the input.
    virtual std::optional<std::string> read_line() = 0;
};

struct PlayOptions {
    RenderOptions render;              // format, precision, colour, ascii, brief
    std::vector<StepId> steps;         // --steps: only these of the steps a page shows (empty: all)
    int head = 0;                      // --head: only this head, where a page does not choose one
    int number = 0;                    // the lesson's number; 0 for a lesson file
    std::string next;                  // what to do after this lesson, e.g. "Next: qkv lesson 2 (scaling)."
    int first_page = 1;                // --page: start at this page (1-based)
    std::string resume;                // how to play it again, "qkv lesson 3": leaving says how to go on
    // --answer: the replies to the questions in the order they come, each
    // graded as at a terminal; without a Learner, the rest show their answers
    std::vector<std::string> answers;
};

enum class PlayEnd { finished, left };

// What a learner typed as an answer: a number, a fraction or an arithmetic
// expression (2/10, 0.6439*(1-0.6439): its value), nothing (show the
// answer), or q to leave. "−" (the Unicode minus) is read as "-"; a number
// written with a decimal comma is not read (`comma` holds it: "0,06").
struct Reply {
    enum Kind { number, skip, leave, not_a_number } kind = not_a_number;
    double value = 0.0;
    int decimals = 0;    // digits after the point as written: "0.50" → 2, "6.03e-06" → 8; an expression's, base/expression.hpp
    std::string comma;   // a number written with a decimal comma, for the hint "write 0.06, not 0,06"
    bool expression = false;  // written as arithmetic (4/10): graded as its value
};
Reply read_reply(const std::string& line);
// A line as typed, without the spaces around it.
std::string trimmed(const std::string& text);

// A shape as a learner writes it: "3 × 2", "3x2", "3 by 2" (nullopt otherwise).
std::optional<std::pair<arma::uword, arma::uword>> read_shape(const std::string& line);

// How a question asks to be answered, e.g. "(at least 2 decimals)".
std::string answer_form(const Lesson& lesson, const Question& question);

// What the learner's reply to a question makes of it. `valid` is false when
// the reply is not an answer of the question's kind (nothing is graded then,
// and `again` says what to type); `why` names the mistake a wrong number shows,
// as `qkv check` names it, and `expected` says, for any wrong answer, what was
// expected and from which numbers ("It is worked as S = Q·Kᵀ, from …").
struct Graded {
    bool valid = false;
    bool right = false;
    std::string why;
    std::string expected;
    std::string again;
    std::string hint;  // why a reply that is not valid was not read: "Write 0.06, not 0,06."
    std::string written;  // the reply as the verdict says it: an expression with its value, "2/10 = 0.2"
};
// `shown_decimals`: the precision of the numbers on the screen, which an
// answer may have been worked from (their rounding is allowed for).
// (grading.cpp)
Graded grade_reply(const Lesson& lesson, const Question& question, const std::string& reply, int shown_decimals = 4);

// What a question is worked from, one number or row each ("queries[2] = [2, 2, 2]",
// "W_Q is 4 × 3"), shown with the question (given.cpp).
std::vector<Given> question_given(const Lesson& lesson, const Question& question, const RenderOptions& options);

// The answer of a question with its working: a number's is the cell's
// arithmetic, as `qkv explain` writes it.
Explanation question_working(const Lesson& lesson, const Question& question, const RenderOptions& options);

PlayEnd play_lesson(const Lesson& lesson, const PlayOptions& options, LessonWriter& writer, Learner* learner);

}  // namespace qkv
