#include "attention/trace.hpp"

namespace qkv {

bool is_step_id(std::string_view id) { return step_order(id) != 0; }

int step_order(std::string_view id) {
    int position = 1;
    for (const auto step : k_step_ids) {
        if (step == id) {
            return position;
        }
        ++position;
    }
    return 0;
}

bool is_per_head_step(std::string_view id) {
    return id == "queries" || id == "keys" || id == "values" || id == "scores" || id == "scaled_scores" ||
           id == "masked_scores" || id == "weights" || id == "head_output";
}

std::vector<std::string> step_id_names() {
    std::vector<std::string> names;
    for (const auto step : k_step_ids) {
        names.emplace_back(step);
    }
    return names;
}

std::string step_id_list() {
    std::string list;
    for (const auto step : k_step_ids) {
        list += (list.empty() ? "" : ", ") + std::string(step);
    }
    return list;
}

const Step* Trace::find(std::string_view id, int head) const {
    for (const auto& step : steps) {
        if (step.id == id && step.head == head) {
            return &step;
        }
    }
    return nullptr;
}

}  // namespace qkv
