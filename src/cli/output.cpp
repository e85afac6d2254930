#include "cli/output.hpp"

#include "base/diagnostics.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <random>
#include <streambuf>
#include <string>

namespace qkv::cli {

namespace {

// The temporary file being written, for the signal handler to remove: its
// name, and whether the name is whole. The handler may run on any thread
// while the main thread changes the name, so it reads the name only after the
// flag (lock-free, and so safe in a handler) says it is complete; the flag is
// cleared before the name changes and set after.
char g_temporary[4096] = {0};
std::atomic<bool> g_has_temporary{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void remove_temporary_and_exit(int signal_number) {
    if (g_has_temporary.load()) {
        unlink(g_temporary);
    }
    _exit(128 + signal_number);
}

// Writes every byte, retrying after a signal; false with errno set on failure.
bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t written = write(fd, data, size);
        if (written < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        data += written;
        size -= static_cast<std::size_t>(written);
    }
    return true;
}

void write_stdout_bytes(const char* data, std::size_t size) {
    if (!write_all(STDOUT_FILENO, data, size)) {
        if (errno == EPIPE) {
            std::_Exit(0);
        }
        throw InputError(Diagnostic{"", 0, 0, std::string("cannot write to standard output: ") + std::strerror(errno),
                                    ""});
    }
}

InputError already_exists(const std::string& path) {
    return InputError(Diagnostic{path, 0, 0, "already exists; not replaced",
                                 "pass --force to replace it, or choose another name with -o"});
}

InputError cannot_write(const std::string& path, int error_number, const std::string& hint = "") {
    return InputError(Diagnostic{path, 0, 0, std::string("cannot be written: ") + std::strerror(error_number), hint});
}

// The name a chain of symbolic links ends at, when that name does not exist
// (a dangling link): the file to create. `path` itself when it is no link.
std::string dangling_link_target(const std::string& path) {
    std::string current = path;
    for (int hop = 0; hop < 40; ++hop) {
        struct stat status {};
        if (lstat(current.c_str(), &status) != 0 || !S_ISLNK(status.st_mode)) {
            return current;
        }
        std::array<char, PATH_MAX> target{};
        const ssize_t length = readlink(current.c_str(), target.data(), target.size() - 1);
        if (length <= 0) {
            return current;
        }
        const std::string points_to(target.data(), static_cast<std::size_t>(length));
        const std::size_t slash = current.rfind('/');
        current = points_to.front() == '/' || slash == std::string::npos
                      ? points_to
                      : current.substr(0, slash + 1) + points_to;
    }
    return current;
}

// Where -o FILE's bytes go: a temporary file beside the target, put in place by
// commit(), or for a FIFO or a device the target itself.
class FileSink {
public:
    FileSink(const std::string& path, bool force) : m_path(path) {
        struct stat status {};
        if (stat(path.c_str(), &status) == 0) {
            if (S_ISDIR(status.st_mode)) {
                throw InputError(Diagnostic{path, 0, 0, "is a folder; -o needs a file name", ""});
            }
            if (!S_ISREG(status.st_mode)) {
                // a disk is overwritten in place, as `cat > /dev/sdX` would: only when asked to
                if (S_ISBLK(status.st_mode) && !force) {
                    throw InputError(Diagnostic{path, 0, 0, "is a block device; not written",
                                                "pass --force to write into it, or choose another name with -o"});
                }
                open_directly();
                return;
            }
            if (!force) {
                throw already_exists(path);
            }
            // the file a symbolic link points to is replaced, in its own folder
            char* real = realpath(path.c_str(), nullptr);
            if (real == nullptr) {
                throw cannot_write(path, errno);
            }
            m_target = real;
            std::free(real);
            m_replace = true;
            m_mode = status.st_mode & 07777;
            m_owner = status.st_uid;
            m_group = status.st_gid;
        } else if (errno == ENOENT) {
            m_target = dangling_link_target(path);
            const mode_t mask = umask(0);
            umask(mask);
            m_mode = 0666 & ~mask;
        } else {
            throw cannot_write(path, errno);
        }
        open_temporary();
    }

    ~FileSink() {
        if (m_fd >= 0) {
            close(m_fd);
        }
        remove_temporary();
    }

    FileSink(const FileSink&) = delete;
    FileSink& operator=(const FileSink&) = delete;

    void write(const char* data, std::size_t size) {
        if (write_all(m_fd, data, size)) {
            return;
        }
        const int error_number = errno;
        // a reader that closed its end of a FIFO is a closed pipe, as on stdout
        if (error_number == EPIPE && m_direct) {
            std::_Exit(0);
        }
        close(m_fd);
        m_fd = -1;
        remove_temporary();
        throw cannot_write(m_path, error_number);
    }

