// qkv init: a starter example file with small whole-number inputs and weights,
// each key commented, for a learner to run, work through by hand and edit;
// with --student, an exercise for one student that `qkv check` can grade.
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "check/exercise.hpp"
#include "cli/output.hpp"
#include "io/yaml_writer.hpp"
#include "base/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <random>

namespace qkv::cli {

namespace {

using checking::exercise_flaw;
using checking::ExerciseFlaw;
using checking::FlawKind;
using checking::student_seed;

// The draws --student tries before giving up: with the default shape, one of
// the first few almost always makes a good exercise.
constexpr int k_max_draws = 500;

// The largest matrix of a --student exercise, rows and columns: as large as
// `qkv run` prints whole, and far more than anyone works by hand. (It bounds
// the time the draws take, too: each is written, read back and checked.)
constexpr int k_max_exercise_size = 12;

// The longest --student ID, in bytes.
constexpr std::size_t k_max_student_bytes = 200;

// Whole numbers from 0 to max_int, or from −max_int to max_int. The sequence
// of std::mt19937_64 is fixed by the C++ standard (std::uniform_int_distribution's
// is not), so a seed gives the same file on every machine: each number is the
// engine's next output modulo the count of numbers allowed, plus the lowest.
class WholeNumbers {
public:
    WholeNumbers(std::uint64_t seed, int max_int, bool negative)
        : m_engine(seed), m_low(negative ? -max_int : 0), m_choices(static_cast<std::uint64_t>(max_int - m_low) + 1) {}

