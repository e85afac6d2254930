// A class graded in one run: the reports of every file, then what the class
// got right and wrong step by step, and its commonest mistakes.
#include "check/class_report.hpp"

#include "check/report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace qkv {

std::vector<std::string> diagnosis_ids(const CheckReport& report) {
    std::vector<std::string> ids;
    for (const auto& step : report.steps) {
        if (step.diagnosis && std::find(ids.begin(), ids.end(), step.diagnosis->key) == ids.end()) {
            ids.push_back(step.diagnosis->key);
        }
    }
    return ids;
}

namespace {

struct StepTally {
    std::string label;
    std::size_t answered = 0;
    std::size_t without_mistake = 0;  // right, or following from earlier answers
};

struct ClassTally {
    std::size_t files = 0;
    std::size_t correct = 0;
    std::size_t unreadable = 0;
    std::map<StepKey, StepTally> steps;             // in the order of the step table
    std::vector<std::pair<std::string, std::size_t>> mistakes;  // diagnosis id, files; commonest first
};

ClassTally tally(const Trace& trace, const std::vector<GradedFile>& files) {
    ClassTally t;
    std::map<std::string, std::size_t> mistakes;
    for (const auto& file : files) {
        ++t.files;
        if (!file.report) {
            ++t.unreadable;
            continue;
        }
        const CheckReport& report = *file.report;
        t.correct += report.correct() ? 1 : 0;
        for (const auto& step : report.steps) {
            StepTally& s = t.steps[{step.answer->id, step.answer->head}];
            s.label = step_label(trace, step.answer->id, step.answer->head);
            ++s.answered;
            s.without_mistake += step.has_mistake() ? 0 : 1;
        }
        for (const auto& id : diagnosis_ids(report)) {
            ++mistakes[id];
        }
    }
    t.mistakes.assign(mistakes.begin(), mistakes.end());
    std::stable_sort(t.mistakes.begin(), t.mistakes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return t;
}

std::string count_text(std::size_t count, const std::string& one, const std::string& many) {
    return std::to_string(count) + " " + (count == 1 ? one : many);
}

// The class summary: how many files were right, each step's tally, the commonest mistakes.
Document class_summary(const ClassTally& t) {
    const std::size_t wrong = t.files - t.correct - t.unreadable;
    std::string line = count_text(t.files, "file", "files") + ": " + std::to_string(t.correct) + " all right, " +
                       std::to_string(wrong) + " with mistakes";
    if (t.unreadable > 0) {
        line += ", " + std::to_string(t.unreadable) + " could not be read";
    }
    Document document;
    document.title = "Class summary";
    document.purpose = "a class's answers, summed up";
    document.blocks.push_back(Statement{{{.spans = {{line + "."}}}}});
    if (!t.steps.empty()) {
        Table table;
        table.col_labels = {"without a mistake", "answered"};
        for (const auto& [key, step] : t.steps) {
            table.row_labels.push_back(step.label);
            table.cells.push_back({std::to_string(step.without_mistake), std::to_string(step.answered)});
            table.values.push_back({static_cast<double>(step.without_mistake), static_cast<double>(step.answered)});
        }
        table.shape = std::to_string(t.steps.size()) + " × 2";
        document.blocks.push_back(TableBlock{.table = std::move(table)});
    }
    if (t.mistakes.empty()) {
        document.blocks.push_back(Statement{{{.spans = {{"No classic mistake was named."}}}}});
        return document;
    }
    std::vector<Span> spans{{"Commonest mistakes: "}};
    for (std::size_t i = 0; i < t.mistakes.size(); ++i) {
        const auto& [id, count] = t.mistakes[i];
        spans.push_back({id, SpanKind::code});
        spans.push_back({" (" + count_text(count, "file", "files") + ")" + (i + 1 < t.mistakes.size() ? ", " : ".")});
    }
    document.blocks.push_back(Statement{{{.spans = std::move(spans)}}});
    return document;
}

void render_class_json(const ClassTally& t, const std::vector<GradedFile>& files, std::ostream& out) {
    out << "{\"schema_version\": 1,\n\"reports\": [";
    for (std::size_t i = 0; i < files.size(); ++i) {
        const GradedFile& file = files[i];
        out << (i == 0 ? "\n" : ",\n");
        if (file.report) {
            render_check_json(*file.report, out, &file.file);
        } else {
            out << "{\"file\": " << nlohmann::json(file.file).dump() << ", \"error\": " << nlohmann::json(file.error).dump()
                << "}\n";
        }
    }
    nlohmann::ordered_json summary;
    summary["files"] = t.files;
    summary["correct"] = t.correct;
    summary["errors"] = t.unreadable;
    nlohmann::ordered_json mistakes = nlohmann::ordered_json::object();
    for (const auto& [id, count] : t.mistakes) {
        mistakes[id] = count;
    }
    summary["mistakes"] = std::move(mistakes);
    out << "],\n\"summary\": " << summary.dump() << "}\n";
}

}  // namespace

void render_class(const Trace& trace, const std::vector<GradedFile>& files, const RenderOptions& options,
                  const std::string& example, std::ostream& out) {
    const ClassTally t = tally(trace, files);
    if (options.format == Format::json) {
        render_class_json(t, files, out);
        return;
    }
    if (options.format == Format::csv) {
        render_gradebook(files, out);
        return;
    }
    // one document after another, a rule between two in Markdown
    const bool markdown = options.format == Format::markdown;
    const DocumentStyle style{.ascii = options.ascii, .color = options.color};
    for (std::size_t i = 0; i < files.size(); ++i) {
        const GradedFile& file = files[i];
        if (i > 0) {
            out << (markdown ? "\n---\n\n" : "\n\n");
        }
        if (file.report) {
            render_check(trace, *file.report, options, example, out);
        } else {
            Document unread;
            unread.title = file.file;
            unread.purpose = "a file that could not be read";
            unread.blocks.push_back(Statement{{{.spans = {{file.error, SpanKind::code}}}}});
            write_document(unread, options.format, style, out);
        }
    }
    out << '\n';
    write_document(class_summary(t), options.format, style, out);
}

void render_gradebook(const std::vector<GradedFile>& files, std::ostream& out) {
    out << "file,score,max_score,correct,first_mistake,first_mistake_head,diagnoses\n";
    for (const auto& file : files) {
        out << csv_field(file.file) << ',';
        if (!file.report) {
            out << ",,,,,\n";  // the error is on standard error
            continue;
        }
        const CheckReport& report = *file.report;
        const StepCheck* first = report.first_mistake();
        std::string ids;
        for (const auto& id : diagnosis_ids(report)) {
            ids += (ids.empty() ? "" : ";") + id;
        }
        out << round_trip(report.score()) << ',' << round_trip(report.max_score()) << ','
            << (report.correct() ? "true" : "false") << ',' << (first ? step_text(first->answer->id) : "") << ','
            << (first && first->answer->head != 0 ? std::to_string(first->answer->head) : "") << ',' << csv_field(ids)
            << '\n';
    }
}

}  // namespace qkv
