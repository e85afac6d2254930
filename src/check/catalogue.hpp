// The catalogue of named mistakes, one row each: its id (what check's reports,
// JSON and gradebook name), whether it is one of the classic mistakes that
// `qkv init --student` makes sure an exercise can tell apart, and its line in
// the man page's DIAGNOSES. How each is made from a learner's values is in
// mistakes.cpp, which names every mistake by its row (mistake_id).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace qkv::checking {

struct MistakeRow {
    std::string_view id = {};    // "scores_no_transpose"
    bool classic = false;        // `init --student` makes each one an exercise allows recognisable
    std::string_view man = {};   // the man page's one line (roff): what was done
};

// In the order of the steps they are made in.
std::span<const MistakeRow> mistake_table();

// ID, checked against the table: a name the table lacks is a programming
// error (std::logic_error), so no diagnosis goes undocumented.
std::string mistake_id(std::string_view id);

}  // namespace qkv::checking
