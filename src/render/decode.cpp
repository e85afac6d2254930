// `qkv run --decode` in every document format: what a key/value cache is,
// then position by position the cache, the new token's query, its scores and
// weights over the cached keys, and its output row. One walk builds it as a
// document (document.hpp), which each format writes (the JSON is in
// decode_json.cpp).
#include "attention/decode.hpp"
#include "attention/divisor.hpp"
#include "base/numbers.hpp"
#include "render/document.hpp"
#include "render/html.hpp"
#include "render/palette.hpp"
#include "render/render.hpp"
#include "render/table.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace qkv {

namespace {

// ── the words ───────────────────────────────────────────────────────────────
std::string number(std::uint64_t value) { return std::to_string(value); }

// A number of the example's (a slope, a sink, a divisor) as it reads: 3, 0.0625.
std::string given(double value) { return readable(value); }

// "positions 1 … 3", or "position 2" for one position
std::string positions_text(arma::uword first, arma::uword last) {
    return first == last ? "position " + number(first) : "positions " + number(first) + " … " + number(last);
}

// "3 × 48 = 144 bytes"
std::string bytes_text(const DecodeTrace& decode, arma::uword t) {
    return number(decode.cached_after(t)) + " × " + number(decode.bytes_per_token) + " = " +
           number(decode.bytes_after(t)) + " bytes";
}

// What a cache is and why only the new token's query is needed, with a
// sentence for each variant the example uses.
std::vector<std::string> introduction(const DecodeTrace& decode, const Model& model) {
    std::vector<std::string> paragraphs;
    const std::string appended =
        decode.latent()
            ? "its normed latent and its rope key are appended to a cache that already holds those of the tokens "
              "before it, and its query is scored against every row of the cache"
            : "its key and value are appended to a cache that already holds the keys and values of the tokens before "
              "it, and its query is scored against every key in the cache";
    paragraphs.push_back(
        "A language model writes one token at a time. When token t arrives, only its own row is projected: " +
        appended +
        ". The earlier tokens' queries are not needed again: the causal mask keeps each token from seeing later "
        "ones, so their rows of the output were final when they were computed. The weights and the output row of "
        "each position below equal row t of the full computation's weights and head_output (qkv run without "
        "--decode).");
    if (decode.latent()) {
        paragraphs.push_back(
            "With multi-head latent attention no head's keys or values are stored, or even made. Each position "
            "keeps its normed latent c (r = " + number(decode.kv_rank) + " numbers) and its rope key, turned at its "
            "position (d_r = " + number(decode.rope_dim) + "), and every head reads that one cache. Each head "
            "absorbs W_UK into its query: q_nope·k_nope = q_nope·(c·W_UK)ᵀ = (q_nope·W_UKᵀ)·c, so the query "
            "[q_nope·W_UKᵀ, q_rope] is scored against the cached rows [c, k_rope] as they are. It absorbs W_UV into "
            "its output in the same way: the weights add up the cached latents, and W_UV turns that sum into the "
            "head's output.");
    }
    std::vector<std::string> variants;
    if (decode.window == 1) {
        variants.push_back("With a sliding window of 1, each query reads only its own key, so the cache keeps one "
                           "position: each new entry overwrites the one before.");
    } else if (decode.window != 0) {
        variants.push_back("With a sliding window of " + number(decode.window) + ", no query reads a key more than " +
                           number(decode.window - 1) + " positions back, so the cache keeps only the last " +
                           number(decode.window) +
                           " positions: once it is full, each new entry overwrites the oldest one, a rolling "
                           "buffer.");
    }
    if (decode.latent()) {
        variants.push_back("The rope key is turned once, at its own position, before it is stored; the new query's "
                           "rope part is turned at the new position.");
    } else if (model.rope) {
        variants.push_back("With RoPE, each key is turned once, at its own position, before it is stored; the new "
                           "query is turned at the new position.");
    }
    if (decode.kv_heads != decode.heads && !decode.latent()) {
        const std::string caches = decode.kv_heads == 1 ? "one cache" : number(decode.kv_heads) + " caches";
        variants.push_back("The " + number(decode.heads) + " query heads share " + number(decode.kv_heads) +
                           (decode.kv_heads == 1 ? " key/value head" : " key/value heads") + ", so there " +
                           (decode.kv_heads == 1 ? "is " : "are ") + caches + ", not " + number(decode.heads) +
                           ": 1/" + number(decode.heads / decode.kv_heads) +
                           " of the bytes that one cache per query head would hold.");
    }
    if (model.alibi) {
        variants.push_back("ALiBi's bias depends only on how far back a key is, so it is added as each query "
                           "arrives and is never stored.");
    }
    if (model.sinks) {
        variants.push_back("Each head's sink joins the softmax as in the full computation: it is a number of the "
                           "head, not a cached position.");
    }
    if (!variants.empty()) {
        std::string text;
        for (const auto& sentence : variants) {
            text += (text.empty() ? "" : " ") + sentence;
        }
        paragraphs.push_back(text);
    }
    return paragraphs;
}

// "q = (x_3 + p_3)·W_Qᵀ + b_Q, turned by RoPE at position 2": the new
// query's formula as this example computes it for head h.
// "x_3", or "(x_3 + p_3)" with positions: what token t's projections read
std::string token_row(const Model& model, arma::uword t) {
    const std::string index = number(t);
    return model.P ? "(x_" + index + " + p_" + index + ")" : "x_" + index;
}

std::string query_formula(const Model& model, int h, arma::uword t) {
    if (model.mla) {
        return "absorbed query [q_nope·W_UKᵀ  q_rope]";  // where its parts come from: absorbed_query_note
    }
    std::string formula = "q = " + token_row(model, t) + "·W_Q" + (model.layout == Layout::pytorch ? "ᵀ" : "");
    if (model.heads.at(static_cast<std::size_t>(h - 1)).b_Q) {
        formula += " + b_Q";
    }
    if (model.rope) {
        formula += ", turned by RoPE at position " + number(t - 1);
    }
    return formula;
}

// mla: where the absorbed query's parts come from, said under it
std::string absorbed_query_note(const Model& model, int h, arma::uword t) {
    const std::string token = token_row(model, t);
    const std::string q = model.mla->q_rank ? "RMSNorm(" + token + "·W_DQ)·W_UQ" : token + "·W_Q";
    return "q = " + q + ", its last d_r turned by RoPE at position " + number(t - 1) + "; W_UK is head " +
           number(static_cast<arma::uword>(h)) + "'s";
}

// "weight = softmax(q·Kᵀ / √d_k + bias, sink)": what the softmax reads, and its sink
std::string weights_formula(const Model& model) {
    std::string score = divided(model, "q·Kᵀ", false);
    if (model.alibi) {
        score += " + bias";
    }
    return "weight = softmax(" + score + (model.sinks ? ", sink)" : ")");
}

// ── the tables ──────────────────────────────────────────────────────────────
// "3 red": a cached position and its token
std::string position_label(const Trace& trace, arma::uword position) {
    return number(position) + " " + trace.tokens.at(position - 1);
}

std::vector<std::string> numbered(const std::string& prefix, arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword k = 1; k <= count; ++k) {
        labels.push_back(prefix + number(k));
    }
    return labels;
}

