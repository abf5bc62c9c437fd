// cuda-f32's forward Conv1d kernel: the convolution as an implicit GEMM, tiled like an SGEMM.
//   y[b, oc, o] = bias[oc] + sum_r W[oc, r] * X[b, r, o],  r = ic * k + kk (reduction index),
//   W = the weight as stored ([cout, cin * k], row-major), X[b, r, o] = x[b, ic, o * stride +
//   kk * dilation - padding] (0 outside the input), gathered while the tile is staged.
// A block computes a bm x bn tile of (oc, o) cells, 8 x 8 per thread, over 8-deep steps of r
// staged through shared memory (double-buffered, one barrier per step): 128 x 128 (256 threads)
// for wide layers, 32 x 256 (128 threads) for narrow ones, chosen per shape with the split. When
// a shape has too few tiles to fill the device in whole waves, the r steps are cut into `split`
// ranges (1-8) run by the blocks of one thread-block cluster, whose partial tiles are added
// through distributed shared memory in rank order: deterministic, no workspace. f32
// accumulation with FMA (cuda-f32 promises a tolerance, not an order); cuda-f64 keeps the
// one-thread-per-cell kernel, whose order is its contract.
#pragma once

#include <cuda_runtime.h>

#include "forward_tile_plan.hpp"

namespace convbench::cuda::detail {

// Sets what the plan's launch needs of the current device (the partial tile's shared memory, over
// the 48 KiB default, when split > 1). Once per plan, before its first launch.
void prepare_forward_tile(const ForwardTilePlan &p);

// Enqueues the kernel; throws CudaError naming the call when the launch fails.
void launch_forward_tile(const ForwardTilePlan &p, const float *d_x, const float *d_w,
                         const float *d_b, float *d_y, cudaStream_t stream);

// Test-only (never reached from launch_conv): the planted fault the split tests must catch, a
// cluster reduction that leaves out the last rank's partial tile.
void launch_forward_tile_planted(const ForwardTilePlan &p, const float *d_x, const float *d_w,
                                 const float *d_b, float *d_y, cudaStream_t stream);

} // namespace convbench::cuda::detail
