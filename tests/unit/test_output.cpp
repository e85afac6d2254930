// -o FILE: written atomically, never replacing a file without --force, never
// leaving a temporary file behind; and a closed pipe that ends qkv quietly.
#include "support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using qkv::test::run_qkv;

namespace {

class TempDir {
public:
    TempDir() {
        char name[] = "/tmp/qkv-output-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        m_path = name;
    }
    ~TempDir() { std::filesystem::remove_all(m_path); }
    const std::string& path() const { return m_path; }
    std::string file(const std::string& name) const { return m_path + "/" + name; }

    // The names in the folder, sorted.
    std::vector<std::string> names() const {
        std::vector<std::string> result;
        for (const auto& entry : std::filesystem::directory_iterator(m_path)) {
            result.push_back(entry.path().filename().string());
        }
        std::sort(result.begin(), result.end());
        return result;
    }

private:
    std::string m_path;
};

std::vector<std::string> dir_names_of(const std::string& path) {
    std::vector<std::string> result;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
        result.push_back(entry.path().filename().string());
    }
    std::sort(result.begin(), result.end());
    return result;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("the -o option: writes the same output to a file and nothing to stdout", "[output]") {
    TempDir dir;
    for (const std::string format : {"text", "markdown", "latex", "csv", "json", "svg"}) {
        CAPTURE(format);
        const std::string path = dir.file("out." + format);
        const auto written = run_qkv({"run", "masked", "-f", format, "-o", path});
        REQUIRE(written.status == 0);
        CHECK(written.out.empty());
        CHECK(written.err.empty());
        CHECK(read_file(path) == run_qkv({"run", "masked", "-f", format}).out);
    }
    // explain writes to a file the same way
    const auto explained = run_qkv({"explain", "illustrated", "scores[1,2]", "-o", dir.file("cell.txt")});
    REQUIRE(explained.status == 0);
    CHECK(read_file(dir.file("cell.txt")).rfind("scores[1,2] = 4", 0) == 0);
    // -o - is standard output
    CHECK(run_qkv({"run", "illustrated", "-o", "-"}).out == run_qkv({"run", "illustrated"}).out);
    // the file gets the usual permissions, not the temporary file's 0600
    struct stat status {};
    REQUIRE(stat(dir.file("out.csv").c_str(), &status) == 0);
    const mode_t mask = umask(0);
    umask(mask);
    CHECK((status.st_mode & 0777) == (0666 & ~mask));
}

TEST_CASE("the -o option: refuses to replace an existing file unless --force", "[output]") {
    TempDir dir;
    const std::string path = dir.file("notes.md");
    std::ofstream(path) << "my notes\n";

    const auto refused = run_qkv({"run", "illustrated", "-f", "markdown", "-o", path});
    qkv::test::require_input_error(refused, path + ": already exists; not replaced");
    CHECK(refused.err.find("hint: pass --force") != std::string::npos);
    CHECK(read_file(path) == "my notes\n");
    CHECK(dir.names() == std::vector<std::string>{"notes.md"});

    const auto refused_explain = run_qkv({"explain", "illustrated", "output[1]", "-o", path});
    qkv::test::require_input_error(refused_explain, "already exists");
    CHECK(read_file(path) == "my notes\n");

    const auto forced = run_qkv({"run", "illustrated", "-f", "markdown", "-o", path, "--force"});
    REQUIRE(forced.status == 0);
    CHECK(read_file(path).rfind("# Three inputs, step by step", 0) == 0);
    CHECK(dir.names() == std::vector<std::string>{"notes.md"});
}

TEST_CASE("the -o option: leaves no file and no temporary file behind on an error", "[output]") {
    TempDir dir;
    SECTION("invalid input") {
        qkv::test::require_input_error(run_qkv({"run", "-", "-o", dir.file("out.txt")}, "inputs: [[1, 2], [3]]\n"),
                                       "<stdin>");
        CHECK(dir.names().empty());
    }
    SECTION("a bad cell") {
        qkv::test::require_input_error(run_qkv({"explain", "illustrated", "scores[7,1]", "-o", dir.file("x.txt")}),
                                       "row 7 is out of range");
        CHECK(dir.names().empty());
    }
    SECTION("a folder that does not exist") {
        qkv::test::require_input_error(run_qkv({"run", "illustrated", "-o", dir.file("missing/out.txt")}),
                                       "cannot be written");
        CHECK(dir.names().empty());
    }
    SECTION("a folder in place of the file") {
        std::filesystem::create_directory(dir.file("folder"));
        qkv::test::require_input_error(run_qkv({"run", "illustrated", "-o", dir.file("folder"), "--force"}),
                                       "is a folder");
        CHECK(dir.names() == std::vector<std::string>{"folder"});
        CHECK(std::filesystem::is_empty(dir.file("folder")));
    }
    SECTION("a folder that cannot be written") {
        if (geteuid() == 0) {
            SUCCEED("root may write anywhere: nothing to check");
            return;
        }
        std::filesystem::create_directory(dir.file("locked"));
        chmod(dir.file("locked").c_str(), 0555);
        qkv::test::require_input_error(run_qkv({"run", "illustrated", "-o", dir.file("locked/out.txt")}),
                                       "cannot be written");
        CHECK(std::filesystem::is_empty(dir.file("locked")));
        chmod(dir.file("locked").c_str(), 0755);
    }
}

TEST_CASE("writing with -o removes its temporary file when the write fails or qkv is interrupted", "[output]") {
    TempDir dir;
    const std::string yaml = dir.file("big.yaml");
    std::ofstream(yaml) << "inputs: {random: {rows: 300, cols: 8, seed: 1}}\n"
                           "weights: {query: {random: {rows: 8, cols: 4, seed: 2}}, key: {random: {rows: 8, cols: 4, "
                           "seed: 3}}, value: {random: {rows: 8, cols: 4, seed: 4}}}\n";
    const std::string out = dir.file("out/trace.csv");
    std::filesystem::create_directory(dir.file("out"));

    SECTION("a file size limit (ulimit -f) makes the write fail") {
        // 10 KiB allowed; the CSV of 300 tokens is megabytes
        const std::string command = "bash -c 'ulimit -f 10; exec \"" + qkv::test::qkv_binary() + "\" run " + yaml +
                                    " -f csv -o " + out + "' 2>&1";
        FILE* pipe = popen(command.c_str(), "r");
        REQUIRE(pipe != nullptr);
        std::string err;
        char buffer[512];
        while (fgets(buffer, sizeof buffer, pipe) != nullptr) {
            err += buffer;
        }
        const int status = pclose(pipe);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 2);
        CHECK(err.rfind("qkv: error: " + out + ": cannot be written: File too large", 0) == 0);
        CHECK(std::filesystem::is_empty(dir.file("out")));
    }

