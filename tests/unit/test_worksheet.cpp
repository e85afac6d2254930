// qkv worksheet: the exercise sheet (Markdown, LaTeX) and the answers template
// (YAML) of an example. Golden files for the masked example; for every
// built-in example, a blank sheet that holds no true value, a key whose
// tables are those `qkv run` prints, a template in the shape `qkv check`
// reads; and the documents through pandoc and pdflatex.
#include "builtin/builtin.hpp"
#include "render/worksheet.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

using qkv::test::check_golden;
using qkv::test::require_input_error;
using qkv::test::run_ok;
using qkv::test::run_qkv;
using qkv::test::shell;
using qkv::test::lines_of;
using qkv::test::TempDir;

namespace {

// Each "## Step …" heading of a Markdown document with the pipe table that
// follows it (its lines), in order.
std::vector<std::pair<std::string, std::vector<std::string>>> step_tables(const std::string& markdown) {
    std::vector<std::pair<std::string, std::vector<std::string>>> tables;
    for (const auto& line : lines_of(markdown)) {
        if (line.starts_with("## Step ")) {
            tables.push_back({line, {}});
        } else if (!tables.empty() && line.starts_with("|")) {
            tables.back().second.push_back(line);
        } else if (!tables.empty() && !tables.back().second.empty() && !line.starts_with("|")) {
            // the table has ended; nothing more belongs to this heading
            tables.back().second.push_back("");
        }
    }
    for (auto& [heading, table] : tables) {
        const auto end = std::find(table.begin(), table.end(), "");
        table.erase(end, table.end());
    }
    return tables;
}

// The cells of a table's body rows, after the row label: "| a | 1 | 2 |" → {"1", "2"}, trimmed.
std::vector<std::string> body_cells(const std::vector<std::string>& table) {
    std::vector<std::string> cells;
    for (std::size_t r = 2; r < table.size(); ++r) {
        std::string line = table[r];
        std::vector<std::string> fields;
        std::string field;
        for (std::size_t i = 1; i < line.size(); ++i) {
            if (line[i] == '|' && line[i - 1] != '\\') {
                fields.push_back(field);
                field.clear();
            } else {
                field += line[i];
            }
        }
        for (std::size_t k = 1; k < fields.size(); ++k) {
            const auto first = fields[k].find_first_not_of(' ');
            cells.push_back(first == std::string::npos ? "" : fields[k].substr(first, fields[k].find_last_not_of(' ') - first + 1));
        }
    }
    return cells;
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) {
        ++count;
    }
    return count;
}

// The steps a default sheet asks of an example: every step after the givens of the forward pass.
std::vector<const qkv::Step*> default_steps(const qkv::Trace& trace) {
    std::vector<const qkv::Step*> steps;
    for (const auto& step : trace.steps) {
        if (!qkv::is_given(step.id) && !qkv::is_gradient(step.id)) {
            steps.push_back(&step);
        }
    }
    return steps;
}

}  // namespace

TEST_CASE("worksheets of the masked example match their golden files", "[worksheet][cli]") {
    check_golden("worksheet-masked.md", run_ok({"worksheet", "masked"}));
    check_golden("worksheet-masked.key.md", run_ok({"worksheet", "masked", "--key"}));
    check_golden("worksheet-masked.tex", run_ok({"worksheet", "masked", "-f", "latex", "--standalone"}));
    check_golden("worksheet-masked.yaml", run_ok({"worksheet", "masked", "-f", "yaml"}));
    check_golden("worksheet-masked.key.yaml", run_ok({"worksheet", "masked", "-f", "yaml", "--key"}));
    // several heads: the per-head steps under answers.heads
    check_golden("worksheet-two-heads.yaml", run_ok({"worksheet", "two-heads", "-f", "yaml"}));
}

