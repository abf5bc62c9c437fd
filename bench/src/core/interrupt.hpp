// SIGINT / SIGTERM / SIGHUP while a run is under way: the handler only records the signal (an
// atomic store, async-signal-safe); the rounds loop asks interrupted() between samples, writes
// what it has with status "interrupted" and exits with interrupt_exit_code() (130 for SIGINT, 143
// for SIGTERM, 129 for SIGHUP - a closed terminal or ssh session - as a shell reports them). A
// second SIGINT (Ctrl-C twice) ends the process at once with the default action (convlease passes
// on no Ctrl-C that the terminal sent, so one Ctrl-C under it is one SIGINT here); a repeated
// SIGTERM is only recorded again (a scheduler may send several).
#pragma once

#include <condition_variable>
#include <csignal>
#include <functional>
#include <mutex>
#include <thread>

namespace convbench::bench {

class InterruptGuard {
public:
  InterruptGuard();  // installs the handlers; throws std::logic_error when one is already active
  ~InterruptGuard(); // restores the handlers that were there before
  InterruptGuard(const InterruptGuard &) = delete;
  InterruptGuard &operator=(const InterruptGuard &) = delete;

private:
  struct sigaction old_int_ {
  }, old_term_{}, old_hup_{};
};

// Before the first timed round a run is in calls that never look at interrupted(): the gate's
// reference of a big case on cpu-f64 can take minutes, and so can a prepare. The watchdog acts
// for them: a thread that, once a signal is recorded and the watchdog is still armed `grace_s`
// later, calls `on_stop` (which writes what the run has, releases what it holds and ends the
// process with _exit; if it returns, the watchdog is done). on_stop runs holding the watchdog's
// lock: the run changes what on_stop reads only under hold(), and disarm() - called where the
// run looks at interrupted() itself - waits for an on_stop under way, so the two never both act.
class InterruptWatchdog {
public:
  explicit InterruptWatchdog(std::function<void()> on_stop, double grace_s = 0.5);
  ~InterruptWatchdog(); // disarm()
  InterruptWatchdog(const InterruptWatchdog &) = delete;
  InterruptWatchdog &operator=(const InterruptWatchdog &) = delete;
  void disarm();
  std::unique_lock<std::mutex> hold() { return std::unique_lock<std::mutex>(m_); }
  bool fired(); // on_stop was called

private:
  void watch();
  std::function<void()> on_stop_;
  double grace_s_;
  std::mutex m_;
  std::condition_variable cv_;
  bool armed_ = true, fired_ = false;
  std::thread thread_;
};

bool interrupted();
int interrupt_signal();              // SIGINT, SIGTERM, SIGHUP, or 0 when none arrived
const char *interrupt_signal_name(); // "SIGINT", "SIGTERM", "SIGHUP" or "a signal"
int interrupt_exit_code();           // 128 + the signal, or 0
void clear_interrupt();              // forget a recorded signal (a new run in the same process)

} // namespace convbench::bench
