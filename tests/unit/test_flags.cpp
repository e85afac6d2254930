// The command line's table (src/cli/flags.cpp): every command's --help, the
// man page and the completions come from its rows, so these tests check the
// table against what a user sees, and that the man page the build writes
// from it renders.
#include "cli/flags.hpp"
#include "cli/generated.hpp"
#include "attention/step_id.hpp"
#include "attention/steps.hpp"
#include "model/keys.hpp"
#include "support.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

using qkv::cli::CommandId;
using qkv::test::run_qkv;

namespace {

std::string generated_man_page() {
    const std::string page = qkv::test::read_file(QKV_MAN_PAGE);
    REQUIRE(!page.empty());
    return page;
}

// roff writes "--format" as \-\-format
std::string roff(std::string_view option) {
    std::string escaped;
    for (const char c : option) {
        escaped += c == '-' ? std::string("\\-") : std::string(1, c);
    }
    return escaped;
}

// The part of PAGE from the line ".SH NAME" to the next ".SH".
std::string man_section(const std::string& page, const std::string& name) {
    const auto start = page.find("\n.SH " + name + "\n");
    REQUIRE(start != std::string::npos);
    return page.substr(start, page.find("\n.SH ", start + 1) - start + 1);
}

}  // namespace

TEST_CASE("a command that stores one of its flags nowhere fails as it is set up", "[flags]") {
    CLI::App app("", "qkv");
    qkv::cli::Bindings bindings;
    int tokens = 0;
    bindings.bind("--tokens", &tokens);
    // bench takes --tokens and much more: the rest have no place to go
    CHECK_THROWS_AS(qkv::cli::add_command(app, CommandId::bench, bindings), std::logic_error);
    // examples stores every flag it takes (--help CLI11 answers itself)
    qkv::cli::Bindings examples;
    std::string name;
    std::string output;
    bool force = false;
    examples.bind("name", &name).bind("--output", &output).bind("--force", &force);
    CHECK_NOTHROW(qkv::cli::add_command(app, CommandId::examples, examples));
    CLI::App other("", "qkv");
    CHECK_THROWS_AS(qkv::cli::add_command(other, CommandId::examples, qkv::cli::Bindings()), std::logic_error);
}

TEST_CASE("every flag of the table is spelt as a flag and has its help line and its man text", "[flags]") {
    for (const auto& flag : qkv::cli::flag_table()) {
        CAPTURE(flag.name);
        CHECK(flag.commands != 0);
        CHECK(!flag.help.empty());
        CHECK(flag.help.find('\n') == std::string_view::npos);
        if (flag.is_argument()) {
            continue;
        }
        CHECK(flag.name.starts_with("--"));
        CHECK((flag.short_name.empty() || (flag.short_name.size() == 2 && flag.short_name[0] == '-')));
        const bool hidden_only = flag.commands == qkv::cli::command_bit(CommandId::generate);
        CHECK((hidden_only || !flag.man.empty()));
        // a value to choose from names its choices, and a range is a range
        if (flag.complete == qkv::cli::Complete::choices || flag.check == qkv::cli::Check::choice) {
            CHECK(qkv::cli::choices_of(flag).size() >= 1);
        }
        if (flag.check == qkv::cli::Check::whole) {
            CHECK(flag.low <= flag.high);
        }
        // a name means one flag in each command: two rows of a name are for different commands
        for (const auto& other : qkv::cli::flag_table()) {
            if (&other != &flag && other.name == flag.name) {
                CHECK((other.commands & flag.commands) == 0);
            }
        }
    }
}

TEST_CASE("each command's --help lists exactly its rows of the table", "[flags][cli]") {
    for (const auto& command : qkv::cli::command_table()) {
        CAPTURE(command.name);
        const auto help = command.id == CommandId::qkv ? run_qkv({"--help"}) : run_qkv({std::string(command.name), "--help"});
        REQUIRE(help.status == 0);
        std::set<std::string> expected;
        for (const auto* flag : qkv::cli::flags_of(command.id)) {
            if (!flag->is_argument()) {
                expected.insert(std::string(flag->name));
                if (!flag->short_name.empty()) {
                    expected.insert(std::string(flag->short_name));
                }
                CHECK(help.out.find(std::string(flag->help)) != std::string::npos);
            }
        }
        CHECK(qkv::test::help_options(help.out) == expected);
        // qkv's own help lists the commands a user runs, and not the build's generate
        if (command.id != CommandId::qkv) {
            const auto top = run_qkv({"--help"}).out;
            CHECK((top.find("\n  " + std::string(command.name) + " ") != std::string::npos) == !command.hidden);
        }
    }
}

