// Lessons in tmux, as a learner sees them: every lesson at 60 × 24, 80 × 24
// and 120 × 40, paged through with Enter, never shows a line wider than the
// window (a table that cannot fit excepted), never lets text scroll away
// before the learner has pressed Enter, and asks each question with the
// numbers it needs on the screen; and a wrong answer is diagnosed, tried
// again and counted in the score.
#include "builtin/builtin.hpp"
#include "io/lesson_loader.hpp"
#include "lesson/player.hpp"
#include "render/table.hpp"
#include "support.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

namespace {

// A command's standard output (stderr is left on the test's).
std::string output_of(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buffer{};
    std::size_t got = 0;
    while ((got = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
        out.append(buffer.data(), got);
    }
    pclose(pipe);
    return out;
}

std::string shell_quoted(const std::string& text) {
    std::string result = "'";
    for (const char c : text) {
        result += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return result + "'";
}

std::string trimmed_right(std::string line) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) {
        line.pop_back();
    }
    return line;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream split(text);
    for (std::string line; std::getline(split, line);) {
        lines.push_back(trimmed_right(line));
    }
    return lines;
}

// The words of `lines`, each followed by one space: text wrapped at any
// width reads the same.
std::string words_of(const std::vector<std::string>& lines) {
    std::string joined;
    for (const auto& line : lines) {
        joined += line + " ";
    }
    std::istringstream split(joined);
    std::string words;
    for (std::string word; split >> word;) {
        words += word + " ";
    }
    return words;
}

// qkv in a tmux window of its own server, of the given size.
class Tmux {
public:
    Tmux(int cols, int rows, const std::vector<std::string>& args) : m_cols(cols), m_rows(rows) {
        qkv::test::require_tag("cli");
        qkv::test::require_tag("browser");
        static int sessions = 0;
        m_socket = "qkv-test-" + std::to_string(getpid()) + "-" + std::to_string(++sessions);
        std::string command = "env -u COLUMNS -u LINES -u NO_COLOR TERM=xterm-256color " + shell_quoted(qkv::test::qkv_binary());
        for (const auto& arg : args) {
            command += " " + shell_quoted(arg);
        }
        // remain-on-exit keeps the last screen once qkv has ended
        tmux("-f /dev/null new-session -d -x " + std::to_string(cols) + " -y " + std::to_string(rows) + " " +
             shell_quoted(command) + " \\; set-option -g remain-on-exit on");
    }
    ~Tmux() { tmux("kill-server"); }
    Tmux(const Tmux&) = delete;
    Tmux& operator=(const Tmux&) = delete;

    // The visible window, line by line.
    std::vector<std::string> screen() { return lines_of(tmux("capture-pane -p")); }
    // Everything qkv wrote, row by row as the window shows it.
    std::vector<std::string> rows_written() { return lines_of(tmux("capture-pane -p -S -")); }
    // Everything qkv wrote, lines wrapped by the window joined again.
    std::vector<std::string> history() { return lines_of(tmux("capture-pane -p -J -S -")); }
    bool ended() { return tmux("display-message -p '#{pane_dead}'").find('1') != std::string::npos; }
    void type(const std::string& text) {
        m_before = screen();
        if (!text.empty()) {
            tmux("send-keys -l " + shell_quoted(text));
        }
        tmux("send-keys Enter");
    }

