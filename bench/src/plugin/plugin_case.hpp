// One plugin arm prepared for one problem and staging: a handle per stage (a chain runs the
// plugin stage by stage, as the built-in arms do), convbench's buffers, the crash-notice lines.
#pragma once

#include <memory>
#include <string>

#include "convbench/arm_plugin.h"
#include "plan/arm.hpp"

namespace convbench::bench::plugin {

class PluginArm;

// The ABI's view of a shape; false with *why_not for an op the ABI does not carry.
bool to_abi_shape(const ConvShape &s, convbench_shape *out, std::string *why_not);

// Host arms: the case is first run in a forked child (host_trial.hpp). A case that fails to
// prepare, crashes in its trial or fails its first call is refused: its output is NaN, so the
// gate fails it (recorded, never timed), and the reason is on stderr and in the record.
std::unique_ptr<PreparedArm> prepare_plugin_case(const PluginArm &arm, const Problem &p,
                                                 const std::string &staging, int host_threads);

} // namespace convbench::bench::plugin
