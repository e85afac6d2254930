// libFuzzer target: any bytes, read as an example file (with its answers for
// `qkv check`) and as a lesson file, must give either a result or an
// InputError whose diagnostics each make one clear line.
// A crash, an abort, a sanitizer report, an uncaught exception, a hang or a
// broken diagnostic is a finding (see docs/hardening.md).
#include "attention/attention.hpp"
#include "check/check.hpp"
#include "io/answers.hpp"
#include "base/diagnostics.hpp"
#include "io/lesson_loader.hpp"
#include "io/loader.hpp"
#include "render/render.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace {

// The fuzzer keeps inputs small, so a small memory limit keeps each run fast;
// the limit itself is exercised as much as with the default.
constexpr std::uint64_t k_fuzz_max_memory = std::uint64_t{8} << 20;
constexpr std::size_t k_max_message_bytes = 4096;

[[noreturn]] void finding(const char* what, const std::string& detail) {
    std::fprintf(stderr, "qkv fuzz finding: %s: %s\n", what, detail.c_str());
    std::abort();
}

// Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
// Written here apart from base/utf8, which makes the messages it checks.
bool valid_utf8(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        std::size_t extra = 0;
        unsigned char low = 0x80;
        unsigned char high = 0xBF;
        if (byte < 0x80) {
            extra = 0;
        } else if (byte >= 0xC2 && byte <= 0xDF) {
            extra = 1;
        } else if (byte >= 0xE0 && byte <= 0xEF) {
            extra = 2;
            low = byte == 0xE0 ? 0xA0 : 0x80;
            high = byte == 0xED ? 0x9F : 0xBF;
        } else if (byte >= 0xF0 && byte <= 0xF4) {
            extra = 3;
            low = byte == 0xF0 ? 0x90 : 0x80;
            high = byte == 0xF4 ? 0x8F : 0xBF;
        } else {
            return false;
        }
        for (std::size_t k = 1; k <= extra; ++k) {
            if (i + k >= text.size()) {
                return false;
            }
            const auto next = static_cast<unsigned char>(text[i + k]);
            if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) {
                return false;
            }
        }
        i += extra + 1;
    }
    return true;
}

// One line, printable, valid UTF-8, not a wall of text.
void check_line(const char* field, const std::string& text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) {
            finding("a diagnostic holds a control character", std::string(field) + ": " + text);
        }
    }
    if (!valid_utf8(text)) {
        finding("a diagnostic is not valid UTF-8", field);
    }
    if (text.size() > k_max_message_bytes) {
        finding("a diagnostic is too long", std::string(field) + " has " + std::to_string(text.size()) + " bytes");
    }
}

void check_diagnostics(const qkv::InputError& error) {
    const auto& all = error.diagnostics();
    if (all.empty()) {
        finding("an InputError without a diagnostic", error.what());
    }
    if (all.size() > qkv::Diagnostics::k_max_reported + 1) {
        finding("more diagnostics than the cap", std::to_string(all.size()));
    }
    for (const auto& d : all) {
        if (d.what.empty()) {
            finding("a diagnostic without a message", d.hint);
        }
        check_line("what", d.what);
        check_line("hint", d.hint);
        check_line("file", d.file);
        if (d.line < 0 || d.column < 0 || (d.line == 0 && d.column != 0)) {
            finding("a diagnostic with a bad position", std::to_string(d.line) + ":" + std::to_string(d.column));
        }
    }
}

// Every computed value is a number; only masked scores hold −∞ (blocked cells).
void check_trace(const qkv::Trace& trace) {
    for (const auto& step : trace.steps) {
        for (const double value : step.values) {
            const bool blocked = step.id == qkv::StepId::masked_scores && value == -INFINITY;
            if (!std::isfinite(value) && !blocked) {
                finding("a step holds a value that is not finite", qkv::step_text(step.id));
            }
        }
        if (step.row_labels.size() != step.values.n_rows || step.col_labels.size() != step.values.n_cols) {
            finding("a step's labels do not match its shape", qkv::step_text(step.id));
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // `{file: ...}` paths resolve into a folder that does not exist, so that no
    // run depends on the files around it.
    const qkv::Source source{"fuzz.yaml", std::string(reinterpret_cast<const char*>(data), size),
                             "/nonexistent-qkv-fuzz"};
    qkv::LoadOptions options;
    options.max_memory = k_fuzz_max_memory;

    // as an example file, then its answers graded as `qkv check` does
    try {
        const qkv::Model model = qkv::load_model(source, options);
        const qkv::Trace trace = qkv::compute(model);
        check_trace(trace);
        for (const auto format : {qkv::Format::text, qkv::Format::json}) {
            qkv::RenderOptions rendering;
            rendering.format = format;
            std::ostringstream out;
            qkv::render(trace, rendering, out);
        }
        const qkv::Answers answers = qkv::read_answers(source, trace, qkv::AnswersIn::example_file);
        qkv::check_answers(model, trace, answers, {});
    } catch (const qkv::InputError& error) {
        check_diagnostics(error);
    }

    // as a lesson file
    try {
        qkv::prepare_lesson(qkv::read_lesson(source, "fuzz", options));
    } catch (const qkv::InputError& error) {
        check_diagnostics(error);
    }
    // Any other exception escapes, and libFuzzer reports it as a crash.
    return 0;
}
