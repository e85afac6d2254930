// Which lesson `qkv lesson ARGUMENT` means: a lesson file (or - for standard
// input), a built-in lesson's number, or its name.
#include "io/lesson_loader.hpp"

#include "builtin/builtin.hpp"
#include "io/loader.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace qkv {

std::string builtin_lesson_list() {
    std::string list;
    int number = 0;
    for (const auto& lesson : builtin_lessons()) {
        list += (list.empty() ? "" : ", ") + std::to_string(++number) + " " + std::string(lesson.name);
    }
    return list;
}

LessonSource find_lesson(const std::string& argument) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (argument == "-" || fs::exists(fs::path(argument), error)) {
        LessonSource found;
        found.source = read_source(argument);
        found.name = argument == "-" ? "stdin" : fs::path(argument).stem().string();
        return found;
    }
    const auto& lessons = builtin_lessons();
    const bool numeric = !argument.empty() && argument.size() < 9 &&
                         std::all_of(argument.begin(), argument.end(),
                                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) {
        const int number = std::stoi(argument);
        if (number >= 1 && static_cast<std::size_t>(number) <= lessons.size()) {
            const BuiltinFile& lesson = lessons[static_cast<std::size_t>(number - 1)];
            return {{"lesson:" + std::string(lesson.name), std::string(lesson.text), ""}, std::string(lesson.name), number};
        }
        throw InputError(Diagnostic{"", 0, 0,
                                    "there is no lesson " + argument + "; the lessons are numbered 1 to " +
                                        std::to_string(lessons.size()),
                                    "lessons: " + builtin_lesson_list()});
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < lessons.size(); ++i) {
        if (lessons[i].name == argument) {
            return {{"lesson:" + argument, std::string(lessons[i].text), ""}, argument, static_cast<int>(i + 1)};
        }
        names.emplace_back(lessons[i].name);
    }
    throw InputError(Diagnostic{argument, 0, 0, "no such lesson file, and no built-in lesson by that name",
                                did_you_mean(argument, names) + "lessons: " + builtin_lesson_list()});
}

}  // namespace qkv
