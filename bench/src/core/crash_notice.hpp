// The last words of a run that a plugin ended in bench_conv's own process (a device arm, or a
// host arm after its trial run passed: host_trial.hpp). While a plugin call (or the loading of a
// plugin: its constructors) runs:
// - a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL) first writes one line naming the plugin, the
//   arm and the call to stderr, then takes its default course (the process dies by that signal);
// - exit() called by the plugin writes one line naming it and ends the process with status 1
//   (never 0: there is no result);
// - a call that has run longer than the plugin timeout (--plugin-timeout), or that is still
//   running a few seconds after SIGINT/SIGTERM/SIGHUP (the rounds look at signals only between
//   calls), ends the run from a guard thread with one line naming the call.
// Each line says where the samples are when the rounds had begun (the journal and the --resume
// that makes their record). No result file is written by these: results are written atomically
// at the end, so none is left partial.
#pragma once

#include <string>

namespace convbench::bench::plugin {

// Installs the handlers and the guard once (idempotent). Handlers installed before are called
// for signals that arrive while no plugin call is active.
void install_crash_notice();

// Marks a plugin call as running for its lifetime; `line` is printed should it crash, exit or
// hang. Nests.
class ActiveCall {
public:
  explicit ActiveCall(const std::string &line);
  ~ActiveCall();
  ActiveCall(const ActiveCall &) = delete;
  ActiveCall &operator=(const ActiveCall &) = delete;

private:
  const char *previous_;
  long long previous_start_ns_;
};

// The longest a host plugin call or trial run may take, in seconds (default 600).
constexpr double kDefaultPluginTimeoutS = 600;
void set_plugin_timeout(double seconds);
double plugin_timeout();
// What the last line says of the samples once the rounds have begun ("" before).
void set_samples_note(const std::string &note);
// In a trial run's child: exit() by the plugin ends the child with kCalledExitStatus, silently
// (the parent reports it).
constexpr int kCalledExitStatus = 5;
void mark_trial_child();

} // namespace convbench::bench::plugin
