#include "attention/attention.hpp"
#include "check/check.hpp"
#include "check/class_report.hpp"
#include "check/report.hpp"
#include "cli/commands.hpp"
#include "io/answers.hpp"
#include "io/rubric.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace qkv::cli {

namespace {

// The answer files --answers names: each FILE as it is, each folder's *.yaml
// and *.yml files sorted by name (but the example file, when it lies there).
// `batch` is set when there may be several.
std::vector<std::string> answer_files(const std::vector<std::string>& given, const std::string& example,
                                      bool& batch) {
    batch = given.size() > 1;
    std::vector<std::string> files;
    for (const auto& path : given) {
        std::error_code error;
        if (path == "-" || !std::filesystem::is_directory(path, error)) {
            files.push_back(path);
            continue;
        }
        batch = true;
        std::vector<std::string> found;
        for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
            const std::string extension = entry.path().extension().string();
            // the model itself, kept beside its answers, is not one of them
            const bool is_example = std::filesystem::equivalent(entry.path(), example, error);
            if ((extension == ".yaml" || extension == ".yml") && !entry.is_directory(error) && !is_example) {
                found.push_back(entry.path().string());
            }
        }
        if (found.empty()) {
            throw InputError(Diagnostic{path, 0, 0, "the folder holds no .yaml or .yml files",
                                        "give the folder of the learners' answer files, or the files themselves"});
        }
        std::sort(found.begin(), found.end());
        files.insert(files.end(), found.begin(), found.end());
    }
    if (std::count(files.begin(), files.end(), "-") > 1) {
        throw InputError(usage_error("--answers - is given twice", "standard input can be read once"));
    }
    return files;
}

// Reads one learner's answers and grades those --steps and --head choose.
GradedFile grade_file(const Model& model, const Trace& trace, const RenderOptions& rendering, const Source* example,
                      const std::string& path, const CheckOptions& checking) {
    GradedFile graded;
    graded.file = path.empty() ? example->name : path;
    graded.answers = std::make_unique<Answers>(
        path.empty() ? read_answers(*example, trace, AnswersIn::example_file)
                     : read_answers(read_answer_source(path), trace, AnswersIn::answer_file));
    Answers& answers = *graded.answers;

    // --steps and --head choose which answers are graded: the others count as
    // not given, so no answer gets credit for following from them
    const auto chosen = select_steps(trace, rendering);
    std::vector<std::string> left_out;
    std::erase_if(answers.steps, [&](const StepAnswer& answer) {
        const bool graded_here = std::any_of(chosen.begin(), chosen.end(), [&answer](const Step* step) {
            return step->id == answer.id && step->head == answer.head;
        });
        if (!graded_here) {
            left_out.push_back(step_label(trace, answer.id, answer.head));
        }
        return !graded_here;
    });
    std::erase_if(answers.blank, [&](const BlankStep& blank) {
        return std::none_of(chosen.begin(), chosen.end(), [&blank](const Step* step) {
            return step->id == blank.id && step->head == blank.head;
        });
    });
    if (answers.steps.empty() && !left_out.empty()) {
        throw InputError(usage_error("none of the answers is in the steps chosen by --steps and --head",
                                     "leave out --steps and --head to grade every answer"));
    }
    graded.report = check_answers(model, trace, answers, checking);
    graded.report->not_graded = std::move(left_out);
    return graded;
}

}  // namespace

CLI::App* setup_check(CLI::App& app, CheckCommandOptions& options) {
    Bindings bindings = common_bindings(options.common);
    bindings.bind("file", &options.file)
        .bind("--answers", &options.answers)
        .bind("--tolerance", &options.tolerance)
        .bind("--decimals", &options.decimals)
        .bind("--rubric", &options.rubric)
        .bind("--block-size", &options.block_size);
    return add_command(app, CommandId::check, bindings);
}

