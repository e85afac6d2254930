// How a lesson is written: narration, tables, workings and questions all go
// through one LessonWriter, which has a text skin (played on a terminal) and
// a document skin (a Markdown or LaTeX handout, an HTML page). The player
// decides what to write and when; a skin only gathers it into the blocks of a
// document, which the format's writer of documents writes.
#pragma once

#include "attention/trace.hpp"
#include "explain/explain.hpp"
#include "lesson/lesson.hpp"
#include "render/render.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace qkv {

// A piece of narration with its placeholders filled in.
struct Piece {
    std::string text;
    bool is_value = false;   // a number from the trace (bold on a colour terminal)
};

// One of the numbers a question is worked from: "queries[2] = [2, 2, 2]",
// with the title of its model when that is not the page's own.
struct Given {
    std::string numbers;
    std::string model;
    bool operator==(const Given&) const = default;
    // "queries[2] = [2, 2, 2]", with "(the model's title)" when it is another model's
    std::string text() const { return numbers + (model.empty() ? "" : " (" + model + ")"); }
};

class LessonWriter {
public:
    virtual ~LessonWriter() = default;

    // "Lesson 1 · The three-input walk-through" (number 0: a lesson file) and its summary.
    virtual void title(const Lesson& lesson, int number) = 0;
    // The start of page `page` (1-based) of `pages`.
    virtual void page(int page, int pages) = 0;
    // Paragraphs are separated by blank lines; lines starting with "- " are list items.
    virtual void narration(const std::vector<Piece>& pieces) = 0;
    // The chosen steps of a model's trace as tables (options.steps and
    // options.head select them); the model is there for a skin that works out
    // every cell of its tables (HTML).
    virtual void steps(const LessonModel& entry, const RenderOptions& options) = 0;
    virtual void workings(const std::vector<Explanation>& explanations) = 0;
    // A question, then how to answer it ("(at least 2 decimals)"), and the
    // numbers it is worked from ("queries[2] = [2, 2, 2]"), a line each.
    virtual void question(const std::vector<Piece>& prompt, const std::string& form,
                          const std::vector<Given>& given) = 0;
    // Playing straight through, or the learner asked for it: the answer, then its working.
    virtual void answer(const Explanation& working) = 0;
    // The learner's answer is right: the working.
    virtual void right(const Explanation& working) = 0;
    // The learner's answer is wrong; `why` names the mistake when one is
    // recognised ("" otherwise). With a working, that was the last try; without
    // one, the learner may try again.
    virtual void wrong(const std::string& given, const std::string& why, const Explanation* working) = 0;
    // A line for the learner between pages or after a wrong input (text only).
    virtual void prompt(const std::string& text) = 0;
    // The end: the score (when questions were answered at a terminal), what to
    // try on one's own numbers, and what to do next ("" when there is no next lesson).
    virtual void end(const Lesson& lesson, int number, const std::string& score, const std::string& next) = 0;
    virtual void flush() = 0;
};

// The learner leaves in the middle of a page (at a "more" pause).
struct LessonLeft {
    bool end_of_input = false;   // the input ended, rather than q typed
};

// The terminal a text lesson is played on. Narration and workings are
// wrapped to `width` columns, never inside a word. With a `height`, output
// pauses whenever the screen is full ("more"), reading a line with
// `read_line`: Enter goes on, q (or the end of input) throws LessonLeft.
struct Screen {
    int width = 80;
    int height = 0;   // 0: no pauses
    std::function<std::optional<std::string>()> read_line;
};

// options.format is text, markdown, latex or html; the writer keeps a reference to options.
std::unique_ptr<LessonWriter> make_lesson_writer(const RenderOptions& options, std::ostream& out, Screen screen = {});

// The narration's text at the given precision, placeholders filled in.
std::vector<Piece> fill(const Lesson& lesson, const Narration& narration, int precision, bool ascii);

}  // namespace qkv
