// Text as pure ASCII LaTeX: Unicode spelt with LaTeX's own commands
// (tex_escape), numbers as math (tex_number), and prose whose names (W_Q,
// d_k, √d_k, Qᵀ) are set as math (tex_prose).
#include "render/latex.hpp"
#include "render/html.hpp"
#include "render/table.hpp"

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace qkv {

namespace {

// ── Unicode as pure ASCII LaTeX ─────────────────────────────────────────────
// pdflatex reads the output with the document's own input encoding, and the
// fragment may be pasted into a document set in T1 with Latin Modern or in
// plain OT1 Computer Modern: so nothing but ASCII is written. Accented Latin
// letters become accent macros that OT1 has (\'e, \v{s}, \ss{}, \l{}), Greek
// becomes math, common symbols get their macro, and what OT1 cannot draw
// (ogonek, eth, thorn, eng, CJK, …) becomes "?".

// U+00A0 … U+017F, indexed by code point − 0xA0; "" = "?".
constexpr const char* k_latin[] = {
    // A0: nbsp ¡ ¢ £ ¤ ¥ ¦ § ¨ © ª « ¬ soft-hyphen ® ¯
    "~", "!`", "\\textcent{}", "$\\pounds$", "\\textcurrency{}", "\\textyen{}", "\\textbrokenbar{}", "$\\S$",
    "\\\"{}", "\\copyright{}", "\\textsuperscript{a}", "$\\ll$", "$\\neg$", "\\-", "\\textregistered{}", "\\={}",
    // B0: ° ± ² ³ ´ µ ¶ · ¸ ¹ º » ¼ ½ ¾ ¿
    "$^{\\circ}$", "$\\pm$", "$^{2}$", "$^{3}$", "\\'{}", "$\\mu$", "$\\P$", "$\\cdot$",
    "\\c{}", "$^{1}$", "\\textsuperscript{o}", "$\\gg$", "$\\frac{1}{4}$", "$\\frac{1}{2}$", "$\\frac{3}{4}$", "?`",
    // C0: À Á Â Ã Ä Å Æ Ç È É Ê Ë Ì Í Î Ï
    "\\`{A}", "\\'{A}", "\\^{A}", "\\~{A}", "\\\"{A}", "\\AA{}", "\\AE{}", "\\c{C}",
    "\\`{E}", "\\'{E}", "\\^{E}", "\\\"{E}", "\\`{I}", "\\'{I}", "\\^{I}", "\\\"{I}",
    // D0: Ð Ñ Ò Ó Ô Õ Ö × Ø Ù Ú Û Ü Ý Þ ß
    "", "\\~{N}", "\\`{O}", "\\'{O}", "\\^{O}", "\\~{O}", "\\\"{O}", "$\\times$",
    "\\O{}", "\\`{U}", "\\'{U}", "\\^{U}", "\\\"{U}", "\\'{Y}", "", "\\ss{}",
    // E0: à á â ã ä å æ ç è é ê ë ì í î ï
    "\\`{a}", "\\'{a}", "\\^{a}", "\\~{a}", "\\\"{a}", "\\aa{}", "\\ae{}", "\\c{c}",
    "\\`{e}", "\\'{e}", "\\^{e}", "\\\"{e}", "\\`{\\i}", "\\'{\\i}", "\\^{\\i}", "\\\"{\\i}",
    // F0: ð ñ ò ó ô õ ö ÷ ø ù ú û ü ý þ ÿ
    "", "\\~{n}", "\\`{o}", "\\'{o}", "\\^{o}", "\\~{o}", "\\\"{o}", "$\\div$",
    "\\o{}", "\\`{u}", "\\'{u}", "\\^{u}", "\\\"{u}", "\\'{y}", "", "\\\"{y}",
    // 100: Ā ā Ă ă Ą ą Ć ć Ĉ ĉ Ċ ċ Č č Ď ď
    "\\={A}", "\\={a}", "\\u{A}", "\\u{a}", "", "", "\\'{C}", "\\'{c}",
    "\\^{C}", "\\^{c}", "\\.{C}", "\\.{c}", "\\v{C}", "\\v{c}", "\\v{D}", "\\v{d}",
    // 110: Đ đ Ē ē Ĕ ĕ Ė ė Ę ę Ě ě Ĝ ĝ Ğ ğ
    "", "", "\\={E}", "\\={e}", "\\u{E}", "\\u{e}", "\\.{E}", "\\.{e}",
    "", "", "\\v{E}", "\\v{e}", "\\^{G}", "\\^{g}", "\\u{G}", "\\u{g}",
    // 120: Ġ ġ Ģ ģ Ĥ ĥ Ħ ħ Ĩ ĩ Ī ī Ĭ ĭ Į į
    "\\.{G}", "\\.{g}", "\\c{G}", "\\c{g}", "\\^{H}", "\\^{h}", "", "$\\hbar$",
    "\\~{I}", "\\~{\\i}", "\\={I}", "\\={\\i}", "\\u{I}", "\\u{\\i}", "", "",
    // 130: İ ı Ĳ ĳ Ĵ ĵ Ķ ķ ĸ Ĺ ĺ Ļ ļ Ľ ľ Ŀ
    "\\.{I}", "\\i{}", "\\IJ{}", "\\ij{}", "\\^{J}", "\\^{\\j}", "\\c{K}", "\\c{k}",
    "", "\\'{L}", "\\'{l}", "\\c{L}", "\\c{l}", "\\v{L}", "\\v{l}", "L$\\cdot$",
    // 140: ŀ Ł ł Ń ń Ņ ņ Ň ň ŉ Ŋ ŋ Ō ō Ŏ ŏ
    "l$\\cdot$", "\\L{}", "\\l{}", "\\'{N}", "\\'{n}", "\\c{N}", "\\c{n}", "\\v{N}",
    "\\v{n}", "'n", "", "", "\\={O}", "\\={o}", "\\u{O}", "\\u{o}",
    // 150: Ő ő Œ œ Ŕ ŕ Ŗ ŗ Ř ř Ś ś Ŝ ŝ Ş ş
    "\\H{O}", "\\H{o}", "\\OE{}", "\\oe{}", "\\'{R}", "\\'{r}", "\\c{R}", "\\c{r}",
    "\\v{R}", "\\v{r}", "\\'{S}", "\\'{s}", "\\^{S}", "\\^{s}", "\\c{S}", "\\c{s}",
    // 160: Š š Ţ ţ Ť ť Ŧ ŧ Ũ ũ Ū ū Ŭ ŭ Ů ů
    "\\v{S}", "\\v{s}", "\\c{T}", "\\c{t}", "\\v{T}", "\\v{t}", "", "",
    "\\~{U}", "\\~{u}", "\\={U}", "\\={u}", "\\u{U}", "\\u{u}", "\\r{U}", "\\r{u}",
    // 170: Ű ű Ų ų Ŵ ŵ Ŷ ŷ Ÿ Ź ź Ż ż Ž ž ſ
    "\\H{U}", "\\H{u}", "", "", "\\^{W}", "\\^{w}", "\\^{Y}", "\\^{y}",
    "\\\"{Y}", "\\'{Z}", "\\'{z}", "\\.{Z}", "\\.{z}", "\\v{Z}", "\\v{z}", "s",
};
static_assert(std::size(k_latin) == 0x180 - 0xA0);

// Greek U+0386 … U+03CE as math, indexed by code point − 0x386; "" = "?".
// Capitals that look Latin are upright Latin letters, as in Greek typesetting.
constexpr const char* k_greek[] = {
    // 386: Ά · Έ Ή Ί (38B) Ό (38D) Ύ Ώ ΐ
    "\\acute{\\mathrm{A}}", "\\cdot", "\\acute{\\mathrm{E}}", "\\acute{\\mathrm{H}}", "\\acute{\\mathrm{I}}", "",
    "\\acute{\\mathrm{O}}", "", "\\acute{\\Upsilon}", "\\acute{\\Omega}", "\\acute{\\ddot{\\iota}}",
    // 391: Α Β Γ Δ Ε Ζ Η Θ Ι Κ Λ Μ Ν Ξ Ο
    "\\mathrm{A}", "\\mathrm{B}", "\\Gamma", "\\Delta", "\\mathrm{E}", "\\mathrm{Z}", "\\mathrm{H}", "\\Theta",
    "\\mathrm{I}", "\\mathrm{K}", "\\Lambda", "\\mathrm{M}", "\\mathrm{N}", "\\Xi", "\\mathrm{O}",
    // 3A0: Π Ρ (3A2) Σ Τ Υ Φ Χ Ψ Ω Ϊ Ϋ
    "\\Pi", "\\mathrm{P}", "", "\\Sigma", "\\mathrm{T}", "\\Upsilon", "\\Phi", "\\mathrm{X}", "\\Psi", "\\Omega",
    "\\ddot{\\mathrm{I}}", "\\ddot{\\Upsilon}",
    // 3AC: ά έ ή ί ΰ
    "\\acute{\\alpha}", "\\acute{\\varepsilon}", "\\acute{\\eta}", "\\acute{\\iota}", "\\acute{\\ddot{\\upsilon}}",
    // 3B1: α β γ δ ε ζ η θ ι κ λ μ ν ξ ο
    "\\alpha", "\\beta", "\\gamma", "\\delta", "\\varepsilon", "\\zeta", "\\eta", "\\theta", "\\iota", "\\kappa",
    "\\lambda", "\\mu", "\\nu", "\\xi", "o",
    // 3C0: π ρ ς σ τ υ φ χ ψ ω ϊ ϋ ό ύ ώ
    "\\pi", "\\rho", "\\varsigma", "\\sigma", "\\tau", "\\upsilon", "\\varphi", "\\chi", "\\psi", "\\omega",
    "\\ddot{\\iota}", "\\ddot{\\upsilon}", "\\acute{o}", "\\acute{\\upsilon}", "\\acute{\\omega}",
};
static_assert(std::size(k_greek) == 0x3CF - 0x386);

// Other code points qkv writes or labels commonly hold.
struct Spelling {
    char32_t code;
    const char* tex;
};
constexpr Spelling k_other[] = {
    {0x03D1, "$\\vartheta$"}, {0x03D5, "$\\phi$"},    {0x03D6, "$\\varpi$"},    {0x03F1, "$\\varrho$"},
    {0x03F5, "$\\epsilon$"},  {0x1D40, "$^{\\top}$"}, {0x2009, "\\,"},          {0x2013, "--"},
    {0x2014, "---"},          {0x2018, "`"},          {0x2019, "'"},            {0x201C, "``"},
    {0x201D, "''"},           {0x2022, "$\\bullet$"}, {0x2026, "\\ldots{}"},    {0x202F, "\\,"},
    {0x2032, "$'$"},          {0x2070, "$^{0}$"},     {0x2074, "$^{4}$"},       {0x2075, "$^{5}$"},
    {0x2076, "$^{6}$"},       {0x2077, "$^{7}$"},     {0x2078, "$^{8}$"},       {0x2079, "$^{9}$"},
    {0x2080, "$_0$"},         {0x2081, "$_1$"},       {0x2082, "$_2$"},         {0x2083, "$_3$"},
    {0x2084, "$_4$"},         {0x2085, "$_5$"},       {0x2086, "$_6$"},         {0x2087, "$_7$"},
    {0x2088, "$_8$"},         {0x2089, "$_9$"},       {0x2190, "$\\leftarrow$"}, {0x2192, "$\\rightarrow$"},
    {0x2193, "$\\downarrow$"}, {0x2202, "$\\partial$"}, {0x2207, "$\\nabla$"},  {0x2208, "$\\in$"},
    {0x2211, "$\\Sigma$"},    {0x2212, "$-$"},        {0x221A, "$\\surd$"},     {0x221E, "$\\infty$"},
    {0x2248, "$\\approx$"},   {0x2260, "$\\neq$"},    {0x2264, "$\\le$"},       {0x2265, "$\\ge$"},
    {0x22C5, "$\\cdot$"},       {0x2113, "$\\ell$"},    {0x2218, "$\\circ$"},     {0x2308, "$\\lceil$"},
    {0x2309, "$\\rceil$"},
    // check's verdicts (amssymb): a ballot box with X, not a multiplication sign, for "wrong"
    {0x2713, "$\\checkmark$"}, {0x2717, "$\\boxtimes$"},
};

// A superscript or subscript digit's value ("¹" → '1', "₁" → '1'), or 0 for any other code point.
char superscript_digit(char32_t code) {
    switch (code) {
        case 0x2070: return '0';
        case 0x00B9: return '1';
        case 0x00B2: return '2';
        case 0x00B3: return '3';
        default: return code >= 0x2074 && code <= 0x2079 ? static_cast<char>('4' + (code - 0x2074)) : 0;
    }
}
char subscript_digit(char32_t code) {
    return code >= 0x2080 && code <= 0x2089 ? static_cast<char>('0' + (code - 0x2080)) : 0;
}

// Combining accents after an ASCII letter (decomposed text: e + U+0301).
constexpr Spelling k_combining[] = {
    {0x0300, "\\`"}, {0x0301, "\\'"}, {0x0302, "\\^"}, {0x0303, "\\~"}, {0x0304, "\\="}, {0x0306, "\\u"},
    {0x0307, "\\."}, {0x0308, "\\\""}, {0x030A, "\\r"}, {0x030B, "\\H"}, {0x030C, "\\v"}, {0x0327, "\\c"},
};

// The LaTeX for one code point outside ASCII; "?" when OT1 cannot draw it.
std::string tex_code_point(char32_t code) {
    if (code >= 0xA0 && code < 0x180) {
        const std::string_view tex = k_latin[code - 0xA0];
        return tex.empty() ? "?" : std::string(tex);
    }
    if (code >= 0x386 && code < 0x3CF) {
        const std::string_view tex = k_greek[code - 0x386];
        return tex.empty() ? "?" : "$" + std::string(tex) + "$";
    }
    for (const auto& [other, tex] : k_other) {
        if (other == code) {
            return tex;
        }
    }
    return "?";
}

}  // namespace

// Text-mode LaTeX for labels and prose, pure ASCII: the special characters
// escaped, everything outside ASCII spelled as above, neighbouring math
// joined into one formula ("$\alpha\beta$").
std::string tex_escape(const std::string& text) {
    std::string out;
    bool math_open = false;  // out ends with a formula's closing "$"
    const auto add = [&](const std::string& tex) {
        const bool math = tex.size() > 2 && tex.front() == '$' && tex.back() == '$';
        if (math && math_open) {
            out.pop_back();
            // "\alpha" then "o" must not read as the command \alphao
            const bool letters = std::isalpha(static_cast<unsigned char>(out.back())) != 0 &&
                                 std::isalpha(static_cast<unsigned char>(tex[1])) != 0;
            out += (letters ? " " : "") + tex.substr(1);
        } else {
            out += tex;
        }
        math_open = math;
    };
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            // a letter followed by a combining accent: the accent macro around it
            if (std::isalpha(byte) != 0 && i + 1 < text.size()) {
                const auto [next, length] = decode_code_point(text, i + 1);
                const auto code = next;  // clang 14 cannot capture a structured binding
                const auto accent = std::find_if(std::begin(k_combining), std::end(k_combining),
                                                 [code](const Spelling& s) { return s.code == code; });
                if (accent != std::end(k_combining)) {
                    const std::string letter = text[i] == 'i' ? "\\i" : text[i] == 'j' ? "\\j" : std::string(1, text[i]);
                    add(std::string(accent->tex) + "{" + letter + "}");
                    i += 1 + length;
                    continue;
                }
            }
            switch (text[i]) {
                case '\\': add("\\textbackslash{}"); break;
                case '{': add("\\{"); break;
                case '}': add("\\}"); break;
                case '$': add("\\$"); break;
                case '&': add("\\&"); break;
                case '#': add("\\#"); break;
                case '%': add("\\%"); break;
                case '_': add("\\_"); break;
                case '^': add("\\textasciicircum{}"); break;
                case '~': add("\\textasciitilde{}"); break;
                case '<': add("$<$"); break;
                case '>': add("$>$"); break;
                case '|': add("$|$"); break;
                // "--decode" as two hyphens, not TeX's en dash
                case '-': add(i + 1 < text.size() && text[i + 1] == '-' ? "-{}" : "-"); break;
                default: add(std::string(1, byte < 0x20 || byte == 0x7F ? ' ' : text[i]));
            }
            ++i;
            continue;
        }
        const auto [code, length] = decode_code_point(text, i);
        // a run of superscript or subscript digits as one exponent or index: e¹⁰ is e$^{10}$, not two
        if (superscript_digit(code) != 0 || subscript_digit(code) != 0) {
            const auto digit = superscript_digit(code) != 0 ? superscript_digit : subscript_digit;
            std::string digits;
            while (i < text.size() && digit(decode_code_point(text, i).first) != 0) {
                const auto [next, next_length] = decode_code_point(text, i);
                digits += digit(next);
                i += next_length;
            }
            add(std::string(digit == superscript_digit ? "$^{" : "$_{") + digits + "}$");
            continue;
        }
        // "−∞" as one formula, so that the minus is unary
        if (code == 0x2212 && i + length < text.size() && decode_code_point(text, i + length).first == 0x221E) {
            add("$-\\infty$");
            i += length + decode_code_point(text, i + length).second;
            continue;
        }
        add(tex_code_point(code));
        i += length;
    }
    return out;
}

