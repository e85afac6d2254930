// The lesson loader: reads the YAML of a lesson, loads its models (built-in
// examples or inline) and reads its script, checked against the models by the
// rules of lesson/script.hpp, each problem reported where it is written.
#include "io/lesson_loader.hpp"

#include "lesson/script.hpp"

#include "attention/steps.hpp"
#include "builtin/builtin.hpp"
#include "io/yaml_util.hpp"
#include "base/utf8.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace qkv {

namespace {

class LessonLoader {
public:
    LessonLoader(const Source& source, const LoadOptions& options)
        : m_yaml(source, m_diagnostics), m_source(source), m_options(options) {}

    LessonFile load(const std::string& name) {
        m_lesson.name = name;
        const YAML::Node root = m_yaml.parse_document();
        m_diagnostics.throw_if_any();
        if (!root.IsMap()) {
            m_yaml.error(root, root.IsNull() ? "the lesson file is empty" : "the top level is not a map of keys",
                         "a lesson has title, summary, model (or models) and script; see `man qkv`");
            m_diagnostics.throw_if_any();
        }
        m_yaml.check_keys(root, "", lesson_keys());
        read_title(root);
        if (const YAML::Node try_it = root["try"]) {
            auto text = m_yaml.string(try_it, "try");
            while (text && !text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) {
                text->pop_back();
            }
            m_lesson.try_it = text.value_or("");
        }
        read_models(root);
        // the script refers to the models: it needs them all
        m_diagnostics.throw_if_any();
        read_script(root);
        LessonFile file;
        file.lesson = std::move(m_lesson);
        file.mentions = std::move(m_mentions);
        file.problems = m_diagnostics;
        return file;
    }

private:
    YamlReader m_yaml;
    Diagnostics m_diagnostics;
    const Source& m_source;
    const LoadOptions& m_options;
    Lesson m_lesson;
    std::vector<CellMention> m_mentions;

    void read_title(const YAML::Node& root) {
        if (!root["title"]) {
            m_yaml.error(root, "title is missing", "add `title:` with the lesson's name as a learner reads it");
        } else {
            m_lesson.title = m_yaml.string(root["title"], "title").value_or("");
        }
        if (!root["summary"]) {
            m_yaml.error(root, "summary is missing", "add `summary:`, one line shown by `qkv lesson`");
            return;
        }
        auto summary = m_yaml.string(root["summary"], "summary");
        if (!summary) {
            return;
        }
        while (!summary->empty() && std::isspace(static_cast<unsigned char>(summary->back()))) {
            summary->pop_back();
        }
        if (summary->find('\n') != std::string::npos || summary->size() > k_max_summary_bytes) {
            m_yaml.error(root["summary"], "summary is not one short line",
                         "keep it on one line of at most " + std::to_string(k_max_summary_bytes) + " characters");
            return;
        }
        m_lesson.summary = *summary;
    }

    // ── models ─────────────────────────────────────────────────────────────

    void read_models(const YAML::Node& root) {
        const YAML::Node model = root["model"];
        const YAML::Node models = root["models"];
        if (!model && !models) {
            m_yaml.error(root, "model is missing",
                         "add `model:` with a built-in example's name (see `qkv examples`) or a model written inline");
            return;
        }
        if (model) {
            read_model(model, "main", "model");
        }
        if (!models) {
            return;
        }
        if (!models.IsMap() || models.size() == 0) {
            m_yaml.error(models, "models is " + m_yaml.describe(models) + "; expected a map of names to models",
                         "write models: {name: illustrated, other: {inputs: ..., weights: ...}}");
            return;
        }
        for (const auto& entry : models) {
            const std::string name = key_text(entry.first);
            if (!is_model_name(name)) {
                m_yaml.error(entry.first, "models." + name + ": a model's name is lower-case letters, digits, - and _",
                             "placeholders name it as {" + std::string("name:scores[1,2]}"));
                continue;
            }
            if (find_model(name) >= 0) {
                m_yaml.error(entry.first, "models." + name + " is defined twice",
                             name == "main" ? "main is the name of `model:`; choose another name" : "give each model its own name");
                continue;
            }
            read_model(entry.second, name, "models." + name);
        }
    }