    int next() { return m_low + static_cast<int>(m_engine() % m_choices); }

private:
    std::mt19937_64 m_engine;
    int m_low;
    std::uint64_t m_choices;
};

// One row of numbers, drawn again while it is all zeros when `no_zero_row`.
std::vector<int> draw_row(WholeNumbers& numbers, int n_cols, bool no_zero_row) {
    std::vector<int> row(static_cast<std::size_t>(n_cols));
    bool all_zero = true;
    do {
        all_zero = true;
        for (auto& value : row) {
            value = numbers.next();
            all_zero = all_zero && value == 0;
        }
    } while (no_zero_row && all_zero);
    return row;
}

// The rows of a matrix; rows of zeros only are drawn again when
// `no_zero_rows`, since a token whose vector is all zeros takes no part in attention.
std::vector<std::vector<int>> draw_matrix(WholeNumbers& numbers, int n_rows, int n_cols, bool no_zero_rows) {
    std::vector<std::vector<int>> rows;
    for (int i = 0; i < n_rows; ++i) {
        rows.push_back(draw_row(numbers, n_cols, no_zero_rows));
    }
    return rows;
}

std::string shape(int rows, int cols) { return std::to_string(rows) + " × " + std::to_string(cols); }

bool causal(const InitOptions& o) { return o.mask == "causal"; }
bool unscaled(const InitOptions& o) { return o.scale == "none"; }

// The ID as a shell word: as it is when it holds only characters no shell
// treats specially, else in single quotes ('\'' for a quote inside).
std::string shell_word(const std::string& text) {
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return std::isalnum(byte) != 0 || byte >= 0x80 || std::string_view("_-.,:@%+=/").find(c) != std::string::npos;
    });
    if (plain) {
        return text;
    }
    std::string quoted = "'";
    for (const char c : text) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

// U+0085, U+2028 or U+2029: line breaks to some YAML readers, in the file's comments.
bool line_separator(const std::string& text) {
    return text.find("\xc2\x85") != std::string::npos || text.find("\xe2\x80\xa8") != std::string::npos ||
           text.find("\xe2\x80\xa9") != std::string::npos;
}

// The command line that writes this file again: every size (a later version
// may change a default), and the other options when they are not the default.
std::string command_line(const InitOptions& o) {
    std::string line = "qkv init";
    if (o.student) {
        // an ID that starts with '-' would read as an option
        line += o.student->rfind('-', 0) == 0 ? " --student=" + shell_word(*o.student)
                                              : " --student " + shell_word(*o.student);
    }
    line += " --tokens " + std::to_string(o.tokens) + " --d-model " + std::to_string(o.d_model) + " --d-k " +
            std::to_string(o.d_k);
    if (o.d_v != 0 && o.d_v != o.d_k) {
        line += " --d-v " + std::to_string(o.d_v);
    }
    if (o.heads != 1) {
        line += " --heads " + std::to_string(o.heads);
    }
    if (!o.student) {
        line += " --seed " + std::to_string(o.seed);
    }
    line += " --max-int " + std::to_string(o.max_int);
    if (o.negative) {
        line += " --negative";
    }
    if (causal(o)) {
        line += " --mask causal";
    }
    if (o.bias) {
        line += " --bias";
    }
    if (unscaled(o)) {
        line += " --scale none";
    }
    return line;
}

// "0 or 1", "a whole number from 0 to 3", "a whole number from −2 to 2"
std::string number_range(const InitOptions& o) {
    if (o.max_int == 1 && !o.negative) {
        return "0 or 1";
    }
    return "a whole number from " + (o.negative ? "−" + std::to_string(o.max_int) : std::string("0")) + " to " +
           std::to_string(o.max_int);
}

// The file's first comment: what wrote it and how to write it again.
void header(YamlWriter& yaml, const InitOptions& o, int draw) {
    if (o.student) {
        yaml.comment("An exercise for student " + *o.student + ", written by")
            .comment("  " + command_line(o))
            .comment("which writes it again, byte for byte, with any version of qkv on any machine.")
            .comment("It is draw " + std::to_string(draw) +
                     " for this ID: the first in which every classic mistake changes at")
            .comment("least two cells at 2 decimals, so that `qkv check` can name it.");
    } else {
        yaml.comment("A starter example for qkv, written by")
            .comment("  " + command_line(o))
            .comment("Run it with `qkv run FILE`, change any number, and run it again.");
    }
    yaml.comment("Rows are tokens: X is n × d_model, and Q = X·W_Q, so W_Q has d_model rows.");
}

// The example for one seed: `draw` numbers a --student draw (0 without --student).
std::string example_text(const InitOptions& options, std::uint64_t seed, int draw) {
    const int n = options.tokens;
    const int d_model = options.d_model;
    const int d_k = options.d_k;
    const int d_v = options.d_v == 0 ? options.d_k : options.d_v;
    const int n_heads = options.heads;
    WholeNumbers numbers(seed, options.max_int, options.negative);

    YamlWriter yaml;
    header(yaml, options, draw);
    yaml.blank();
    if (options.student) {
        yaml.quoted("title", "Exercise for " + *options.student);
    } else {
        yaml.word("title", "Starter example");
    }
    yaml.literal("description",
                 {std::to_string(n) + (n == 1 ? " token" : " tokens") + " of width " + std::to_string(d_model) +
                      " (d_model), with queries and keys of width " + std::to_string(d_k) + " (d_k)",
                  "and values of width " + std::to_string(d_v) + " (d_v)" +
                      (n_heads > 1 ? " in each of " + std::to_string(n_heads) + " heads" : "") + ".",
                  "Every input" + std::string(options.bias ? ", weight and bias" : " and weight") + " is " +
                      number_range(options) + ", to work by hand."});
    yaml.blank();
    std::vector<std::string> tokens;
    for (int i = 1; i <= n; ++i) {
        tokens.push_back("x" + std::to_string(i));
    }
    yaml.words("tokens", tokens, "one label per row of inputs; rename them freely").blank();
    yaml.matrix("inputs", draw_matrix(numbers, n, d_model, true),
                "X: " + shape(n, d_model) + ", one row per token (d_model = " + std::to_string(d_model) + ")");
    yaml.blank();
    if (n_heads > 1) {
        yaml.number("heads", n_heads,
                    "head h uses the h-th block of d_k columns of W_Q and W_K, and of d_v columns of W_V");
        yaml.blank();
    }
    const std::string per_head = n_heads > 1 ? std::to_string(n_heads) + "·" : "";
    // the weights' comments in one column: `  query:    # W_Q: …`
    yaml.begin("weights", {}, {.column = 12});
    yaml.matrix("query", draw_matrix(numbers, d_model, n_heads * d_k, false),
                "W_Q: " + shape(d_model, n_heads * d_k) + " (d_model × " + per_head + "d_k)");
    yaml.matrix("key", draw_matrix(numbers, d_model, n_heads * d_k, false),
                "W_K: " + shape(d_model, n_heads * d_k) + " (d_model × " + per_head + "d_k)");
    yaml.matrix("value", draw_matrix(numbers, d_model, n_heads * d_v, false),
                "W_V: " + shape(d_model, n_heads * d_v) + " (d_model × " + per_head + "d_v)");
    if (n_heads > 1) {
        yaml.matrix("output", draw_matrix(numbers, n_heads * d_v, d_model, false),
                    "W_O: " + shape(n_heads * d_v, d_model) + " (" + per_head +
                        "d_v × d_model): mixes the concatenated heads");
    }
    yaml.end();
    if (options.bias) {
        // drawn after the weights, so that --bias keeps a seed's inputs and weights; a
        // bias of zeros only would add nothing, and is drawn again
        yaml.blank().begin("bias", "row vectors, each added to every row of its projection: Q = X·W_Q + b_Q",
                           {.longest = true});
        const auto bias = [&](const std::string& key, int width, const std::string& name, const std::string& after) {
            yaml.row(key, draw_row(numbers, width, true), name + ": 1 × " + std::to_string(width) + after);
        };
        bias("query", n_heads * d_k, "b_Q", "");
        bias("key", n_heads * d_k, "b_K", "");
        bias("value", n_heads * d_v, "b_V", "");
        if (n_heads > 1) {
            bias("output", d_model, "b_O", ", added after W_O");
        }
        yaml.end();
    }
    yaml.blank();
    const std::string root = "√d_k = √" + std::to_string(d_k);
    if (unscaled(options)) {
        yaml.word("scale", "none", "the scores are not divided; `sqrt_dk` divides them by " + root);
    } else {
        yaml.word("scale", "sqrt_dk", "divide the scores by " + root + "; `none` leaves them as they are");
    }
    if (causal(options)) {
        yaml.word("mask", "causal", "token i attends only to tokens 1 … i");
    }
    yaml.blank();
    if (options.student) {
        yaml.number("decimals", 2, "qkv check: answers carry at least 2 decimals (fewer only when exact)")
            .blank()
            .comment("Work every step by hand, write your values under answers: by step id")
            .comment("(see `man qkv`, check), and grade them with `qkv check FILE`.");
    } else {
        // the lines to try are comments, their own comments aligned
        yaml.comment("More to try (remove the # to use a line):");
        if (!causal(options)) {
            yaml.comment("mask: causal              # token i attends only to tokens 1 … i");
        }
        yaml.comment("positional: sinusoidal    # add sinusoidal position vectors to the inputs first")
            .comment("round: {weights: 2}       # round the weights to 2 decimals and carry them forward, as by hand");
    }
    return yaml.str();
}

// The options that cannot make a file, or (with --student) an exercise, as usage errors.
void check_options(const InitOptions& o) {
    std::vector<Diagnostic> problems;
    if (!o.mask.empty() && !causal(o)) {
        problems.push_back(usage_error("--mask: \"" + o.mask + "\" is not a mask init writes; expected causal",
                                       "a window, a padding or a mask matrix goes into the file by hand (see "
                                       "EXAMPLE FILES in `man qkv`)"));
    }
    if (o.scale != "sqrt_dk" && !unscaled(o)) {
        problems.push_back(usage_error("--scale: \"" + o.scale + "\" is not a scale init writes; expected sqrt_dk or none",
                                       "another divisor goes into the file by hand, e.g. scale: 2"));
    }
    if (o.student) {
        const std::string& id = *o.student;
        if (o.seed_given) {
            problems.push_back(usage_error("--seed cannot be combined with --student; expected one of the two",
                                           "--student derives the seed from the ID: leave out --seed"));
        }
        if (id.find_first_not_of(" \t") == std::string::npos) {
            problems.push_back(usage_error("--student: the ID is empty; expected a name or a number for the student",
                                           "e.g. --student alice or --student 2024-017"));
        } else if (id.size() > k_max_student_bytes) {
            problems.push_back(usage_error("--student: the ID is " + std::to_string(id.size()) +
                                               " bytes long; expected at most " + std::to_string(k_max_student_bytes),
                                           "a shorter name or number for the student, e.g. their student number"));
        } else if (!valid_utf8(id)) {
            problems.push_back(usage_error("--student: the ID is not UTF-8 text",
                                           "write the ID in a UTF-8 terminal or file"));
        } else if (std::any_of(id.begin(), id.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }) ||
                   line_separator(id)) {
            problems.push_back(usage_error("--student: the ID holds a control character (a tab or a line break); "
                                               "expected one line of text",
                                           "write the ID on one line, without tabs"));
        }
        const int d_v = o.d_v == 0 ? o.d_k : o.d_v;
        const std::pair<const char*, int> sizes[] = {{"--tokens", o.tokens},
                                                     {"--d-model", o.d_model},
                                                     {"--heads × --d-k", o.heads * o.d_k},
                                                     {"--heads × --d-v", o.heads * d_v}};
        for (const auto& [name, size] : sizes) {
            if (size > k_max_exercise_size) {
                problems.push_back(usage_error(
                    "--student writes exercises with matrices of at most " + std::to_string(k_max_exercise_size) +
                        " rows and columns; " + name + " is " + std::to_string(size),
                    "an exercise is worked by hand: make " + std::string(name) + " at most " +
                        std::to_string(k_max_exercise_size)));
                break;  // one is enough: d_v is d_k unless given
            }
        }
        if (o.tokens < 2) {
            problems.push_back(usage_error("--student needs at least 2 tokens; with --tokens 1 every score and weight "
                                               "is a single cell, too few for qkv check to name a mistake",
                                           "use --tokens 2 or more (3 by default)"));
        } else if (causal(o) && o.tokens < 3) {
            problems.push_back(usage_error("--student with --mask causal needs at least 3 tokens; with 2, a mask "
                                               "with 0 instead of −∞ changes a single score",
                                           "use --tokens 3 or more, or leave out --mask"));
        }
        if (!unscaled(o) && o.d_k > 1 && o.d_k * o.d_k == o.d_model) {
            problems.push_back(usage_error(
                "--student with --d-k " + std::to_string(o.d_k) + " and --d-model " + std::to_string(o.d_model) +
                    ": d_k is √d_model, so dividing the scores by d_k or by √d_model gives the same numbers, and qkv "
                    "check cannot tell the two mistakes apart",
                "change --d-k or --d-model (e.g. --d-k " + std::to_string(o.d_k + 1) + "), or use --scale none"));
        }
    }
    if (!problems.empty()) {
        throw InputError(std::move(problems));
    }
}

