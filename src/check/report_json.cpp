// check's report as JSON, the auto-grading contract of the check command in
// man/qkv.1.in, and as Gradescope's results.json.
#include "check/report.hpp"

#include "check/report_parts.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace qkv {

using namespace report_parts;

void render_check_json(const CheckReport& report, std::ostream& out, const std::string* file) {
    auto number = [](double value) -> std::string {
        if (std::isinf(value)) {
            return value < 0 ? "\"-inf\"" : "\"inf\"";
        }
        return round_trip(value);
    };
    auto head = [](int h) { return h == 0 ? std::string("null") : std::to_string(h); };
    auto shape = [](arma::uword rows, arma::uword cols) {
        return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
    };
    auto counts = [](std::size_t right, std::size_t wrong, std::size_t consistent, std::size_t blank) {
        return "{\"right\": " + std::to_string(right) + ", \"wrong\": " + std::to_string(wrong) +
               ", \"consistent\": " + std::to_string(consistent) + ", \"blank\": " + std::to_string(blank) + "}";
    };
    const StepCheck* first = report.first_mistake();
    const Totals t = totals_of(report);
    out << "{";
    if (file != nullptr) {
        out << "\"file\": " << nlohmann::json(*file).dump() << ", ";
    }
    out << "\"schema_version\": 1,\n";
    out << " \"correct\": " << (report.correct() ? "true" : "false") << ",\n";
    out << " \"first_mistake\": " << (first != nullptr ? nlohmann::json(step_text(first->answer->id)).dump() : "null")
        << ", \"first_mistake_head\": " << (first != nullptr ? head(first->answer->head) : "null") << ",\n";
    out << " \"counts\": " << counts(t.right, t.wrong, t.consistent, t.blank) << ",\n";
    out << " \"score\": " << round_trip(report.score()) << ", \"max_score\": " << round_trip(report.max_score())
        << ",\n";
    out << " \"steps\": [";
    for (std::size_t s = 0; s < report.steps.size(); ++s) {
        const StepCheck& step = report.steps[s];
        const StepAnswer& answer = *step.answer;
        out << (s == 0 ? "\n  " : ",\n  ");
        out << "{\"id\": " << nlohmann::json(step_text(answer.id)).dump() << ", \"head\": " << head(answer.head)
            << ",\n   \"shape_given\": " << shape(answer.n_rows, answer.n_cols)
            << ", \"shape_expected\": " << shape(step.step->values.n_rows, step.step->values.n_cols)
            << ",\n   \"counts\": "
            << counts(step.count(Verdict::right), step.count(Verdict::wrong), step.count(Verdict::consistent),
                      step.blank())
            << ", \"score\": " << round_trip(step.score) << ", \"max_score\": " << round_trip(step.max_score)
            << ",\n   \"cells\": [";
        for (std::size_t c = 0; c < step.cells.size(); ++c) {
            const CellCheck& cell = step.cells[c];
            const double rounded = std::isfinite(cell.expected) ? std::stod(rounded_text(cell.expected, cell.decimals))
                                                                : cell.expected;
            out << (c == 0 ? "" : ",\n             ") << "{\"row\": " << cell.row + 1 << ", \"col\": " << cell.col + 1
                << ", \"given\": " << number(cell.answer->value)
                << ", \"given_text\": " << nlohmann::json(cell.answer->text).dump()
                << ", \"expected\": " << number(cell.expected) << ", \"expected_rounded\": " << number(rounded)
                << ", \"verdict\": \"" << verdict_name(cell.verdict) << "\", \"diagnosis\": "
                << (cell.diagnosis ? nlohmann::json(cell_diagnosis_line(cell)).dump() : std::string("null"))
                << ", \"diagnosis_id\": "
                << (cell.diagnosis ? nlohmann::json(cell.diagnosis->key).dump() : std::string("null")) << "}";
        }
        const std::string diagnosis = diagnosis_line(report, step);
        out << "],\n   \"diagnosis\": " << (diagnosis.empty() ? "null" : nlohmann::json(diagnosis).dump())
            << ", \"diagnosis_id\": "
            << (step.diagnosis ? nlohmann::json(step.diagnosis->key).dump() : std::string("null")) << "}";
    }
    out << (report.steps.empty() ? "]}\n" : "\n ]}\n");
}

void render_check_gradescope(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                             std::ostream& out) {
    RenderOptions plain = options;
    plain.color = false;
    nlohmann::ordered_json results;
    results["score"] = report.score();
    results["output"] = summary_sentence(trace, report) + "\n" + rule_sentence(report);
    nlohmann::ordered_json tests = nlohmann::ordered_json::array();
    // one test per step, answered or given points by the rubric, in the order of the trace
    std::size_t unanswered = 0;
    for (const auto& step : trace.steps) {
        const auto answered = std::find_if(report.steps.begin(), report.steps.end(), [&step](const StepCheck& check) {
            return check.step == &step;
        });
        nlohmann::ordered_json test;
        test["name"] = step_label(trace, step.id, step.head);
        if (answered != report.steps.end()) {
            const StepCheck& check = *answered;
            std::vector<std::string> lines;
            lines.push_back(check.shape_ok ? counts_sentence(check) : shape_sentence(check));
            const WrongCells wrong = wrong_cells(trace, report, check, plain);
            lines.insert(lines.end(), wrong.sentences.begin(), wrong.sentences.end());
            if (!wrong.more.empty()) {
                lines.push_back(wrong.more);
            }
            if (check.diagnosis) {
                lines.push_back("Mistake: " + mistake_sentence(report, check));
                lines.push_back("Correct: " + correct_sentence(check));
            }
            std::string output;
            for (const auto& line : lines) {
                output += (output.empty() ? "" : "\n") + line;
            }
            test["score"] = check.score;
            test["max_score"] = check.max_score;
            test["status"] = check.has_mistake() ? "failed" : "passed";
            test["output"] = output;
        } else if (unanswered < report.unanswered.size() && report.unanswered[unanswered].id == step.id &&
                   report.unanswered[unanswered].head == step.head) {
            test["score"] = 0;
            test["max_score"] = report.unanswered[unanswered].max_score;
            test["status"] = "failed";
            test["output"] = "Not answered.";
            ++unanswered;
        } else {
            continue;
        }
        tests.push_back(std::move(test));
    }
    results["tests"] = std::move(tests);
    out << results.dump(2) << '\n';
}

void render_check(const Trace& trace, const CheckReport& report, const RenderOptions& options,
                  const std::string& example, std::ostream& out) {
    if (options.format == Format::json) {
        render_check_json(report, out);
        return;
    }
    if (!is_document_format(options.format)) {
        throw std::logic_error(format_name(options.format) + " is not a format of check's report");
    }
    // LaTeX spells every symbol itself: its report is built in Unicode whatever --ascii says
    RenderOptions built = options;
    built.ascii = options.ascii && options.format != Format::latex;
    const DocumentStyle style{.ascii = built.ascii, .standalone = options.standalone, .color = options.color};
    write_document(check_document(trace, report, built, example), options.format, style, out);
}

}  // namespace qkv
