// The numbers of an explanation (see numbers.hpp), through the tables' own
// number formatting (render/table.hpp).
#include "explain/numbers.hpp"
#include "attention/divisor.hpp"

#include "render/table.hpp"

namespace qkv::explaining {

std::string divisor_text(const Model& model, const Numbers& number) {
    const Divisor divisor = divisor_of(model);
    return divisor.root ? divisor.named + " = " + number(model.scale()) : divisor.named;
}

std::string decimals_text(int decimals) {
    return std::to_string(decimals) + (decimals == 1 ? " decimal" : " decimals");
}

std::string Numbers::operator()(double value) const {
    return format_number(value, m_precision, is_whole_number(value), false);
}

std::string Numbers::factor(double value) const {
    const std::string text = (*this)(value);
    return text[0] == '-' ? "(" + text + ")" : text;
}

std::string Numbers::vector(const std::vector<double>& values) const {
    std::string text = "[";
    for (std::size_t k = 0; k < values.size(); ++k) {
        text += (k == 0 ? "" : ", ") + (*this)(values[k]);
    }
    return text + "]";
}

std::string Numbers::vector(const arma::rowvec& values) const {
    return vector(std::vector<double>(values.begin(), values.end()));
}

std::string Numbers::dot_terms(const arma::rowvec& a, const arma::rowvec& b) const {
    std::string text;
    for (arma::uword k = 0; k < a.n_elem; ++k) {
        const std::string first = (*this)(a(k));
        const bool negative = first[0] == '-';
        if (k == 0) {
            text += first;
        } else {
            text += negative ? " − " + first.substr(1) : " + " + first;
        }
        text += "·" + factor(b(k));
    }
    return text;
}

}  // namespace qkv::explaining
