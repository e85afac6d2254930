#include "model/model.hpp"

#include <cmath>

namespace qkv {

double Model::scale() const {
    switch (scale_kind) {
        case ScaleKind::sqrt_dk:
            return std::sqrt(static_cast<double>(d_k())) / (mscale() * mscale());
        case ScaleKind::none:
            return 1.0;
        case ScaleKind::divisor:
            return scale_divisor;
    }
    return 1.0;
}

double Model::mscale() const {
    // transformers' yarn_get_mscale(factor, mscale_all_dim), which is 1 for a factor of at most 1
    if (!mla || !rope || !rope->scaling || !rope->scaling->mscale_all_dim || rope->scaling->factor <= 1.0) {
        return 1.0;
    }
    return 0.1 * *rope->scaling->mscale_all_dim * std::log(rope->scaling->factor) + 1.0;
}

int Model::kv_head_of(int h) const {
    const auto H = static_cast<long>(n_heads());
    const auto G = static_cast<long>(n_kv_heads());
    return static_cast<int>((static_cast<long>(h) * G + H - 1) / H);
}

int Model::first_query_head(int g) const {
    // the smallest h with ⌈h·G/H⌉ = g
    const auto H = static_cast<long>(n_heads());
    const auto G = static_cast<long>(n_kv_heads());
    return static_cast<int>((static_cast<long>(g - 1) * H) / G + 1);
}

const HeadWeights& Model::kv_weights(int g) const {
    return heads.at(static_cast<std::size_t>(first_query_head(g) - 1));
}

bool Model::allows(arma::uword i, arma::uword j) const { return !mask_view(*this).blocked(i, j); }

MaskView mask_view(const Model& model) {
    MaskView view;
    view.causal = model.mask_kind == MaskKind::causal || model.mask_kind == MaskKind::window;
    view.window = model.mask_kind == MaskKind::window ? model.window : 0;
    view.matrix = model.mask_kind == MaskKind::matrix ? &model.mask : nullptr;
    view.padding = model.padding ? &*model.padding : nullptr;
    return view;
}

arma::mat Model::allowed() const {
    const MaskView view = mask_view(*this);
    arma::mat result(n(), m());
    for (arma::uword j = 0; j < m(); ++j) {
        for (arma::uword i = 0; i < n(); ++i) {
            result(i, j) = view.blocked(i, j) ? 0.0 : 1.0;
        }
    }
    return result;
}

}  // namespace qkv
