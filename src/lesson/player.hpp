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
};

enum class PlayEnd { finished, left };

// What a learner typed as an answer: a number, nothing (show the answer), or
// q to leave. "−" (the Unicode minus) is read as "-".
struct Reply {
    enum Kind { number, skip, leave, not_a_number } kind = not_a_number;
    double value = 0.0;
};
Reply read_reply(const std::string& line);

// Right when |given − expected| ≤ tolerance.
bool is_right(double given, double expected, double tolerance);

PlayEnd play_lesson(const Lesson& lesson, const PlayOptions& options, LessonWriter& writer, Learner* learner);

}  // namespace qkv
