// A class's answers graded in one run (`qkv check MODEL --answers DIR`): each
// file's report one after another and a class summary (text, Markdown), the
// reports and a summary in one JSON document, or a gradebook (CSV) with a row
// per file. A file that could not be read keeps its error and takes no part
// in the counts.
#pragma once

#include "check/check.hpp"
#include "render/render.hpp"

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace qkv {

struct GradedFile {
    std::string file;                  // as given, or found in the folder
    std::unique_ptr<Answers> answers;  // the report points into them
    std::optional<CheckReport> report;
    std::string error;                 // the `qkv: error:` line(s) when the file could not be read
};

// The diagnosis ids of a report, in the order of its steps, each once.
std::vector<std::string> diagnosis_ids(const CheckReport& report);

void render_class(const Trace& trace, const std::vector<GradedFile>& files, const RenderOptions& options,
                  const std::string& example, std::ostream& out);

// The gradebook: a header line, then a row per file.
void render_gradebook(const std::vector<GradedFile>& files, std::ostream& out);

}  // namespace qkv
