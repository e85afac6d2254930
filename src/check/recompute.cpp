#include "check/recompute.hpp"

#include "attention/attention.hpp"

#include <stdexcept>

namespace qkv::checking {

namespace {

// What the projections read: X, or X + P with positions.
StepKey query_source(const Model& model) { return model.P ? StepKey{"encoded", 0} : StepKey{"inputs", 0}; }

// What keys and values read: the context for cross-attention, else the same as the queries.
StepKey key_source(const Model& model) { return model.C ? StepKey{"context", 0} : query_source(model); }

std::optional<int> decimals_for(const Model& model, const std::string& id) {
    if (auto found = model.round.find(id); found != model.round.end()) {
        return found->second;
    }
    if (auto all = model.round.find("*"); all != model.round.end()) {
        return all->second;
    }
    return std::nullopt;
}

const arma::mat& value_of(const Values& values, const StepKey& key) {
    const auto found = values.find(key);
    if (found == values.end() || !found->second) {
        throw std::logic_error("missing value of " + key.id);
    }
    return *found->second;
}

}  // namespace

std::vector<StepKey> dependencies(const Model& model, const StepKey& key) {
    const std::string& id = key.id;
    const int h = key.head;
    if (id == "encoded") {
        return {{"inputs", 0}, {"positional", 0}};
    }
    if (id == "queries") {
        return {query_source(model)};
    }
    if (id == "keys" || id == "values") {
        return {key_source(model)};
    }
    if (id == "scores") {
        return {{"queries", h}, {"keys", h}};
    }
    if (id == "scaled_scores") {
        return {{"scores", h}};
    }
    if (id == "masked_scores") {
        return {{"scaled_scores", h}};
    }
    if (id == "weights") {
        return {{model.masked() ? "masked_scores" : "scaled_scores", h}};
    }
    if (id == "head_output") {
        return {{"weights", h}, {"values", h}};
    }
    if (id == "concat") {
        std::vector<StepKey> heads;
        for (int head = 1; head <= static_cast<int>(model.n_heads()); ++head) {
            heads.push_back({"head_output", head});
        }
        return heads;
    }
    if (id == "output") {
        return {model.n_heads() > 1 ? StepKey{"concat", 0} : StepKey{"head_output", 1}};
    }
    return {};  // inputs, positional, context: given, not computed
}

std::optional<arma::mat> recompute(const Model& model, const StepKey& key, const Values& values) {
    const std::string& id = key.id;
    arma::mat result;
    try {
        if (id == "inputs") {
            result = model.X;
        } else if (id == "positional") {
            result = *model.P;
        } else if (id == "context") {
            result = *model.C;
        } else if (id == "encoded") {
            result = value_of(values, {"inputs", 0}) + value_of(values, {"positional", 0});
        } else if (id == "queries" || id == "keys" || id == "values") {
            const HeadWeights& head = model.heads.at(static_cast<std::size_t>(key.head - 1));
            if (id == "queries") {
                result = project(value_of(values, query_source(model)), head.W_Q, head.b_Q);
            } else if (id == "keys") {
                result = project(value_of(values, key_source(model)), head.W_K, head.b_K);
            } else {
                result = project(value_of(values, key_source(model)), head.W_V, head.b_V);
            }
        } else if (id == "scores") {
            result = scores(value_of(values, {"queries", key.head}), value_of(values, {"keys", key.head}));
        } else if (id == "scaled_scores") {
            result = value_of(values, {"scores", key.head}) / model.scale();
        } else if (id == "masked_scores") {
            result = apply_mask(value_of(values, {"scaled_scores", key.head}), model.allowed());
        } else if (id == "weights") {
            result = softmax_rows(value_of(values, dependencies(model, key).front()));
        } else if (id == "head_output") {
            result = weighted_sum(value_of(values, {"weights", key.head}), value_of(values, {"values", key.head}));
        } else if (id == "concat") {
            // (n × H·d_v): head h fills columns (h−1)·d_v … h·d_v − 1
            for (const auto& head : dependencies(model, key)) {
                result = arma::join_rows(result, value_of(values, head));
            }
        } else if (id == "output") {
            const arma::mat& source = value_of(values, dependencies(model, key).front());
            result = model.W_O ? project(source, *model.W_O, model.b_O) : source;
        } else {
            return std::nullopt;
        }
    } catch (const std::exception&) {
        // Armadillo reports products of the wrong sizes by throwing
        return std::nullopt;
    }
    if (const auto decimals = decimals_for(model, id)) {
        result = round_to(result, *decimals);
    }
    return result;
}

arma::mat softmax_columns(const arma::mat& S) {
    return softmax_rows(S.t()).t();
}

}  // namespace qkv::checking
