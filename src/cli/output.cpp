#include "cli/output.hpp"

#include "io/diagnostics.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace qkv::cli {

namespace {

// The temporary file being written, for the signal handler to remove.
char g_temporary[4096] = {0};

extern "C" void remove_temporary_and_exit(int signal_number) {
    if (g_temporary[0] != '\0') {
        unlink(g_temporary);
    }
    _exit(128 + signal_number);
}

bool write_all(int fd, const std::string& content) {
    const char* data = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t written = write(fd, data, left);
        if (written < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        data += written;
        left -= static_cast<std::size_t>(written);
    }
    return true;
}

}  // namespace

void install_signal_handlers() {
    std::signal(SIGPIPE, SIG_IGN);
    // past the file size limit (ulimit -f) a write then fails with EFBIG, which
    // removes the temporary file, instead of killing qkv and leaving it behind
    std::signal(SIGXFSZ, SIG_IGN);
    std::signal(SIGINT, remove_temporary_and_exit);
    std::signal(SIGTERM, remove_temporary_and_exit);
    std::signal(SIGHUP, remove_temporary_and_exit);
}

void write_stdout(const std::string& content) {
    std::cout.flush();
    if (!write_all(STDOUT_FILENO, content)) {
        if (errno == EPIPE) {
            std::_Exit(0);
        }
        throw InputError(Diagnostic{"", 0, 0, std::string("cannot write to standard output: ") + std::strerror(errno),
                                    ""});
    }
}

void write_file_atomically(const std::string& path, const std::string& content, bool force) {
    struct stat status {};
    if (lstat(path.c_str(), &status) == 0) {
        if (S_ISDIR(status.st_mode)) {
            throw InputError(Diagnostic{path, 0, 0, "is a folder; -o needs a file name", ""});
        }
        if (!force) {
            throw InputError(Diagnostic{path, 0, 0, "already exists; not replaced",
                                        "pass --force to replace it, or choose another name with -o"});
        }
    }
    const std::string temporary_template = path + ".qkv-XXXXXX";
    if (temporary_template.size() >= sizeof g_temporary) {
        throw InputError(Diagnostic{path, 0, 0, "the path is too long", ""});
    }
    std::strcpy(g_temporary, temporary_template.c_str());
    const int fd = mkstemp(g_temporary);
    if (fd < 0) {
        const std::string reason = std::strerror(errno);
        g_temporary[0] = '\0';
        throw InputError(Diagnostic{path, 0, 0, "cannot be written: " + reason,
                                    "check that the folder exists and is writable"});
    }
    const bool written = write_all(fd, content) && fsync(fd) == 0;
    int saved_errno = errno;
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    bool placed = false;
    if (written) {
        // Without --force, link() refuses to replace a file that appeared meanwhile;
        // with it, rename() replaces atomically.
        placed = force ? std::rename(g_temporary, path.c_str()) == 0 : link(g_temporary, path.c_str()) == 0;
        saved_errno = errno;
    }
    unlink(g_temporary);
    g_temporary[0] = '\0';
    if (!placed) {
        if (saved_errno == EEXIST) {
            throw InputError(Diagnostic{path, 0, 0, "already exists; not replaced",
                                        "pass --force to replace it, or choose another name with -o"});
        }
        throw InputError(Diagnostic{path, 0, 0, std::string("cannot be written: ") + std::strerror(saved_errno), ""});
    }
}

}  // namespace qkv::cli
