// The last words of a run that a plugin crashed in bench_conv's own process (a device arm, or a
// host arm that crashed after its trial run passed: host_trial.hpp): while a plugin call runs, a
// fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL) first writes one line naming the plugin, the arm
// and the call to stderr, then takes its default course (the process dies by that signal). No
// result file is written: results are written atomically at the end, so none is left partial.
#pragma once

#include <string>

namespace convbench::bench::plugin {

// Installs the handlers once (idempotent). Handlers installed before are called for signals that
// arrive while no plugin call is active.
void install_crash_notice();

// Marks a plugin call as running for its lifetime; `line` is printed should it crash. Nests.
class ActiveCall {
public:
  explicit ActiveCall(const std::string &line);
  ~ActiveCall();
  ActiveCall(const ActiveCall &) = delete;
  ActiveCall &operator=(const ActiveCall &) = delete;

private:
  const char *previous_;
};

} // namespace convbench::bench::plugin
