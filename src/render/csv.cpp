// One tidy table for every step (OUTPUT FORMATS in man/qkv.1): one line per cell,
//   step,head,row,col,row_label,col_label,value
// head empty for steps that are not per head, rows and columns 1-based, values
// in round-trip precision with −∞ as -inf. Never summarised, never coloured:
// it is data for pandas, R or a spreadsheet.
#include "render/render.hpp"

namespace qkv {

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) {
        return text;
    }
    std::string quoted = "\"";
    for (const char c : text) {
        quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return quoted + "\"";
}

void render_csv(const Trace& trace, const RenderOptions& options, std::ostream& out) {
    out << "step,head,row,col,row_label,col_label,value\n";
    for (const Step* step : select_steps(trace, options)) {
        const std::string head = step->head == 0 ? "" : std::to_string(step->head);
        std::vector<std::string> col_labels;
        for (const auto& label : step->col_labels) {
            col_labels.push_back(csv_field(label));
        }
        for (arma::uword i = 0; i < step->values.n_rows; ++i) {
            const std::string row_start =
                step_text(step->id) + "," + head + "," + std::to_string(i + 1) + ",";
            const std::string row_label = csv_field(step->row_labels[i]);
            for (arma::uword j = 0; j < step->values.n_cols; ++j) {
                out << row_start << j + 1 << ',' << row_label << ',' << col_labels[j] << ','
                    << round_trip(step->values(i, j)) << '\n';
            }
        }
    }
}

}  // namespace qkv