    void read_model(const YAML::Node& node, const std::string& name, const std::string& path) {
        LessonModel entry;
        entry.name = name;
        if (node.IsScalar()) {
            const BuiltinFile* example = find_builtin_example(node.Scalar());
            if (example == nullptr) {
                std::vector<std::string> names;
                for (const auto& candidate : builtin_examples()) {
                    names.emplace_back(candidate.name);
                }
                m_yaml.error(node, path + " is \"" + node.Scalar() + "\", which is not a built-in example",
                             did_you_mean(node.Scalar(), names) + "built-in examples: " + comma_list(names) +
                                 "; or write the model inline, as a map");
                return;
            }
            try {
                entry.model = load_model({"builtin:" + std::string(example->name), std::string(example->text), ""});
            } catch (const InputError& error) {
                add_all(error);
                return;
            }
        } else if (node.IsMap()) {
            try {
                entry.model = load_model(m_source, node, m_options);
            } catch (const InputError& error) {
                add_all(error);
                return;
            }
        } else {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a built-in example's name or a map",
                         "write e.g. `" + path + ": illustrated`, or the model's keys (inputs, weights, …) beneath it");
            return;
        }
        m_lesson.models.push_back(std::move(entry));
    }

    void add_all(const InputError& error) {
        for (const auto& diagnostic : error.diagnostics()) {
            m_diagnostics.add(diagnostic);
        }
    }

    int find_model(const std::string& name) const {
        for (std::size_t i = 0; i < m_lesson.models.size(); ++i) {
            if (m_lesson.models[i].name == name) {
                return static_cast<int>(i);
            }
        }
        return -1;
    }

    std::vector<std::string> model_names() const {
        std::vector<std::string> names;
        for (const auto& model : m_lesson.models) {
            names.push_back(model.name);
        }
        return names;
    }

    const Model& model_of(int model) const { return m_lesson.models[static_cast<std::size_t>(model)].model; }

    // ── the script ─────────────────────────────────────────────────────────

    void read_script(const YAML::Node& root) {
        const YAML::Node script = root["script"];
        if (!script) {
            m_yaml.error(root, "script is missing",
                         "add `script:` with a list of pages, each with say, show, explain, then or ask");
            return;
        }
        if (!script.IsSequence() || script.size() == 0) {
            m_yaml.error(script, "script is " + m_yaml.describe(script) + "; expected a list of pages",
                         "write each page as `- say: ...` with optional show, explain, then and ask");
            return;
        }
        for (std::size_t i = 0; i < script.size(); ++i) {
            read_page(script[i], "script[" + std::to_string(i + 1) + "]");
        }
    }

