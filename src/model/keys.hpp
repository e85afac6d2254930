// The keys of an example file: one row each in keys.def, read here into ids
// and rows for the readers that go through every key.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {

struct Model;

enum class Key {
#define QKV_KEY(name, kind, stage, read, json, sheet, feeds, form, italic, meaning) name,
#include "model/keys.def"
};

// The form of a key's value (its richest, where it takes several: rope is
// true or a map, a map).
enum class KeyForm { text, labels, number, whole_number, flag, choice, vector, matrix, list, map };

// When the loader reads a key: always, in the order of the rows; once the
// inputs' and the context's sizes are known (the mask, which is n × m); or
// once every key before it was read without a problem (what reads d_out, the
// steps the example has, or the whole model).
enum class KeyStage { always, sized, valid };

// A number key's place in Model, its flag of `qkv bench` and its worksheet
// sentence (QKV_NUMBER_KEY in keys.def).
struct NumberKey {
    std::optional<double> Model::*member;
    std::string_view flag;      // "--softcap"
    std::string_view help;      // the flag's one line of help
    std::string_view sentence;  // the worksheet's sentence, {} standing for the number
};

// One row of keys.def: a key, or another form of a key (`another_form`).
struct KeyRow {
    Key key;
    std::string_view name;     // as the file writes it: "rope"
    KeyForm kind;              // the form of its value
    KeyStage stage;            // when the loader reads it
    std::string_view form;     // what follows "name:" in the man page (roff); empty: no one short form
    bool italic;               // the form is a placeholder (heads: H)
    std::string_view meaning;  // its paragraph in the man page (roff); empty: shares the row before's
    bool another_form;         // a second form of the key of an earlier row
    const NumberKey* number;   // a number key's own parts; null for the others
};

// Every row, in the order of keys.def.
std::span<const KeyRow> key_rows();
// A key's (first) row.
const KeyRow& key_row(Key key);
// Each key's name once, in that order: the keys an example file may have.
const std::vector<std::string>& key_names();
// (The steps a row feeds are step ids, which attention/ reads: key_feeds in attention/steps.hpp.)
// The rows of the number keys, in order.
std::vector<const KeyRow*> number_key_rows();
// Why `value` cannot be a number key's value ("0 is not positive"), or
// nullopt when it can: a positive number from 1e-30 to 1e30.
std::optional<std::string> number_key_problem(double value);
// A number key's sentence with `number` in place of {}.
std::string number_key_sentence(const KeyRow& row, const std::string& number);

}  // namespace qkv
