// The lease before the GPU. A run waiting for its lease, or refused it, must be invisible on the
// GPU: no CUDA context, allocation, cuDNN/cuBLAS handle or plugin device call until the lease is
// held and its start verified. Before that, the GPU is known through NVML alone (no context):
// visible_gpu() names the GPU CUDA will number 0. Every bench entry point that reaches the CUDA
// runtime passes enter() first; once bench_conv has called guard(), an entry before open() is a
// bug and throws std::logic_error. CONVBENCH_TEST_DEVICE_TRACE=<file> appends each lease step and
// the first entry of each kind to the file, one line each, so a test sees the order on a machine
// with no GPU.
#pragma once

#include <string>

namespace convbench::bench {

// The GPU this run would use, as NVML names it before any CUDA call.
struct VisibleGpu {
  bool present = false;
  std::string why_not; // when !present
  std::string uuid, name;
  double total_bytes = 0, free_bytes = 0; // 0: NVML did not say
};
// Read once per process. A build without CUDA has none ("built without CUDA").
const VisibleGpu &visible_gpu();
// What a device arm's available() asks: a GPU is visible (no CUDA call).
bool gpu_visible(std::string *why_not);
// The visible GPU's free memory now, from NVML (0: unknown).
double visible_gpu_free_bytes();

namespace device_gate {
void guard();                             // from here a device entry before open() throws
void lease_step(const std::string &step); // traced only: "lease-acquired", "lease-verified"...
void open();                              // the lease is held and its start verified
bool is_open();                           // open() was called (or guard() never was)
void enter(const std::string &what);      // a device entry point
} // namespace device_gate

} // namespace convbench::bench