    void read_page(const YAML::Node& node, const std::string& path) {
        if (!node.IsMap() || node.size() == 0) {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a page (a map)",
                         "a page has say, show, explain, then or ask");
            return;
        }
        m_yaml.check_keys(node, path, page_keys());
        Page page;
        if (const YAML::Node model = node["model"]) {
            auto name = m_yaml.string(model, path + ".model");
            if (!name) {
                return;
            }
            page.model = find_model(*name);
            if (page.model < 0) {
                m_yaml.error(model, path + ".model is \"" + *name + "\", which this lesson does not define",
                             did_you_mean(*name, model_names()) + "models: " + comma_list(model_names()));
                return;
            }
        }
        if (const YAML::Node head = node["head"]) {
            if (auto value = m_yaml.integer(head, path + ".head", 1, static_cast<long>(model_of(page.model).n_heads()))) {
                page.head = static_cast<int>(*value);
            }
        }
        page.say = narration(node["say"], path + ".say", page.model);
        page.then = narration(node["then"], path + ".then", page.model);
        read_show(node["show"], path + ".show", page);
        read_explain(node["explain"], path + ".explain", page);
        read_block_size(node, path, page);
        read_question(node, path, page);
        if (!node["say"] && !node["show"] && !node["explain"] && !node["then"] && !node["ask"] && !node["predict"]) {
            m_yaml.error(node, path + " has nothing to play",
                         "give it at least one of say, show, explain, then, ask or predict");
        }
        m_lesson.pages.push_back(std::move(page));
    }

    // A scalar or a list of scalars, as positioned nodes.
    std::vector<YAML::Node> items(const YAML::Node& node, const std::string& path) {
        std::vector<YAML::Node> result;
        if (node.IsScalar()) {
            result.push_back(node);
        } else if (node.IsSequence() && node.size() > 0) {
            for (std::size_t i = 0; i < node.size(); ++i) {
                if (node[i].IsScalar()) {
                    result.push_back(node[i]);
                } else {
                    m_yaml.error(node[i], path + "[" + std::to_string(i + 1) + "] is " + m_yaml.describe(node[i]) +
                                              "; expected text",
                                 "");
                }
            }
        } else {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected one item or a list",
                         "write e.g. [scores, weights]");
        }
        return result;
    }

    void read_show(const YAML::Node& node, const std::string& path, Page& page) {
        if (!node) {
            return;
        }
        for (const auto& item : items(node, path)) {
            const auto shown = shown_step(item.Scalar(), path, model_of(page.model), m_lesson.models[page.model].name);
            if (const auto* problem = std::get_if<ScriptProblem>(&shown)) {
                m_yaml.error(item, problem->what, problem->hint);
                continue;
            }
            page.show.push_back(std::get<StepId>(shown));
        }
    }

    // A cell as `explain` and `answer` take it, [MODEL:]CELL; reports and
    // returns nullopt when unusable. Whether the model's trace has the cell is
    // checked once it is computed (prepare_lesson); a question's answer, with
    // its path in `answer`, must also be finite there.
    // `written`, when given, is read instead of the node's text.
    std::optional<ValueRef> cell(const YAML::Node& node, const std::string& path, int model, bool single,
                                 const std::string& answer = "", const std::string& written = "") {
        std::string text = written.empty() ? node.Scalar() : written;
        if (const auto colon = text.find(':'); colon != std::string::npos) {
            const std::string name = text.substr(0, colon);
            model = find_model(name);
            if (model < 0) {
                m_yaml.error(node, path + " names the model \"" + name + "\", which this lesson does not define",
                             did_you_mean(name, model_names()) + "models: " + comma_list(model_names()));
                return std::nullopt;
            }
            text = text.substr(colon + 1);
        }
        CellRef parsed;
        try {
            parsed = parse_cell(text);
        } catch (const InputError& error) {
            const Diagnostic& first = error.diagnostics().front();
            m_yaml.error(node, path + ": " + first.what, first.hint);
            return std::nullopt;
        }
        if (single && parsed.col == 0) {
            m_yaml.error(node, path + " is the whole row " + parsed.text + "; expected one cell",
                         "write the column too, e.g. " + step_text(parsed.step) + "[" + std::to_string(parsed.row) + ",1]");
            return std::nullopt;
        }
        m_mentions.push_back({model, parsed, m_yaml.at(node.Mark(), path + ": ", ""), answer});
        ValueRef ref;
        ref.model = model;
        ref.is_cell = true;
        ref.cell = parsed;
        return ref;
    }

    void read_explain(const YAML::Node& node, const std::string& path, Page& page) {
        if (!node) {
            return;
        }
        for (const auto& item : items(node, path)) {
            if (auto parsed = cell(item, path, page.model, false)) {
                page.explain.push_back(*parsed);
            }
        }
    }

    // block_size: B, the online softmax (FlashAttention) of the page's explain
    // cells, each of which must be a weights or head_output cell.
    void read_block_size(const YAML::Node& node, const std::string& path, Page& page) {
        const YAML::Node block_size = node["block_size"];
        if (!block_size) {
            return;
        }
        const auto value = m_yaml.integer(block_size, path + ".block_size", 1, k_max_block_size,
                                          "the online softmax takes the keys B at a time, e.g. block_size: 2");
        if (!value) {
            return;
        }
        const YAML::Node explain = node["explain"];
        if (!explain) {
            m_yaml.error(block_size, path + ".block_size is given without explain",
                         "add `explain:` with a weights or head_output cell, e.g. explain: head_output[2]");
            return;
        }
        // the cells as written (each one's own problems were reported by read_explain)
        std::vector<YAML::Node> cells;
        if (explain.IsScalar()) {
            cells.push_back(explain);
        } else if (explain.IsSequence()) {
            for (std::size_t i = 0; i < explain.size(); ++i) {
                if (explain[i].IsScalar()) {
                    cells.push_back(explain[i]);
                }
            }
        }
        bool online = true;
        for (const auto& item : cells) {
            if (const auto problem = block_size_problem(item.Scalar(), path)) {
                m_yaml.error(item, problem->what, problem->hint);
                online = false;
            }
        }
        if (online) {
            page.block_size = static_cast<int>(*value);
        }
    }

    // A question: `ask:` (after the page's tables) or `predict:` (before
    // them), with one kind of answer: `answer:` a cell, `shape:` a step, or
    // `choose:` a row or named options.
    void read_question(const YAML::Node& node, const std::string& path, Page& page) {
        const YAML::Node ask = node["ask"];
        const YAML::Node predict = node["predict"];
        const std::vector<std::string> kinds = {"answer", "shape", "choose"};
        if (!ask && !predict) {
            for (const auto& key : {"answer", "shape", "choose", "decimals", "tolerance", "pick", "reading"}) {
                if (const YAML::Node value = node[key]) {
                    m_yaml.error(value, path + "." + key + " is given without a question",
                                 "add `ask:` (asked after the tables) or `predict:` (before them), or remove " +
                                     std::string(key));
                }
            }
            return;
        }
        if (ask && predict) {
            m_yaml.error(predict, path + " has both ask and predict; expected one question",
                         "ask: is asked after the page's tables, predict: before them; keep one");
            return;
        }
        const YAML::Node asked = ask ? ask : predict;
        const std::string asked_path = path + (ask ? ".ask" : ".predict");
        std::vector<std::string> given;
        for (const auto& kind : kinds) {
            if (node[kind]) {
                given.push_back(kind);
            }
        }
        if (given.empty()) {
            m_yaml.error(asked, path + " asks a question without its answer",
                         "add answer: CELL (a number), shape: STEP (rows × columns) or choose: ROW (a key) or "
                         "choose: {OPTION: CELL, ...}");
            return;
        }
        if (given.size() > 1) {
            m_yaml.error(node[given[1]], path + " has both " + given[0] + " and " + given[1] + "; expected one answer",
                         "a question is answered by a number (answer), a shape (shape) or a choice (choose)");
            return;
        }
        Question question;
        question.where = m_yaml.at(asked.Mark(), asked_path + ": ", "");
        question.prompt = narration(asked, asked_path, page.model);
        question.predict = static_cast<bool>(predict);
        const std::string kind = given.front();
        for (const auto& [detail, owner] : answer_details()) {
            if (const YAML::Node value = node[detail]; value && owner != kind) {
                m_yaml.error(value, path + "." + detail + " belongs to " + owner + ", not to " + kind,
                             "remove " + detail + ", or answer the question with " + owner + ":");
                return;
            }
        }
        if (const YAML::Node reading = node["reading"]) {
            if (!reading.IsScalar() || (reading.Scalar() != "true" && reading.Scalar() != "false")) {
                m_yaml.error(reading, path + ".reading is " + m_yaml.describe(reading) + "; expected true or false",
                             "reading: true marks a question whose answer is on the screen");
                return;
            }
            question.reading = reading.Scalar() == "true";
        }
        const bool ok = kind == "answer"  ? read_number_answer(node, path, page, question)
                        : kind == "shape" ? read_shape_answer(node["shape"], path + ".shape", page, question)
                                          : read_choice_answer(node, path, page, question);
        if (ok) {
            page.ask = std::move(question);
        }
    }

    bool read_number_answer(const YAML::Node& node, const std::string& path, const Page& page, Question& question) {
        const YAML::Node answer = node["answer"];
        question.kind = Question::Kind::number;
        if (!answer.IsScalar()) {
            m_yaml.error(answer, path + ".answer is " + m_yaml.describe(answer) + "; expected a cell",
                         "write e.g. answer: scores[1,2]");
            return false;
        }
        auto parsed = cell(answer, path + ".answer", page.model, true, path + ".answer");
        if (!parsed) {
            return false;
        }
        question.answer = *parsed;
        const YAML::Node decimals = node["decimals"];
        const YAML::Node tolerance = node["tolerance"];
        if (decimals && tolerance) {
            m_yaml.error(tolerance, path + " has both decimals and tolerance; expected one",
                         "decimals: N grades as qkv check does (the default); tolerance: T accepts within ±T");
            return false;
        }
        if (decimals) {
            const auto value = m_yaml.integer(decimals, path + ".decimals", 0, k_max_question_decimals,
                                              "the fewest decimals the answer needs, e.g. decimals: 2");
            if (!value) {
                return false;
            }
            question.decimals = static_cast<int>(*value);
        }
        if (tolerance) {
            auto value = m_yaml.number(tolerance, path + ".tolerance");
            if (value && !(*value > 0.0 && std::isfinite(*value))) {
                m_yaml.error(tolerance, path + ".tolerance is " + m_yaml.describe(tolerance) + "; expected a positive number",
                             "an answer is right when it is within this distance of the true value");
                return false;
            }
            if (!value) {
                return false;
            }
            question.tolerance = *value;
        }
        return true;
    }

    // shape: [MODEL:]STEP[@HEAD]
    bool read_shape_answer(const YAML::Node& node, const std::string& path, const Page& page, Question& question) {
        question.kind = Question::Kind::shape;
        if (!node.IsScalar()) {
            m_yaml.error(node, path + " is " + m_yaml.describe(node) + "; expected a step id",
                         "write e.g. shape: scores, or shape: weights@2 for head 2");
            return false;
        }
        std::string text = node.Scalar();
        std::string model_prefix;
        if (const auto colon = text.find(':'); colon != std::string::npos) {
            model_prefix = text.substr(0, colon + 1);
            text = text.substr(colon + 1);
        }
        std::string head;
        if (const auto at = text.find('@'); at != std::string::npos) {
            head = text.substr(at);
            text = text.substr(0, at);
        }
        if (text.find('[') != std::string::npos) {
            m_yaml.error(node, path + " is the cell " + text + "; expected a step id",
                         "a shape is a whole step's: write e.g. shape: " + text.substr(0, text.find('[')) + head);
            return false;
        }
        // the step as its first cell, so that the model, step and head are
        // checked as any cell is
        auto parsed = cell(node, path, page.model, true, "", model_prefix + text + "[1,1]" + head);
        if (!parsed) {
            return false;
        }
        question.answer = *parsed;
        return true;
    }

    // choose: ROW (the keys of a row of a step: weights[2]) or {OPTION: CELL, ...}
    bool read_choice_answer(const YAML::Node& node, const std::string& path, const Page& page, Question& question) {
        const YAML::Node choose = node["choose"];
        const std::string choose_path = path + ".choose";
        question.kind = Question::Kind::choice;
        if (const YAML::Node pick = node["pick"]) {
            if (!pick.IsScalar() || (pick.Scalar() != "largest" && pick.Scalar() != "smallest")) {
                m_yaml.error(pick, path + ".pick is " + m_yaml.describe(pick) + "; expected largest or smallest",
                             "the right option is the one whose value is largest (the default) or smallest");
                return false;
            }
            question.smallest = pick.Scalar() == "smallest";
        }
        if (choose.IsScalar()) {
            auto parsed = cell(choose, choose_path, page.model, false);
            if (!parsed) {
                return false;
            }
            if (parsed->cell.col != 0) {
                m_yaml.error(choose, choose_path + " is the cell " + parsed->cell.text + "; expected a row",
                             "the options are the row's keys: write e.g. choose: " + step_text(parsed->cell.step) + "[" +
                                 std::to_string(parsed->cell.row) + "]");
                return false;
            }
            question.row = *parsed;
            return true;
        }
        if (!choose.IsMap() || choose.size() < 2) {
            m_yaml.error(choose, choose_path + " is " + m_yaml.describe(choose) + "; expected a row or two or more options",
                         "write e.g. choose: weights[2], or choose: {grows: doubled:weights[1,3], shrinks: weights[1,3]}");
            return false;
        }
        bool ok = true;
        for (const auto& entry : choose) {
            const std::string label = key_text(entry.first);
            const std::string option_path = choose_path + "." + label;
            if (label.empty() || label.find_first_of("\n\t") != std::string::npos) {
                m_yaml.error(entry.first, option_path + " is not a usable option", "an option is a word or a few");
                ok = false;
                continue;
            }
            for (const auto& other : question.options) {
                if (lowered(other.label) == lowered(label)) {
                    m_yaml.error(entry.first, option_path + " repeats the option \"" + other.label + "\"",
                                 "give each option a different name");
                    ok = false;
                }
            }
            if (!entry.second.IsScalar()) {
                m_yaml.error(entry.second, option_path + " is " + m_yaml.describe(entry.second) + "; expected a cell",
                             "each option names the cell that ranks it, e.g. grows: doubled:weights[1,3]");
                ok = false;
                continue;
            }
            if (auto parsed = cell(entry.second, option_path, page.model, true)) {
                question.options.push_back({label, *parsed});
            } else {
                ok = false;
            }
        }
        return ok;
    }

    static std::string lowered(std::string text) {
        std::transform(text.begin(), text.end(), text.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return text;
    }

    // ── narration and its placeholders ─────────────────────────────────────

    // Reports a problem at the placeholder's own position when it can be found
    // in the file, otherwise at the narration's.
    void placeholder_error(const YAML::Node& node, std::size_t& search_from, const std::string& placeholder,
                           const std::string& what, const std::string& hint) {
        m_yaml.error_at(placeholder_mark(node, search_from, placeholder), what, hint);
    }

    // The placeholder's own position when it can be found in the file (a later
    // placeholder with the same text is then searched for after it), otherwise
    // the narration's.
    YAML::Mark placeholder_mark(const YAML::Node& node, std::size_t& search_from, const std::string& placeholder) {
        YAML::Mark mark = node.Mark();
        const std::size_t at = m_source.text.find(placeholder, search_from);
        if (node.Mark().pos >= 0 && at != std::string::npos) {
            mark.pos = static_cast<int>(at);
            mark.line = static_cast<int>(std::count(m_source.text.begin(), m_source.text.begin() + at, '\n'));
            const std::size_t line_start = m_source.text.rfind('\n', at == 0 ? 0 : at - 1);
            const std::size_t from = line_start == std::string::npos || at == 0 ? 0 : line_start + 1;
            mark.column = static_cast<int>(code_point_count(std::string_view(m_source.text).substr(from, at - from)));
            search_from = at + placeholder.size();
        }
        return mark;
    }

    // The narration's text and placeholders (lesson/script.hpp), each
    // problem reported at its placeholder; every bad placeholder is reported
    // at once, and the narration is then left empty.
    Narration narration(const YAML::Node& node, const std::string& path, int page_model) {
        Narration result;
        if (!node) {
            return result;
        }
        auto text = m_yaml.string(node, path);
        if (!text) {
            return result;
        }
        std::size_t search_from = node.Mark().pos >= 0 ? static_cast<std::size_t>(node.Mark().pos) : 0;
        bool failed = false;
        for (const NarrationPart& part : split_narration(*text, path)) {
            switch (part.kind) {
                case NarrationPart::Kind::text:
                    result.push_back(Segment{part.text, std::nullopt, {}, ""});
                    continue;
                case NarrationPart::Kind::unpaired:
                    placeholder_error(node, search_from, part.text, part.problem.what, part.problem.hint);
                    return {};
                case NarrationPart::Kind::placeholder:
                    break;
            }
            // a later placeholder with the same text is searched for after this one
            const YAML::Mark mark = placeholder_mark(node, search_from, part.text);
            auto read = read_placeholder(part.text, path, model_names(), page_model);
            if (const auto* problem = std::get_if<ScriptProblem>(&read)) {
                m_yaml.error_at(mark, problem->what, problem->hint);
                failed = true;
                continue;
            }
            const Segment& segment = std::get<Segment>(read);
            if (segment.value->is_cell) {
                // checked against the model's trace once it is computed
                const int model = segment.value->model;
                const std::string& model_name = m_lesson.models[static_cast<std::size_t>(model)].name;
                m_mentions.push_back(
                    {model, segment.value->cell, m_yaml.at(mark, path + ": " + part.text + " in model " + model_name + ": ", ""),
                     ""});
            }
            result.push_back(segment);
        }
        return failed ? Narration{} : result;
    }
};

}  // namespace

LessonFile read_lesson(const Source& source, const std::string& name, const LoadOptions& options) {
    LessonLoader loader(source, options);
    return loader.load(name);
}

}  // namespace qkv
