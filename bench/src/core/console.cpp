#include "core/console.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <sys/ioctl.h>
#include <unistd.h>

namespace convbench::bench {

namespace {
std::atomic<Verbosity> level{Verbosity::normal};
std::mutex write_lock;
bool status_shown = false; // under write_lock
bool stderr_gone = false;  // under write_lock: a write failed, so nothing more is tried

// The whole of `s` on fd 2, or nothing more ever: a short write retried, a failed one is silence.
void write_stderr(const std::string &s) {
  if (stderr_gone)
    return;
  const char *p = s.data();
  size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      stderr_gone = true;
      return;
    }
    p += n;
    left -= size_t(n);
  }
}
} // namespace

void set_verbosity(Verbosity v) { level = v; }
Verbosity verbosity() { return level; }

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

bool stderr_is_terminal() {
  if (const char *e = std::getenv("CONVBENCH_TTY"); e && (*e == '0' || *e == '1'))
    return *e == '1';
  return ::isatty(STDERR_FILENO) == 1;
}

int terminal_columns() {
  struct winsize w {};
  if (::isatty(STDERR_FILENO) == 1 && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0)
    return w.ws_col;
  return 100;
}

void say(const std::string &text, Verbosity at) {
  if (int(level.load()) < int(at))
    return;
  std::lock_guard<std::mutex> hold(write_lock);
  std::string s = status_shown ? "\r\033[K" : "";
  status_shown = false;
  write_stderr(s + "bench_conv: " + text + "\n");
}

void show_status(const std::string &text) {
  if (level.load() != Verbosity::normal || !stderr_is_terminal())
    return;
  std::string line = text;
  const size_t width = size_t(terminal_columns() > 1 ? terminal_columns() - 1 : 79);
  if (line.size() > width)
    line.resize(width);
  std::lock_guard<std::mutex> hold(write_lock);
  write_stderr("\r\033[K" + line);
  status_shown = true;
}

void clear_status() {
  std::lock_guard<std::mutex> hold(write_lock);
  if (status_shown)
    write_stderr("\r\033[K");
  status_shown = false;
}

} // namespace convbench::bench