Table matrix_table(const arma::mat& values, std::vector<std::string> rows, std::vector<std::string> cols,
                   const RenderOptions& options) {
    Step step;
    step.values = values;
    step.row_labels = std::move(rows);
    step.col_labels = std::move(cols);
    return build_table(step, options);
}

// mla: a cache row's columns, and an absorbed query's: the latent's c1 … c_r, then the rope key's r1 … r_dr
std::vector<std::string> latent_labels(const DecodeTrace& decode) {
    std::vector<std::string> cols = numbered("c", decode.kv_rank);
    for (auto& label : numbered("r", decode.rope_dim)) {
        cols.push_back(std::move(label));
    }
    return cols;
}

// The cache a row read: one row per cached position, its key then its value.
Table cache_table(const Trace& trace, const DecodeTrace& decode, const DecodeRow& row, const RenderOptions& options) {
    std::vector<std::string> rows;
    for (arma::uword p = row.first; p <= row.t; ++p) {
        rows.push_back(position_label(trace, p));
    }
    if (decode.latent()) {
        return matrix_table(arma::join_rows(decode.cache_latent(row), decode.cache_rope_keys(row)), rows,
                            latent_labels(decode), options);
    }
    std::vector<std::string> cols = numbered("k", decode.d_k);
    for (auto& label : numbered("v", decode.d_v)) {
        cols.push_back(std::move(label));
    }
    return matrix_table(arma::join_rows(decode.cache_keys(row), decode.cache_values(row)), rows, cols, options);
}