std::string tex_number(const std::string& text) {
    if (text == "…" || text == "...") {
        return "$\\cdots$";
    }
    if (text == "−∞" || text == "-inf") {
        return "$-\\infty$";
    }
    return "$" + text + "$";
}

namespace {

// Letters, digits and "_", which continue a word.
bool word_char(char32_t code) {
    return code < 0x80 && (std::isalnum(static_cast<int>(code)) != 0 || code == '_');
}
bool greek_letter(char32_t code) { return code >= 0x391 && code <= 0x3C9; }

// Appends LaTeX to `out`, joining a formula to one just before it ("$a$$b$" is "$ab$").
void append_tex(std::string& out, const std::string& tex) {
    const bool math_before = out.size() >= 2 && out.back() == '$' && out[out.size() - 2] != '\\';
    if (math_before && tex.size() > 2 && tex.front() == '$') {
        out.pop_back();
        const bool letters = std::isalpha(static_cast<unsigned char>(out.back())) != 0 &&
                             std::isalpha(static_cast<unsigned char>(tex[1])) != 0;
        out += (letters ? " " : "") + tex.substr(1);
        return;
    }
    out += tex;
}

// The name at text[at] as math, when there is one: a letter (Latin or Greek)
// at the start of a word, then "_" and a subscript of letters and digits, or
// "ᵀ", or both: "W_Q" → "W_{Q}", "d_model" → "d_{\mathrm{model}}", "Kᵀ" →
// "K^\top". Sets `length` to the bytes it takes.
std::optional<std::string> math_name(const std::string& text, std::size_t at, std::size_t& length) {
    const auto [letter, letter_length] = decode_code_point(text, at);
    const bool latin = letter < 0x80 && std::isalpha(static_cast<int>(letter)) != 0;
    if (!latin && !greek_letter(letter)) {
        return std::nullopt;
    }
    std::string math = latin ? std::string(1, static_cast<char>(letter)) : tex_code_point(letter);
    if (!latin) {
        math = math.substr(1, math.size() - 2);  // "$\theta$" → "\theta"
    }
    std::size_t end = at + letter_length;
    bool named = false;
    if (end + 1 < text.size() && text[end] == '_' && std::isalnum(static_cast<unsigned char>(text[end + 1])) != 0) {
        std::size_t sub_end = end + 1;
        while (sub_end < text.size() && std::isalnum(static_cast<unsigned char>(text[sub_end])) != 0) {
            ++sub_end;
        }
        if (sub_end < text.size() && text[sub_end] == '_') {
            return std::nullopt;  // a_b_c: an identifier, not a name with a subscript
        }
        const std::string sub = text.substr(end + 1, sub_end - end - 1);
        const bool word = sub.size() > 1 && std::all_of(sub.begin(), sub.end(), [](char c) {
                              return std::isalpha(static_cast<unsigned char>(c)) != 0;
                          });
        math += "_{" + (word ? "\\mathrm{" + sub + "}" : sub) + "}";
        end = sub_end;
        named = true;
    }
    if (end < text.size() && decode_code_point(text, end).first == 0x1D40) {  // ᵀ
        math += "^\\top";
        end += decode_code_point(text, end).second;
        named = true;
    }
    if (!named || (end < text.size() && word_char(decode_code_point(text, end).first))) {
        return std::nullopt;
    }
    length = end - at;
    return math;
}

// A word with an index, as a formula writes one: "weight_j" → "\mathrm{weight}_{j}"
// (a word of two or more small letters, one letter or digits after the
// underscore); nothing for an identifier ("head_output", "w_q_k").
std::optional<std::string> indexed_word(const std::string& text, std::size_t at, std::size_t& length) {
    const auto lower = [&](std::size_t k) {
        return k < text.size() && std::islower(static_cast<unsigned char>(text[k])) != 0;
    };
    const auto digit = [&](std::size_t k) {
        return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])) != 0;
    };
    std::size_t end = at;
    while (lower(end)) {
        ++end;
    }
    if (end - at < 2 || end >= text.size() || text[end] != '_') {
        return std::nullopt;
    }
    std::size_t index_end = end + 1;
    if (lower(index_end)) {
        ++index_end;
    } else {
        while (digit(index_end)) {
            ++index_end;
        }
    }
    if (index_end == end + 1 || (index_end < text.size() && word_char(decode_code_point(text, index_end).first))) {
        return std::nullopt;
    }
    length = index_end - at;
    return "\\mathrm{" + text.substr(at, end - at) + "}_{" + text.substr(end + 1, index_end - end - 1) + "}";
}

