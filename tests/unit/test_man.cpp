// The man page the build writes (from man/qkv.1.in and the command line's
// table) documents every subcommand and every option that --help lists.
#include "attention/steps.hpp"
#include "check/catalogue.hpp"
#include "render/table.hpp"
#include "support.hpp"

#include <fstream>
#include <set>

using qkv::test::run_qkv;
using qkv::test::subcommands;

namespace {

// Long option names ("format" for --format) a help text lists.
std::set<std::string> long_options(const std::string& help) {
    std::set<std::string> options;
    for (const auto& option : qkv::test::help_options(help)) {
        if (option.starts_with("--")) {
            options.insert(option.substr(2));
        }
    }
    return options;
}

// roff writes "--format" as \-\-format
std::string roff(const std::string& option) {
    std::string escaped;
    for (const char c : "--" + option) {
        if (c == '-') {
            escaped += "\\-";
        } else {
            escaped += c;
        }
    }
    return escaped;
}

std::string generated_page() {
    const std::string page = qkv::test::read_file(QKV_MAN_PAGE);
    REQUIRE(!page.empty());
    return page;
}

}  // namespace

TEST_CASE("the man page documents every subcommand and option", "[man][cli]") {
    const std::string page = generated_page();
    const auto names = subcommands();
    REQUIRE(names.size() >= 2);
    for (const auto& name : names) {
        CAPTURE(name);
        CHECK(page.find(".B qkv " + name) != std::string::npos);
        const auto help = run_qkv({name, "--help"});
        REQUIRE(help.status == 0);
        for (const auto& option : long_options(help.out)) {
            CAPTURE(option);
            CHECK(page.find(roff(option)) != std::string::npos);
        }
    }
    for (const auto& option : long_options(run_qkv({"--help"}).out)) {
        CAPTURE(option);
        CHECK(page.find(roff(option)) != std::string::npos);
    }
}

TEST_CASE("help output fits a 100-column terminal", "[man][cli]") {
    for (const auto& name : subcommands()) {
        CAPTURE(name);
        const auto help = run_qkv({name, "--help"});
        std::istringstream lines(help.out);
        std::string line;
        while (std::getline(lines, line)) {
            CHECK(qkv::display_width(line) <= 100);
        }
    }
}

TEST_CASE("qkv --version and the man page's .TH line show project()'s version", "[man][cli]") {
    // CMakeLists.txt's project(VERSION) is the one version: man/qkv.1.in holds
    // a placeholder that the build fills in for the page it installs
    const std::string version = QKV_PROJECT_VERSION;
    CHECK(run_qkv({"--version"}).out.starts_with("qkv " + version + " ("));
    const std::string source = qkv::test::read_repo_file("man/qkv.1.in");
    CHECK(source.find("\n.TH QKV 1 \"") != std::string::npos);
    CHECK(source.find("\"qkv @PROJECT_VERSION@\"") != std::string::npos);
    std::ifstream in(QKV_MAN_PAGE);
    REQUIRE(in);
    std::string line;
    while (std::getline(in, line) && !line.starts_with(".TH ")) {
    }
    CAPTURE(line);
    CHECK(line.find("\"qkv " + version + "\"") != std::string::npos);
}

TEST_CASE("the man page lists every mistake of check's catalogue, the classic ones marked", "[man]") {
    const std::string page = generated_page();
    const auto section = page.find(".SH DIAGNOSES");
    REQUIRE(section != std::string::npos);
    const std::string listed = page.substr(section, page.find(".SH ", section + 1) - section);
    std::set<std::string> ids;
    std::set<std::string> classic;
    for (const qkv::checking::MistakeRow* row : qkv::checking::named_mistakes()) {
        const std::string id(row->id);
        CAPTURE(id);
        CHECK(ids.insert(id).second);  // each id once
        CHECK(qkv::checking::mistake_id(id) == id);
        CHECK(listed.find((row->classic ? "\n.BR " + id + " \" (classic)\"\n" : "\n.B " + id + "\n") +
                          std::string(row->man) + "\n") != std::string::npos);
        if (row->classic) {
            classic.insert(id);
        }
    }
    CHECK_THROWS_AS(qkv::checking::mistake_id("scores_upside_down"), std::logic_error);
    // the ids that graders' tools and class gradebooks read, at the least
    for (const char* id : {"scores_no_transpose", "scores_k_qt", "scaling_forgotten", "scaled_by_dk",
                           "scaled_by_sqrt_d_model", "softmax_columns", "softmax_no_exp", "output_at_v",
                           "projection_w_x", "weights_swapped", "heads_averaged", "mask_after_softmax", "mask_zero",
                           "softmax_backward_no_row_term", "grad_scale_forgotten", "grad_values_no_transpose",
                           "grad_keys_no_transpose"}) {
        CHECK(ids.count(id) == 1);
    }
    CHECK(ids.size() > 40);
    // the classic mistakes are the classic mistakes, which init --student makes recognisable
    CHECK(classic == std::set<std::string>{"scores_no_transpose", "scores_k_qt", "scaling_forgotten", "scaled_by_dk",
                                           "scaled_by_sqrt_d_model", "softmax_columns", "softmax_no_exp",
                                           "output_at_v", "projection_w_x", "weights_swapped", "heads_averaged",
                                           "mask_after_softmax", "mask_zero"});
}

TEST_CASE("the man page lists every step of the step table, marked by its heads, in the table's order", "[man]") {
    const std::string page = generated_page();
    const auto section = page.find(".SH STEPS");
    REQUIRE(section != std::string::npos);
    const std::string listed = page.substr(section, page.find(".SH ", section + 1) - section);
    std::size_t last = 0;
    for (const qkv::StepId id : qkv::all_steps()) {
        const qkv::StepRow& row = qkv::step_row(id);
        const std::string marks = row.heads == qkv::HeadKind::query        ? " *"
                                  : row.heads == qkv::HeadKind::key_value  ? " **"
                                  : row.heads == qkv::HeadKind::weight_set ? " ***"
                                                                           : "";
        // the line as a text block, which wraps in the width the name leaves
        const std::string line = "\n" + std::string(row.name) + marks + "\tT{\n" + std::string(row.man) + "\nT}\n";
        CAPTURE(line);
        const auto at = listed.find(line);
        CHECK(at != std::string::npos);
        CHECK(at > last);
        last = at == std::string::npos ? last : at;
        CHECK(!row.man.empty());
    }
    // the queries and the keys' gradient, as a reader finds them
    CHECK(listed.find("\nqueries *\tT{\nQ = X\\(pcW_Q + b_Q\nT}\n") != std::string::npos);
    CHECK(listed.find("\ngrad_keys **\t") != std::string::npos);
}
