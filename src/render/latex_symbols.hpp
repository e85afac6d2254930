// The symbols explain, check and lessons write that tex_escape() and
// tex_prose() (render/latex.hpp) do not spell: ℓ (the online softmax's
// running sum), ∘ (the elementwise product), ⌈ ⌉ (rounding up), check's
// verdicts ✓ and ✗, and runs of superscript or subscript digits (e¹⁰ as
// e^{10}, one exponent). Each is set as math; everything else goes through
// tex_escape() or tex_prose() unchanged, so the output stays pure ASCII.
#pragma once

#include <string>

namespace qkv {

// tex_escape(), with the symbols above as math: "ℓ = 2" → "$\ell$ = 2".
std::string tex_escape_all(const std::string& text);
// tex_prose(), with the symbols above as math.
std::string tex_prose_all(const std::string& text);

// LaTeX with a break allowed after each escaped underscore, so that a step
// id such as grad\_scaled\_scores can end a line of a narrow column.
std::string tex_break_underscores(const std::string& latex);

// LaTeX that may still hold a character outside ASCII (a table whose marks
// were written as they are) with each such character spelled as
// tex_escape_all() spells it; pure-ASCII LaTeX comes back unchanged.
std::string tex_spell_leftovers(const std::string& latex);

// latex_begin(), and with `standalone` a preamble that loads amssymb (for
// \checkmark) whether or not latex_begin's does.
std::string latex_begin_with_symbols(bool standalone, const std::string& what);

}  // namespace qkv
