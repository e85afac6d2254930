// The man page documents every subcommand and every option that --help lists.
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

}  // namespace

TEST_CASE("the man page documents every subcommand and option", "[man][cli]") {
    const std::string page = qkv::test::read_repo_file("man/qkv.1");
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
    // CMakeLists.txt's project(VERSION) is the one version: man/qkv.1 holds a
    // placeholder that the build fills in for the page it installs
    const std::string version = QKV_PROJECT_VERSION;
    CHECK(run_qkv({"--version"}).out.starts_with("qkv " + version + " ("));
    const std::string source = qkv::test::read_repo_file("man/qkv.1");
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
