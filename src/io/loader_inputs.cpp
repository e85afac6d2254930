// The example loader's rows of tokens (see loader_parts.hpp): inputs with
// their tokens, or embeddings looked up word by word for a sentence; the
// context of cross-attention with its tokens; the positions added to the inputs.
#include "io/loader_parts.hpp"

#include "attention/attention.hpp"

#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace qkv::loading {

namespace {

// "x1", "x2", …: labels for rows written without them.
std::vector<std::string> default_labels(const std::string& prefix, arma::uword count) {
    std::vector<std::string> labels;
    for (arma::uword i = 1; i <= count; ++i) {
        labels.push_back(prefix + std::to_string(i));
    }
    return labels;
}

// The word vectors of `embeddings:` as read.
struct EmbeddingTable {
    std::map<std::string, arma::rowvec> vectors;  // the words whose vector is good
    std::vector<std::string> known;               // every word, in the order written, for the hint
    std::set<std::string> given;                  // every word
    arma::uword width = 0;                        // the first vector's
    bool ok = true;                               // no word twice, every vector good and as wide as the first
};

EmbeddingTable read_embedding_table(YamlReader& yaml, const YAML::Node& embeddings) {
    EmbeddingTable table;
    for (const auto& entry : embeddings) {
        const std::string word = key_text(entry.first);
        const std::string path = "embeddings." + word;
        if (!table.given.insert(word).second) {
            yaml.error(entry.first, path + " is given twice", "give each word one vector");
            table.ok = false;
            continue;
        }
        table.known.push_back(word);
        auto vec = yaml.vector(entry.second, path);
        if (!vec) {
            table.ok = false;
            continue;
        }
        if (table.width == 0) {
            table.width = vec->n_elem;
        } else if (vec->n_elem != table.width) {
            yaml.error(entry.second, path + " has " + numbers(vec->n_elem) + "; the first embedding has " +
                                         std::to_string(table.width),
                       "every word vector must have the same width (d_model)");
            table.ok = false;
            continue;
        }
        table.vectors[word] = *vec;
    }
    return table;
}

// "did you mean "sky"? known words: sky, blue, …": the first 20 known words.
std::string unknown_word_hint(const std::string& word, const std::vector<std::string>& known) {
    const std::size_t k_max_listed = 20;
    std::string list;
    for (std::size_t k = 0; k < known.size() && k < k_max_listed; ++k) {
        list += (list.empty() ? "" : ", ") + known[k];
    }
    if (known.size() > k_max_listed) {
        list += ", … (" + std::to_string(known.size()) + " in all)";
    }
    return did_you_mean(word, known, "\"", "\"") + "known words: " + list;
}

}  // namespace

void ModelLoader::read_inputs(Model& model, const KeyRow&) {
    const YAML::Node inputs = root()["inputs"];
    const YAML::Node embeddings = root()["embeddings"];
    const YAML::Node sentence = root()["sentence"];
    if (inputs && embeddings) {
        m_yaml.error(embeddings, "both inputs and embeddings are given",
                     "give X either as inputs, or as embeddings plus a sentence, not both");
        return;
    }
    if (embeddings || sentence) {
        read_embeddings(model, embeddings, sentence);
        return;
    }
    if (!inputs) {
        if (m_yaml.has_misspelling_of(m_root, "inputs", k_top_keys)) {
            return;
        }
        m_yaml.error(m_root, "inputs is missing",
                     "add `inputs:` with one row of numbers per token, e.g. inputs: [[1, 0], [0, 1]]");
        return;
    }
    if (auto X = matrix(inputs, "inputs")) {
        model.X = *X;
    }
    const YAML::Node tokens = root()["tokens"];
    if (tokens) {
        if (auto labels = m_yaml.labels(tokens, "tokens")) {
            if (!model.X.is_empty() && labels->size() != model.X.n_rows) {
                m_yaml.error(tokens, "tokens has " + std::to_string(labels->size()) + " labels; inputs has " +
                                         std::to_string(model.X.n_rows) + " rows",
                             "give one label per row of inputs");
            } else {
                model.tokens = *labels;
            }
        }
    }
    if (model.tokens.empty()) {
        model.tokens = default_labels("x", model.X.n_rows);
    }
}

