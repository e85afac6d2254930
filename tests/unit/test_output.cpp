// -o FILE: written atomically, never replacing a file without --force, never
// leaving a temporary file behind; and a closed pipe that ends qkv quietly.
#include "support.hpp"

#include <fcntl.h>
#include <sys/resource.h>
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
using qkv::test::read_file;

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

// Runs a bash command line; its standard output (stderr too where the command sends it there).
std::string run_shell(const std::string& command) {
    FILE* pipe = popen(("bash -c '" + command + "'").c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buffer[512];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr) {
        out += buffer;
    }
    pclose(pipe);
    return out;
}

std::string quoted_binary() {
    std::string quoted = "\"";
    quoted += qkv::test::qkv_binary();
    quoted += "\"";
    return quoted;
}

mode_t mode_of(const std::string& path) {
    struct stat status {};
    REQUIRE(lstat(path.c_str(), &status) == 0);
    return status.st_mode;
}

// Starts qkv ARGS with stdout and stderr to /dev/null; its process id.
pid_t start_quietly(const std::vector<std::string>& args) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        qkv::test::exec_qkv(args);
    }
    return pid;
}

// Runs qkv with stdout and stderr to /dev/null; its exit status and peak resident memory in KiB.
std::pair<int, long> run_measuring_memory(const std::vector<std::string>& args) {
    const pid_t pid = start_quietly(args);
    int status = 0;
    struct rusage usage {};
    REQUIRE(wait4(pid, &status, 0, &usage) == pid);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), usage.ru_maxrss};
}

// An example of 300 tokens, whose output runs to megabytes: big.yaml in `dir`.
std::string write_big_example(const TempDir& dir) {
    const std::string yaml = dir.file("big.yaml");
    std::ofstream(yaml) << "inputs: {random: {rows: 300, cols: 8, seed: 1}}\n"
                           "weights: {query: {random: {rows: 8, cols: 4, seed: 2}}, key: {random: {rows: 8, cols: 4, "
                           "seed: 3}}, value: {random: {rows: 8, cols: 4, seed: 4}}}\n";
    return yaml;
}

}  // namespace

