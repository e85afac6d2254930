#include "attention/attention.hpp"
#include "cli/commands.hpp"
#include "render/worksheet.hpp"

namespace qkv::cli {

namespace {

// A path as a shell reads it back: as it is when it is plain, else in single quotes.
std::string shell_word(const std::string& text) {
    if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-+=:,@") ==
                             std::string::npos) {
        return text;
    }
    std::string quoted = "'";
    for (const char c : text) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

// "qkv check illustrated --answers answers.yaml": how the template is checked once filled in.
std::string check_command(const WorksheetCommandOptions& options) {
    const std::string& output = options.common.output;
    const std::string model = options.file == "-" ? "MODEL.yaml" : shell_word(options.file);
    const std::string answers = output.empty() || output == "-" ? "answers.yaml" : shell_word(output);
    return "qkv check " + model + " --answers " + answers + (options.common.backward ? " --backward" : "");
}

}  // namespace

CLI::App* setup_worksheet(CLI::App& app, WorksheetCommandOptions& options) {
    options.common.format = "markdown";
    options.common.precision = -1;  // not given: the example's decimals:, else 2
    Bindings bindings = common_bindings(options.common);
    bindings.bind("file", &options.file).bind("--key", &options.key);
    return add_command(app, CommandId::worksheet, bindings);
}

int run_worksheet(const WorksheetCommandOptions& options) {
    const auto format = parse_format(options.common.format);
    if (!format || !writes(Writer::worksheet, *format)) {
        std::vector<std::string> sheets;
        for (const Format sheet : formats_of(Writer::worksheet)) {
            if (sheet != Format::yaml) {
                sheets.push_back(format_name(sheet));
            }
        }
        const bool run_writes = format && writes(Writer::run, *format);
        throw InputError(usage_error("a worksheet cannot be written as " + options.common.format +
                                         "; expected -f " + format_list(Writer::worksheet),
                                     join_list(sheets, " and ") + " are sheets to print; yaml is the answers template "
                                     "for qkv check" + (run_writes ? ". For the worked steps in " +
                                                                         options.common.format + ", use qkv run"
                                                                   : "")));
    }
    const Model model = load(options.file, options.common);
    const Trace trace = compute(model);
    // checks --head and --steps as run does
    const RenderOptions checked = render_options(options.common, trace);

    WorksheetOptions sheet;
    sheet.format = *format;
    sheet.steps = checked.steps;
    sheet.head = checked.head;
    sheet.backward = options.common.backward;
    sheet.key = options.key;
    // -p, else the exercise's decimals:, else 2
    sheet.decimals = options.common.precision >= 0 ? options.common.precision : model.decimals.value_or(2);
    sheet.standalone = options.common.standalone;
    sheet.ascii = options.common.ascii;
    sheet.check_command = check_command(options);
    write_streamed([&](std::ostream& out) { render_worksheet(model, trace, sheet, out); }, options.common);
    return 0;
}

}  // namespace qkv::cli
