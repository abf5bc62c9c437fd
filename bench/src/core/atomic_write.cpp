#include "core/atomic_write.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace convbench::bench {

namespace {
std::string dir_of(const std::string &path) {
  fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

[[noreturn]] void fail(const std::string &step, const std::string &what, int err) {
  throw WriteError(step + " " + what + ": " + std::strerror(err));
}

const char *kind_of(mode_t m) {
  return S_ISLNK(m)    ? "a symbolic link"
         : S_ISDIR(m)  ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "not a regular file";
}

// An existing target that the final rename would replace although it is not a file of results.
void refuse_special(const std::string &path, const std::string &what) {
  if (fs::path(path).filename().empty())
    throw WriteError(what + " '" + path + "' names no file");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return; // absent: created by the rename
  if (!S_ISREG(st.st_mode))
    throw WriteError(what + " '" + path + "' exists and is " + kind_of(st.st_mode) +
                     ", not a regular file: give a path to a new or regular file");
}

// A new file with a random name in `path`'s directory, created exclusively and never through a
// symlink (another local user cannot plant the name in advance). Returns the descriptor.
int create_temp(const std::string &path, std::string *tmp) {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(::getpid()) << 32)};
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::string base = dir_of(path) + "/." + fs::path(path).filename().string() + ".tmp.";
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = base;
    for (int i = 0; i < 12; ++i)
      name += kChars[rng() % (sizeof kChars - 1)];
    // 0666 less the umask, as any file the user creates.
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *tmp = name;
      return fd;
    }
    if (errno != EEXIST)
      fail("cannot create", name, errno);
  }
  fail("cannot create a temporary file for", path, EEXIST);
}

void write_fd(int fd, const void *data, size_t bytes, const std::string &tmp) {
  const char *p = static_cast<const char *>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail("cannot write", tmp, n < 0 ? errno : ENOSPC);
    done += size_t(n);
  }
}

// fsync, close, rename onto `path`, fsync the directory. The temp is removed on failure.
void commit_fd(int fd, const std::string &tmp, const std::string &path) {
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("cannot fsync", tmp, err);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot close", tmp, err);
  }
  try {
    refuse_special(path, "target"); // it may have appeared while the file was written
  } catch (const WriteError &) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot rename onto", path, err);
  }
  // The rename is durable only once the directory entry is.
  int dfd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    fail("cannot open directory of", path, errno);
  if (::fsync(dfd) != 0) {
    int err = errno;
    ::close(dfd);
    fail("cannot fsync directory of", path, err);
  }
  ::close(dfd);
}
} // namespace

void write_atomically(const std::string &path, const std::string &text, const std::string &what) {
  refuse_special(path, what);
  TempFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

void check_writable(const std::string &path, const std::string &what) {
  refuse_special(path, what);
  std::string tmp;
  int fd = create_temp(path, &tmp);
  ::close(fd);
  ::unlink(tmp.c_str());
}

TempFile::TempFile(const std::string &path) : path_(path) { fd_ = create_temp(path, &tmp_); }

TempFile::~TempFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void TempFile::write(const void *data, size_t bytes) {
  if (fd_ < 0)
    throw WriteError("write after commit of " + path_);
  write_fd(fd_, data, bytes, tmp_);
}

void TempFile::commit() {
  const int fd = fd_;
  fd_ = -1; // commit_fd closes it and removes the temp on failure
  commit_fd(fd, tmp_, path_);
}

} // namespace convbench::bench
