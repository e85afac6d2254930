// A lesson played in a real terminal: qkv runs on a pseudo-terminal, as a
// learner's shell would start it, and the test types the answers.
#include "support.hpp"

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

namespace {

// qkv on the slave side of a pseudo-terminal; the test holds the master. It
// shows qkv as a learner sees it, hence the tag [browser] besides [cli].
class Terminal {
public:
    explicit Terminal(const std::vector<std::string>& args, unsigned short rows = 50, unsigned short cols = 100) {
        qkv::test::require_tag("cli");
        qkv::test::require_tag("browser");
        winsize size{};
        size.ws_row = rows;
        size.ws_col = cols;
        m_pid = forkpty(&m_master, nullptr, nullptr, &size);
        REQUIRE(m_pid >= 0);
        if (m_pid == 0) {
            setenv("TERM", "xterm-256color", 1);
            unsetenv("NO_COLOR");
            qkv::test::exec_qkv(args);
        }
    }

    ~Terminal() {
        if (m_pid > 0 && !m_reaped) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
        }
        close(m_master);
    }

    // Reads until `text` has appeared since the last wait (or fails after 5 s).
    void wait_for(const std::string& text) {
        const auto deadline = std::chrono::steady_clock::now() + k_patience;
        while (m_screen.find(text, m_seen) == std::string::npos) {
            if (std::chrono::steady_clock::now() > deadline) {
                FAIL("waited in vain for \"" << text << "\"; the terminal shows:\n" << m_screen.substr(m_seen));
            }
            read_some(200);
        }
        m_seen = m_screen.find(text, m_seen) + text.size();
    }

    void type(const std::string& keys) { REQUIRE(write(m_master, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size())); }

    // Drains the output until qkv exits; returns its status (128 + signal when
    // killed). Fails, rather than hangs, when qkv is still running after 5 s.
    int exit_status() {
        const auto deadline = std::chrono::steady_clock::now() + k_patience;
        int status = 0;
        while (true) {
            const bool got_output = read_some(100);
            const pid_t done = waitpid(m_pid, &status, WNOHANG);
            if (done < 0) {
                FAIL("waitpid failed");
            }
            if (done == m_pid) {
                m_reaped = true;
                break;
            }
            if (!got_output && std::chrono::steady_clock::now() > deadline) {
                FAIL("qkv is still running; the terminal shows:\n" << m_screen.substr(m_seen));
            }
        }
        while (read_some(100)) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    const std::string& screen() const { return m_screen; }
    std::string since_last_wait() const { return m_screen.substr(m_seen); }

private:
    static constexpr std::chrono::seconds k_patience{5};

    // false when nothing more can be read (timeout, or qkv has closed the terminal)
    bool read_some(int timeout_ms) {
        pollfd fd{m_master, POLLIN, 0};
        if (poll(&fd, 1, timeout_ms) <= 0) {
            return false;
        }
        char buffer[4096];
        const ssize_t got = read(m_master, buffer, sizeof buffer);
        if (got <= 0) {
            return false;
        }
        m_screen.append(buffer, static_cast<std::size_t>(got));
        return true;
    }

    int m_master = -1;
    pid_t m_pid = -1;
    bool m_reaped = false;
    std::string m_screen;
    std::size_t m_seen = 0;
};

}  // namespace

TEST_CASE("in a terminal a lesson pauses, asks, says right and wrong, and q leaves with status 0", "[lesson][terminal][cli][browser]") {
    Terminal terminal({"lesson", "1"}, 200, 100);
    terminal.wait_for("Lesson 1 · Three inputs, by hand");
    terminal.wait_for("Press Enter for page 2 of 6, or q to leave: ");
    terminal.type("\n");
    // Q = X·W_Q is (3 × 4)·(4 × 3) = 3 × 3; then keys[2,2] = 0·0 + 2·1 + 0·1 + 2·1 = 4 is worked out
    terminal.wait_for("Your answer (Enter shows it, q leaves): ");
    terminal.type("3x3\n");
    terminal.wait_for("Right.");
    terminal.wait_for("keys[2,2] = x·w = 0·0 + 2·1 + 0·1 + 2·1 = 4");
    terminal.wait_for("Press Enter for page 3 of 6, or q to leave: ");
    terminal.type("\n");
    // scores[2,3] = 12 (the illustrated article); 11 is wrong
    terminal.wait_for("Your answer (Enter shows it, q leaves): ");
    terminal.type("11\n");
    terminal.wait_for("Not quite:");
    terminal.wait_for(" you wrote 11.");
    terminal.wait_for("Try once more.");
    terminal.wait_for("Your second try (Enter shows the answer, q leaves): ");
    terminal.type("12\n");
    terminal.wait_for("Right.");
    terminal.wait_for("Press Enter for page 4 of 6, or q to leave: ");
    terminal.type("q\n");
    // leaving says how to come back to the page that was next
    terminal.wait_for("To go on from here later: qkv lesson 1 --page 4");
    CHECK(terminal.exit_status() == 0);
    // colour is on in a terminal, and every colour that was started was ended
    const std::string& screen = terminal.screen();
    CHECK(screen.find("\x1b[1m\x1b[32mRight.\x1b[0m") != std::string::npos);
    CHECK(screen.rfind("\x1b[0m") > screen.rfind("\x1b[1"));
    CHECK(screen.find("End of lesson 1.") == std::string::npos);
}

TEST_CASE("in a terminal Ctrl-C leaves a lesson at once, ending the colour and the line", "[lesson][terminal][cli][browser]") {
    Terminal terminal({"lesson", "2"});
    SECTION("at a question") {
        // page 1 of lesson 2 ends with a question
        terminal.wait_for("Your answer (Enter shows it, q leaves): ");
    }
    SECTION("between pages") {
        terminal.wait_for("Your answer (Enter shows it, q leaves): ");
        terminal.type("\n");
        terminal.wait_for("Press Enter for page 2 of 7, or q to leave: ");
    }
    // the prompt has ended its own colour; what follows it is the terminal's
    // echo of ^C and what qkv writes on leaving
    terminal.wait_for("\x1b[0m");
    terminal.type("\x03");
    CHECK(terminal.exit_status() == 128 + SIGINT);
    const std::string after = terminal.since_last_wait();
    CAPTURE(after);
    CHECK(after.find("\x1b[0m") != std::string::npos);
    CHECK(after.ends_with("\n"));
    CHECK(after.find("page 2 of 7 ───") == std::string::npos);
}

TEST_CASE("in a terminal --no-pause plays straight through with the answers shown", "[lesson][terminal][cli][browser]") {
    Terminal terminal({"lesson", "1", "--no-pause", "--color", "never"});
    terminal.wait_for("Answer: queries is 3 × 3");
    terminal.wait_for("End of lesson 1. Next: qkv lesson 2 (scaling).");
    CHECK(terminal.exit_status() == 0);
    CHECK(terminal.screen().find("Press Enter") == std::string::npos);
}