namespace {

// The grading options: the command line's, else the example's.
CheckOptions grading_options(const CheckCommandOptions& options, const Model& model) {
    CheckOptions checking;
    if (options.tolerance >= 0.0) {
        checking.tolerance = options.tolerance;
    }
    checking.decimals = options.decimals >= 0 ? options.decimals : model.decimals.value_or(1);
    checking.block_size = options.block_size;
    checking.rubric = model.rubric;
    if (!options.rubric.empty()) {
        std::error_code error;
        if (options.rubric != "-" && !std::filesystem::exists(options.rubric, error)) {
            throw InputError(Diagnostic{options.rubric, 0, 0, "no such rubric file",
                                        "give a YAML file of step ids and points, e.g. scores: 2"});
        }
        checking.rubric = read_rubric(read_source(options.rubric), model);
    }
    return checking;
}

// Gradescope's results.json for answers that cannot be read: score 0, and the error for the learner.
std::string unreadable_results(const InputError& error) {
    std::string output = "Your answers could not be read:";
    for (const auto& diagnostic : error.diagnostics()) {
        output += "\n" + error_line(diagnostic) + (diagnostic.hint.empty() ? "" : "\n  hint: " + diagnostic.hint);
    }
    const nlohmann::ordered_json results = {{"score", 0}, {"output", output}, {"tests", nlohmann::json::array()}};
    return results.dump(2) + "\n";
}

}  // namespace

int run_check(const CheckCommandOptions& options) {
    const CommonOptions& common = options.common;
    if (!writes_format(Writer::check, common.format)) {
        throw InputError(format_refused(common.format, "check", Writer::check));
    }
    const bool gradescope = parse_format(common.format) == Format::gradescope;
    if (options.file == "-" && std::find(options.answers.begin(), options.answers.end(), "-") != options.answers.end()) {
        throw InputError(usage_error("the example and the answers cannot both be read from standard input",
                                     "give one of them as a file"));
    }
    bool batch = false;
    const std::vector<std::string> files = answer_files(options.answers, options.file, batch);
    if (batch && !writes_format(Writer::check_class, common.format)) {
        throw InputError(usage_error("-f " + common.format + " writes one learner's report; expected one answers file",
                                     "give one answers file, or use -f " + format_list(Writer::check_class) +
                                         " for a class"));
    }
    const Source source = read_source(options.file);
    const Model model = load_model(source, load_options(common));
    const Trace trace = compute(model);
    const RenderOptions rendering = render_options(common, trace);
    const CheckOptions checking = grading_options(options, model);

    std::ostringstream out;
    if (!batch) {
        GradedFile graded;
        try {
            graded = grade_file(model, trace, rendering, &source, files.empty() ? "" : files.front(), checking);
        } catch (const InputError& error) {
            if (gradescope) {
                write_result(unreadable_results(error), common);  // an autograder needs its file all the same
            }
            throw;
        }
        const bool correct = graded.report->correct();
        if (gradescope) {
            render_check_gradescope(trace, *graded.report, rendering, out);
        } else if (rendering.format == Format::csv) {
            std::vector<GradedFile> one;
            one.push_back(std::move(graded));
            render_gradebook(one, out);
        } else {
            render_check(trace, *graded.report, rendering, options.file, out);
        }
        write_result(out.str(), common);
        return correct ? 0 : 1;
    }

    // a class: a file that cannot be read does not stop the others
    std::vector<GradedFile> graded;
    bool unreadable = false;
    bool wrong = false;
    for (const auto& file : files) {
        try {
            graded.push_back(grade_file(model, trace, rendering, nullptr, file, checking));
            wrong = wrong || !graded.back().report->correct();
        } catch (const InputError& error) {
            GradedFile failed;
            failed.file = file;
            for (const auto& diagnostic : error.diagnostics()) {
                print_error(diagnostic);
                failed.error += (failed.error.empty() ? "" : "\n") + error_line(diagnostic);
            }
            graded.push_back(std::move(failed));
            unreadable = true;
        }
    }
    render_class(trace, graded, rendering, options.file, out);
    write_result(out.str(), common);
    return unreadable ? 2 : wrong ? 1 : 0;
}

}  // namespace qkv::cli
