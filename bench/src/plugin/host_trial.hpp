// A host plugin arm's first run, in a forked child: prepare, call, output and release on the
// case's own problem. A plugin that crashes, aborts or fails there costs a refusal of that case,
// not the run. Host arms only: a CUDA context does not survive fork(), so device arms run their
// first call in bench_conv's process (the crash notice names them if they crash).
#pragma once

#include <functional>
#include <string>

namespace convbench::bench::plugin {

// Runs `body` in a child process. `body` returns "" on success or why it failed. Returns "" when
// the child succeeded, else the reason: the body's, or how the child died (signal, exit status).
std::string run_trial(const std::function<std::string()> &body);

} // namespace convbench::bench::plugin
