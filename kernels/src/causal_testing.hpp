// Test-only entry into the causal CUDA kernels: the planted in-place final-state variant (the
// race the race test must catch). Not in the public headers and never called by an arm.
#pragma once

#include <cstdint>

#include "convbench/causal_conv.hpp"

namespace convbench::cuda::testing {

// Device pointers of one problem; initial_state is also where the planted variant writes.
struct DeviceCausal {
  const float *x = nullptr;
  const float *w = nullptr;
  const float *bias = nullptr;
  float *initial_state = nullptr;
  const uint8_t *has_initial_state = nullptr;
  float *y = nullptr;
  float *final_state = nullptr;
};

#if CONVBENCH_HAVE_CUDA
void launch_planted_in_place(const CausalConvShape &s, CausalKernel k, const DeviceCausal &d);
#endif

} // namespace convbench::cuda::testing
