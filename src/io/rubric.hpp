// The marking scheme of `qkv check` from a file of its own (--rubric FILE):
// each step's points, as `rubric:` gives them in an example file.
#pragma once

#include "io/loader.hpp"
#include "model/model.hpp"

#include <map>
#include <string>

namespace qkv {

// Reads FILE (a map of step ids to points, at the top level or under
// `rubric:`), checking each id against `model`; throws InputError with every
// problem's FILE:LINE:COL.
std::map<std::string, double> read_rubric(const Source& source, const Model& model);

}  // namespace qkv
