// A cell's working in LaTeX (`qkv explain -f latex`, the lessons): a starred
// subsection whose heading is the cell and its value, the step's formula in
// display math, and the working as lines of text with the symbols as math,
// each line a paragraph of its own that breaks at its spaces and hangs
// indented when it does not fit the line.
#include "base/numbers.hpp"
#include "render/latex.hpp"

#include <cctype>
#include <cstdio>
#include <sstream>

namespace qkv {

namespace {

// A width of `chars` characters of the text format's working, in em: the
// indentation of a line, and the operator that opens a continued sum.
std::string em(double value) { return trimmed(value, 4) + "em"; }

// A minus sign before a number written with "-" (exp(-0.7071)) as the text's
// own minus, so that it is set as math like every other.
std::string minus_signs(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool before_digit = i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0;
        const bool starts_word = i == 0 || std::isalnum(static_cast<unsigned char>(text[i - 1])) == 0;
        out += text[i] == '-' && before_digit && starts_word ? std::string("−") : std::string(1, text[i]);
    }
    return out;
}

// The text with each run of two or more spaces as the text format means it:
// before a remark in parentheses a \quad, elsewhere (padding that lines up
// the "=" of a sum) one space; every part as prose, its names as math.
std::string spaced(const std::string& text) {
    std::string out;
    std::size_t from = 0;
    for (std::size_t gap = text.find("  "); gap != std::string::npos; gap = text.find("  ", from)) {
        out += tex_prose(minus_signs(text.substr(from, gap - from)));
        from = text.find_first_not_of(' ', gap);
        if (from == std::string::npos) {
            return out;
        }
        out += text[from] == '(' ? "\\quad " : " ";
    }
    return out + tex_prose(minus_signs(text.substr(from)));
}

// `"label"` as ``label'': the heading quotes token labels.
std::string quoted(const std::string& tex) {
    std::string out;
    bool open = false;
    for (const char c : tex) {
        if (c == '"') {
            out += open ? "''" : "``";
            open = !open;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

std::string latex_cell_heading(const std::string& heading) {
    // "scores[1,2] = 4    (Scores, row 1 …)": the cell, then where it is, smaller
    const std::size_t where = heading.find("    (");
    if (where == std::string::npos) {
        return tex_break_underscores(tex_escape(minus_signs(heading)));
    }
    return tex_break_underscores(tex_escape(minus_signs(heading.substr(0, where)))) + "\\quad{\\normalfont\\small " +
           quoted(tex_escape(heading.substr(heading.find_first_not_of(' ', where)))) + "}";
}

std::string latex_cell_lines(const std::vector<std::string>& lines) {
    if (lines.empty()) {
        return "";
    }
    std::string out = "\\par\\begingroup\\small\\raggedright\\setlength{\\parindent}{0pt}\\setlength{\\parskip}{0pt}\n";
    for (const auto& line : lines) {
        const std::size_t start = line.find_first_not_of(' ');
        if (start == std::string::npos) {
            continue;
        }
        // a text character is half an em: "    1 · [1, 0]" and "  + 0 · [0, 1]" keep their columns
        double indent = static_cast<double>(start) / 2;
        std::string text = line.substr(start);
        std::string opening;
        for (const std::string op : {"+ ", "= ", "− ", "- "}) {
            if (text.rfind(op, 0) == 0) {
                opening = "\\makebox[1em][l]{$" + std::string(op == "= " ? "=" : op == "+ " ? "+" : "-") + "$}";
                text.erase(0, op.size());
                break;
            }
        }
        const double hang = indent + (opening.empty() ? 0.0 : 1.0) + 2.0;
        out += "\\hangindent=" + em(hang) + "\\hangafter=1\\relax ";
        if (indent > 0) {
            out += "\\hspace*{" + em(indent) + "}";
        }
        out += opening + spaced(text) + "\\par\n";
    }
    return out + "\\endgroup\n";
}

std::string latex_cell_working(const std::string& heading, const std::string& formula,
                               const std::vector<std::string>& lines, const std::string& heading_command) {
    std::string out = "\n\\" + heading_command + "{\\raggedright " + latex_cell_heading(heading) + "}\n";
    if (!formula.empty()) {
        out += latex_display({formula});
    }
    return out + latex_cell_lines(lines) + "\\medskip\n";
}

}  // namespace qkv
