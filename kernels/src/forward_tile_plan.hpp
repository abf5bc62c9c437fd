// cuda-f32's forward tile kernel, host side (no CUDA headers): the plan the kernel runs and how
// it is chosen. forward_tile.hpp (kernels/src/cuda) has the mapping, the kernel's contract and
// its launch.
#pragma once

#include <cstdint>
#include <string>

#include "convbench/cuda_conv.hpp"
#include "convbench/shape.hpp"
#include "host_device.hpp"

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

// The kernel's tile shapes: cells per block (bm x bn, 8 x 8 per thread) and the blocks each
// multiprocessor holds (512 threads: a 128-register cap). forward_tile.cu checks them against its
// kernels at compile time.
struct ForwardTileShape {
  int bm, bn, threads, blocks_per_sm;
};
constexpr ForwardTileShape kForwardTileShapes[] = {{128, 128, 256, 2}, {32, 256, 128, 4}};
constexpr int64_t kForwardTileMinCout = 16;

// Whether the tile kernel computes cuda-f32 for `s` (forward, cout >= 16: below that most of a
// 32-row tile would be padding and the one-thread-per-cell kernel is the better choice); the
// reason why not, empty when it does.
bool forward_tile_supported(const ConvShape &s);
std::string forward_tile_shape_unsupported_reason(const ConvShape &s);

// The plan for `s` on a device with `sms` multiprocessors: the tile shape and split with the
// fewest modelled steps (whole waves of blocks times a rank's steps, plus the reduction's cost
// where split), every rank given at least one step. Tests force a split (split_override > 0;
// where the steps cannot give it, the automatic choice) or a shape (0: 128 x 128, 1: 32 x 256).
ForwardTilePlan forward_tile_plan(const ConvShape &s, int sms, int split_override = 0,
                                  int shape_override = -1);

// Exactly the plan `t` forces for `s`, whatever the cost model would choose; throws
// std::invalid_argument with forward_tile_unsupported_reason() where the kernel cannot run it.
ForwardTilePlan forward_tile_forced_plan(const ConvShape &s, const ForwardTile &t);

// Multiply-adds the kernel issues for the plan: every tile cell, padding and remainders
// included (staged as 0), times every step: what the FFMA counter shows.
int64_t forward_tile_issued_macs(const ForwardTilePlan &p);

// The plan's modelled time in steps of one block: whole waves of blocks (blocks_per_sm resident
// on each multiprocessor; every shape runs 512 threads of 64 cells per multiprocessor, so a step
// costs the same in each) times the steps of a rank, plus the reduction's cost where split.
// forward_tile_plan() returns the plan with the least; -1 for a shape not in the table.
int64_t forward_tile_cost(const ForwardTilePlan &p, int sms);

// Whether cutting `steps` into `split` ranges of ceil(steps / split) leaves no rank empty.
bool forward_tile_ranks_nonempty(int64_t steps, int split);

// Whether every column of the n-tile starting at position n0 reads inside x at every tap (no
// padding, no column past l_out): the kernel then stages that tile's whole steps of the input
// without a bounds check. The same function on the device and in the host tests.
CONVBENCH_HD bool forward_tile_columns_inside(const ForwardTilePlan &p, int64_t n0) {
  return n0 + p.bn <= p.l_out && n0 * p.stride - p.padding >= 0 &&
         (n0 + p.bn - 1) * p.stride + (p.k - 1) * p.dilation - p.padding < p.l_in;
}

// How many of the plan's n-tiles are inside (forward_tile_columns_inside).
int64_t forward_tile_inside_tiles(const ForwardTilePlan &p);

// e.g. "implicit-gemm f32 fma 128x128x8 split 7".
std::string forward_tile_name(const ForwardTilePlan &p);

} // namespace convbench::cuda::detail
