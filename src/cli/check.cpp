#include "attention/attention.hpp"
#include "check/check.hpp"
#include "check/report.hpp"
#include "cli/commands.hpp"
#include "io/answers.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace qkv::cli {

namespace {

// the formats of check's report
const std::vector<Format> k_check_formats = {Format::text, Format::markdown, Format::json};

}  // namespace

CLI::App* setup_check(CLI::App& app, CheckCommandOptions& options) {
    CLI::App* command = app.add_subcommand("check", "Grade hand-calculated answers; exit 1 on any mistake");
    command->add_option("file", options.file, "Example file, built-in example name, or - for stdin")
        ->required()
        ->type_name("FILE|NAME|-");
    command->add_option("--answers", options.answers, "Read the answers from FILE instead of the example's answers:")
        ->type_name("FILE");
    command->add_option("--tolerance", options.tolerance, "Right when within T of the true value (not rounding-aware)")
        ->check(CLI::Validator(
            [](std::string& text) {
                // NonNegativeNumber's own message would quote the largest double
                char* end = nullptr;
                const double value = std::strtod(text.c_str(), &end);
                const bool number = !text.empty() && *end == '\0' && value >= 0 && value <= 1e30;
                return number ? std::string() : "\"" + text + "\" is not a number from 0 to 1e30";
            },
            "T >= 0", "tolerance"))
        ->type_name("T");
    add_common_options(*command, options.common);
    add_backward_option(*command, options.common);
    return command;
}

int run_check(const CheckCommandOptions& options) {
    const std::string& format = options.common.format;
    if (!format_is_one_of(format, k_check_formats)) {
        throw InputError(usage_error("--format " + format + " is not available for check",
                                     "check writes " + join_list(format_names(k_check_formats), " or ")));
    }
    if (options.file == "-" && options.answers == "-") {
        throw InputError(usage_error("the example and the answers cannot both be read from standard input",
                                     "give one of them as a file"));
    }
    const Source source = read_source(options.file);
    const Model model = load_model(source, load_options(options.common));
    const Trace trace = compute(model);
    const RenderOptions rendering = render_options(options.common, trace);
    Answers answers = options.answers.empty()
                          ? read_answers(source, trace, AnswersIn::example_file)
                          : read_answers(read_answer_source(options.answers), trace, AnswersIn::answer_file);

    // --steps and --head choose which answers are graded: the others count as
    // not given, so no answer gets credit for following from them
    const auto chosen = select_steps(trace, rendering);
    std::erase_if(answers.steps, [&chosen](const StepAnswer& answer) {
        return std::none_of(chosen.begin(), chosen.end(),
                            [&answer](const Step* step) { return step->id == answer.id && step->head == answer.head; });
    });
    if (answers.steps.empty()) {
        throw InputError(usage_error("none of the answers is in the steps chosen by --steps and --head",
                                     "leave out --steps and --head to grade every answer"));
    }

    CheckOptions checking;
    if (options.tolerance >= 0.0) {
        checking.tolerance = options.tolerance;
    }
    const CheckReport report = check_answers(model, trace, answers, checking);

    std::ostringstream out;
    render_check(trace, report, rendering, options.file, out);
    write_result(out.str(), options.common);
    return report.correct() ? 0 : 1;
}

}  // namespace qkv::cli
