// SIGINT / SIGTERM while a run is under way: the handler only records the signal (an atomic
// store, async-signal-safe); the rounds loop asks interrupted() between samples, writes what it
// has with status "interrupted" and exits with interrupt_exit_code() (130 for SIGINT, 143 for
// SIGTERM, as a shell reports them). A second SIGINT (Ctrl-C twice) ends the process at once with
// the default action; a repeated SIGTERM is only recorded again (a scheduler may send several).
#pragma once

#include <csignal>

namespace convbench::bench {

class InterruptGuard {
public:
  InterruptGuard();  // installs the handlers; throws std::logic_error when one is already active
  ~InterruptGuard(); // restores the handlers that were there before
  InterruptGuard(const InterruptGuard &) = delete;
  InterruptGuard &operator=(const InterruptGuard &) = delete;

private:
  struct sigaction old_int_ {
  }, old_term_{};
};

bool interrupted();
int interrupt_signal();    // SIGINT, SIGTERM, or 0 when none arrived
int interrupt_exit_code(); // 128 + the signal, or 0
void clear_interrupt();    // forget a recorded signal (a new run in the same process)

} // namespace convbench::bench
