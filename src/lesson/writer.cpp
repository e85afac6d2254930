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

std::string render_steps_only(const Trace& trace, const RenderOptions& options) {
    Document steps;
    steps.blocks = run_steps(trace, options);
    std::ostringstream out;
    write_document(steps, options.format,
                   {.ascii = options.ascii,
                    .standalone = options.standalone,
                    .color = options.color,
                    .body_only = true,
                    .width = options.width},
                   out);
    return out.str();
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

std::string unmarked(const std::string& text) {
    std::string plain;
    for (const char c : text) {
        if (c == k_value_space) {
            plain += ' ';
        } else if (c != k_value_start && c != k_value_end) {
            plain += c;
        }
    }
    return plain;
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