TEST_CASE("the -o option: writes the same output to a file and nothing to stdout", "[output][cli]") {
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

TEST_CASE("the -o option: refuses to replace an existing file unless --force", "[output][cli]") {
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

TEST_CASE("the -o option: leaves no file and no temporary file behind on an error", "[output][cli]") {
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

TEST_CASE("writing with -o removes its temporary file when the write fails or qkv is interrupted", "[output][cli]") {
    TempDir dir;
    const std::string yaml = write_big_example(dir);
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
            const pid_t pid = start_quietly({"run", yaml, "-f", "csv", "-o", out});
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

TEST_CASE("a closed pipe ends qkv quietly", "[output][cli]") {
    TempDir dir;
    // 300 tokens print far more than a pipe holds, so qkv is still writing when head exits
    const std::string yaml = write_big_example(dir);
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

TEST_CASE("qkv run reports a failed write to standard output and exits 2", "[output][cli]") {
    TempDir dir;
    // 300 tokens print megabytes, so the write fails while rendering, not at the end
    const std::string yaml = write_big_example(dir);
    for (const std::string example : {std::string("illustrated"), yaml}) {
        for (const std::string format : {"text", "json", "csv"}) {
            CAPTURE(example, format);
            // stderr to the pipe read here, stdout to a device that is always full
            const std::string got = run_shell(quoted_binary() + " run " + example + " --full -f " + format +
                                              " 2>&1 >/dev/full; echo \"status $?\"");
            CHECK(got == "qkv: error: cannot write to standard output: No space left on device\nstatus 2\n");
        }
    }
}

TEST_CASE("the -o option: a character device or a FIFO is written straight into, not replaced", "[output][cli]") {
    TempDir dir;
    SECTION("/dev/null, without --force: nothing is replaced") {
        const auto written = run_qkv({"run", "illustrated", "-o", "/dev/null"});
        CHECK(written.status == 0);
        CHECK(written.out.empty());
        CHECK(written.err.empty());
        CHECK(S_ISCHR(mode_of("/dev/null")));
    }
    SECTION("a FIFO, with and without --force") {
        for (const std::string force : {"", " --force"}) {
            CAPTURE(force);
            const std::string fifo = dir.file("fifo");
            const std::string got = dir.file("got.txt");
            REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
            // the reader starts first; timeout ends it if qkv never opens the FIFO
            const std::string status = run_shell("timeout 10 cat " + fifo + " > " + got + " & " + quoted_binary() +
                                                 " run illustrated -o " + fifo + force + "; s=$?; wait; echo $s");
            CHECK(status == "0\n");
            CHECK(read_file(got) == run_qkv({"run", "illustrated"}).out);
            CHECK(S_ISFIFO(mode_of(fifo)));
            CHECK(dir.names() == std::vector<std::string>{"fifo", "got.txt"});
            std::filesystem::remove(fifo);
            std::filesystem::remove(got);
        }
    }
    SECTION("a FIFO whose reader stops early ends qkv quietly, as a closed pipe does") {
        const std::string yaml = dir.file("big.yaml");
        std::ofstream(yaml) << "inputs: {random: {rows: 300, cols: 8, seed: 1}}\n"
                               "weights: {query: {random: {rows: 8, cols: 4, seed: 2}}, key: {random: {rows: 8, "
                               "cols: 4, seed: 3}}, value: {random: {rows: 8, cols: 4, seed: 4}}}\n";
        const std::string fifo = dir.file("fifo");
        REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
        const std::string status =
            run_shell("timeout 10 head -c 100 " + fifo + " >/dev/null & " + quoted_binary() + " run " + yaml +
                      " --full -f csv -o " + fifo + " 2>" + dir.file("err.txt") + "; s=$?; wait; echo $s");
        CHECK(status == "0\n");
        CHECK(read_file(dir.file("err.txt")).empty());
        CHECK(S_ISFIFO(mode_of(fifo)));
    }
}

TEST_CASE("the -o option: a symbolic link is followed and the file it points to replaced in its folder", "[output][cli]") {
    TempDir dir;
    std::filesystem::create_directory(dir.file("sub"));
    const std::string real = dir.file("sub/real.txt");
    std::ofstream(real) << "old\n";
    REQUIRE(chmod(real.c_str(), 0600) == 0);
    std::filesystem::create_symlink("sub/real.txt", dir.file("link"));

    // without --force the file behind the link is an existing file: refused, both untouched
    qkv::test::require_input_error(run_qkv({"run", "illustrated", "-o", dir.file("link")}), "already exists");
    CHECK(read_file(real) == "old\n");
    CHECK(std::filesystem::is_symlink(dir.file("link")));

    const auto forced = run_qkv({"run", "illustrated", "-o", dir.file("link"), "--force"});
    REQUIRE(forced.status == 0);
    CHECK(std::filesystem::is_symlink(dir.file("link")));
    CHECK(std::filesystem::read_symlink(dir.file("link")) == "sub/real.txt");
    CHECK(read_file(real) == run_qkv({"run", "illustrated"}).out);
    CHECK((mode_of(real) & 07777) == 0600);
    CHECK(dir.names() == std::vector<std::string>{"link", "sub"});
    CHECK(dir_names_of(dir.file("sub")) == std::vector<std::string>{"real.txt"});

    // a dangling link: the file it names is created, and the link stays
    std::filesystem::create_symlink("sub/new.txt", dir.file("dangling"));
    const auto created = run_qkv({"run", "illustrated", "-f", "csv", "-o", dir.file("dangling")});
    REQUIRE(created.status == 0);
    CHECK(std::filesystem::is_symlink(dir.file("dangling")));
    CHECK(read_file(dir.file("sub/new.txt")) == run_qkv({"run", "illustrated", "-f", "csv"}).out);
    CHECK(dir_names_of(dir.file("sub")) == std::vector<std::string>{"new.txt", "real.txt"});

    // a link to a folder is a folder
    std::filesystem::create_directory(dir.file("folder"));
    std::filesystem::create_directory_symlink("folder", dir.file("folder_link"));
    qkv::test::require_input_error(run_qkv({"run", "illustrated", "-o", dir.file("folder_link"), "--force"}),
                                   "is a folder");
    CHECK(std::filesystem::is_symlink(dir.file("folder_link")));
    CHECK(std::filesystem::is_empty(dir.file("folder")));
}

TEST_CASE("the -o option: --force keeps the replaced file's permission bits and owner", "[output][cli]") {
    TempDir dir;
    const std::string path = dir.file("out.txt");
    for (const mode_t mode : {mode_t{0600}, mode_t{0640}, mode_t{0751}}) {
        CAPTURE(mode);
        std::ofstream(path) << "old\n";
        REQUIRE(chmod(path.c_str(), mode) == 0);
        REQUIRE(run_qkv({"run", "illustrated", "-o", path, "--force"}).status == 0);
        CHECK(read_file(path) == run_qkv({"run", "illustrated"}).out);
        CHECK((mode_of(path) & 07777) == mode);
    }
    if (geteuid() == 0) {
        // only root can give a file away, so only root can check that the owner is kept
        REQUIRE(chown(path.c_str(), 12345, 23456) == 0);
        REQUIRE(run_qkv({"run", "illustrated", "-o", path, "--force"}).status == 0);
        struct stat status {};
        REQUIRE(stat(path.c_str(), &status) == 0);
        CHECK(status.st_uid == 12345);
        CHECK(status.st_gid == 23456);
    }
    CHECK(dir.names() == std::vector<std::string>{"out.txt"});
}

TEST_CASE("the -o option: streams into the file instead of holding the whole output in memory", "[output]") {
    TempDir dir;
    // 600 tokens: three 600 × 600 steps make a CSV of about 50 MB
    const std::string yaml = dir.file("big.yaml");
    std::ofstream(yaml) << "inputs: {random: {rows: 600, cols: 8, seed: 1}}\n"
                           "weights: {query: {random: {rows: 8, cols: 4, seed: 2}}, key: {random: {rows: 8, cols: 4, "
                           "seed: 3}}, value: {random: {rows: 8, cols: 4, seed: 4}}}\n";
    const auto [stdout_status, stdout_kib] = run_measuring_memory({"run", yaml, "--full", "-f", "csv"});
    const auto [file_status, file_kib] =
        run_measuring_memory({"run", yaml, "--full", "-f", "csv", "-o", dir.file("out.csv")});
    REQUIRE(stdout_status == 0);
    REQUIRE(file_status == 0);
    const long output_kib = static_cast<long>(std::filesystem::file_size(dir.file("out.csv")) / 1024);
    CAPTURE(stdout_kib, file_kib, output_kib);
    REQUIRE(output_kib > 40 * 1024);
    // holding the output whole would add at least its size
    CHECK(file_kib < stdout_kib + output_kib / 4);
}
