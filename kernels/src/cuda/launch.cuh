// The one place that chooses which device kernel computes an arm. ResidentConv and per_call_conv
// both call launch_conv, so a faster kernel is swapped in here and nowhere else.
#pragma once

#include <cuda_runtime.h>

#include "convbench/cuda_conv.hpp"
#include "convbench/shape.hpp"

namespace convbench::cuda::detail {

// Enqueues y = conv(x, w, b) on `stream`. All pointers are device pointers; b may be null when
// the shape has no bias. The shape must already be validated. Checks the launch (cudaGetLastError).
void launch_conv(const ConvShape& s, Accum acc, Kernel k, const float* d_x, const float* d_w,
                 const float* d_b, float* d_y, cudaStream_t stream);

}  // namespace convbench::cuda::detail