// What to change when no draw makes a good exercise, by the reason drawn most often.
std::string flaw_hint(FlawKind kind, const InitOptions& o) {
    switch (kind) {
        case FlawKind::saturated:
            return std::string("smaller scores keep the weights clear of 0 and 1: lower --max-int or --d-model") +
                   (unscaled(o) ? ", leave out --scale none" : "") + ", or use fewer --tokens";
        case FlawKind::too_few:
        case FlawKind::no_value:
            return "another shape (--tokens, --d-model, --d-k) or other numbers (--max-int, --negative) let the "
                   "mistake change more cells";
        case FlawKind::same_as:
        case FlawKind::square_root:
            return "another shape (--tokens, --d-model, --d-k, --d-v) lets the two mistakes give different numbers";
    }
    return "";
}

// The first of the student's draws that makes a good exercise.
std::string student_exercise(const InitOptions& options) {
    const std::string& id = *options.student;
    std::map<FlawKind, int> count;
    std::map<FlawKind, std::string> example;
    for (int draw = 1; draw <= k_max_draws; ++draw) {
        std::string text = example_text(options, student_seed(id, draw), draw);
        const Model model = load_model({"exercise.yaml", text, ""});
        const Trace trace = compute(model);
        const auto flaw = exercise_flaw(model, trace);
        if (!flaw) {
            return text;
        }
        ++count[flaw->kind];
        example.emplace(flaw->kind, flaw->what);
    }
    const auto commonest = std::max_element(count.begin(), count.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
    throw InputError(usage_error("--student " + id + ": none of " + std::to_string(k_max_draws) +
                                     " draws makes an exercise in which qkv check can tell every classic mistake "
                                     "apart; the commonest reason: " + example[commonest->first],
                                 flaw_hint(commonest->first, options)));
}

}  // namespace

std::string starter_example(const InitOptions& options) {
    check_options(options);
    if (options.student) {
        return student_exercise(options);
    }
    return example_text(options, static_cast<std::uint64_t>(options.seed), 0);
}

CLI::App* setup_init(CLI::App& app, InitOptions& options) {
    Bindings bindings;
    bindings.bind("--tokens", &options.tokens)
        .bind("--d-model", &options.d_model)
        .bind("--d-k", &options.d_k)
        .bind("--d-v", &options.d_v)
        .bind("--heads", &options.heads)
        .bind("--seed", &options.seed, &options.seed_given)
        .bind("--student", &options.student)
        .bind("--max-int", &options.max_int)
        .bind("--negative", &options.negative)
        .bind("--mask", &options.mask)
        .bind("--bias", &options.bias)
        .bind("--scale", &options.scale)
        .bind("--output", &options.output)
        .bind("--force", &options.force);
    return add_command(app, CommandId::init, bindings);
}

int run_init(const InitOptions& options) {
    const std::string text = starter_example(options);
    write_to(options.output, options.force, [&text](std::ostream& out) { out << text; });
    return 0;
}

}  // namespace qkv::cli