// An exponent as math: "−2k/d_k" → "-2k/d_{k}"; nothing when it holds
// anything but letters, digits, names with subscripts and arithmetic.
std::optional<std::string> exponent_math(const std::string& text) {
    std::string math;
    for (std::size_t i = 0; i < text.size();) {
        const auto [code, length] = decode_code_point(text, i);
        if (code == 0x2212 || code == '-') {
            math += '-';
        } else if (code == 0xB7) {  // ·
            math += "\\cdot ";
        } else if (greek_letter(code)) {
            const std::string greek = tex_code_point(code);  // "$\theta$"
            math += greek.substr(1, greek.size() - 2) + " ";
        } else if (code == '_' && i + 1 < text.size() && std::isalnum(static_cast<unsigned char>(text[i + 1])) != 0) {
            std::size_t end = i + 1;
            while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])) != 0) {
                ++end;
            }
            const std::string sub = text.substr(i + 1, end - i - 1);
            math += "_{" + (sub.size() > 1 && std::isalpha(static_cast<unsigned char>(sub[0])) != 0 ? "\\mathrm{" + sub + "}" : sub) + "}";
            i = end;
            continue;
        } else if (code < 0x80 && (std::isalnum(static_cast<int>(code)) != 0 || std::string_view("/+() .").find(static_cast<char>(code)) != std::string_view::npos)) {
            math += static_cast<char>(code);
        } else {
            return std::nullopt;
        }
        i += length;
    }
    return math;
}

