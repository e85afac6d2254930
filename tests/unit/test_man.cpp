// The man page documents every subcommand and every option that --help lists.
#include "render/table.hpp"
#include "support.hpp"

#include <regex>
#include <set>

using qkv::test::run_qkv;

namespace {

// Subcommand names from the "Subcommands:" block of `qkv --help`.
std::vector<std::string> subcommands() {
    const auto help = run_qkv({"--help"});
    REQUIRE(help.status == 0);
    std::vector<std::string> names;
    const auto start = help.out.find("Subcommands:");
    REQUIRE(start != std::string::npos);
    std::istringstream lines(help.out.substr(start));
    std::string line;
    std::getline(lines, line);
    const std::regex entry("^  ([a-z]+) ");
    while (std::getline(lines, line) && !line.empty()) {
        std::smatch match;
        if (std::regex_search(line, match, entry)) {
            names.push_back(match[1]);
        }
    }
    return names;
}

// Long option names ("--format") a help text lists.
std::set<std::string> long_options(const std::string& help) {
    std::set<std::string> options;
    const std::regex option("--([a-z][a-z-]*)");
    for (auto it = std::sregex_iterator(help.begin(), help.end(), option); it != std::sregex_iterator(); ++it) {
        options.insert((*it)[1]);
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

TEST_CASE("the man page documents every subcommand and option", "[man]") {
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

TEST_CASE("help output fits a 100-column terminal", "[man]") {
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
