// A YAML file written as a person lays one out, for the example files qkv
// writes to be read and edited (`qkv init`'s starter examples and exercises):
// keys in order, numbers in flow rows, a matrix as a block list of rows, a
// comment after a value, comment lines and blank lines between. The writer
// quotes and escapes what it writes, so every key's value reads back as
// written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qkv {

// Where the comments after the values of a mapping's entries start.
struct YamlAlign {
    int column = 0;        // at this column (counted from 0); 0: `gap` spaces after each value
    bool longest = false;  // at the longest of the mapping's entries plus `gap`
    int gap = 4;
};

class YamlWriter {
public:
    using Align = YamlAlign;

    // "# text" at the current indentation; an empty text writes "#".
    YamlWriter& comment(std::string_view text);
    YamlWriter& blank();

    // key: 2    # comment
    YamlWriter& number(std::string_view key, long long value, std::string_view comment = {});
    // key: word, as written: for a value that is a plain YAML word (sqrt_dk, causal)
    YamlWriter& word(std::string_view key, std::string_view value, std::string_view comment = {});
    // key: "text", double-quoted and escaped
    YamlWriter& quoted(std::string_view key, std::string_view text);
    // key: |  and the lines below it, indented
    YamlWriter& literal(std::string_view key, const std::vector<std::string>& lines);
    // key: [a, b, c], each item a plain word
    YamlWriter& words(std::string_view key, const std::vector<std::string>& items, std::string_view comment = {});
    // key: [1, 0, 2]
    YamlWriter& row(std::string_view key, const std::vector<int>& row, std::string_view comment = {});
    // key:    # comment  and one "- [1, 0, 2]" line per row, indented
    YamlWriter& matrix(std::string_view key, const std::vector<std::vector<int>>& rows,
                       std::string_view comment = {});

    // A mapping under `key`: the entries until end() are indented by two more
    // spaces, their comments placed as `align` says.
    YamlWriter& begin(std::string_view key, std::string_view comment = {}, Align align = {});
    YamlWriter& end();

    std::string str() const;

private:
    struct Line {
        std::string text;
        std::string comment;  // after the text; none when empty
        int group = -1;       // the mapping whose alignment places the comment; -1: the top level's
    };
    std::vector<Line> m_lines;
    std::vector<Align> m_groups;
    std::vector<int> m_open;  // the mappings begun and not ended, innermost last

    std::string indent() const;
    YamlWriter& entry(std::string_view key, std::string value, std::string_view comment);
};

// "[1, 0, 2]"
std::string flow_row(const std::vector<int>& row);

}  // namespace qkv