// The exponent after a "^" at text[at]: "(…)" up to its closing parenthesis,
// or a signed run of letters and digits ("-4"). Sets `length` to the bytes it
// takes, the "^" included.
std::optional<std::string> exponent_at(const std::string& text, std::size_t at, std::size_t& length) {
    std::size_t from = at + 1;
    std::size_t end = from;
    std::string exponent;
    if (from < text.size() && text[from] == '(') {
        end = text.find(')', from);
        if (end == std::string::npos || end == from + 1) {
            return std::nullopt;
        }
        exponent = text.substr(from + 1, end - from - 1);
        ++end;
    } else {
        if (text.compare(end, 3, "−") == 0) {
            end += 3;
        } else if (end < text.size() && text[end] == '-') {
            ++end;
        }
        const std::size_t digits = end;
        while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])) != 0) {
            ++end;
        }
        if (end == digits) {
            return std::nullopt;
        }
        exponent = text.substr(from, end - from);
    }
    length = end - at;
    return exponent_math(exponent);
}

}  // namespace

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

std::string tex_prose(const std::string& text) {
    std::string out;
    std::string plain;  // text not yet escaped
    const auto flush = [&] {
        if (!plain.empty()) {
            append_tex(out, tex_escape(plain));
            plain.clear();
        }
    };
    bool word_start = true;
    for (std::size_t i = 0; i < text.size();) {
        const auto [code, length] = decode_code_point(text, i);
        std::size_t name_length = 0;
        if (word_start && code == 0x221A) {  // √ and what it takes the root of
            const std::size_t at = i + length;
            if (const auto name = at < text.size() ? math_name(text, at, name_length) : std::nullopt) {
                flush();
                append_tex(out, "$\\sqrt{" + *name + "}$");
                i = at + name_length;
                word_start = false;
                continue;
            }
        }
        if (word_start && code == 0x221A) {  // √2
            std::size_t end = i + length;
            while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) != 0 ||
                                         (text[end] == '.' && end + 1 < text.size() &&
                                          std::isdigit(static_cast<unsigned char>(text[end + 1])) != 0))) {
                ++end;
            }
            if (end > i + length && (end == text.size() || !word_char(decode_code_point(text, end).first))) {
                flush();
                append_tex(out, "$\\sqrt{" + text.substr(i + length, end - i - length) + "}$");
                i = end;
                word_start = false;
                continue;
            }
        }
        if (code == '^') {  // 10000^(−2k/d_k), 2^-4: the word before it is the base
            std::size_t base = plain.size();
            while (base > 0 && std::isalnum(static_cast<unsigned char>(plain[base - 1])) != 0) {
                --base;
            }
            std::size_t exponent_length = 0;
            const auto exponent = base < plain.size() ? exponent_at(text, i, exponent_length) : std::nullopt;
            if (exponent) {
                const std::string base_text = plain.substr(base);
                plain.erase(base);
                flush();
                append_tex(out, "$" + base_text + "^{" + *exponent + "}$");
                i += exponent_length;
                word_start = false;
                continue;
            }
        }
        // a gradient's name, "d" before a capital: dQ, dX, dW_Q
        if (word_start && code == 'd' && i + 1 < text.size() && std::isupper(static_cast<unsigned char>(text[i + 1])) != 0) {
            std::string name;
            if (const auto subscripted = math_name(text, i + 1, name_length)) {
                name = *subscripted;
            } else if (i + 2 == text.size() || !word_char(decode_code_point(text, i + 2).first)) {
                name = std::string(1, text[i + 1]);
                name_length = 1;
            }
            if (!name.empty()) {
                flush();
                append_tex(out, "$d" + name + "$");
                i += 1 + name_length;
                word_start = false;
                continue;
            }
        }
        if (word_start) {
            auto name = math_name(text, i, name_length);
            if (!name) {
                name = indexed_word(text, i, name_length);
            }
            if (name) {
                flush();
                append_tex(out, "$" + *name + "$");
                i += name_length;
                word_start = false;
                continue;
            }
        }
        plain += text.substr(i, length);
        word_start = !word_char(code) && !greek_letter(code);
        i += length;
    }
    flush();
    return out;
}

}  // namespace qkv
