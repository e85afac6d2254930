// Writing results safely: stdout that ends quietly on a closed pipe, and -o
// FILE, where a regular file is written atomically (a temporary file beside it,
// renamed into place), never replacing an existing file without --force and
// never leaving a temporary file behind. A FIFO or a character device
// (/dev/null, a terminal) is written straight into: nothing is replaced.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace qkv::cli {

// Writes to stdout; a closed pipe (EPIPE) ends the program quietly with status 0.
// Throws InputError on any other failure.
void write_stdout(const std::string& content);

// Writes `content` to FILE by the rules of write_to:
// throws InputError when it is refused or cannot be written.
void write_file_atomically(const std::string& path, const std::string& content, bool force);

// Runs `produce` on a stream whose bytes go out 64 KiB at a time, so that a
// large result is never held whole: to stdout when `path` is empty or "-",
// otherwise to FILE:
// - FILE does not exist: created atomically (link() of a temporary file, so a
//   file that appears meanwhile is not replaced), with mode 0666 & ~umask;
// - a regular file: refused without --force; with it, replaced atomically by
//   rename() and given the replaced file's owner and permission bits;
// - a symbolic link: followed; the file it points to is created or replaced
//   as above, in its own folder, and the link stays;
// - a FIFO or a character device: opened and written straight into (no
//   temporary file, --force not needed); a block device only with --force;
// - a folder: refused.
// Throws InputError when a write fails (any temporary file is removed first).
void write_to(const std::string& path, bool force, const std::function<void(std::ostream&)>& produce);

// Installs the SIGINT/SIGTERM/SIGHUP handler that removes a temporary file being written,
// and ignores SIGPIPE and SIGXFSZ, so that a closed pipe is seen as EPIPE and a
// file over the size limit as EFBIG.
void install_signal_handlers();

}  // namespace qkv::cli