TEST_CASE("the man page has an entry for every flag, with its command or under OPTIONS", "[flags][man]") {
    const std::string page = generated_man_page();
    const std::string options = man_section(page, "OPTIONS");
    for (const auto& flag : qkv::cli::flag_table()) {
        if (flag.is_argument() || flag.man.empty()) {
            continue;
        }
        CAPTURE(flag.name, flag.commands);
        // the entry: its heading, then the text of the table's row
        const std::string text(flag.man);
        const auto at = page.find("\n" + text + "\n");
        REQUIRE(at != std::string::npos);
        const auto line_start = page.rfind("\n.TP\n", at);
        REQUIRE(line_start != std::string::npos);
        const std::string entry_heading = page.substr(line_start + 5, at - line_start - 5);
        CHECK(entry_heading.find(roff(flag.name)) != std::string::npos);
        if (!flag.value.empty()) {
            CHECK(entry_heading.find(std::string(flag.value)) != std::string::npos);
        }
        const bool shared = options.find("\n" + text + "\n") != std::string::npos;
        const bool one_command = (flag.commands & (flag.commands - 1)) == 0 && !flag.takes(CommandId::qkv);
        CHECK(shared == !one_command);
    }
    // every command's own section says which of the shared options it takes
    // run, explain, init, check, worksheet, examples, lesson, playground
    CHECK(qkv::test::count_of(page, "\n.PP\nAlso ") == 8);
    const std::string init = page.substr(page.find("\n.B init\n"), 12000);
    CHECK(init.find("Also \\fB\\-o\\fR, \\fB\\-\\-force\\fR (see \\fBOPTIONS\\fR).") != std::string::npos);
    // and the synopsis has a line for each command a user runs
    const std::string synopsis = man_section(page, "SYNOPSIS");
    for (const auto& command : qkv::cli::command_table()) {
        if (command.id != CommandId::qkv) {
            CAPTURE(command.name);
            CHECK((synopsis.find(".B qkv " + std::string(command.name) + "\n") != std::string::npos) == !command.hidden);
        }
    }
    CHECK(synopsis.find(".B qkv explain\n.IR FILE | NAME | \\-\n.IR CELL ...\n") != std::string::npos);
    // -f lists each command's formats, the first its default
    CHECK(options.find("\\fBworksheet\\fR: markdown, latex, html, yaml") != std::string::npos);
}

TEST_CASE("the man page's template has marks the generator knows, and no others", "[flags][man]") {
    const std::string page_template = qkv::test::read_repo_file("man/qkv.1.in");
    const std::string page = qkv::cli::man_page(page_template);
    CHECK(page == generated_man_page());
    CHECK(page.find("\n@") == std::string::npos);
    CHECK(page.find("@PROJECT_VERSION@") == std::string::npos);
    CHECK_THROWS_AS(qkv::cli::man_page(".TH QKV 1\n@OPTIONS nothing@\n"), std::invalid_argument);
    CHECK_THROWS_AS(qkv::cli::man_page(".TH QKV 1\n@STEPZ@\n"), std::invalid_argument);
    // a line that only starts with @ is text
    CHECK(qkv::cli::man_page("@ home\n") == "@ home\n");
}

TEST_CASE("man -l renders the man page the build writes without a warning", "[flags][man][documents]") {
    const auto shown = qkv::test::shell("MANWIDTH=80 man --warnings -l '" + std::string(QKV_MAN_PAGE) +
                                        "' 2>&1 >/dev/null");
    CAPTURE(shown.out);
    CHECK(shown.status == 0);
    CHECK(shown.out.empty());
    const auto text = qkv::test::shell("MANWIDTH=80 man -l '" + std::string(QKV_MAN_PAGE) + "' 2>/dev/null | col -b");
    REQUIRE(text.status == 0);
    CHECK(text.out.find("--block-size B") != std::string::npos);
    CHECK(text.out.find("Also -f, -p, -s, --head") != std::string::npos);
}

TEST_CASE("every key of an example file is a row of keys.def, and the man page and the loader read it",
          "[flags][man][keys][cli]") {
    const std::string page = generated_man_page();
    const std::string keys = page.substr(page.find("The keys:"), page.find("Any matrix may also be written") -
                                                                     page.find("The keys:"));
    std::vector<std::string> names;
    for (const qkv::KeyRow& row : qkv::key_rows()) {
        CAPTURE(row.name);
        // a heading of its own (.B, .BR or .BI), or beside the key before it
        CHECK((keys.find("\n.B " + std::string(row.name) + "\n") != std::string::npos ||
               keys.find("\n.BR " + std::string(row.name) + ":") != std::string::npos ||
               keys.find("\n.BI " + std::string(row.name) + ":") != std::string::npos ||
               keys.find("\", \" " + std::string(row.name) + "\n") != std::string::npos ||
               keys.find("\n.BR " + std::string(row.name) + " \", \"") != std::string::npos));
        // the steps it feeds are steps, listed after its meaning
        for (const qkv::StepId id : qkv::key_feeds(row.key)) {
            CHECK(keys.find("\\fB" + qkv::step_text(id) + "\\fR") != std::string::npos);
        }
        if (!row.another_form) {
            CHECK(std::find(names.begin(), names.end(), row.name) == names.end());
            names.emplace_back(row.name);
        } else {
            CHECK(std::find(names.begin(), names.end(), row.name) != names.end());
        }
    }
    CHECK(names == qkv::key_names());
    CHECK(keys.find("\n.BR rope: \" true | {base: B, style: half | interleaved, partial_rotary_factor: f, "
                    "max_position_embeddings: M, scaling: {...}}\"\n") != std::string::npos);
    CHECK(keys.find("\n.BI kv_heads: \" G\"\n") != std::string::npos);
    CHECK(keys.find("\n.BR title \", \" description\nShown above the first step.\n") != std::string::npos);
    CHECK(keys.find("Steps: \\fBposition_bias\\fR, \\fBbiased_scores\\fR.") != std::string::npos);
    // the loader takes each key, and names them all when one is unknown
    const auto unknown = run_qkv({"run", "-"}, "inputs: [[1]]\nweights: {query: [[1]], key: [[1]], value: [[1]]}\n"
                                               "ropes: true\n");
    CHECK(unknown.status == 2);
    std::string listed;
    for (const std::string& name : names) {
        listed += (listed.empty() ? "" : ", ") + name;
    }
    CHECK(unknown.err.find("did you mean rope? valid keys: " + listed) != std::string::npos);
}
