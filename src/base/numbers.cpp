// Numbers as text (numbers.hpp).
#include "base/numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace qkv {

namespace {

// A positive finite double as its shortest significant digits and where the
// decimal point goes: value = 0.d₁d₂… × 10^point.
struct Digits {
    char text[24] = {};  // at most 17 significant digits
    int count = 0;
    int point = 0;
};

// fmt writes the shortest digits (Dragonbox) in a layout of its own (1e-05,
// 0.0001, 1e+16); they are read back out of whichever it chose.
Digits shortest_digits(double value) {
    char buffer[64];
    char* end = fmt::format_to_n(buffer, sizeof buffer - 1, "{}", value).out;
    *end = '\0';
    int exponent = 0;
    if (char* e = std::find(buffer, end, 'e'); e != end) {
        exponent = std::atoi(e + 1);
        end = e;
    }
    Digits digits;
    bool seen_point = false;
    int before_point = 0;
    for (const char* c = buffer; c != end; ++c) {
        if (*c == '.') {
            seen_point = true;
            continue;
        }
        if (!seen_point) {
            ++before_point;
        }
        if (digits.count == 0 && *c == '0') {
            --before_point;  // a leading zero moves the point, not a digit
            continue;
        }
        digits.text[digits.count++] = *c;
    }
    while (digits.count > 0 && digits.text[digits.count - 1] == '0') {
        --digits.count;
    }
    digits.point = before_point + exponent;
    return digits;
}

char* append(char* out, const char* text, std::size_t size) {
    std::memcpy(out, text, size);
    return out + size;
}

char* append_zeros(char* out, int count) {
    for (int i = 0; i < count; ++i) {
        *out++ = '0';
    }
    return out;
}

// The digits of `d` without an exponent; `value` (positive) is what they stand
// for, written exactly when it is a whole number past its shortest digits.
char* write_fixed(char* out, const Digits& d, double value) {
    if (d.point <= 0) {
        out = append(out, "0.", 2);
        out = append_zeros(out, -d.point);
        return append(out, d.text, static_cast<std::size_t>(d.count));
    }
    if (d.point > d.count) {
        return out + std::snprintf(out, k_shortest_size, "%.0f", value);
    }
    out = append(out, d.text, static_cast<std::size_t>(d.point));
    if (d.point < d.count) {
        *out++ = '.';
        out = append(out, d.text + d.point, static_cast<std::size_t>(d.count - d.point));
    }
    return out;
}

// "-", "inf" and "nan" for what has no digits; nullptr when `value` has digits to write.
char* write_special(char*& out, double& value) {
    if (std::isnan(value)) {
        return append(out, "nan", 3);
    }
    if (std::signbit(value)) {
        *out++ = '-';
        value = -value;
    }
    if (std::isinf(value)) {
        return append(out, "inf", 3);
    }
    if (value == 0) {
        *out++ = '0';
        return out;
    }
    return nullptr;
}

}  // namespace

char* write_shortest(char* out, double value) {
    if (char* end = write_special(out, value)) {
        return end;
    }
    const Digits d = shortest_digits(value);
    // the two layouts' lengths: 0.00d…, d…d.d…, d…d00; d.d…e±XX
    const int exponent = d.point - 1;
    const int exponent_digits = std::abs(exponent) >= 100 ? 3 : 2;
    const int scientific_size = d.count + (d.count > 1 ? 1 : 0) + 2 + exponent_digits;
    const int fixed_size = d.point <= 0 ? 2 - d.point + d.count
                           : d.point >= d.count ? d.point
                                                : d.count + 1;
    if (scientific_size < fixed_size) {
        *out++ = d.text[0];
        if (d.count > 1) {
            *out++ = '.';
            out = append(out, d.text + 1, static_cast<std::size_t>(d.count - 1));
        }
        return out + std::snprintf(out, 8, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    }
    return write_fixed(out, d, value);
}

std::string shortest(double value) {
    char buffer[k_shortest_size];
    return std::string(buffer, write_shortest(buffer, value));
}

std::string shortest_fixed(double value) {
    char buffer[k_shortest_size];
    char* out = buffer;
    char* end = write_special(out, value);
    return std::string(buffer, end ? end : write_fixed(out, shortest_digits(value), value));
}

std::string readable(double value) {
    if (std::isfinite(value) && std::floor(value) == value && std::fabs(value) <= 9007199254740992.0) {
        return value == 0 ? "0" : fixed(value, 0);
    }
    return shortest(value);
}

std::string fixed(double value, int decimals) {
    return fmt::format("{:.{}f}", value, std::clamp(decimals, 0, 340));
}

std::string trimmed(double value, int decimals) {
    std::string text = fixed(value, decimals);
    if (text.find('.') != std::string::npos) {
        while (text.back() == '0') {
            text.pop_back();
        }
        if (text.back() == '.') {
            text.pop_back();
        }
    }
    return text;
}

std::string scientific(double value, int decimals) {
    return fmt::format("{:.{}e}", value, std::clamp(decimals, 0, 340));
}

}  // namespace qkv
