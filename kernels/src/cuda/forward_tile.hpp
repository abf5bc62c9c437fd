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

#include <cstdint>
#include <string>

#include "convbench/shape.hpp"

namespace convbench::cuda::detail {

struct ForwardTilePlan {
  int64_t batch, cin, cout, k, stride, dilation, padding, l_in, l_out;
  int64_t reduction;   // cin * k
  int64_t steps;       // ceil(reduction / kBk)
  int bm, bn, threads; // the tile shape
  int64_t m_tiles, n_tiles;
  int split; // cluster size along z: the r steps cut into this many ranges
};

constexpr int kForwardTileBk = 8;
constexpr int64_t kForwardTileMinCout = 16;

// Whether the tile kernel computes cuda-f32 for `s` (forward, cout >= 16: below that most of a
// 32-row tile would be padding and the one-thread-per-cell kernel is the better choice).
bool forward_tile_supported(const ConvShape &s);

// The plan for `s` on a device with `sms` multiprocessors: the tile shape and split with the
// fewest modelled steps (whole waves of blocks times a rank's steps, plus the reduction's cost
// where split), every rank given at least one step. Tests force a split (split_override > 0;
// where the steps cannot give it, the automatic choice) or a shape (0: 128 x 128, 1: 32 x 256).
ForwardTilePlan forward_tile_plan(const ConvShape &s, int sms, int split_override = 0,
                                  int shape_override = -1);

// Multiply-adds the kernel issues for the plan: every tile cell, padding and remainders
// included (staged as 0), times every step: what the FFMA counter shows.
int64_t forward_tile_issued_macs(const ForwardTilePlan &p);

// e.g. "implicit-gemm f32 fma 128x128x8 split 7".
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
