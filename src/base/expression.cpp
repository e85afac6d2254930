// A recursive-descent reader of the arithmetic a learner writes as an answer:
//   sum     = product {("+" | "-") product}
//   product = unary {("*" | "/") unary}
//   unary   = ("+" | "-") unary | power     (-2^2 is -4, as on paper)
//   power   = primary ["^" unary]           (right to left: 2^3^2 is 2^9; 2^-1 is 0.5)
//   primary = number | "e" | "(" sum ")" | function "(" sum ")" | "√" primary
#include "base/expression.hpp"

#include "base/parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace qkv {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

class Reader {
public:
    explicit Reader(std::string_view text) : m_text(text) {}

    std::optional<WrittenValue> read() {
        double value = 0.0;
        if (!sum(value, 0)) {
            return std::nullopt;
        }
        skip_spaces();
        if (m_at != m_text.size() || !std::isfinite(value)) {
            return std::nullopt;
        }
        return WrittenValue{value, std::max(m_decimals, ending_decimals(value))};
    }

private:
    std::string_view m_text;
    std::size_t m_at = 0;
    int m_decimals = 0;  // the most decimals of any number read

    // The decimals `value` ends within, up to 4 (-1 when it runs on).
    static int ending_decimals(double value) {
        double scale = 1.0;
        for (int decimals = 0; decimals <= 4; ++decimals, scale *= 10.0) {
            const double scaled = value * scale;
            if (std::fabs(scaled - std::round(scaled)) <= 1e-9 * std::max(1.0, std::fabs(scaled))) {
                return decimals;
            }
        }
        return -1;
    }

    void skip_spaces() {
        while (m_at < m_text.size() && (m_text[m_at] == ' ' || m_text[m_at] == '\t')) {
            ++m_at;
        }
    }

    // The next symbol is one of `spellings`: step over it.
    bool take(std::initializer_list<std::string_view> spellings) {
        skip_spaces();
        for (const std::string_view spelling : spellings) {
            if (m_text.substr(m_at, spelling.size()) == spelling) {
                m_at += spelling.size();
                return true;
            }
        }
        return false;
    }

    bool sum(double& value, int depth) {
        if (!product(value, depth)) {
            return false;
        }
        for (;;) {
            const bool plus = take({"+"});
            if (!plus && !take({"-", "−"})) {
                return true;
            }
            double right = 0.0;
            if (!product(right, depth)) {
                return false;
            }
            value = plus ? value + right : value - right;
        }
    }

    bool product(double& value, int depth) {
        if (!unary(value, depth)) {
            return false;
        }
        for (;;) {
            skip_spaces();
            if (m_text.substr(m_at, 2) == "**") {
                return true;  // a power, which power() reads
            }
            const bool times = take({"*", "×", "·", "⋅"});
            if (!times && !take({"/", "÷"})) {
                return true;
            }
            double right = 0.0;
            if (!unary(right, depth)) {
                return false;
            }
            value = times ? value * right : value / right;
        }
    }

    bool unary(double& value, int depth) {
        if (depth >= k_max_expression_depth) {
            return false;
        }
        if (take({"+"})) {
            return unary(value, depth + 1);
        }
        if (take({"-", "−"})) {
            if (!unary(value, depth + 1)) {
                return false;
            }
            value = -value;
            return true;
        }
        return power(value, depth);
    }

    bool power(double& value, int depth) {
        if (!primary(value, depth)) {
            return false;
        }
        if (!take({"^", "**"})) {
            return true;
        }
        double exponent = 0.0;
        if (!unary(exponent, depth + 1)) {
            return false;
        }
        value = std::pow(value, exponent);
        return true;
    }

