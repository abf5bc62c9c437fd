// A test plugin whose call() throws a C++ exception out of its C callback (which the ABI forbids):
// bench_conv catches it at the boundary and refuses the case.
#include <cstdlib>
#include <stdexcept>

#include "convbench/arm_plugin.h"

namespace {
char arm_error[64] = "";
int32_t prepare(const convbench_arm *, const convbench_problem *, void *, void **handle) {
  static int token;
  *handle = &token;
  return CONVBENCH_OK;
}
int32_t call(void *) { throw std::runtime_error("planted: an exception out of call()"); }
int32_t output(void *, float *) { return CONVBENCH_OK; }
void release(void *) {}
const char *last_error(const convbench_arm *, void *) { return arm_error; }

const convbench_arm arms[] = {{sizeof(convbench_arm), "fault-throw", 0, CONVBENCH_GATE_TOLERANCE,
                               1e-4, nullptr, nullptr, nullptr, prepare, call, output, release,
                               nullptr, last_error}};
const convbench_plugin table = {CONVBENCH_ARM_PLUGIN_HEADER, "fault-throw", "0.0.1", 1, arms};
} // namespace

extern "C" CONVBENCH_ARM_PLUGIN_EXPORT const convbench_plugin *convbench_arm_plugin(uint32_t) {
  return &table;
}