    // Waits until qkv waits for the learner again (its last line is a
    // prompt, on a screen that has changed since the learner typed) or has
    // ended; returns that last line ("" when it ended). Fails after 10 s.
    std::string wait_for_prompt() {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (true) {
            if (ended()) {
                return "";
            }
            // the line the cursor is on: after the learner's Enter, an empty one until qkv writes
            const auto now = screen();
            const std::size_t cursor = static_cast<std::size_t>(std::stoi("0" + tmux("display-message -p '#{cursor_y}'")));
            const std::string last = now == m_before || cursor >= now.size() ? std::string() : now[cursor];
            for (const char* end : {"q to leave:", "q leaves):", "q to leave ──", "q to leave --"}) {
                if (last.ends_with(end)) {
                    return last;
                }
            }
            if (std::chrono::steady_clock::now() > deadline) {
                std::string shown;
                for (const auto& line : screen()) {
                    shown += line + "\n";
                }
                FAIL("qkv does not wait for the learner; the window shows:\n" << shown);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    int cols() const { return m_cols; }
    int rows() const { return m_rows; }

private:
    std::string tmux(const std::string& arguments) { return output_of("tmux -L " + m_socket + " " + arguments + " 2>/dev/null"); }

    int m_cols;
    int m_rows;
    std::string m_socket;
    std::vector<std::string> m_before;  // the screen when the learner last typed
};

// The index of the last line of `lines` before `before` that starts with `start`, or -1.
int find_start(const std::vector<std::string>& lines, const std::string& start, std::size_t before) {
    for (std::size_t i = std::min(before, lines.size()); i-- > 0;) {
        if (lines[i].rfind(start, 0) == 0) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

bool is_table_line(const std::string& line) {
    return line.find("│") != std::string::npos || line.find("─┼") != std::string::npos;
}

}  // namespace

TEST_CASE("every lesson fits a 60 × 24, an 80 × 24 and a 120 × 40 window: no line too wide, nothing scrolled away "
          "unread, every question's numbers on the screen with it",
          "[lesson][terminal][cli][browser]") {
    const auto size = GENERATE(std::pair{60, 24}, std::pair{80, 24}, std::pair{120, 40});
    const auto& lessons = qkv::builtin_lessons();
    for (std::size_t n = 1; n <= lessons.size(); ++n) {
        CAPTURE(n, size.first, size.second);
        // the questions in the order they are asked, each with the numbers it is worked from
        const auto found = qkv::find_lesson(std::to_string(n));
        const qkv::Lesson lesson = qkv::prepare_lesson(qkv::read_lesson(found.source, found.name));
        std::vector<std::vector<qkv::Given>> given;
        for (const auto& page : lesson.pages) {
            if (page.ask) {
                given.push_back(qkv::question_given(lesson, *page.ask, qkv::RenderOptions{}));
            }
        }
        std::size_t asked = 0;
        Tmux window(size.first, size.second, {"lesson", std::to_string(n)});
        // the line the learner last answered (first: the lesson's title)
        std::string seen = "Lesson " + std::to_string(n) + " ·";
        int pauses = 0;
        while (true) {
            const std::string prompt = window.wait_for_prompt();
            if (prompt.empty()) {
                // qkv has ended. tmux can mark its pane dead before it has
                // shown the last rows qkv wrote, so the part after the last
                // pause is checked for width below, not for height here.
                break;
            }
            // the rows qkv has written since the last pause, that pause's line
            // and the line where it waits now (or its last line) included,
            // fit the window: the learner saw each one before pressing Enter
            const auto rows = window.rows_written();
            std::size_t end = rows.size();
            while (end > 0 && (rows[end - 1].empty() || rows[end - 1].find("Pane is dead") != std::string::npos)) {
                --end;
            }
            const int last_pause = end == 0 ? -1 : find_start(rows, seen, end - 1);
            const bool still_there = last_pause >= 0 && static_cast<int>(end) - last_pause <= size.second;
            CAPTURE(seen, prompt);
            CHECK(still_there);
            if (prompt == "Your answer (Enter shows it, q leaves):") {
                // the question and every number it is worked from are on the screen as it waits
                REQUIRE(asked < given.size());
                const auto screen = window.screen();
                // the panel lists its numbers with "; " between them
                const auto plain = [](std::string text) {
                    std::erase(text, ';');
                    return text;
                };
                const std::string shown = plain(words_of(screen));
                CHECK(find_start(screen, "Question:", screen.size()) >= 0);
                CHECK_FALSE(given[asked].empty());
                for (const auto& item : given[asked]) {
                    CAPTURE(asked, item.numbers);
                    CHECK(shown.find(plain(words_of({item.numbers}))) != std::string::npos);
                }
                ++asked;
            }
            if (pauses > 400) {
                break;
            }
            seen = prompt;
            ++pauses;
            window.type("");
        }
        CHECK(pauses > 2);
        CHECK(asked == given.size());
        for (const auto& line : window.history()) {
            if (!is_table_line(line) && line.find("Pane is dead") == std::string::npos) {
                CAPTURE(line);
                CHECK(qkv::display_width(line) <= static_cast<std::size_t>(size.first));
            }
        }
    }
}

TEST_CASE("in tmux a wrong number is diagnosed, tried again and counted in the score", "[lesson][terminal][cli][browser]") {
    // lesson 1 from its page 4: query 1's weight for key 1, predicted from its scores [2, 4, 4]
    Tmux window(60, 24, {"lesson", "1", "--page", "4"});
    REQUIRE(window.wait_for_prompt() == "Your answer (Enter shows it, q leaves):");
    // the scores divided by their sum, without exp: 2 / 10
    window.type("0.20");
    REQUIRE(window.wait_for_prompt() == "Your second try (Enter shows the answer, q leaves):");
    // exp(2) / (exp(2) + 2·exp(4)) = 0.0634 (the illustrated article)
    window.type("0.06");
    // then Enter at every pause: the later questions show their answers
    for (int pause = 0; pause < 40 && !window.wait_for_prompt().empty(); ++pause) {
        window.type("");
    }
    CHECK(window.ended());
    // the window is 60 columns wide: the sentences are compared word by word
    const std::string words = words_of(window.history());
    CHECK(words.find("Question: What weight will query 1 give key 1? (at least 2 decimals)") != std::string::npos);
    CHECK(words.find("Not quite: you wrote 0.20. That is the number this mistake gives: ") != std::string::npos);
    CHECK(words.find("without exponentiating") != std::string::npos);
    CHECK(words.find("Correct: A = softmax") != std::string::npos);
    CHECK(words.find("Try once more.") != std::string::npos);
    CHECK(words.find("Right. weights[1,1] = 0.0634") != std::string::npos);
    CHECK(words.find("Score: 1 of 3 questions right, none of them at the first try.") != std::string::npos);
}

TEST_CASE("in tmux q at a full screen's pause leaves the lesson at once, saying where to go on",
          "[lesson][terminal][cli][browser]") {
    // lesson 2's first page overflows 60 × 12: the first pause is the screen's, not a page's
    Tmux window(60, 12, {"lesson", "2"});
    REQUIRE(window.wait_for_prompt() == "── more: Enter, or q to leave ──");
    window.type("q");
    // no other prompt follows: the lesson has ended
    CHECK(window.wait_for_prompt().empty());
    CHECK(window.ended());
    const auto history = window.history();
    REQUIRE(!history.empty());
    bool told = false;
    for (const auto& line : history) {
        told = told || line == "To go on from here later: qkv lesson 2 --page 1";
        const bool pause = line.find("more: Enter") != std::string::npos;
        CHECK((!pause || line.ends_with("q to leave ──q")));
    }
    CHECK(told);
}

TEST_CASE("in tmux the list of lessons fits the window's width and pauses when it is taller",
          "[lesson][terminal][cli][browser]") {
    for (const int cols : {60, 80}) {
        CAPTURE(cols);
        Tmux window(cols, 24, {"lesson"});
        // the lessons with wrapped summaries and the line on where to start are more than 24 rows: a screenful
        // at a time, until the list ends
        REQUIRE(window.wait_for_prompt() == "── more: Enter, or q to leave ──");
        int pauses = 0;
        for (std::string prompt = "── more: Enter, or q to leave ──"; !prompt.empty() && pauses < 5; ++pauses) {
            CHECK(prompt == "── more: Enter, or q to leave ──");
            window.type("");
            prompt = window.wait_for_prompt();
        }
        CHECK(pauses < 5);
        std::string listed;
        for (const auto& line : window.rows_written()) {
            CHECK(qkv::display_width(line) <= static_cast<std::size_t>(cols));
            listed += line + "\n";
        }
        // no word broken at the window's edge: each summary's words are whole in the joined history
        CHECK(listed.find("14  backward") != std::string::npos);
        CHECK(listed.find("Start with qkv lesson 1.") != std::string::npos);
        const std::string words = words_of(window.history());
        CHECK(words.find("Large scores make the softmax pick one key; dividing by √d_k keeps them in range") !=
              std::string::npos);
    }
}

TEST_CASE("in tmux at 60 × 24 and 80 × 24 a lesson names the mistakes learners make, worked from the screen",
          "[lesson][terminal][cli][browser]") {
    struct Case {
        std::string lesson;
        std::string page;
        std::string answer;
        std::string named;  // the start of the diagnosis
        std::string written = {};  // the answer as the verdict says it, when not as typed
    };
    const std::vector<Case> cases = {
        // ℓ kept when the maximum grew, on the online softmax's block-by-block page
        {"12", "2", "0.02", "That is the number this mistake gives: ℓ was not rescaled when a block raised"},
        // o, the very number the page shows, not divided by ℓ
        {"12", "3", "2.50", "That is the number this mistake gives: o was not divided by ℓ at the end."},
        // the output worked from weights rounded to 2 decimals
        {"1", "5", "1.59", "That is the number this mistake gives: Worked from the weights rounded to 2 decimals"},
        // the scaling forgotten, rounded from the 0.8650 on the screen
        {"2", "7", "0.87", "That is the number this mistake gives: Scaling forgotten: the scores were not divided by √d_k"},
        // the key/value heads counted for the output's width
        {"11", "2", "3 x 4", "That counts the 2 key/value heads"},
        // another cell's score
        {"1", "3", "10", "That number is scores[3,3], not scores[2,3]."},
        // a fraction, graded as its value: query 1's scores [2, 4, 4] over their sum, without exp
        {"1", "4", "2/10", "That is the number this mistake gives: Each row was divided by its sum without",
         "2/10 = 0.2"},
        // the right value with fewer decimals than asked
        {"1", "4", "0.1", "That is the true value rounded to 1 decimal. Correct: write it with at least 2 decimals."},
        // no catalogued mistake: what was expected, and from which numbers
        {"1", "3", "13", "It is worked as S = Q·Kᵀ, from queries[2] = [2, 2, 2] and keys[3] = [2, 3, 1]."},
    };
    for (const int cols : {60, 80}) {
        for (const Case& test : cases) {
            CAPTURE(cols, test.lesson, test.page, test.answer);
            Tmux window(cols, 24, {"lesson", test.lesson, "--page", test.page});
            std::string prompt = window.wait_for_prompt();
            for (int pause = 0; pause < 10 && prompt != "Your answer (Enter shows it, q leaves):"; ++pause) {
                window.type("");
                prompt = window.wait_for_prompt();
            }
            REQUIRE(prompt == "Your answer (Enter shows it, q leaves):");
            window.type(test.answer);
            REQUIRE(window.wait_for_prompt() == "Your second try (Enter shows the answer, q leaves):");
            const std::string words = words_of(window.history());
            const std::string written = test.written.empty() ? test.answer : test.written;
            CHECK(words.find("Not quite: you wrote " + written + ". " + test.named) != std::string::npos);
            window.type("q");
            CHECK(window.wait_for_prompt().empty());
        }
    }
}

TEST_CASE("in tmux a choice is taken by its number or a word of it, and q leaves at every prompt",
          "[lesson][terminal][cli][browser]") {
    // Enter at every pause until the question asks; returns its prompt
    const auto to_question = [](Tmux& window) {
        std::string prompt = window.wait_for_prompt();
        for (int pause = 0; pause < 10 && prompt.rfind("Your answer", 0) != 0; ++pause) {
            window.type("");
            prompt = window.wait_for_prompt();
        }
        return prompt;
    };
    for (const int cols : {60, 80}) {
        CAPTURE(cols);
        {  // the start of an option's word: gro for "it grows towards 1"
            Tmux window(cols, 24, {"lesson", "2", "--page", "3"});
            REQUIRE(to_question(window) == "Your answer (Enter shows it, q leaves):");
            window.type("gro");
            window.wait_for_prompt();
            CHECK(words_of(window.history()).find("Right. It grows towards 1.") != std::string::npos);
        }
        {  // an option's number: 1 for "larger"
            Tmux window(cols, 24, {"lesson", "1", "--page", "6"});
            REQUIRE(to_question(window) == "Your answer (Enter shows it, q leaves):");
            window.type("1");
            window.wait_for_prompt();
            CHECK(words_of(window.history()).find("Right. Larger.") != std::string::npos);
        }
        {  // q at the question, at the second try and at the page's end
            for (const std::string at : {"answer", "second try", "page"}) {
                CAPTURE(at);
                Tmux window(cols, 24, {"lesson", "1", "--page", "3"});
                REQUIRE(to_question(window) == "Your answer (Enter shows it, q leaves):");
                if (at != "answer") {
                    // scores[2,3] is 12
                    window.type(at == "page" ? "12" : "10");
                    std::string prompt = window.wait_for_prompt();
                    for (int pause = 0; pause < 5 && prompt.find("more:") != std::string::npos; ++pause) {
                        window.type("");
                        prompt = window.wait_for_prompt();
                    }
                    REQUIRE(prompt == (at == "page" ? "Press Enter for page 4 of 6, or q to leave:"
                                                    : "Your second try (Enter shows the answer, q leaves):"));
                }
                window.type("q");
                CHECK(window.wait_for_prompt().empty());
                CHECK(window.ended());
                const std::string page = at == "page" ? "4" : "3";
                CHECK(words_of(window.history()).find("To go on from here later: qkv lesson 1 --page " + page) !=
                      std::string::npos);
            }
        }
    }
}