TEST_CASE("a blank worksheet holds no true value, in every format", "[worksheet][cli]") {
    // the illustrated example's scores (from the illustrated article): 2, 4, 4 / 4, 16, 12 / 4, 12, 10
    const std::string key = run_ok({"worksheet", "illustrated", "--key"});
    const std::string blank = run_ok({"worksheet", "illustrated"});
    CHECK(key.find("|      16 |") != std::string::npos);
    CHECK(blank.find("16") == std::string::npos);
    CHECK(blank.find("12") == std::string::npos);

    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const auto tables = step_tables(run_ok({"worksheet", name}));
        REQUIRE_FALSE(tables.empty());
        for (const auto& [heading, table] : tables) {
            CAPTURE(heading);
            REQUIRE(table.size() >= 3);
            for (const auto& cell : body_cells(table)) {
                CHECK(cell.empty());
            }
        }
        // LaTeX writes a number of a sheet's table as "\hfill $0.25$" (or $-\infty$): none on a blank sheet
        const std::regex number(R"(\\hfill \$[-0-9])");
        CHECK_FALSE(std::regex_search(run_ok({"worksheet", name, "-f", "latex"}), number));
        CHECK(std::regex_search(run_ok({"worksheet", name, "-f", "latex", "--key"}), number));
        // the template: ~ in every cell
        const YAML::Node answers = YAML::Load(run_ok({"worksheet", name, "-f", "yaml"}))["answers"];
        std::size_t numbers = 0;
        const std::function<void(const YAML::Node&)> count = [&](const YAML::Node& node) {
            if (node.IsScalar()) {
                ++numbers;
            }
            for (const auto& item : node) {
                count(node.IsMap() ? item.second : item);
            }
        };
        count(answers);
        CHECK(numbers == 0);
    }
}

TEST_CASE("a worksheet's key holds the tables qkv run prints, at the sheet's decimals", "[worksheet][cli]") {
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const auto key = step_tables(run_ok({"worksheet", name, "--key"}));
        const auto blank = step_tables(run_ok({"worksheet", name}));
        const auto run = step_tables(run_ok({"run", name, "-f", "markdown", "-p", "2", "--full"}));
        const qkv::Trace trace = qkv::test::compute_text(std::string(example.text));
        REQUIRE(key.size() == default_steps(trace).size());
        REQUIRE(blank.size() == key.size());
        for (std::size_t k = 0; k < key.size(); ++k) {
            // not a structured binding: clang 14 cannot capture one in a lambda
            const std::string& heading = key[k].first;
            const auto& table = key[k].second;
            CAPTURE(heading);
            CHECK(blank[k].first == heading);
            const auto same = std::find_if(run.begin(), run.end(), [&](const auto& other) { return other.first == heading; });
            REQUIRE(same != run.end());
            CHECK(table == same->second);
        }
    }
    // -p sets the decimals; without it, the exercise's decimals:, else 2 (weights[1,1] is 0.0634)
    const std::string exercise = "decimals: 3\n" + std::string(qkv::find_builtin_example("illustrated")->text);
    const auto first_weight = [](const std::string& sheet) { return body_cells(step_tables(sheet).at(0).second).at(0); };
    CHECK(first_weight(run_ok({"worksheet", "-", "--key", "-s", "weights"}, exercise)) == "0.063");
    CHECK(first_weight(run_ok({"worksheet", "-", "--key", "-s", "weights", "-p", "1"}, exercise)) == "0.1");
    CHECK(first_weight(run_ok({"worksheet", "illustrated", "--key", "-s", "weights"})) == "0.06");
}

