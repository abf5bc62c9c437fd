// A test plugin whose CUDA kernel writes to an address it does not own: a device fault that
// loses the CUDA context for every arm. bench_conv must name the arm and exit 1 (GPU machine).
#include <cuda_runtime.h>

#include "convbench/arm_plugin.h"

namespace {
char arm_error[64] = "";
struct Case {
  void *stream;
  convbench_problem p;
};

__global__ void write_nowhere(float *y) { y[threadIdx.x] = 1.0f; }

int32_t prepare(const convbench_arm *, const convbench_problem *p, void *stream, void **handle) {
  *handle = new Case{stream, *p};
  return CONVBENCH_OK;
}
int32_t call(void *handle) {
  auto *c = static_cast<Case *>(handle);
  write_nowhere<<<1, 32, 0, cudaStream_t(c->stream)>>>(reinterpret_cast<float *>(0x10));
  return CONVBENCH_OK; // the fault is asynchronous: the launch itself succeeds
}
int32_t output(void *handle, float *) {
  auto *c = static_cast<Case *>(handle);
  return cudaStreamSynchronize(cudaStream_t(c->stream)) == cudaSuccess ? CONVBENCH_OK
                                                                       : CONVBENCH_ERROR;
}
void release(void *handle) { delete static_cast<Case *>(handle); }
const char *last_error(const convbench_arm *, void *) { return arm_error; }

const convbench_arm arms[] = {{sizeof(convbench_arm), "fault-illegal-address", 1,
                               CONVBENCH_GATE_TOLERANCE, 1e-4, "fp32_fma", nullptr, nullptr,
                               prepare, call, output, release, nullptr, last_error}};
const convbench_plugin table = {CONVBENCH_ARM_PLUGIN_HEADER, "fault-device", "0.0.1", 1, arms};
} // namespace

extern "C" CONVBENCH_ARM_PLUGIN_EXPORT const convbench_plugin *convbench_arm_plugin(uint32_t) {
  return &table;
}
