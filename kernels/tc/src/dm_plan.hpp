// The Hopper fp64 tensor-core kernels of cuda-f64-dmma (mma.sync m16n8k16 f64), host side: the
// tiling of the shifted-window GEMMs of wg_plan.hpp (the same row groups, shifts and taps, rows
// on M) and the index maps the device kernel (dm_kernel.cu) and its host emulation
// (tests/dm_emulation_test.cpp) share. No CUDA headers here.
//
// For each tap j and row group g:  Y_g[row][n] += A_g[j][row][ic] * x[b][ic][n + shift(g, j)]
// with A packed once per stage into f64 (exact) A[j][row][ic], ic padded to kBk with zeros. A
// block computes a bm x bn tile (rows of one group x columns) with four warps of (bm / 2) x
// (bn / 2), one k-step of kBk channels of one tap per pipeline
// buffer: the weights' tile copied as it is and the input's window from x (f32, zero-filled outside
// [0, l_in) and past cin), both by cp.async, the input converted to f64 as its fragments are
// loaded. The iterations (chunk outer, tap inner) may be split over `split` blocks, each writing
// its f64 partial sums to a workspace slice; a second kernel adds the slices in split order, then
// the bias (deterministic: no atomics). Unsplit, the bias is added to the f64 sum and the cell
// rounded once to f32.
#pragma once

#include <cstdint>
#include <string>

#include "convbench/shape.hpp"
#include "host_device.hpp"
#include "wg_plan.hpp"

namespace convbench::tc::dm {

constexpr int kBk = 16;       // input channels per k-step: one m16n8k16
constexpr int kThreads = 128; // four warps, 2 x 2 over the tile
constexpr int kBuffers = 3;   // pipeline depth
constexpr int kMaxSplit = 8;
// Shared-memory pitches: the weight tile's rows kBk + 4 doubles (160 bytes) and the input
// window's rows bn + 8 floats: the fragment loads of a half-warp (four rows of four doubles; four
// rows of eight floats) are conflict-free.
constexpr int kApitch = kBk + 4;
constexpr int kBpad = 8;

// The tiles the kernel is built for: bm x bn, four warps of bm / 2 x bn / 2. (A 128 x 128 tile of
// eight 64 x 32 warps, half the weight bytes per multiply-add of 128 x 64, measured 1.39-1.46x
// the floor on up0 and up1 at 1536 frames against 1.24-1.35x: one block per multiprocessor by
// registers, nothing to hide its barriers behind.)
struct TileShape {
  int bm, bn;
};
constexpr TileShape kTiles[] = {{128, 64}, {64, 128}, {64, 64}, {128, 32}, {32, 128}};
// Blocks one multiprocessor holds by registers (the kernel's __launch_bounds__): a thread holding
// 64 accumulators (a 64 x 32 warp tile) gets up to 255 registers (2 blocks of 128 threads), fewer
// accumulators up to 168 (3 blocks).
CONVBENCH_HD constexpr int blocks_by_registers(int bm, int bn) { return bm * bn >= 8192 ? 2 : 3; }

struct Plan {
  wg::Plan g; // the groups (wg::geometry) and the tiles: gpb 1, row_tile bm, col_tile bn,
              // chunks and iters of kBk channels, split and iters_per_rank over the blocks
  int kpitch; // the packed weights' row pitch in doubles: chunks * kBk
  int per_sm; // blocks resident on one multiprocessor (shared memory, registers)
};

// A variant forced by the tests and the tile arms (0: the plan's choice).
struct Forced {
  int bm = 0, bn = 0, split = 0;
};

// Why the DMMA kernels do not compute `s` ("" when they do): as wg::unsupported_reason.
std::string unsupported_reason(const ConvShape &s);
// The plan with the least modelled time; a forced variant the shape cannot take falls back to
// the automatic choice (the caller can compare).
Plan plan(const ConvShape &s, const DeviceFacts &d, const Forced &f = {});
// Shared memory of one block: kBuffers x (weight tile + input window), in bytes.
int smem_bytes(const Plan &p);
// The modelled time in cycles of one multiprocessor; plan() minimises it.
double cost(const Plan &p, const DeviceFacts &d);
int64_t packed_weight_doubles(const Plan &p);
// Doubles of the split-K workspace: split x output cells (0 unsplit).
int64_t workspace_doubles(const Plan &p);
// Tensor-core multiply-adds per call: every tile cell, padding included, every iteration.
int64_t issued_macs(const Plan &p);
// e.g. "dmma f64 m16n8k16 tile 128x64x16 stages 3 split 2 (weights packed)".
std::string kernel_name(const Plan &p);

// ---- index maps, shared by the device kernel and the host emulation ----

CONVBENCH_HD int blocks(const Plan &p) { return wg::blocks_per_rank(p.g); }

// Where iteration `it` of tile t reads: channel chunk c = it / taps (outer), tap j (inner); the
// weight tile's first packed row (row_off of the group + the tile's first row) and the input
// window's first position.
struct Step {
  int ch, tap, w_row, x_pos;
};
CONVBENCH_HD Step step(const Plan &p, const wg::Tile &t, int it) {
  const int c = it / p.g.taps, j = it - c * p.g.taps;
  return {c * kBk, j, p.g.row_off[t.g] + t.r0, t.n0 + p.g.shift[t.g] + j * p.g.tap_step};
}
// Whether tile row `row` is one of its group's rows (else the kernel copies zeros for it).
CONVBENCH_HD bool row_in_group(const Plan &p, const wg::Tile &t, int row) {
  return t.r0 + row < p.g.cout * p.g.np[t.g];
}
// The index in y of tile cell (row, col): the group's row t.r0 + row is output channel row >> lg,
// phase row & (np - 1), at position (n0 + col) * s_out + r_lo + phase; -1 outside the output.
CONVBENCH_HD int64_t y_index(const Plan &p, const wg::Tile &t, int row, int col) {
  if (!row_in_group(p, t, row))
    return -1;
  const int rr = t.r0 + row, lg = p.g.lg[t.g];
  const int oc = rr >> lg;
  const int64_t pos = int64_t(t.n0 + col) * p.g.s_out + p.g.r_lo[t.g] + (rr & ((1 << lg) - 1));
  if (pos >= p.g.l_out)
    return -1;
  return (int64_t(t.b) * p.g.cout + oc) * p.g.l_out + pos;
}
// The iterations [first, last) of split `sp`.
CONVBENCH_HD void split_iters(const Plan &p, int sp, int &first, int &last) {
  first = sp * p.g.iters_per_rank;
  last = first + p.g.iters_per_rank < p.g.iters ? first + p.g.iters_per_rank : p.g.iters;
}

} // namespace convbench::tc::dm
