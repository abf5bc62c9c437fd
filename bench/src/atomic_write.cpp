#include "atomic_write.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace convbench::bench {

namespace {
std::string dir_of(const std::string &path) {
  fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}
std::string temp_name(const std::string &path) {
  fs::path p(path);
  std::string dir = dir_of(path);
  return dir + "/." + p.filename().string() + ".tmp." + std::to_string(getpid());
}
[[noreturn]] void fail(const std::string &step, const std::string &what, int err) {
  throw WriteError(step + " " + what + ": " + std::strerror(err));
}
} // namespace

void write_atomically(const std::string &path, const std::string &text) {
  if (fs::path(path).filename().empty())
    throw WriteError("result path '" + path + "' names no file");
  std::string tmp = temp_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot create", tmp, errno);
  auto abandon = [&](const std::string &step, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(step, tmp, err);
  };
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      abandon("cannot write", errno);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0)
    abandon("cannot fsync", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot close", tmp, err);
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

void check_writable(const std::string &path) {
  if (fs::path(path).filename().empty())
    throw WriteError("result path '" + path + "' names no file");
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw WriteError("result path '" + path + "' is a directory");
  std::string tmp = temp_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot create", tmp, errno);
  ::close(fd);
  ::unlink(tmp.c_str());
}

} // namespace convbench::bench
