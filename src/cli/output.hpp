// Writing results safely: stdout that ends quietly on a closed pipe, and files
// written atomically (a temporary file renamed into place), never replacing an
// existing file without --force and never leaving a temporary file behind.
#pragma once

#include <string>

namespace qkv::cli {

// Writes to stdout; a closed pipe (EPIPE) ends the program quietly with status 0.
void write_stdout(const std::string& content);

// Throws InputError when the file exists (and !force) or cannot be written.
void write_file_atomically(const std::string& path, const std::string& content, bool force);

// Installs the SIGINT/SIGTERM/SIGHUP handler that removes a temporary file being written,
// and ignores SIGPIPE and SIGXFSZ, so that a closed pipe is seen as EPIPE and a
// file over the size limit as EFBIG.
void install_signal_handlers();

}  // namespace qkv::cli
