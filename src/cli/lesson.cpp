#include "builtin/builtin.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "io/lesson_loader.hpp"
#include "lesson/player.hpp"
#include "render/palette.hpp"
#include "render/table.hpp"
#include "base/utf8.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <csignal>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace qkv::cli {

namespace {

// The learner at a terminal: one line of standard input per answer or Enter.
class TerminalLearner : public Learner {
public:
    std::optional<std::string> read_line() override {
        std::string line;
        if (!std::getline(std::cin, line)) {
            return std::nullopt;
        }
        return line;
    }
};

// A size from the environment (COLUMNS, LINES): a whole number from 1 on.
std::optional<int> size_from(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr) {
        return std::nullopt;
    }
    const std::string value(text);
    int number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size() || number < 1) {
        return std::nullopt;
    }
    return number;
}

// The terminal's width (COLUMNS, else the terminal's own, else 80) and, when
// the lesson pauses, its height (LINES, else the terminal's own).
Screen terminal_screen(bool interactive) {
    Screen screen;
    winsize size{};
    const bool known = isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0;
    screen.width = size_from("COLUMNS").value_or(known && size.ws_col > 0 ? size.ws_col : 80);
    if (interactive) {
        screen.height = size_from("LINES").value_or(known && size.ws_row > 0 ? size.ws_row : 0);
    }
    return screen;
}

// Ctrl-C during a lesson: end any colour and the half-written line, then leave.
extern "C" void leave_on_interrupt(int signal_number) {
    [[maybe_unused]] const auto reset = write(STDOUT_FILENO, k_reset, sizeof k_reset - 1);
    [[maybe_unused]] const auto newline = write(STDOUT_FILENO, "\n", 1);
    _exit(128 + signal_number);
}

// The list of lessons: each one's number, name and summary (in ASCII with
// --ascii), the summaries wrapped to the terminal's width under one another
// (below the name when the terminal is too narrow for a column of them),
// then where to start. At a terminal a list taller than it pauses.
int list_lessons(bool ascii) {
    const auto& lessons = builtin_lessons();
    std::size_t width = 0;
    for (const auto& lesson : lessons) {
        width = std::max(width, lesson.name.size());
    }
    const bool interactive = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
    Screen screen = terminal_screen(interactive);
    const std::size_t columns = static_cast<std::size_t>(std::max(screen.width, 20)) - 1;
    const std::size_t indent = 4 + width + 2;                   // " 1  walkthrough  "
    const bool beside = columns >= indent + 30;                // room for a column of summaries
    const std::string margin(beside ? indent : 4, ' ');
    std::vector<std::string> lines;
    int number = 0;
    for (const auto& lesson : lessons) {
        const std::string name(lesson.name);
        const Lesson loaded = prepare_lesson(read_lesson({"lesson:" + name, std::string(lesson.text), ""}, name));
        const std::string index = std::to_string(++number);
        const std::string head = std::string(index.size() < 2 ? 1 : 0, ' ') + index + "  " + name;
        const std::vector<std::string> summary =
            word_lines(ascii ? to_ascii(loaded.summary) : loaded.summary, columns - margin.size());
        if (beside) {
            for (std::size_t i = 0; i < summary.size(); ++i) {
                lines.push_back((i == 0 ? head + std::string(indent - head.size(), ' ') : margin) + summary[i]);
            }
        } else {
            lines.push_back(head);
            for (const auto& line : summary) {
                lines.push_back(margin + line);
            }
        }
    }
    lines.emplace_back();
    for (const auto& line : word_lines("Start with qkv lesson 1. A lesson is played by its number or its name: qkv "
                                       "lesson 10 and qkv lesson rope are the same.",
                                       columns)) {
        lines.push_back(line);
    }
    if (!interactive || screen.height < 2 || static_cast<int>(lines.size()) < screen.height) {
        std::string listing;
        for (const auto& line : lines) {
            listing += line + "\n";
        }
        write_stdout(listing);
        return 0;
    }
    // a screenful at a time, as a lesson's pages are shown
    TerminalLearner learner;
    int shown = 0;
    for (const auto& line : lines) {
        if (shown == screen.height - 1) {
            std::cout << (ascii ? "-- more: Enter, or q to leave --" : "── more: Enter, or q to leave ──") << std::flush;
            const auto reply = learner.read_line();
            const auto first = reply ? reply->find_first_not_of(" \t\r") : std::string::npos;
            if (!reply || (first != std::string::npos && (*reply)[first] == 'q')) {
                std::cout << (reply ? "" : "\n") << std::flush;
                return 0;
            }
            shown = 0;
        }
        std::cout << line << '\n';
        ++shown;
    }
    std::cout << std::flush;
    return 0;
}

