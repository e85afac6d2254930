// What the files of check's catalogue share (catalogue.hpp): the rows of each
// stage, in the order of the steps, which catalogue.cpp puts together.
#pragma once

#include "check/catalogue.hpp"

#include <span>

namespace qkv::checking {

// mistakes_projections.cpp: the encoded inputs, the projections, RoPE.
std::span<const MistakeRow> projection_mistakes();
// mistakes_scores.cpp: the scores, scaling, ALiBi, the mask, the softmax.
std::span<const MistakeRow> score_mistakes();
// mistakes_output.cpp: the weighted sum, the heads, the output.
std::span<const MistakeRow> output_mistakes();
// mistakes_backward.cpp: the backward pass.
std::span<const MistakeRow> backward_mistakes();

}  // namespace qkv::checking