TEST_CASE("the answers template has each step asked in its shape, where qkv check reads it", "[worksheet][cli]") {
    TempDir dir;
    for (const auto& example : qkv::builtin_examples()) {
        const std::string name(example.name);
        CAPTURE(name);
        const qkv::Trace trace = qkv::test::compute_text(std::string(example.text));
        const std::string blank_file = dir.write(name + ".yaml", run_ok({"worksheet", name, "-f", "yaml"}));
        const YAML::Node answers = YAML::LoadFile(blank_file)["answers"];
        REQUIRE(answers.IsMap());
        const bool several = trace.dims.heads > 1;
        std::size_t entries = 0;
        std::size_t cells = 0;
        for (const qkv::Step* step : default_steps(trace)) {
            const std::string id(qkv::step_name(step->id));
            CAPTURE(id, step->head);
            const YAML::Node rows = several && step->head != 0
                                        ? answers["heads"][static_cast<std::size_t>(step->head - 1)][id]
                                        : answers[id];
            REQUIRE(rows.IsSequence());
            REQUIRE(rows.size() == step->values.n_rows);
            for (const auto& row : rows) {
                REQUIRE(row.IsSequence());
                CHECK(row.size() == step->values.n_cols);
                for (const auto& cell : row) {
                    CHECK(cell.IsNull());
                }
            }
            ++entries;
            cells += step->values.n_elem;
        }
        // nothing else: the top-level ids, and each head's
        std::size_t written = 0;
        for (const auto& entry : answers) {
            if (entry.first.as<std::string>() != "heads") {
                ++written;
            }
        }
        for (const auto& head : answers["heads"]) {
            written += head.size();
        }
        CHECK(written == entries);

        // qkv check reads the blank template as nothing answered yet (exit 1, no input error)
        const auto checked = run_qkv({"check", name, "--answers", blank_file});
        INFO(checked.err);
        CHECK(checked.status == 1);
        CHECK(checked.err.find("error") == std::string::npos);
        // with every cell of the template counted blank
        const auto counted = nlohmann::json::parse(run_qkv({"check", name, "--answers", blank_file, "-f", "json"}).out);
        CHECK(counted["counts"]["blank"] == cells);
        CHECK(counted["counts"]["right"] == 0);
        CHECK(counted["steps"].empty());
        // and grades every value of the key right
        const std::string key_file = dir.write(name + ".key.yaml", run_ok({"worksheet", name, "-f", "yaml", "--key"}));
        const std::string report = run_ok({"check", name, "--answers", key_file});
        CHECK(report.find("All right.") != std::string::npos);
    }
}

TEST_CASE("a sheet of one head (--head) holds that head's steps and weights", "[worksheet][cli]") {
    const std::string sheet = run_ok({"worksheet", "two-heads", "--head", "2"});
    CHECK(sheet.find("## Step 5 · Scores · head 2 `scores`") != std::string::npos);
    CHECK(sheet.find("head 1") == std::string::npos);
    CHECK(sheet.find("Query weights, head 2 (columns 3–4 of W_Q)") != std::string::npos);
    // concat and output need every head
    CHECK(sheet.find("`concat`") == std::string::npos);
    CHECK(sheet.find("`output`") == std::string::npos);
    CHECK(sheet.find("Output weights") == std::string::npos);

    // grouped-query attention: query head 3 reads key/value head 2, which the template puts under heads[2]
    TempDir dir;
    const std::string key = dir.write("gqa.yaml", run_ok({"worksheet", "gqa", "--head", "3", "-f", "yaml", "--key"}));
    const YAML::Node heads = YAML::LoadFile(key)["answers"]["heads"];
    REQUIRE(heads.size() == 3);
    CHECK(heads[0].IsNull());
    CHECK(heads[1]["keys"].IsSequence());
    CHECK(heads[2]["scores"].IsSequence());
    CHECK(run_ok({"check", "gqa", "--answers", key}).find("All right.") != std::string::npos);
}

TEST_CASE("the backward pass is on the sheet with --backward or when --steps names it", "[worksheet][cli]") {
    // backward.yaml gives grad_output: the forward steps by default, dO among the givens only when asked
    const std::string forward = run_ok({"worksheet", "backward"});
    CHECK(forward.find("`grad_") == std::string::npos);
    CHECK(forward.find("$dO$") == std::string::npos);
    const std::string both = run_ok({"worksheet", "backward", "--backward"});
    CHECK(both.find("## Step 14 · Gradient through the softmax `grad_scaled_scores`") != std::string::npos);
    CHECK(both.find("**Gradient of the loss with respect to the output** $dO$ (3 × 2)") != std::string::npos);
    CHECK(both.find("`grad_output`") == std::string::npos);
    const std::string one = run_ok({"worksheet", "illustrated", "--backward", "-s", "grad_scores"});
    CHECK(count_of(one, "## Step ") == 1);

    TempDir dir;
    const std::string key =
        dir.write("key.yaml", run_ok({"worksheet", "illustrated", "--backward", "-f", "yaml", "--key"}));
    const std::string template_text = run_ok({"worksheet", "illustrated", "--backward", "-f", "yaml", "-o", "-"});
    CHECK(template_text.find("#   qkv check illustrated --answers answers.yaml --backward\n") != std::string::npos);
    CHECK(run_ok({"check", "illustrated", "--backward", "--answers", key}).find("All right.") != std::string::npos);
}

