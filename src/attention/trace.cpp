#include "attention/trace.hpp"

#include <algorithm>

namespace qkv {

const Step* Trace::find(StepId id, int head) const {
    for (const auto& step : steps) {
        if (step.id == id && step.head == head) {
            return &step;
        }
    }
    return nullptr;
}

const Step* Trace::find(std::string_view name, int head) const {
    const auto id = find_step(name);
    return id ? find(*id, head) : nullptr;
}

int Trace::number(StepId id) const {
    const auto found = std::find(numbering.begin(), numbering.end(), id);
    return found == numbering.end() ? 0 : static_cast<int>(found - numbering.begin()) + 1;
}

Trace Trace::header() const {
    Trace copy;
    copy.title = title;
    copy.description = description;
    copy.tokens = tokens;
    copy.context_tokens = context_tokens;
    copy.cross = cross;
    copy.dims = dims;
    copy.scale = scale;
    copy.numbering = numbering;
    return copy;
}

}  // namespace qkv
