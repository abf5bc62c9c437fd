// The one result writer's file primitive: a reader sees either no file or the whole file.
#pragma once

#include <stdexcept>
#include <string>

namespace convbench::bench {

class WriteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Writes `text` to a temporary file in the target's directory, fsyncs it, renames it over `path`
// and fsyncs the directory. On any failure the temporary file is removed and WriteError names
// the step and the OS error; `path` is untouched.
void write_atomically(const std::string &path, const std::string &text);

// Fails early (WriteError) if a file cannot be created in `path`'s directory: checked before a
// run spends minutes measuring. Leaves nothing behind.
void check_writable(const std::string &path);

} // namespace convbench::bench