void ModelLoader::read_embeddings(Model& model, const YAML::Node& embeddings, const YAML::Node& sentence) {
    if (!embeddings) {
        m_yaml.error(sentence, "sentence is given without embeddings",
                     "add `embeddings:` mapping each word of the sentence to its vector");
        return;
    }
    if (!sentence) {
        m_yaml.error(embeddings, "embeddings is given without a sentence",
                     "add `sentence: \"...\"` with the words to look up");
        return;
    }
    if (root()["tokens"]) {
        m_yaml.error(root()["tokens"], "tokens is given together with a sentence",
                     "the words of the sentence are the token labels; remove tokens");
    }
    if (!embeddings.IsMap() || embeddings.size() == 0) {
        m_yaml.error(embeddings, "embeddings is not a map of words to vectors",
                     "write e.g. embeddings: {sky: [1, 0], blue: [0, 1]}");
        return;
    }
    EmbeddingTable table = read_embedding_table(m_yaml, embeddings);
    auto text = m_yaml.string(sentence, "sentence");
    if (!text) {
        return;
    }
    std::istringstream words(*text);
    std::vector<std::string> tokens{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (tokens.empty()) {
        m_yaml.error(sentence, "sentence has no words", "write the words to look up, separated by spaces");
        return;
    }
    if (tokens.size() > k_max_dimension) {
        m_yaml.error(sentence, "sentence has " + std::to_string(tokens.size()) + " words; the limit is 65536", "");
        return;
    }
    // unknown words are reported even when a vector was bad; X is built only when all is well
    arma::mat X(tokens.size(), table.width);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (table.given.count(tokens[i]) == 0) {
            m_yaml.error_at(word_mark(sentence, tokens, i),
                            "word " + std::to_string(i + 1) + " of sentence, \"" + tokens[i] +
                                "\", is not in embeddings",
                            unknown_word_hint(tokens[i], table.known));
            table.ok = false;
            continue;
        }
        if (table.ok) {
            X.row(i) = table.vectors.at(tokens[i]);
        }
    }
    if (table.ok) {
        model.X = X;
        model.tokens = tokens;
    }
}

// Where word `index` of a one-line sentence starts, so that an error can
// point at the word itself; the sentence's own position when the words
// cannot be found on its line as written (a block scalar, escapes, folding).
YAML::Mark ModelLoader::word_mark(const YAML::Node& sentence, const std::vector<std::string>& words,
                                  std::size_t index) const {
    const YAML::Mark start = sentence.Mark();
    if (start.line < 0 || start.pos < 0 || static_cast<std::size_t>(start.pos) > m_source.text.size()) {
        return start;
    }
    const std::string& text = m_source.text;
    const std::size_t line_end = std::min(text.find('\n', static_cast<std::size_t>(start.pos)), text.size());
    std::size_t at = static_cast<std::size_t>(start.pos);
    if (at < line_end && (text[at] == '"' || text[at] == '\'')) {
        ++at;
    }
    for (std::size_t k = 0; k <= index; ++k) {
        while (at < line_end && (text[at] == ' ' || text[at] == '\t')) {
            ++at;
        }
        if (text.compare(at, words[k].size(), words[k]) != 0 || at + words[k].size() > line_end) {
            return start;
        }
        if (k == index) {
            YAML::Mark mark = start;
            mark.column += static_cast<int>(at - static_cast<std::size_t>(start.pos));
            mark.pos = static_cast<int>(at);
            return mark;
        }
        at += words[k].size();
    }
    return start;
}

void ModelLoader::read_context(Model& model, const KeyRow&) {
    const YAML::Node context = root()["context"];
    const YAML::Node context_tokens = root()["context_tokens"];
    if (!context) {
        if (context_tokens) {
            m_yaml.error(context_tokens, "context_tokens is given without context",
                         "add `context:` with the rows keys and values are read from");
        }
        return;
    }
    auto C = matrix(context, "context");
    if (!C) {
        return;
    }
    if (!model.X.is_empty() && C->n_cols != model.X.n_cols) {
        m_yaml.error(context, "context is " + shape_text(*C) + "; expected " + std::to_string(model.X.n_cols) +
                                  " columns (d_model: inputs is " + shape_text(model.X) + ")",
                     "context rows must have the same width as the input rows");
    }
    model.C = *C;
    if (context_tokens) {
        if (auto labels = m_yaml.labels(context_tokens, "context_tokens")) {
            if (labels->size() != C->n_rows) {
                m_yaml.error(context_tokens, "context_tokens has " + std::to_string(labels->size()) +
                                                 " labels; context has " + std::to_string(C->n_rows) + " rows",
                             "give one label per row of context");
            } else {
                model.context_tokens = *labels;
            }
        }
    }
    if (model.context_tokens.empty()) {
        model.context_tokens = default_labels("c", C->n_rows);
    }
}

void ModelLoader::read_positional(Model& model, const KeyRow&) {
    const YAML::Node positional = root()["positional"];
    if (!positional || model.X.is_empty()) {
        return;
    }
    if (positional.IsScalar()) {
        if (positional.Scalar() != "sinusoidal") {
            m_yaml.error(positional, "positional is " + m_yaml.describe(positional) +
                                         "; expected sinusoidal or a matrix",
                         did_you_mean(positional.Scalar(), {"sinusoidal"}) +
                             "write `positional: sinusoidal`, or give a matrix with one row per token");
            return;
        }
        model.P = sinusoidal_positions(model.X.n_rows, model.X.n_cols);
        model.P_sinusoidal = true;
        return;
    }
    auto P = matrix(positional, "positional");
    if (!P) {
        return;
    }
    if (P->n_rows != model.X.n_rows || P->n_cols != model.X.n_cols) {
        m_yaml.error(positional, "positional is " + shape_text(*P) + "; expected " + shape_text(model.X) +
                                     " (the shape of inputs)",
                     "give one position vector per token, as wide as the inputs");
        return;
    }
    model.P = *P;
}

}  // namespace qkv::loading
