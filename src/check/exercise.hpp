// What makes a worked example a good exercise for `qkv check`, the test that
// `qkv init --student` puts each of its draws to, and the seed it derives
// from a student's ID.
//
// An example is a good exercise when `qkv check` can name every classic
// mistake (those marked classic in check's catalogue) that it allows from the
// values a learner writes to two decimals:
//   - each such mistake changes at least two cells of its step, clearly (by
//     more than 0.015, so that the mistake's value written to two decimals is
//     wrong whichever way it rounds);
//   - it differs just as clearly, in at least two cells, from every other
//     mistake of the catalogue in the same step (so the diagnosis is one);
//   - no attention weight rounds to 0 or to 1 at two decimals (a row that
//     the mask leaves with a single key, whose weight is 1 by definition,
//     aside);
//   - with the scores divided by √d_k, d_k is not √d_model (dividing by d_k
//     and by √d_model would give the same numbers).
// The mistakes are simulated with the check library's catalogue
// (mistakes_in), made on the true values. A change to the catalogue
// can therefore change which draw is an ID's first good one, and so an ID's
// exercise: the golden files of tests/unit/test_init_student.cpp catch it.
#pragma once

#include "attention/trace.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qkv::checking {

// Whether a diagnosis id is one of the classic mistakes (check/catalogue.hpp).
bool is_classic_mistake(std::string_view diagnosis_id);

// Why an example is not a good exercise.
enum class FlawKind {
    square_root,  // d_k = √d_model with the scores divided by √d_k
    saturated,    // an attention weight rounds to 0 or 1
    too_few,      // a classic mistake changes fewer than two cells of its step
    no_value,     // a classic mistake has no value in some cell (0/0)
    same_as,      // a classic mistake and another mistake of its step give the same values
};

struct ExerciseFlaw {
    FlawKind kind = FlawKind::too_few;
    std::string what;  // "softmax_columns changes fewer than two cells of weights"
};

// The first reason `model` (computed into `trace`) is not a good exercise, or
// nullopt when it is one.
std::optional<ExerciseFlaw> exercise_flaw(const Model& model, const Trace& trace);

// FNV-1a, 64 bits, over the bytes of `bytes`: start from 14695981039346656037;
// for each byte, XOR it in, then multiply by 1099511628211 (modulo 2^64).
std::uint64_t fnv1a_64(std::string_view bytes);

// The seed of draw `draw` (1, 2, …) for student `id`: fnv1a_64 of the ID's
// UTF-8 bytes followed by '#' and the draw number in decimal ("alice#1").
// Fixed forever: a teacher who writes an ID again, with any version of qkv on
// any machine, gets the same exercise.
std::uint64_t student_seed(std::string_view id, int draw);

}  // namespace qkv::checking
