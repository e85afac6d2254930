// The YAML writer of the example files qkv writes for people (io/yaml_writer.hpp):
// its layout, and values that read back as written.
#include "io/yaml_writer.hpp"
#include "support.hpp"

#include <yaml-cpp/yaml.h>

using namespace qkv;

TEST_CASE("the YAML writer lays out keys and rows and matrices and comments as a person would", "[init]") {
    YamlWriter yaml;
    yaml.comment("written by hand").comment("").blank();
    yaml.literal("description", {"two lines", "of text"});
    yaml.words("tokens", {"a", "b"}, "one per row");
    yaml.matrix("inputs", {{1, 0}, {0, -2}}, "X: 2 × 2");
    yaml.begin("weights", {}, {.column = 12});
    yaml.matrix("query", {{1}}, "W_Q");
    yaml.matrix("output", {{2}}, "W_O");
    yaml.end();
    yaml.begin("bias", "rows", {.longest = true});
    yaml.row("query", {1, 2, 3}, "b_Q").row("output", {4}, "b_O");
    yaml.end();
    yaml.number("heads", 2, "two").word("mask", "causal");
    CHECK(yaml.str() == R"(# written by hand
#

description: |
  two lines
  of text
tokens: [a, b]    # one per row
inputs:    # X: 2 × 2
  - [1, 0]
  - [0, -2]
weights:
  query:    # W_Q
    - [1]
  output:   # W_O
    - [2]
bias:    # rows
  query: [1, 2, 3]    # b_Q
  output: [4]         # b_O
heads: 2    # two
mask: causal
)");
}

TEST_CASE("a quoted value reads back as written whatever it holds", "[init]") {
    for (const std::string text : {std::string("Exercise for alice"), std::string("say \"hi\" \\ bye"),
                                   std::string("tab\there"), std::string("zoë: # not a comment"),
                                   std::string("line\xe2\x80\xa8separator"), std::string("next\xc2\x85line"),
                                   std::string("- [not, a, list]")}) {
        CAPTURE(text);
        YamlWriter yaml;
        yaml.quoted("title", text).row("row", {1, -1});
        const YAML::Node node = YAML::Load(yaml.str());
        CHECK(node["title"].as<std::string>() == text);
        CHECK(node["row"].as<std::vector<int>>() == std::vector<int>{1, -1});
    }
}
