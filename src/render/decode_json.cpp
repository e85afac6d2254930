// `qkv run --decode -f json`: the run document of SPEC §4, whole, plus the
// two keys of SPEC §9 — "decode", one entry per position t and query head h,
// and "cache", the cache's size after the last token. A consumer of the run
// JSON reads this document as it is, and finds row t of each head's weights
// and head_output steps beside the decode entries that equal them.
#include "attention/decode.hpp"
#include "render/render.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace qkv {

namespace {

// A number in round-trip precision; −∞ as the string "-inf", as in the run document.
void write_number(std::ostream& out, double value) {
    const bool minus_infinity = std::isinf(value) && value < 0;
    out << (minus_infinity ? "\"-inf\"" : round_trip(value));
}

// [a, b, c]
void write_row(std::ostream& out, const arma::mat& row) {
    out << '[';
    for (arma::uword j = 0; j < row.n_elem; ++j) {
        out << (j == 0 ? "" : ", ");
        write_number(out, row(j));
    }
    out << ']';
}

// [[…], […]], one list per matrix row
void write_rows(std::ostream& out, const arma::mat& M) {
    out << '[';
    for (arma::uword i = 0; i < M.n_rows; ++i) {
        out << (i == 0 ? "" : ", ");
        write_row(out, M.row(i));
    }
    out << ']';
}

void write_entry(std::ostream& out, const DecodeTrace& decode, const DecodeRow& row) {
    out << "{\"t\": " << row.t << ", \"head\": " << row.head << ", \"kv_head\": " << row.kv_head
        << ", \"positions\": [";
    for (arma::uword p = row.first; p <= row.t; ++p) {
        out << (p == row.first ? "" : ", ") << p;
    }
    out << "],\n   \"cache_keys\": ";
    write_rows(out, decode.cache_keys(row));
    out << ",\n   \"cache_values\": ";
    write_rows(out, decode.cache_values(row));
    out << ",\n   \"query\": ";
    write_row(out, row.query);
    out << ", \"scores\": ";
    write_row(out, row.scores);
    out << ", \"weights\": ";
    write_row(out, row.weights);
    out << ", \"head_output\": ";
    write_row(out, row.head_output);
    out << '}';
}

}  // namespace

void render_decode_json(const Trace& trace, const DecodeTrace& decode, const RenderOptions& options,
                        std::ostream& out) {
    // render_json closes the run document with its last "}": the two keys go
    // just before it, so that the document is the run's with two more keys
    std::ostringstream run;
    render_json(trace, options, run);
    const std::string document = run.str();
    const std::size_t closing = document.find_last_of('}');
    if (closing == std::string::npos || document.find_first_not_of(" \n", closing + 1) != std::string::npos) {
        throw std::logic_error("the run JSON does not end with its closing brace");
    }
    out << document.substr(0, closing) << ",\n \"decode\": [";
    bool first = true;
    for (const DecodeRow& row : decode.rows) {
        // --head h keeps query head h's entries; the cache below stays the whole cache
        if (options.head != 0 && row.head != options.head) {
            continue;
        }
        out << (first ? "\n  " : ",\n  ");
        write_entry(out, decode, row);
        first = false;
    }
    out << "\n ],\n \"cache\": {\"kv_heads\": " << decode.kv_heads
        << ", \"bytes_per_token\": " << decode.bytes_per_token << ", \"bytes\": " << decode.bytes() << "}}\n";
}

}  // namespace qkv
