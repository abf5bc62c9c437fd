// The one result writer's file primitive: a reader sees either no file or the whole file, and a
// write goes only into a regular file of ours (never through a symlink or into a FIFO or device).
#pragma once

#include <stdexcept>
#include <string>

namespace convbench::bench {

class WriteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Writes `text` to a temporary file created exclusively (O_EXCL | O_NOFOLLOW, a random name) in
// the target's directory, fsyncs it, renames it over `path` and fsyncs the directory. A `path`
// that exists and is not a regular file (a FIFO, a device node, a symlink, a directory) is
// refused: the rename would replace it. On any failure the temporary file is removed and
// WriteError names the step and the OS error; `path` is untouched.
void write_atomically(const std::string &path, const std::string &text,
                      const std::string &what = "result path");

// Fails early (WriteError) if `path` exists and is not a regular file, or if a file cannot be
// created in its directory: checked before a run spends minutes measuring. Leaves nothing behind.
// `what` names the file in the message ("result path", "dump file").
void check_writable(const std::string &path, const std::string &what = "result path");

// The temporary file write_atomically uses, for writers that stream (the .npy dumps): created
// exclusively in `path`'s directory; commit() fsyncs and renames it onto `path`, the destructor
// removes it if commit() was not reached. Every write is checked: a short write (ENOSPC, EFBIG)
// throws WriteError and the destructor removes the partial file.
class TempFile {
public:
  explicit TempFile(const std::string &path);
  ~TempFile();
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  void write(const void *data, size_t bytes);
  void commit();
  const std::string &temp_path() const { return tmp_; }

private:
  std::string path_, tmp_;
  int fd_ = -1;
};

} // namespace convbench::bench
