#include "render/latex_symbols.hpp"

#include "render/latex.hpp"
#include "render/table.hpp"

namespace qkv {

namespace {

struct Symbol {
    char32_t code;
    const char* tex;  // in math
};
constexpr Symbol k_symbols[] = {
    {0x2113, "\\ell"}, {0x2218, "\\circ"}, {0x2308, "\\lceil"}, {0x2309, "\\rceil"},
    {0x2713, "\\checkmark"},  // amssymb
    {0x2717, "\\boxtimes"},  // amssymb: a ballot box with X, not the multiplication sign
};

const char* symbol_tex(char32_t code) {
    for (const auto& [symbol, tex] : k_symbols) {
        if (symbol == code) {
            return tex;
        }
    }
    return nullptr;
}

// A superscript digit's value ("¹" → '1'), or 0 for any other code point.
char superscript_digit(char32_t code) {
    switch (code) {
        case 0x2070: return '0';
        case 0x00B9: return '1';
        case 0x00B2: return '2';
        case 0x00B3: return '3';
        default: return code >= 0x2074 && code <= 0x2079 ? static_cast<char>('4' + (code - 0x2074)) : 0;
    }
}
// A subscript digit's value ("₁" → '1'), or 0.
char subscript_digit(char32_t code) {
    return code >= 0x2080 && code <= 0x2089 ? static_cast<char>('0' + (code - 0x2080)) : 0;
}

// The text cut at each symbol above and at each run of superscript or
// subscript digits ("e¹⁰" → "e$^{10}$", one exponent, not two): the runs
// between them through `escape`, the symbols as math.
template <typename Escape>
std::string escape_with_symbols(const std::string& text, const Escape& escape) {
    std::string out;
    std::string run;
    for (std::size_t at = 0; at < text.size();) {
        const auto [code, length] = decode_code_point(text, at);
        const char* tex = symbol_tex(code);
        if (tex != nullptr) {
            out += escape(run) + "$" + tex + "$";
            run.clear();
            at += length;
            continue;
        }
        for (const auto digit : {superscript_digit, subscript_digit}) {
            if (digit(code) == 0) {
                continue;
            }
            std::string digits;
            while (at < text.size() && digit(decode_code_point(text, at).first) != 0) {
                const auto [next, next_length] = decode_code_point(text, at);
                digits += digit(next);
                at += next_length;
            }
            out += escape(run) + (digit == superscript_digit ? "$^{" : "$_{") + digits + "}$";
            run.clear();
            break;
        }
        if (superscript_digit(code) == 0 && subscript_digit(code) == 0) {
            run.append(text, at, length);
            at += length;
        }
    }
    return out + escape(run);
}

}  // namespace

std::string tex_escape_all(const std::string& text) {
    return escape_with_symbols(text, [](const std::string& run) { return tex_escape(run); });
}

std::string tex_prose_all(const std::string& text) {
    return escape_with_symbols(text, [](const std::string& run) { return tex_prose(run); });
}

std::string tex_break_underscores(const std::string& latex) {
    std::string out;
    for (std::size_t at = latex.find("\\_"), from = 0;; at = latex.find("\\_", from)) {
        if (at == std::string::npos) {
            return out + latex.substr(from);
        }
        out += latex.substr(from, at + 2 - from) + "\\allowbreak{}";
        from = at + 2;
    }
}

std::string tex_spell_leftovers(const std::string& latex) {
    std::string out;
    for (std::size_t at = 0; at < latex.size();) {
        const auto [code, length] = decode_code_point(latex, at);
        out += code < 0x80 ? latex.substr(at, length) : tex_escape_all(latex.substr(at, length));
        at += length;
    }
    return out;
}

std::string latex_begin_with_symbols(bool standalone, const std::string& what) {
    std::string begin = latex_begin(standalone, what);
    const std::size_t document = begin.find("\\begin{document}");
    if (standalone && begin.find("amssymb") == std::string::npos && document != std::string::npos) {
        begin.insert(document, "\\usepackage{amssymb}\n");
    }
    return begin;
}

}  // namespace qkv
