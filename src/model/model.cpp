#include "model/model.hpp"

#include <cmath>

namespace qkv {

double Model::scale() const {
    switch (scale_kind) {
        case ScaleKind::sqrt_dk:
            return std::sqrt(static_cast<double>(d_k()));
        case ScaleKind::none:
            return 1.0;
        case ScaleKind::divisor:
            return scale_divisor;
    }
    return 1.0;
}

arma::mat Model::allowed() const {
    arma::mat result(n(), m(), arma::fill::ones);
    if (mask_kind == MaskKind::causal) {
        // query i (0-based) may attend to keys j <= i
        for (arma::uword i = 0; i < n(); ++i) {
            for (arma::uword j = i + 1; j < m(); ++j) {
                result(i, j) = 0.0;
            }
        }
    } else if (mask_kind == MaskKind::matrix) {
        result = mask;
    }
    if (padding) {
        for (arma::uword j = 0; j < m(); ++j) {
            if ((*padding)(j) == 0.0) {
                result.col(j).zeros();
            }
        }
    }
    return result;
}

}  // namespace qkv
