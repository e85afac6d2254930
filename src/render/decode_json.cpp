// `qkv run --decode -f json`: the run document of `run -f json`, whole, plus
// the two keys the man page gives under run --decode — "decode", one entry per
// position t and query head h,
// and "cache", the cache's size after the last token. A consumer of the run
// JSON reads this document as it is, and finds row t of each head's weights
// and head_output steps beside the decode entries that equal them.
#include "attention/decode.hpp"
#include "render/render.hpp"


namespace qkv {

namespace {

void write_entry(std::ostream& out, const DecodeTrace& decode, const DecodeRow& row) {
    out << "{\"t\": " << row.t << ", \"head\": " << row.head << ", \"kv_head\": " << row.kv_head
        << ", \"positions\": [";
    for (arma::uword p = row.first; p <= row.t; ++p) {
        out << (p == row.first ? "" : ", ") << p;
    }
    if (decode.latent()) {
        // mla: the one cache every head reads, of latents and turned rope keys
        out << "],\n   \"cache_latent\": ";
        write_json_rows(out, decode.cache_latent(row));
        out << ",\n   \"cache_rope_keys\": ";
        write_json_rows(out, decode.cache_rope_keys(row));
    } else {
        out << "],\n   \"cache_keys\": ";
        write_json_rows(out, decode.cache_keys(row));
        out << ",\n   \"cache_values\": ";
        write_json_rows(out, decode.cache_values(row));
    }
    out << ",\n   \"query\": ";
    write_json_row(out, row.query);
    out << ", \"scores\": ";
    write_json_row(out, row.scores);
    out << ", \"weights\": ";
    write_json_row(out, row.weights);
    if (decode.latent()) {
        out << ", \"latent_output\": ";
        write_json_row(out, row.latent_output);
    }
    out << ", \"head_output\": ";
    write_json_row(out, row.head_output);
    out << '}';
}

}  // namespace

void render_decode_json(const Trace& trace, const DecodeTrace& decode, const Model& model, const RenderOptions& options,
                        std::ostream& out) {
    // the run document, with the two keys before its closing brace
    render_json(trace, &model, options, out, [&](std::ostream& more) {
        more << ",\n \"decode\": [";
        bool first = true;
        for (const DecodeRow& row : decode.rows) {
            // --head h keeps query head h's entries; the cache below stays the whole cache
            if (options.head != 0 && row.head != options.head) {
                continue;
            }
            more << (first ? "\n  " : ",\n  ");
            write_entry(more, decode, row);
            first = false;
        }
        more << "\n ],\n \"cache\": {\"kv_heads\": " << decode.kv_heads
             << ", \"bytes_per_token\": " << decode.bytes_per_token;
        if (decode.latent()) {
            more << ", \"bytes_per_token_unabsorbed\": " << decode.bytes_per_token_unabsorbed;
        }
        more << ", \"bytes\": " << decode.bytes() << "}";
    });
}

}  // namespace qkv
