// The rules of a lesson's script, apart from the YAML it is written in: the
// keys a lesson and a page may have, the limits on what they ask, the grammar
// of narration and its placeholders, and what a page's steps, cells and
// options must be for its model. io/lesson_loader.cpp reads the YAML, asks
// these, and reports each problem at its place in the file.
#pragma once

#include "lesson/lesson.hpp"

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace qkv {

// A problem with what the script says; the loader adds where it is written.
struct ScriptProblem {
    std::string what;
    std::string hint;
};

// The keys of a lesson file and of one page, in the order the hints list them.
const std::vector<std::string>& lesson_keys();
const std::vector<std::string>& page_keys();
// What a question may say of its answer, each with the one kind of answer it
// belongs to: decimals and tolerance to `answer`, pick to `choose`.
const std::vector<std::pair<std::string, std::string>>& answer_details();

inline constexpr long k_max_question_decimals = 8;     // the most decimals a question may ask for
inline constexpr long k_max_block_size = 65536;        // the largest `qkv explain --block-size`
inline constexpr std::size_t k_max_summary_bytes = 100;  // a summary is one short line

// A model's name under `models:`: lower-case letters, digits, - and _.
bool is_model_name(const std::string& text);

// Narration split at its braces: text, placeholders ("{scores[1,2]}") and,
// where a brace has no partner, the problem (the narration is then unusable).
struct NarrationPart {
    enum class Kind { text, placeholder, unpaired };
    Kind kind = Kind::text;
    std::string text;  // the literal text ({{ and }} as single braces), the placeholder as written,
                       // or for an unpaired brace the text at it, to point at
    ScriptProblem problem;  // unpaired: what is wrong
};
// The parts of `text` in order; an unpaired brace ends the list. `path` is
// where the narration is in the file ("script[2].say"), for the messages.
std::vector<NarrationPart> split_narration(const std::string& text, const std::string& path);

// A placeholder as written ("{article:weights[1]|2}") read into its segment,
// or the problem with it. `models` are the lesson's models by name, in order;
// `page_model` is the one a placeholder without a model's name refers to.
std::variant<Segment, ScriptProblem> read_placeholder(const std::string& source, const std::string& path,
                                                      const std::vector<std::string>& models, int page_model);

// A step that a page shows (`show:`), by its id as written: the step, or why
// it cannot be shown in `model` (named `model_name`).
std::variant<StepId, ScriptProblem> shown_step(const std::string& name, const std::string& path, const Model& model,
                                               const std::string& model_name);

// With `block_size:`, a cell of the page's `explain:` (as written, with or
// without its model's name) must belong to a step the online softmax explains.
// A cell that cannot be read is left to the check of explain's cells.
std::optional<ScriptProblem> block_size_problem(const std::string& written, const std::string& path);

}  // namespace qkv
