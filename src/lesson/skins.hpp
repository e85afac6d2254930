// The skins of the lesson writer and what they share. Internal to lesson/.
#pragma once

#include "lesson/writer.hpp"
#include "render/document.hpp"

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace qkv {

std::unique_ptr<LessonWriter> make_text_lesson_writer(const RenderOptions& options, std::ostream& out, Screen screen);
// Any other document format: the lesson as a document (document_skin.cpp).
std::unique_ptr<LessonWriter> make_document_lesson_writer(const RenderOptions& options, std::ostream& out);

// The chosen steps as run writes them in options.format (a document format),
// without the title and sizes before them: run_steps() in a body-only document.
std::string render_steps_only(const Trace& trace, const RenderOptions& options);

// Narration as one string in which each filled-in value is enclosed by these
// two control characters, so that a skin can style it (or drop the marks).
// unmarked() gives the plain text back.
inline constexpr char k_value_start = '\x01';
inline constexpr char k_value_end = '\x02';
inline constexpr char k_value_space = '\x03';  // a space inside a value, where no line may break
std::string marked_text(const std::vector<Piece>& pieces);
std::string unmarked(const std::string& text);

// Marked narration as the spans of a document: plain text, `code spans`
// (their backticks dropped) and the filled-in values; a code span left open
// ends with the text.
std::vector<Span> spans_of(const std::string& marked);

// Splits at blank lines, joins the lines of each paragraph with spaces; a line
// starting with "- " begins a paragraph of its own (a list item).
std::vector<std::string> paragraphs_of(const std::string& text);

}  // namespace qkv