std::string next_step(int number) {
    const auto& lessons = builtin_lessons();
    if (number <= 0) {
        return "";
    }
    if (static_cast<std::size_t>(number) < lessons.size()) {
        return "Next: qkv lesson " + std::to_string(number + 1) + " (" +
               std::string(lessons[static_cast<std::size_t>(number)].name) + ").";
    }
    return "That was the last lesson: write an example of your own and run it with qkv run FILE.";
}

}  // namespace

CLI::App* setup_lesson(CLI::App& app, LessonOptions& options) {
    Bindings bindings = common_bindings(options.common);
    bindings.bind("lesson", &options.lesson)
        .bind("--no-pause", &options.no_pause)
        .bind("--page", &options.page)
        .bind("--answer", &options.answers);
    return add_command(app, CommandId::lesson, bindings);
}

int run_lesson(const LessonOptions& options) {
    if (options.lesson.empty()) {
        return list_lessons(options.common.ascii);
    }
    const CommonOptions& common = options.common;
    if (!writes_format(Writer::lesson, common.format)) {
        // the first is played on the terminal; the others are handouts
        const std::vector<std::string> names = format_choices(CommandId::lesson);
        std::vector<std::string> choices;
        for (const auto& format : names) {
            choices.push_back("--format " + format + (choices.empty() ? " (the default)" : ""));
        }
        throw InputError(usage_error("a lesson is played as " + names.front() + " or written as " +
                                         join_list({names.begin() + 1, names.end()}, " or ") + ", not " + common.format,
                                     "use " + join_list(choices, " or ")));
    }
    const LessonSource found = find_lesson(options.lesson);
    const Lesson lesson = prepare_lesson(read_lesson(found.source, found.name, load_options(common)));

    // --steps and --head narrow what each page shows; they are checked here
    // rather than against one trace, since a lesson may have several models.
    CommonOptions shared = common;
    shared.steps.clear();
    shared.head = 0;
    PlayOptions play;
    play.render = render_options(shared, lesson.models.front().trace);
    play.number = found.number;
    play.next = next_step(found.number);
    play.steps = step_list(common.steps);
    arma::uword most_heads = 0;
    for (const auto& model : lesson.models) {
        most_heads = std::max(most_heads, model.trace.dims.heads);
    }
    if (common.head > static_cast<int>(most_heads)) {
        const bool one = most_heads == 1;
        throw InputError(usage_error("--head " + std::to_string(common.head) + " does not exist: this lesson's models have " +
                                         (one ? std::string("one head") : std::to_string(most_heads) + " heads"),
                                     one ? "leave out --head: there is only head 1"
                                         : "heads are numbered from 1 to " + std::to_string(most_heads)));
    }
    play.head = common.head;
    const int pages = static_cast<int>(lesson.pages.size());
    if (options.page < 1 || options.page > pages) {
        throw InputError(usage_error("--page " + std::to_string(options.page) + " does not exist: this lesson has " +
                                         std::to_string(pages) + (pages == 1 ? " page" : " pages"),
                                     "pages are numbered from 1 to " + std::to_string(pages)));
    }
    play.first_page = options.page;
    play.answers = options.answers;
    std::string file = options.lesson;
    if (file.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-+") != std::string::npos) {
        std::string quoted = "'";
        for (const char c : file) {
            quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        file = quoted + "'";
    }
    play.resume = "qkv lesson " + (found.number > 0 ? std::to_string(found.number) : file);

    const bool interactive = !options.no_pause && options.answers.empty() && play.render.format == Format::text &&
                             common.output.empty() &&
                             isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
    if (interactive) {
        std::signal(SIGINT, leave_on_interrupt);
        TerminalLearner learner;
        Screen screen = terminal_screen(true);
        screen.read_line = [&learner]() { return learner.read_line(); };
        play.render.width = screen.width;
        auto writer = make_lesson_writer(play.render, std::cout, screen);
        play_lesson(lesson, play, *writer, &learner);
        std::cout.flush();
        return 0;
    }
    std::ostringstream out;
    const Screen screen = terminal_screen(false);
    play.render.width = screen.width;
    auto writer = make_lesson_writer(play.render, out, screen);
    play_lesson(lesson, play, *writer, nullptr);
    write_result(out.str(), common);
    return 0;
}

}  // namespace qkv::cli