// The new token's scores and weights, one column per cached key, as row t of
// the full computation's scores and weights: rows q·k, (bias,) score and
// weight, each 1 × c.
Table weights_table(const Trace& trace, const DecodeRow& row, const RenderOptions& options) {
    std::vector<std::string> cols;
    for (arma::uword p = row.first; p <= row.t; ++p) {
        cols.push_back(position_label(trace, p));
    }
    Table table = row.bias.is_empty()
                      ? matrix_table(arma::join_cols(row.dots, row.scores, row.weights), {"q·k", "score", "weight"},
                                     cols, options)
                      : matrix_table(arma::join_cols(row.dots, row.bias, row.scores, row.weights),
                                     {"q·k", "bias", "score", "weight"}, cols, options);
    table.shape = "1" + std::string(options.ascii ? " x " : " × ") + number(row.weights.n_elem) + " each";
    return table;
}

// "ALiBi slope m = 0.0625: bias = −m·(3 − j)", "the sink took 0.6 of the weight; the row sums to 0.4"
std::vector<std::string> weights_notes(const Model& model, const DecodeRow& row, const RenderOptions& options) {
    std::vector<std::string> notes;
    const auto head = static_cast<arma::uword>(row.head - 1);
    if (model.alibi) {
        notes.push_back("ALiBi slope m = " + given((*model.alibi)(head)) + ": bias = −m·(" + number(row.t) +
                        " − j)");
    }
    if (model.sinks) {
        const double kept = arma::accu(row.weights);
        notes.push_back("sink s = " + given((*model.sinks)(head)) + " took " +
                        format_number(1.0 - kept, options.precision, false, options.ascii) +
                        " of the weight; the row sums to " +
                        format_number(kept, options.precision, false, options.ascii));
    }
    return notes;
}

// "the scores are divided by √d_k = 2", "each position adds … bytes", "after the last token …"
std::vector<std::string> cache_notes(const DecodeTrace& decode, const Model& model, const RenderOptions& options) {
    std::vector<std::string> notes;
    const Divisor divisor = divisor_of(model);
    notes.push_back(!divisor.scaled ? std::string("the scores are not scaled (scale: none)")
                    : divisor.root  ? "the scores are divided by " + divisor.symbol + " = " +
                                         format_number(model.scale(), options.precision,
                                                       is_whole_number(model.scale()), options.ascii)
                                    : "the scores are divided by " + divisor.exact + " (scale)");
    if (!model.round.empty()) {
        notes.push_back("round: each value is rounded as its step is in the full computation");
    }
    if (decode.latent()) {
        const Mla& mla = *model.mla;
        const double ratio = static_cast<double>(decode.bytes_per_token_unabsorbed) /
                             static_cast<double>(decode.bytes_per_token);
        notes.push_back("each position adds (r + d_r)·8 = (" + number(decode.kv_rank) + " + " +
                        number(decode.rope_dim) + ")·8 = " + number(decode.bytes_per_token) +
                        " bytes to the one cache every head reads, 8 bytes a number (float64)");
        notes.push_back("every head's keys and values would take H·(d_n + d_r + d_v)·8 = " + number(decode.heads) +
                        "·(" + number(mla.nope_dim) + " + " + number(mla.rope_dim) + " + " + number(mla.v_dim) +
                        ")·8 = " + number(decode.bytes_per_token_unabsorbed) + " bytes a position" +
                        (ratio > 1.0 ? ": " + readable(std::round(ratio * 10.0) / 10.0) + " times as many"
                                     : ": with so few heads the latent cache is not the smaller"));
    } else {
        notes.push_back("each position adds (d_k + d_v)·G·8 = (" + number(decode.d_k) + " + " +
                        number(decode.d_v) + ")·" + number(decode.kv_heads) + "·8 = " +
                        number(decode.bytes_per_token) + " bytes to the cache: G = " + number(decode.kv_heads) +
                        (decode.kv_heads == 1 ? " key/value head" : " key/value heads") +
                        ", 8 bytes a number (float64)");
    }
    notes.push_back("after the last token the cache holds " + bytes_text(decode, decode.n));
    return notes;
}

