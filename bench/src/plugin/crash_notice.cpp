#include "crash_notice.hpp"

#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace convbench::bench::plugin {

namespace {
// The line of the call now running (nullptr: none). Read by the signal handler, so only a
// lock-free pointer; the strings live in ActiveCall's caller for the call's duration.
std::atomic<const char *> active_line{nullptr};

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction previous[sizeof kSignals / sizeof *kSignals];

void on_fatal(int sig) {
  const char *line = active_line.load();
  if (line) {
    const char *name = sig == SIGSEGV  ? "SIGSEGV"
                       : sig == SIGBUS ? "SIGBUS"
                       : sig == SIGFPE ? "SIGFPE"
                                       : "SIGILL";
    // write(2) only: async-signal-safe.
    ssize_t ignored = write(STDERR_FILENO, line, strlen(line));
    ignored = write(STDERR_FILENO, " crashed (", 10);
    ignored = write(STDERR_FILENO, name, strlen(name));
    const char tail[] = "); bench_conv ends without writing a result\n";
    ignored = write(STDERR_FILENO, tail, sizeof tail - 1);
    (void)ignored;
  }
  // Restore what was there before and return: the faulting instruction runs again and the
  // previous handler (by default: death by this signal) takes it.
  for (size_t i = 0; i < sizeof kSignals / sizeof *kSignals; ++i)
    if (kSignals[i] == sig)
      sigaction(sig, &previous[i], nullptr);
}
} // namespace

void install_crash_notice() {
  static const bool installed = [] {
    for (size_t i = 0; i < sizeof kSignals / sizeof *kSignals; ++i) {
      struct sigaction sa {};
      sa.sa_handler = on_fatal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_NODEFER;
      sigaction(kSignals[i], &sa, &previous[i]);
    }
    return true;
  }();
  (void)installed;
}

ActiveCall::ActiveCall(const std::string &line) : previous_(active_line.exchange(line.c_str())) {}
ActiveCall::~ActiveCall() { active_line.store(previous_); }

} // namespace convbench::bench::plugin
