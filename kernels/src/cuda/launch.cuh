// The one place that chooses which device kernel computes an arm. ResidentConv and per_call_conv
// both call launch_conv, so a faster kernel is swapped in here and nowhere else.
#pragma once

#include <cuda_runtime.h>

#include <optional>

#include "convbench/cuda_conv.hpp"
#include "convbench/fast_conv.hpp"
#include "convbench/shape.hpp"
#include "forward_tile.hpp"

namespace convbench::cuda::detail {

// Enqueues y = conv(x, w, b) on `stream`. All pointers are device pointers; b may be null when
// the shape has no bias. The shape must already be validated. Checks the launch (cudaGetLastError).
void launch_conv(const ConvShape &s, Accum acc, Kernel k, const Block &block, const float *d_x,
                 const float *d_w, const float *d_b, float *d_y, cudaStream_t stream);

// launch_conv resolved once for (s, acc, k, block): which kernel, and for the fast path its
// configuration and plan (fast::FastLaunch). ResidentConv keeps one, so its timed launches only
// enqueue. The shape must already be validated.
class ConvLaunch {
public:
  ConvLaunch(const ConvShape &s, Accum acc, Kernel k, const Block &block = {});
  void operator()(const float *d_x, const float *d_w, const float *d_b, float *d_y,
                  cudaStream_t stream) const;

private:
  ConvShape shape_;
  Accum acc_;
  bool fused_; // f64: one __fma_rn per tap (cuda-f64-fma), in the fast kernel and the simple one
  std::optional<fast::FastLaunch> fast_;
  std::optional<ForwardTilePlan> tile_; // cuda-f32 forward: the implicit-GEMM tile kernel
};

// The forward tile plan cuda-f32 runs for (s, acc, k, block) on the current device, or nullopt
// when it runs another kernel (f64, transposed, Kernel::simple, a fast block shape, cout < 16).
// A forced tile (block.forward) gives exactly its plan or throws std::invalid_argument.
std::optional<ForwardTilePlan> forward_tile_for(const ConvShape &s, Accum acc, Kernel k,
                                                const Block &block);

} // namespace convbench::cuda::detail