// ── the walk ────────────────────────────────────────────────────────────────
std::vector<Block> walk(const Trace& trace, const DecodeTrace& decode, const Model& model, const RenderOptions& options) {
    std::vector<Block> blocks;
    blocks.push_back(Section{"Decoding with a key/value cache", 1});
    if (!options.brief) {
        for (const auto& text : introduction(decode, model)) {
            blocks.push_back(Prose{text});
        }
    }
    blocks.push_back(Notes{cache_notes(decode, model, options)});

    const bool several_heads = decode.heads > 1;
    const bool shared = decode.kv_heads != decode.heads;
    for (arma::uword t = 1; t <= decode.n; ++t) {
        blocks.push_back(Section{"Position " + number(t) + " · " + one_line(trace.tokens.at(t - 1)), 2});
        const arma::uword first = t - decode.cached_after(t) + 1;
        std::string cached = "the cache holds " + positions_text(first, t) + ": " + bytes_text(decode, t);
        if (first > 1 && decode.window != 0) {
            cached += "; position " + number(t) + " overwrote position " + number(first - 1);
        }
        blocks.push_back(Notes{{cached}});

        // with mla every head reads one cache, which is shown once
        const int caches = decode.latent() ? 1 : static_cast<int>(decode.kv_heads);
        for (int g = 1; g <= caches; ++g) {
            // the rows of this position that read key/value head g, as --head chooses
            std::vector<const DecodeRow*> readers;
            for (std::size_t k = (t - 1) * decode.heads; k < t * decode.heads; ++k) {
                const DecodeRow& row = decode.rows[k];
                if ((row.kv_head == g || decode.latent()) && (options.head == 0 || options.head == row.head)) {
                    readers.push_back(&row);
                }
            }
            if (readers.empty()) {
                continue;
            }
            const std::string cache_head =
                several_heads && !decode.latent()
                    ? (shared ? "key/value head " : "head ") + number(static_cast<arma::uword>(g)) + " · "
                    : "";
            blocks.push_back(TableBlock{cache_table(trace, decode, *readers.front(), options), TableRole::values,
                                        decode.latent() ? "cache: latents c and rope keys k_rope, for every head"
                                                        : cache_head + "cache: keys k and values v"});
            for (const DecodeRow* row : readers) {
                const std::string head =
                    several_heads ? "head " + number(static_cast<arma::uword>(row->head)) + " · " : "";
                blocks.push_back(TableBlock{
                    matrix_table(row->query, {position_label(trace, t)},
                                 decode.latent() ? latent_labels(decode) : numbered("d", decode.d_k), options),
                    TableRole::values, head + query_formula(model, row->head, t)});
                if (decode.latent()) {
                    blocks.push_back(Notes{{absorbed_query_note(model, row->head, t)}});
                }
                blocks.push_back(
                    TableBlock{weights_table(trace, *row, options), TableRole::values, head + weights_formula(model)});
                blocks.push_back(Notes{weights_notes(model, *row, options)});
                if (decode.latent()) {
                    blocks.push_back(TableBlock{matrix_table(row->latent_output, {position_label(trace, t)},
                                                             numbered("c", decode.kv_rank), options),
                                                TableRole::values, head + "o = Σ_j weight_j·c_j"});
                }
                blocks.push_back(TableBlock{
                    matrix_table(row->head_output, {position_label(trace, t)}, numbered("d", decode.d_v), options),
                    TableRole::values, head + (decode.latent() ? "z = o·W_UV" : "z = Σ_j weight_j·v_j")});
            }
        }
    }
    return blocks;
}

}  // namespace

void render_decode(const Trace& trace, const DecodeTrace& decode, const Model& model, const RenderOptions& options,
                   std::ostream& out) {
    const DocumentStyle style{
        .ascii = options.ascii, .standalone = options.standalone, .color = options.color, .width = options.width};
    if (options.format == Format::json) {
        render_decode_json(trace, decode, model, options, out);
        return;
    }
    if (is_document_format(options.format)) {
        Document document = run_header(trace, options);
        for (Block& block : walk(trace, decode, model, options)) {
            document.blocks.push_back(std::move(block));
        }
        write_document(document, options.format, style, out);
        return;
    }
    throw std::logic_error("decoding is written as " + format_name(options.format) +
                           ", which is not one of formats_of(Writer::decode)");
}

}  // namespace qkv
