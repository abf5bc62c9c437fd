// A host plugin arm's first run, in a forked child: prepare, call, output and release on the
// case's own problem. A plugin that crashes, aborts or fails there costs a refusal of that case,
// not the run. Host arms only: a CUDA context does not survive fork(), so device arms run their
// first call in bench_conv's process (the crash notice names them if they crash). The child runs
// in a process group of its own that dies with bench_conv (PR_SET_PDEATHSIG) and is killed whole
// when the trial outlives the plugin timeout (--plugin-timeout) or a signal arrives: a hanging
// trial costs its case, never the run, and is never left behind.
#pragma once

#include <functional>
#include <string>

namespace convbench::bench::plugin {

// Runs `body` in a child process. `body` returns "" on success or why it failed. Returns "" when
// the child succeeded, else the reason: the body's, how the child died (signal, exit status,
// exit() called by the plugin), or that it was killed (timeout, interrupt).
std::string run_trial(const std::function<std::string()> &body);

} // namespace convbench::bench::plugin
