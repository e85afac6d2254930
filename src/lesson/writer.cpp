#include "lesson/writer.hpp"

#include "lesson/skins.hpp"
#include "render/document.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace qkv {

std::vector<Piece> fill(const Lesson& lesson, const Narration& narration, int precision, bool ascii) {
    std::vector<Piece> pieces;
    for (const auto& segment : narration) {
        if (segment.value) {
            pieces.push_back({format_value(resolve(lesson, *segment.value), segment.style, precision, ascii), true});
        } else {
            pieces.push_back({ascii ? to_ascii(segment.text) : segment.text, false});
        }
    }
    return pieces;
}

std::string marked_text(const std::vector<Piece>& pieces) {
    std::string text;
    for (const auto& piece : pieces) {
        if (piece.is_value) {
            // a value is never broken over two lines: its spaces are kept apart
            std::string value = piece.text;
            std::replace(value.begin(), value.end(), ' ', k_value_space);
            text += k_value_start + value + k_value_end;
            continue;
        }
        for (const char c : piece.text) {
            if (c != k_value_start && c != k_value_end && c != k_value_space) {
                text += c;
            }
        }
    }
    return text;
}

std::vector<Span> spans_of(const std::string& marked) {
    std::vector<Span> spans;
    std::string run;  // the span being read
    SpanKind kind = SpanKind::text;
    const auto finish = [&](SpanKind next) {
        if (!run.empty()) {
            spans.push_back({run, kind});
            run.clear();
        }
        kind = next;
    };
    for (const char c : marked) {
        switch (c) {
            case k_value_start:
                finish(SpanKind::value);
                break;
            case k_value_end:
                finish(SpanKind::text);
                break;
            case k_value_space:
                run += ' ';
                break;
            case '`':
                finish(kind == SpanKind::code ? SpanKind::text : SpanKind::code);
                break;
            default:
                run += c;
        }
    }
    finish(SpanKind::text);
    return spans;
}

std::vector<std::string> paragraphs_of(const std::string& text) {
    std::vector<std::string> paragraphs;
    std::istringstream lines(text);
    std::string line;
    std::string current;
    auto finish = [&]() {
        if (!current.empty()) {
            paragraphs.push_back(current);
            current.clear();
        }
    };
    while (std::getline(lines, line)) {
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos) {
            finish();
            continue;
        }
        if (line.compare(first, 2, "- ") == 0) {
            finish();  // each list item is a paragraph of its own
        }
        current += (current.empty() ? "" : " ") + line.substr(first);
    }
    finish();
    return paragraphs;
}

namespace {

// `text` in ASCII where asked
std::string symbols(const std::string& text, bool ascii) { return ascii ? to_ascii(text) : text; }

}  // namespace

Passage passage_of(const std::string& marked) {
    Passage passage;
    for (const auto& paragraph : paragraphs_of(marked)) {
        const bool item = paragraph.rfind("- ", 0) == 0;
        passage.paragraphs.push_back({spans_of(item ? paragraph.substr(2) : paragraph), item});
    }
    return passage;
}

Working working_of(const Explanation& explanation) {
    std::vector<HeadingPart> heading = explanation.heading_parts;
    if (heading.empty()) {
        heading.push_back({explanation.heading});
    }
    return {std::move(heading), explanation.latex, explanation.lines};
}

QuestionBlock question_of(const std::vector<Piece>& prompt, const std::string& form, const std::vector<Given>& given,
                          bool ascii) {
    QuestionBlock asked{.prompt = spans_of(marked_text(prompt)), .form = symbols(form, ascii)};
    for (const auto& item : given) {
        if (!asked.given.empty()) {
            asked.given.push_back({"; "});
        }
        asked.given.push_back({symbols(item.numbers, ascii), SpanKind::code});
        if (!item.model.empty()) {
            asked.given.push_back({" (" + symbols(item.model, ascii) + ")"});
        }
    }
    return asked;
}

// `sentence`: the heading is one (an answer of shape or of choice) rather than a cell's
Answer answer_of(const std::string& label, Mark tone, bool folded, const Explanation& explanation) {
    return {.label = label,
            .tone = tone,
            .folded = folded,
            .working = working_of(explanation),
            .sentence = explanation.heading_parts.empty()};
}

VerdictBlock wrong_verdict(const std::string& given, const std::string& why, bool last_try, bool ascii) {
    VerdictBlock verdict{.label = "Not quite:", .tone = Mark::wrong, .sentences = {symbols("you wrote " + given + ".", ascii)}};
    if (!why.empty()) {
        verdict.sentences.push_back(symbols(why, ascii));
    }
    if (!last_try) {
        verdict.sentences.push_back("Try once more.");
    }
    return verdict;
}

std::unique_ptr<LessonWriter> make_lesson_writer(const RenderOptions& options, std::ostream& out, Screen screen) {
    switch (options.format) {
        case Format::text:
            return make_text_lesson_writer(options, out, std::move(screen));
        default:
            break;
    }
    if (is_document_format(options.format)) {
        return make_document_lesson_writer(options, out);
    }
    throw std::logic_error("a lesson is written as " + format_list(Writer::lesson));
}

}  // namespace qkv
