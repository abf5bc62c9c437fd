#include "core/crash_notice.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "core/interrupt.hpp"

namespace convbench::bench::plugin {

namespace {
// The line of the call now running (nullptr: none). Read by the signal handler, so only a
// lock-free pointer; the strings live in ActiveCall's caller for the call's duration.
std::atomic<const char *> active_line{nullptr};
std::atomic<long long> active_start_ns{0};
// The guard thread reads the line under this lock; the call's end takes it before the string goes.
std::mutex line_mutex;
std::atomic<double> timeout_s{kDefaultPluginTimeoutS};
std::mutex note_mutex;
std::string samples_note;
std::atomic<bool> trial_child{false};

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction previous[sizeof kSignals / sizeof *kSignals];

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void say(const char *s) {
  ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
  (void)ignored;
}

void on_fatal(int sig) {
  const char *line = active_line.load();
  if (line) {
    const char *name = sig == SIGSEGV  ? "SIGSEGV"
                       : sig == SIGBUS ? "SIGBUS"
                       : sig == SIGFPE ? "SIGFPE"
                                       : "SIGILL";
    // write(2) only: async-signal-safe.
    say(line);
    say(" crashed (");
    say(name);
    say("); bench_conv ends without writing a result\n");
  }
  // Restore what was there before and return: the faulting instruction runs again and the
  // previous handler (by default: death by this signal) takes it.
  for (size_t i = 0; i < sizeof kSignals / sizeof *kSignals; ++i)
    if (kSignals[i] == sig)
      sigaction(sig, &previous[i], nullptr);
}

std::string note_suffix() {
  std::lock_guard<std::mutex> lk(note_mutex);
  return samples_note.empty() ? std::string() : "; " + samples_note;
}

// exit() while a plugin call or load is under way is the plugin's: never a silent exit 0.
void on_exit() {
  if (trial_child.load()) // the trial's body ends with _exit: any exit() there is the plugin's
    _exit(kCalledExitStatus);
  const char *line = active_line.load();
  if (!line)
    return;
  const std::string msg = std::string(line) +
                          " called exit(): bench_conv ends without writing a result" +
                          note_suffix() + "\n";
  say(msg.c_str());
  _exit(1);
}

// Ends the run when a call outlives the timeout, or a signal by more than a grace.
void guard() {
  constexpr long long kGraceNs = 3'000'000'000;
  long long signal_seen_ns = 0;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const long long now = now_ns();
    if (interrupted()) {
      if (!signal_seen_ns)
        signal_seen_ns = now;
    } else {
      signal_seen_ns = 0;
    }
    std::unique_lock<std::mutex> lk(line_mutex);
    const char *line = active_line.load();
    if (!line)
      continue;
    const long long ran_ns = now - active_start_ns.load();
    const double limit = timeout_s.load();
    const bool timed_out = ran_ns > static_cast<long long>(limit * 1e9);
    const bool stuck = signal_seen_ns && now - signal_seen_ns > kGraceNs;
    if (!timed_out && !stuck)
      continue;
    std::string msg = line;
    if (timed_out)
      msg += " did not return within " + std::to_string(int(limit)) +
             " s (--plugin-timeout): bench_conv ends without writing a result";
    else
      msg += std::string(" did not return after ") + interrupt_signal_name() +
             ": bench_conv ends without writing a result";
    msg += note_suffix() + "\n";
    say(msg.c_str());
    _exit(stuck ? interrupt_exit_code() : 1);
  }
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
    std::atexit(on_exit);
    // A fork (a trial run) while the guard holds the lock would leave the child's copy locked.
    pthread_atfork([] { line_mutex.lock(); }, [] { line_mutex.unlock(); },
                   [] { line_mutex.unlock(); });
    std::thread(guard).detach();
    return true;
  }();
  (void)installed;
}

ActiveCall::ActiveCall(const std::string &line) {
  std::lock_guard<std::mutex> lk(line_mutex);
  previous_ = active_line.exchange(line.c_str());
  previous_start_ns_ = active_start_ns.exchange(now_ns());
}

ActiveCall::~ActiveCall() {
  std::lock_guard<std::mutex> lk(line_mutex);
  active_line.store(previous_);
  active_start_ns.store(previous_start_ns_);
}

void set_plugin_timeout(double seconds) { timeout_s = seconds; }
double plugin_timeout() { return timeout_s.load(); }

void set_samples_note(const std::string &note) {
  std::lock_guard<std::mutex> lk(note_mutex);
  samples_note = note;
}

void mark_trial_child() { trial_child = true; }

} // namespace convbench::bench::plugin