TEST_CASE("worksheet refuses what it cannot put on a sheet", "[worksheet][cli]") {
    require_input_error(run_qkv({"worksheet", "illustrated", "-f", "text"}),
                        "a worksheet cannot be written as text; expected -f markdown, latex, html or yaml");
    require_input_error(run_qkv({"worksheet", "illustrated", "-f", "pdf"}), "\"pdf\" is not a format");
    require_input_error(run_qkv({"worksheet", "illustrated", "-s", "inputs"}),
                        "--steps: inputs is given on the sheet; expected a step to work out");
    require_input_error(run_qkv({"worksheet", "illustrated", "-s", "scores,masked_scores"}),
                        "--steps: this example has no step masked_scores");
    require_input_error(run_qkv({"worksheet", "illustrated", "-s", "grad_scores"}), "grad_scores");
    require_input_error(run_qkv({"worksheet", "illustrated", "--head", "2"}), "--head 2 does not exist");
    require_input_error(run_qkv({"worksheet", qkv::test::source_dir() + "/examples/llama-layer.yaml"}),
                        "expected at most 32 rows and columns on a sheet");
    require_input_error(run_qkv({"worksheet"}), "file is required");
}

TEST_CASE("Markdown worksheets render through pandoc as headings and tables", "[worksheet][cli][documents]") {
    TempDir dir;
    for (const std::string name : {"masked", "two-heads", "gqa"}) {
        CAPTURE(name);
        for (const std::string key : {"", "--key"}) {
            std::vector<std::string> args = {"worksheet", name};
            if (!key.empty()) {
                args.push_back(key);
            }
            const std::string md = run_ok(args);
            const auto html = shell("pandoc -f gfm -t html " + dir.write(name + ".md", md));
            REQUIRE(html.status == 0);
            // one table per given matrix (a bold label) and per step, one h2 per step and for Given
            const std::size_t steps = count_of(md, "\n## Step ");
            CHECK(count_of(html.out, "<table>") == count_of(md, "\n**") + steps);
            CHECK(count_of(html.out, "<h2 ") == steps + 1);
            CHECK(count_of(html.out, "<h1 ") == 1);
            // a blank sheet's cells are empty cells, not missing ones
            CHECK((key.empty() ? count_of(html.out, "<td style=\"text-align: right;\"></td>") > 0
                               : count_of(html.out, "<td style=\"text-align: right;\"></td>") == 0));
        }
    }
}

TEST_CASE("LaTeX worksheets compile with pdflatex, standalone and as a fragment, and fit the page",
          "[worksheet][cli][documents]") {
    TempDir dir;
    const auto compile = [&](const std::string& name, const std::string& tex) {
        dir.write(name + ".tex", tex);
        const auto result =
            shell("cd " + dir.path() + " && pdflatex -interaction=nonstopmode -halt-on-error " + name + ".tex");
        INFO(result.out.substr(result.out.size() > 3000 ? result.out.size() - 3000 : 0));
        CHECK(result.status == 0);
        std::ifstream log(dir.path() + "/" + name + ".log");
        std::stringstream text;
        text << log.rdbuf();
        // the tables' cells, room to write in, still fit the line
        CHECK(text.str().find("Overfull \\hbox") == std::string::npos);
        CHECK(std::filesystem::exists(dir.path() + "/" + name + ".pdf"));
    };
    compile("masked", run_ok({"worksheet", "masked", "-f", "latex", "--standalone"}));
    compile("two-heads-key", run_ok({"worksheet", "two-heads", "-f", "latex", "--standalone", "--key"}));
    compile("backward", run_ok({"worksheet", "backward", "-f", "latex", "--standalone", "--backward", "--key"}));
    // 12 columns: cut into blocks that fit
    const std::string wide = run_ok({"init", "--tokens", "12", "--d-model", "12", "--d-k", "6", "--heads", "2"});
    compile("wide", run_ok({"worksheet", "-", "-f", "latex", "--standalone", "-s", "scores,concat"}, wide));
    const std::string fragment = run_ok({"worksheet", "gqa", "-f", "latex"});
    CHECK(fragment.find("\\documentclass") == std::string::npos);
    compile("fragment", "\\documentclass{article}\n\\usepackage{amsmath, amssymb, booktabs}\n\\begin{document}\n" + fragment +
                            "\\end{document}\n");
}