    void commit() {
        if (m_direct) {
            const int closed = close(m_fd);
            m_fd = -1;
            if (closed != 0 && errno != EINTR) {
                throw cannot_write(m_path, errno);
            }
            return;
        }
        bool done = fsync(m_fd) == 0;
        int error_number = errno;
        if (m_replace) {
            // the owner first: changing it may clear the set-user-ID bit that fchmod sets
            [[maybe_unused]] const int ignored = fchown(m_fd, m_owner, m_group);
        }
        fchmod(m_fd, m_mode);
        if (close(m_fd) != 0 && done) {
            done = false;
            error_number = errno;
        }
        m_fd = -1;
        if (done) {
            // without --force, link() refuses a file that appeared meanwhile; rename() replaces atomically
            done = m_replace ? std::rename(g_temporary, m_target.c_str()) == 0
                             : link(g_temporary, m_target.c_str()) == 0;
            error_number = errno;
            if (done && m_replace) {
                g_has_temporary.store(false);  // the name is the target's now
            }
        }
        remove_temporary();
        if (!done) {
            if (error_number == EEXIST) {
                throw already_exists(m_path);
            }
            throw cannot_write(m_path, error_number);
        }
    }

private:
    void open_directly() {
        m_direct = true;
        // a FIFO waits here for a reader, as a shell's `>` does
        m_fd = open(m_path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (m_fd < 0) {
            throw cannot_write(m_path, errno);
        }
    }

    void open_temporary() {
        // The name is whole before the flag says so, and the file is created
        // after: a signal at any moment finds no name, or the whole name of a
        // file that is ours or not there yet. mkstemp() would create the file
        // before the flag could be set. The process number and 64 random
        // bits make a name no other program has made.
        std::random_device random;
        for (int attempt = 0; attempt < 100; ++attempt) {
            const std::uint64_t bits = (std::uint64_t{random()} << 32) | random();
            const std::string name = fmt::format("{}.qkv-{}-{:016x}", m_target, getpid(), bits);
            if (name.size() >= sizeof g_temporary) {
                throw InputError(Diagnostic{m_path, 0, 0, "the path is too long", ""});
            }
            std::memcpy(g_temporary, name.c_str(), name.size() + 1);
            g_has_temporary.store(true);
            m_fd = open(g_temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (m_fd >= 0) {
                return;
            }
            const int error_number = errno;
            g_has_temporary.store(false);
            if (error_number != EEXIST) {
                throw cannot_write(m_path, error_number, "check that the folder exists and is writable");
            }
        }
        throw cannot_write(m_path, EEXIST, "check that the folder exists and is writable");
    }

    void remove_temporary() {
        // a signal in between unlinks the name again, which does no harm
        if (g_has_temporary.load()) {
            unlink(g_temporary);
            g_has_temporary.store(false);
        }
    }

    std::string m_path;    // as given, for messages
    std::string m_target;  // the name created or replaced (links followed)
    bool m_direct = false;
    bool m_replace = false;
    mode_t m_mode = 0;
    uid_t m_owner = 0;
    gid_t m_group = 0;
    int m_fd = -1;
};

// An output stream buffer that hands its bytes to `sink` 64 KiB at a time. The
// first failure (an exception from the sink) is remembered, so that finish()
// reports it even if a caller's stream swallowed it.
class ChunkBuffer : public std::streambuf {
public:
    explicit ChunkBuffer(std::function<void(const char*, std::size_t)> sink) : m_sink(std::move(sink)) {
        setp(m_buffer.data(), m_buffer.data() + m_buffer.size());
    }

    // Hands over what is left; rethrows the first failure.
    void finish() {
        flush_buffer();
        if (m_failure) {
            std::rethrow_exception(m_failure);
        }
    }

protected:
    int_type overflow(int_type c) override {
        flush_buffer();
        if (!traits_type::eq_int_type(c, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(c);
            pbump(1);
        }
        return traits_type::not_eof(c);
    }

    int sync() override {
        flush_buffer();
        return 0;
    }

private:
    void flush_buffer() {
        if (m_failure) {
            // nothing more goes out once a write has failed
            setp(m_buffer.data(), m_buffer.data() + m_buffer.size());
            std::rethrow_exception(m_failure);
        }
        const std::size_t size = static_cast<std::size_t>(pptr() - pbase());
        setp(m_buffer.data(), m_buffer.data() + m_buffer.size());
        if (size > 0) {
            try {
                m_sink(m_buffer.data(), size);
            } catch (...) {
                m_failure = std::current_exception();
                throw;
            }
        }
    }

    std::function<void(const char*, std::size_t)> m_sink;
    std::exception_ptr m_failure;
    std::array<char, 1 << 16> m_buffer{};
};

// Runs `produce` on a stream over `buffer`. A stream catches what its buffer
// throws and sets badbit; with badbit in exceptions() it throws it on, so a
// failed write ends the rendering at once and its error reaches the user.
void produce_into(ChunkBuffer& buffer, const std::function<void(std::ostream&)>& produce) {
    std::ostream out(&buffer);
    out.exceptions(std::ios::badbit);
    try {
        produce(out);
    } catch (const std::ios_base::failure&) {
        buffer.finish();  // the buffer's own failure, when it has one
        throw;
    }
    buffer.finish();
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
    write_stdout_bytes(content.data(), content.size());
}

void write_file_atomically(const std::string& path, const std::string& content, bool force) {
    FileSink file(path, force);
    file.write(content.data(), content.size());
    file.commit();
}

void write_to(const std::string& path, bool force, const std::function<void(std::ostream&)>& produce) {
    if (path.empty() || path == "-") {
        std::cout.flush();
        ChunkBuffer buffer(write_stdout_bytes);
        produce_into(buffer, produce);
        return;
    }
    FileSink file(path, force);
    ChunkBuffer buffer([&file](const char* data, std::size_t size) { file.write(data, size); });
    produce_into(buffer, produce);
    file.commit();
}

}  // namespace qkv::cli
