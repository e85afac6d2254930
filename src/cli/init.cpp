// qkv init: a starter example file with small whole-number inputs and weights,
// each key commented, for a learner to run, work through by hand and edit.
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/output.hpp"

#include <cstdint>
#include <random>
#include <sstream>

namespace qkv::cli {

namespace {

// Whole numbers from 0 to max_int. The sequence of std::mt19937_64 is fixed by
// the C++ standard (std::uniform_int_distribution's is not), so a seed gives
// the same file on every machine.
class WholeNumbers {
public:
    WholeNumbers(std::uint64_t seed, int max_int) : m_engine(seed), m_choices(static_cast<std::uint64_t>(max_int) + 1) {}

    int next() { return static_cast<int>(m_engine() % m_choices); }

private:
    std::mt19937_64 m_engine;
    std::uint64_t m_choices;
};

// "  - [1, 0, 2]" lines, one per row; rows of zeros only are drawn again when
// `no_zero_rows`, since a token whose vector is all zeros takes no part in attention.
std::string matrix_rows(WholeNumbers& numbers, int n_rows, int n_cols, const std::string& indent, bool no_zero_rows) {
    std::string text;
    for (int i = 0; i < n_rows; ++i) {
        std::vector<int> row(static_cast<std::size_t>(n_cols));
        bool all_zero = true;
        do {
            all_zero = true;
            for (auto& value : row) {
                value = numbers.next();
                all_zero = all_zero && value == 0;
            }
        } while (no_zero_rows && all_zero);
        text += indent + "- [";
        for (std::size_t j = 0; j < row.size(); ++j) {
            text += (j == 0 ? "" : ", ") + std::to_string(row[j]);
        }
        text += "]\n";
    }
    return text;
}

std::string shape(int rows, int cols) { return std::to_string(rows) + " × " + std::to_string(cols); }

// The command line that writes this file again.
std::string command_line(const InitOptions& o) {
    std::string line = "qkv init --tokens " + std::to_string(o.tokens) + " --d-model " + std::to_string(o.d_model) +
                       " --d-k " + std::to_string(o.d_k);
    if (o.d_v != 0 && o.d_v != o.d_k) {
        line += " --d-v " + std::to_string(o.d_v);
    }
    if (o.heads != 1) {
        line += " --heads " + std::to_string(o.heads);
    }
    line += " --seed " + std::to_string(o.seed) + " --max-int " + std::to_string(o.max_int);
    return line;
}

}  // namespace

std::string starter_example(const InitOptions& options) {
    const int n = options.tokens;
    const int d_model = options.d_model;
    const int d_k = options.d_k;
    const int d_v = options.d_v == 0 ? options.d_k : options.d_v;
    const int n_heads = options.heads;
    WholeNumbers numbers(static_cast<std::uint64_t>(options.seed), options.max_int);

    std::ostringstream out;
    out << "# A starter example for qkv, written by\n"
        << "#   " << command_line(options) << "\n"
        << "# Run it with `qkv run FILE`, change any number, and run it again.\n"
        << "# Rows are tokens: X is n × d_model, and Q = X·W_Q, so W_Q has d_model rows.\n"
        << "\n"
        << "title: Starter example\n"
        << "description: |\n"
        << "  " << n << (n == 1 ? " token" : " tokens") << " of width " << d_model << " (d_model), with queries and keys of width "
        << d_k << " (d_k)\n"
        << "  and values of width " << d_v << " (d_v)";
    if (n_heads > 1) {
        out << " in each of " << n_heads << " heads";
    }
    out << ".\n"
        << "  Every input and weight is " << (options.max_int == 1 ? std::string("0 or 1") : "a whole number from 0 to " + std::to_string(options.max_int))
        << ", to work by hand.\n"
        << "\n"
        << "tokens: [";
    for (int i = 1; i <= n; ++i) {
        out << (i == 1 ? "" : ", ") << "x" << i;
    }
    out << "]    # one label per row of inputs; rename them freely\n"
        << "\n"
        << "inputs:    # X: " << shape(n, d_model) << ", one row per token (d_model = " << d_model << ")\n"
        << matrix_rows(numbers, n, d_model, "  ", true) << "\n";
    if (n_heads > 1) {
        out << "heads: " << n_heads << "    # head h uses the h-th block of d_k columns of W_Q and W_K, and of d_v columns of W_V\n"
            << "\n";
    }
    const std::string per_head = n_heads > 1 ? std::to_string(n_heads) + "·" : "";
    out << "weights:\n"
        << "  query:    # W_Q: " << shape(d_model, n_heads * d_k) << " (d_model × " << per_head << "d_k)\n"
        << matrix_rows(numbers, d_model, n_heads * d_k, "    ", false)
        << "  key:      # W_K: " << shape(d_model, n_heads * d_k) << " (d_model × " << per_head << "d_k)\n"
        << matrix_rows(numbers, d_model, n_heads * d_k, "    ", false)
        << "  value:    # W_V: " << shape(d_model, n_heads * d_v) << " (d_model × " << per_head << "d_v)\n"
        << matrix_rows(numbers, d_model, n_heads * d_v, "    ", false);
    if (n_heads > 1) {
        out << "  output:   # W_O: " << shape(n_heads * d_v, d_model) << " (" << per_head
            << "d_v × d_model): mixes the concatenated heads\n"
            << matrix_rows(numbers, n_heads * d_v, d_model, "    ", false);
    }
    out << "\n"
        << "scale: sqrt_dk    # divide the scores by √d_k = √" << d_k << "; `none` leaves them as they are\n"
        << "\n"
        << "# More to try (remove the # to use a line):\n"
        << "# mask: causal              # token i attends only to tokens 1 … i\n"
        << "# positional: sinusoidal    # add sinusoidal position vectors to the inputs first\n"
        << "# round: {weights: 2}       # round the weights to 2 decimals and carry them forward, as by hand\n";
    return out.str();
}

CLI::App* setup_init(CLI::App& app, InitOptions& options) {
    CLI::App* command = app.add_subcommand("init", "Write a starter example with small whole-number weights");
    command->add_option("--tokens", options.tokens, "Number of tokens, the rows of inputs (default 3)")
        ->check(whole_number(1, 256))
        ->type_name("N");
    command->add_option("--d-model", options.d_model, "Width of each input row (default 4)")
        ->check(whole_number(1, 256))
        ->type_name("D");
    command->add_option("--d-k", options.d_k, "Width of queries and keys, per head (default 3)")
        ->check(whole_number(1, 256))
        ->type_name("K");
    command->add_option("--d-v", options.d_v, "Width of values, per head (default: d_k)")
        ->check(whole_number(1, 256))
        ->type_name("V");
    command->add_option("--heads", options.heads, "Number of heads (default 1)")->check(whole_number(1, 16))->type_name("H");
    command->add_option("--seed", options.seed, "Seed: the same seed gives the same file (default 1)")
        ->check(whole_number(0, std::int64_t{1} << 53))
        ->type_name("S");
    command->add_option("--max-int", options.max_int, "Largest number drawn, from 1 to 9 (default 1)")
        ->check(whole_number(1, 9))
        ->type_name("M");
    command->add_option("-o,--output", options.output, "Write to FILE instead of standard output")->type_name("FILE");
    command->add_flag("--force", options.force, "Let -o replace an existing file");
    return command;
}

int run_init(const InitOptions& options) {
    const std::string text = starter_example(options);
    if (options.output.empty() || options.output == "-") {
        write_stdout(text);
    } else {
        write_file_atomically(options.output, text, options.force);
    }
    return 0;
}

}  // namespace qkv::cli
