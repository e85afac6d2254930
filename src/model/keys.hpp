// The keys of an example file: one row each in keys.def, read here into ids
// and rows for the readers that go through every key.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

enum class Key {
#define QKV_KEY(name, form, italic, feeds, meaning) name,
#include "model/keys.def"
};

// One row of keys.def: a key, or another form of a key (`another_form`).
struct KeyRow {
    Key key;
    std::string_view name;     // as the file writes it: "rope"
    std::string_view form;     // what follows "name:" in the man page (roff); empty: no one short form
    bool italic;               // the form is a placeholder (heads: H)
    std::string_view feeds;    // the step ids it feeds, separated by spaces
    std::string_view meaning;  // its paragraph in the man page (roff); empty: shares the row before's
    bool another_form;         // a second form of the key of an earlier row
};

// Every row, in the order of keys.def.
std::span<const KeyRow> key_rows();
// Each key's name once, in that order: the keys an example file may have.
const std::vector<std::string>& key_names();
// The step ids a key feeds, in order.
std::vector<std::string> key_feeds(const KeyRow& row);

}  // namespace qkv