    bool primary(double& value, int depth) {
        skip_spaces();
        if (m_at >= m_text.size() || depth >= k_max_expression_depth) {
            return false;
        }
        if (is_digit(m_text[m_at]) || m_text[m_at] == '.') {
            return number(value);
        }
        if (take({"("})) {
            return sum(value, depth + 1) && take({")"});
        }
        if (take({"√"})) {
            if (!primary(value, depth + 1)) {
                return false;
            }
            value = std::sqrt(value);
            return true;
        }
        std::size_t end = m_at;
        while (end < m_text.size() && is_letter(m_text[end])) {
            ++end;
        }
        const std::string_view name = m_text.substr(m_at, end - m_at);
        m_at = end;
        if (name == "e") {
            value = std::exp(1.0);
            return true;
        }
        double (*function)(double) = nullptr;
        if (name == "exp") {
            function = [](double x) { return std::exp(x); };
        } else if (name == "log" || name == "ln") {
            function = [](double x) { return std::log(x); };
        } else if (name == "sqrt") {
            function = [](double x) { return std::sqrt(x); };
        }
        if (function == nullptr || !take({"("})) {
            return false;
        }
        if (!sum(value, depth + 1) || !take({")"})) {
            return false;
        }
        value = function(value);
        return true;
    }

    // Digits with a point and an exponent, as 0.25, .5, 3. and 6.03e-06 are written.
    bool number(double& value) {
        const std::size_t start = m_at;
        std::size_t end = m_at;
        while (end < m_text.size() && is_digit(m_text[end])) {
            ++end;
        }
        int decimals = 0;
        if (end < m_text.size() && m_text[end] == '.') {
            ++end;
            while (end < m_text.size() && is_digit(m_text[end])) {
                ++end;
                ++decimals;
            }
        }
        if (end == start + 1 && m_text[start] == '.') {
            return false;  // a point alone
        }
        // an exponent only where digits follow (2e3, 2e-3), so that 2exp(1) is not 2e…
        if (end < m_text.size() && (m_text[end] == 'e' || m_text[end] == 'E')) {
            std::size_t digits = end + 1;
            if (digits < m_text.size() && (m_text[digits] == '+' || m_text[digits] == '-')) {
                ++digits;
            }
            const std::size_t first_digit = digits;
            int exponent = 0;
            while (digits < m_text.size() && is_digit(m_text[digits])) {
                exponent = std::min(exponent * 10 + (m_text[digits] - '0'), 1000);
                ++digits;
            }
            if (digits > first_digit) {
                decimals = std::max(0, m_text[end + 1] == '-' ? decimals + exponent : decimals - exponent);
                end = digits;
            }
        }
        const auto [parsed_end, error] = parse_double(m_text.data() + start, m_text.data() + end, value);
        if (error != std::errc() || parsed_end != m_text.data() + end) {
            return false;
        }
        m_at = end;
        m_decimals = std::max(m_decimals, decimals);
        return true;
    }
};

}  // namespace

std::optional<WrittenValue> read_expression(std::string_view text) {
    if (text.size() > k_max_expression_size) {
        return std::nullopt;
    }
    return Reader(text).read();
}

std::string decimal_comma_in(std::string_view text) {
    const std::string_view minus = "−";
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
        if (text[i] != ',' || !is_digit(text[i - 1]) || !is_digit(text[i + 1])) {
            continue;
        }
        std::size_t start = i;
        while (start > 0 && (is_digit(text[start - 1]) || text[start - 1] == '.')) {
            --start;
        }
        if (start > 0 && (text[start - 1] == '-' || text[start - 1] == '+')) {
            --start;
        } else if (start >= minus.size() && text.substr(start - minus.size(), minus.size()) == minus) {
            start -= minus.size();
        }
        std::size_t end = i + 1;
        while (end < text.size() && is_digit(text[end])) {
            ++end;
        }
        return std::string(text.substr(start, end - start));
    }
    return "";
}

std::string with_point(std::string_view comma) {
    std::string text(comma);
    std::replace(text.begin(), text.end(), ',', '.');
    return text;
}

}  // namespace qkv
