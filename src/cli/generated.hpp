// What `qkv generate` writes at build time, all of it read from the command
// line's table (flags.hpp): the man page, from its template, and the shells'
// completions.
#pragma once

#include <string>

namespace qkv::cli {

// The template (man/qkv.1.in) with its marks filled in, each on a line of its
// own: @SYNOPSIS@ (every command and its arguments), @OPTIONS@ (the flags
// several commands share), @OPTIONS NAME@ (the flags of command NAME alone,
// then the shared ones it takes), @STEPS forward@ and @STEPS backward@ (the
// step table's ids and lines), @KEYS@ (the keys of an example file, from
// model/keys.def) and @DIAGNOSES@ (check's named mistakes);
// @PROJECT_VERSION@ anywhere is the version.
// Throws std::invalid_argument on a mark it does not know.
std::string man_page(const std::string& page_template);

// Completion scripts: bash's (share/bash-completion/completions/qkv), zsh's
// (_qkv) and fish's (qkv.fish). Example and lesson names are asked of the qkv
// being completed, when the user presses Tab.
std::string bash_completion();
std::string zsh_completion();
std::string fish_completion();

}  // namespace qkv::cli
