// The skins of the lesson writer and what they share: narration as spans,
// and the blocks (render/document.hpp) that both build from what the player
// says. Internal to lesson/.
#pragma once

#include "lesson/writer.hpp"
#include "render/document.hpp"

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace qkv {

// A terminal: the lesson played, each thing the player says written as text
// as it is said, with pauses when the screen is full (text_skin.cpp).
std::unique_ptr<LessonWriter> make_text_lesson_writer(const RenderOptions& options, std::ostream& out, Screen screen);
// Any other document format: the lesson as a document (document_skin.cpp).
std::unique_ptr<LessonWriter> make_document_lesson_writer(const RenderOptions& options, std::ostream& out);

// Narration as one string in which each filled-in value is enclosed by these
// two control characters, its spaces marked as unbreakable.
inline constexpr char k_value_start = '\x01';
inline constexpr char k_value_end = '\x02';
inline constexpr char k_value_space = '\x03';  // a space inside a value, where no line may break
std::string marked_text(const std::vector<Piece>& pieces);

// Marked narration as the spans of a document: plain text, `code spans`
// (their backticks dropped) and the filled-in values; a code span left open
// ends with the text.
std::vector<Span> spans_of(const std::string& marked);

// Splits at blank lines, joins the lines of each paragraph with spaces; a line
// starting with "- " begins a paragraph of its own (a list item).
std::vector<std::string> paragraphs_of(const std::string& text);

// Marked narration as a passage: its paragraphs, the lines starting with "- " as list items.
Passage passage_of(const std::string& marked);

// A working of explain's, as a document holds one.
Working working_of(const Explanation& explanation);

// A question: "(at least 2 decimals)" after the prompt, the numbers it is
// worked from as code ("`queries[2] = [2, 2, 2]` (Model)"), in ASCII with `ascii`.
QuestionBlock question_of(const std::vector<Piece>& prompt, const std::string& form, const std::vector<Given>& given,
                          bool ascii);

// An answer, worked out: "Answer" (folded, played straight through) or the verdict "Right.".
Answer answer_of(const std::string& label, Mark tone, bool folded, const Explanation& explanation);

// The verdict on a wrong answer: "you wrote 7.", why (when a mistake is
// named), and on a try that was not the last, "Try once more."
VerdictBlock wrong_verdict(const std::string& given, const std::string& why, bool last_try, bool ascii);

}  // namespace qkv