    SECTION("SIGINT while the temporary file is being written") {
        // Starts qkv, waits for its temporary file to appear, and interrupts it.
        // On a machine fast enough to write the file before it is seen, the
        // attempt is repeated; a run that never sees it checks only the result.
        bool interrupted = false;
        for (int attempt = 0; attempt < 5 && !interrupted; ++attempt) {
            std::filesystem::remove(out);
            const pid_t pid = fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                const int null = open("/dev/null", O_WRONLY);
                dup2(null, STDOUT_FILENO);
                dup2(null, STDERR_FILENO);
                const std::string binary = qkv::test::qkv_binary();
                execl(binary.c_str(), binary.c_str(), "run", yaml.c_str(), "-f", "csv", "-o", out.c_str(),
                      static_cast<char*>(nullptr));
                _exit(127);
            }
            int status = 0;
            while (waitpid(pid, &status, WNOHANG) == 0) {
                bool temporary = false;
                for (const auto& entry : std::filesystem::directory_iterator(dir.file("out"))) {
                    temporary = temporary || entry.path().filename().string().find(".qkv-") != std::string::npos;
                }
                if (temporary) {
                    kill(pid, SIGINT);
                    waitpid(pid, &status, 0);
                    interrupted = true;
                    break;
                }
                usleep(200);
            }
            if (interrupted) {
                CHECK(WIFEXITED(status));
                CHECK(WEXITSTATUS(status) == 130);
                CHECK(std::filesystem::is_empty(dir.file("out")));
            } else {
                CHECK(WIFEXITED(status));
                CHECK(WEXITSTATUS(status) == 0);
                CHECK(dir_names_of(dir.file("out")) == std::vector<std::string>{"trace.csv"});
            }
        }
        if (!interrupted) {
            WARN("the temporary file was never seen: the interrupt was not exercised");
        }
    }
}

TEST_CASE("a closed pipe ends qkv quietly", "[output]") {
    TempDir dir;
    // 300 tokens print far more than a pipe holds, so qkv is still writing when head exits
    const std::string yaml = dir.file("big.yaml");
    std::ofstream(yaml) << "inputs: {random: {rows: 300, cols: 8, seed: 1}}\n"
                           "weights: {query: {random: {rows: 8, cols: 4, seed: 2}}, key: {random: {rows: 8, cols: 4, "
                           "seed: 3}}, value: {random: {rows: 8, cols: 4, seed: 4}}}\n";
    const std::string err = dir.file("err.txt");
    const std::string command = "bash -c '\"" + qkv::test::qkv_binary() + "\" run " + yaml + " --full -f csv 2>" +
                                err + " | head -c 100 >/dev/null; echo ${PIPESTATUS[0]}'";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[64] = {0};
    REQUIRE(fgets(buffer, sizeof buffer, pipe) != nullptr);
    pclose(pipe);
    CHECK(std::string(buffer) == "0\n");
    CHECK(read_file(err).empty());
}
