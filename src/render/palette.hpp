// The ANSI colours of every text output (run, check, explain, lessons), one
// constant per role. They are written only when RenderOptions::color is on.
#pragma once

#include <string>
#include <string_view>

namespace qkv {

inline constexpr char k_bold[] = "\x1b[1m";         // emphasis: titles, values, summaries
inline constexpr char k_dim[] = "\x1b[2m";          // asides: notes, prompts, page rules
inline constexpr char k_heading[] = "\x1b[1;36m";   // step headings
inline constexpr char k_green[] = "\x1b[32m";       // right
inline constexpr char k_red[] = "\x1b[31m";         // wrong
inline constexpr char k_yellow[] = "\x1b[33m";      // follows from earlier answers (error carried forward)
inline constexpr char k_row_max[] = "\x1b[1;4m";    // a heatmap row's largest weight: bold and underlined
inline constexpr char k_reset[] = "\x1b[0m";        // back to plain text

// A heatmap cell: 256-colour background and foreground (xterm palette indices).
inline std::string shade_256(int background, int foreground) {
    return "\x1b[48;5;" + std::to_string(background) + ";38;5;" + std::to_string(foreground) + "m";
}

// `text` between `code` and k_reset when colour is on; as it is otherwise.
inline std::string styled(const std::string& text, std::string_view code, bool color) {
    return color ? std::string(code) + text + k_reset : text;
}

}  // namespace qkv
