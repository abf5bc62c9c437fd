// cuda-f32's forward Conv1d kernel: the convolution as an implicit GEMM, tiled like an SGEMM.
//   y[b, oc, o] = bias[oc] + sum_r W[oc, r] * X[b, r, o],  r = ic * k + kk (reduction index),
//   W = the weight as stored ([cout, cin * k], row-major), X[b, r, o] = x[b, ic, o * stride +
//   kk * dilation - padding] (0 outside the input), gathered while the tile is staged.
// A block computes a kBm x kBn tile of (oc, o) cells, 8 x 8 per thread, over kBk-deep steps of r
// staged through shared memory (double-buffered, one barrier per step). When a shape has too few
// tiles to fill the device, the r steps are cut into `split` ranges run by the blocks of one
// thread-block cluster, whose partial tiles are added through distributed shared memory in rank
// order: deterministic, no workspace. f32 accumulation with FMA (cuda-f32 promises a tolerance,
// not an order); cuda-f64 keeps the one-thread-per-cell kernel, whose order is its contract.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "convbench/shape.hpp"

namespace convbench::cuda::detail {

struct ForwardTilePlan {
  int64_t batch, cin, cout, k, stride, dilation, padding, l_in, l_out;
  int64_t reduction; // cin * k
  int64_t steps;     // ceil(reduction / kBk)
  int64_t m_tiles, n_tiles;
  int split; // cluster size along z: the r steps cut into this many ranges
};

constexpr int kForwardTileBm = 128, kForwardTileBn = 128, kForwardTileBk = 8;

// Whether the tile kernel computes cuda-f32 for `s` (forward, cout >= 32: below that most of a
// 128-row tile would be padding and the one-thread-per-cell kernel is the better choice).
bool forward_tile_supported(const ConvShape &s);

// The plan for `s` on a device with `sms` multiprocessors; split (1, 2, 4 or 8) is the smallest
// that gives at least two blocks per multiprocessor, while every range keeps 8 or more steps.
// split_override > 0 forces it (tests), clamped to what the steps allow.
ForwardTilePlan forward_tile_plan(const ConvShape &s, int sms, int split_override = 0);

// Multiply-adds the kernel issues for the plan: every tile cell, padding and remainders
// included (staged as 0), times every step: what the FFMA counter shows.
int64_t forward_tile_issued_macs(const ForwardTilePlan &p);

// e.g. "implicit-gemm f32 fma 128x128x8 split 4".
std::string forward_tile_name(const ForwardTilePlan &p);

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
