// LaTeX: a fragment to \input into a document (it needs amsmath), or with
// --standalone a whole article that compiles with pdflatex. Each step is a
// starred subsection with its formula in display math and the matrix as a
// tabular with the row and column labels.
#include "render/render.hpp"
#include "render/table.hpp"

#include <sstream>

namespace qkv {

namespace {

// Text-mode LaTeX for labels and prose: the special characters escaped, the
// symbols qkv writes spelled as LaTeX, other letters outside ASCII kept when
// pdflatex's utf8 input knows them (Latin-1 and Latin Extended-A) and shown as
// "?" otherwise, so that any label compiles.
std::string tex_escape(const std::string& text) {
    static const std::pair<const char*, const char*> k_symbols[] = {
        {"−∞", "$-\\infty$"}, {"∞", "$\\infty$"}, {"−", "$-$"},       {"·", "$\\cdot$"},  {"ᵀ", "$^{\\top}$"},
        {"√", "$\\surd$"},    {"…", "\\ldots{}"}, {"×", "$\\times$"}, {"≤", "$\\le$"},    {"≥", "$\\ge$"},
        {"Σ", "$\\Sigma$"},   {"₁", "$_1$"},      {"₂", "$_2$"},      {"₃", "$_3$"},      {"′", "$'$"},
        {"—", "---"},         {"–", "--"},        {"“", "``"},        {"”", "''"},        {"’", "'"},
        {"‘", "`"},
    };
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        bool matched = false;
        for (const auto& [from, to] : k_symbols) {
            const std::string_view symbol(from);
            if (text.compare(i, symbol.size(), symbol) == 0) {
                out += to;
                i += symbol.size();
                matched = true;
                break;
            }
        }
        if (matched) {
            continue;
        }
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            switch (text[i]) {
                case '\\': out += "\\textbackslash{}"; break;
                case '{': out += "\\{"; break;
                case '}': out += "\\}"; break;
                case '$': out += "\\$"; break;
                case '&': out += "\\&"; break;
                case '#': out += "\\#"; break;
                case '%': out += "\\%"; break;
                case '_': out += "\\_"; break;
                case '^': out += "\\^{}"; break;
                case '~': out += "\\~{}"; break;
                case '<': out += "$<$"; break;
                case '>': out += "$>$"; break;
                case '|': out += "$|$"; break;
                case '\n': case '\r': case '\t': out += ' '; break;
                default:
                    out += byte < 0x20 ? ' ' : text[i];
            }
            ++i;
            continue;
        }
        // one UTF-8 code point
        std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
        length = std::min(length, text.size() - i);
        unsigned code = length == 2 ? ((byte & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu) : 0;
        const bool latin = length == 2 && code >= 0xC0 && code <= 0x17F && code != 0xD7 && code != 0xF7;
        out += latin ? text.substr(i, length) : "?";
        i += length;
    }
    return out;
}

// A number as the table wrote it, in math mode so that minus signs and −∞ typeset.
std::string tex_number(const std::string& text) {
    if (text == "…" || text == "...") {
        return "$\\cdots$";
    }
    if (text == "−∞" || text == "-inf") {
        return "$-\\infty$";
    }
    return "$" + text + "$";
}

class LatexSkin : public TableSkin {
public:
    std::string label(const std::string& text) const override {
        return text == "…" || text == "..." ? "$\\vdots$" : tex_escape(text);
    }
    std::string number(const std::string& text) const override { return tex_number(text); }

    std::string begin(std::size_t n_cols) const override {
        return "\\begin{center}\n\\begin{tabular}{l|" + std::string(n_cols, 'r') + "}\n";
    }
    std::string row(const std::string& label, const std::vector<std::string>& cells, int) const override {
        std::string line = label;
        for (const auto& cell : cells) {
            line += " & " + cell;
        }
        return line + " \\\\\n";
    }
    std::string divider(std::size_t, const std::vector<std::size_t>&) const override { return "\\hline\n"; }
    std::string end() const override { return "\\end{tabular}\n\\end{center}\n"; }
};

std::string joined_paragraphs(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::string result;
    bool blank = false;
    while (std::getline(lines, line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) {
            blank = !result.empty();
            continue;
        }
        result += result.empty() ? "" : (blank ? "\n\n" : "\n");
        result += tex_escape(line.substr(line.find_first_not_of(" \t")));
        blank = false;
    }
    return result;
}

}  // namespace

void render_latex(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    const std::string title = trace.title.empty() ? "Self-attention, step by step" : trace.title;
    if (options.standalone) {
        out << "\\documentclass{article}\n"
               "\\usepackage[utf8]{inputenc}\n"
               "% T1 and Latin Modern when installed; plain Computer Modern otherwise\n"
               "\\IfFileExists{lmodern.sty}{\\usepackage[T1]{fontenc}\\usepackage{lmodern}}{}\n"
               "\\usepackage{amsmath}\n"
               "\\usepackage[margin=2.5cm]{geometry}\n"
               "\\begin{document}\n\n";
    } else {
        out << "% qkv: self-attention step by step; needs \\usepackage{amsmath}\n";
    }
    out << "\\section*{" << tex_escape(title) << "}\n\n";
    if (!options.brief && !trace.description.empty()) {
        out << joined_paragraphs(trace.description) << "\n\n";
    }
    const Dims& d = trace.dims;
    out << "$n = " << d.n << "$" << (trace.cross ? " queries, $m = " + std::to_string(d.m) + "$ keys" : " tokens")
        << ", $d_{\\mathrm{model}} = " << d.d_model << "$, " << d.heads << (d.heads == 1 ? " head" : " heads")
        << ", $d_k = " << d.d_k << "$, $d_v = " << d.d_v << "$, $d_{\\mathrm{out}} = " << d.d_out << "$.\n";

    for (const Step* step : select_steps(trace, options)) {
        std::string heading = "Step " + std::to_string(step_number(trace, *step)) + ": " + step->title;
        if (step->head != 0 && d.heads > 1) {
            heading += ", head " + std::to_string(step->head);
        }
        out << "\n\\subsection*{" << tex_escape(heading) << " (\\texttt{" << tex_escape(step->id) << "})}\n";
        const Table table = build_table(*step, options);
        out << "\\[ " << step->latex << " \\qquad (" << step->values.n_rows << " \\times " << step->values.n_cols
            << ") \\]\n";
        if (!options.brief) {
            out << tex_escape(step->explanation) << "\n";
        }
        out << draw_table(table, LatexSkin());
        if (!step->notes.empty()) {
            out << "\\begin{itemize}\n";
            for (const auto& note : step->notes) {
                out << "  \\item " << tex_escape(note) << "\n";
            }
            out << "\\end{itemize}\n";
        }
    }
    if (options.standalone) {
        out << "\n\\end{document}\n";
    }
}

}  // namespace qkv
