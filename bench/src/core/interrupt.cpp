#include "core/interrupt.hpp"

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>

namespace convbench::bench {

namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

extern "C" void on_signal(int sig) {
  const int before = g_signal.exchange(sig);
  if (sig == SIGINT && before == SIGINT) {
    // Ctrl-C twice: the user wants out now. signal() and raise() are async-signal-safe.
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

} // namespace

InterruptGuard::InterruptGuard() {
  if (g_installed.exchange(true))
    throw std::logic_error("InterruptGuard: handlers are already installed");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; // the rest of the program never sees EINTR from a read or write
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  sigaction(SIGHUP, &sa, &old_hup_); // a closed terminal or ssh session: as SIGTERM
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  g_installed = false;
}

InterruptWatchdog::InterruptWatchdog(std::function<void()> on_stop, double grace_s)
    : on_stop_(std::move(on_stop)), grace_s_(grace_s), thread_([this] { watch(); }) {}

InterruptWatchdog::~InterruptWatchdog() { disarm(); }

void InterruptWatchdog::disarm() {
  {
    std::lock_guard<std::mutex> lk(m_); // waits for an on_stop under way
    armed_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
    thread_.join();
}

bool InterruptWatchdog::fired() {
  std::lock_guard<std::mutex> lk(m_);
  return fired_;
}

void InterruptWatchdog::watch() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lk(m_);
  std::optional<Clock::time_point> seen; // when the signal was first seen
  while (armed_) {
    cv_.wait_for(lk, std::chrono::milliseconds(20)); // the handler can only store a flag
    if (!armed_ || !interrupted())
      continue;
    const auto now = Clock::now();
    if (!seen)
      seen = now;
    if (std::chrono::duration<double>(now - *seen).count() < grace_s_)
      continue;
    armed_ = false;
    fired_ = true;
    on_stop_();
  }
}

bool interrupted() { return g_signal.load() != 0; }
int interrupt_signal() { return g_signal.load(); }
const char *interrupt_signal_name() {
  const int s = g_signal.load();
  return s == SIGINT ? "SIGINT" : s == SIGTERM ? "SIGTERM" : s == SIGHUP ? "SIGHUP" : "a signal";
}
int interrupt_exit_code() {
  const int s = g_signal.load();
  return s ? 128 + s : 0;
}
void clear_interrupt() { g_signal = 0; }

} // namespace convbench::bench
