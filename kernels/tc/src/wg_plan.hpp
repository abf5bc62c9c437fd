// The Hopper tensor-core kernels of cuda-tf32 and cuda-f32x3 (wgmma, TMA), host side: the
// convolution as a set of shifted-window GEMMs, the tiling, and the index maps that the device
// kernels and their host emulation (tests/wg_emulation_test.cpp) share. No CUDA headers here.
//
// Both ops become, for each tap j and each row group g,
//     Y_g[row][n] += A_g[j][row][ic] * xT[b][n + shift(g, j)][ic]
// with the input transposed to xT[b][t][ic] (channels contiguous: the K-major operand wgmma takes
// for tf32) and the weights packed once into A[j][row][ic] (also K-major), so that every operand
// tile is one TMA box of consecutive rows, zero-filled where it leaves the tensor.
//   Conv1d (stride 1): one group, row = oc, column n = p, tap j = k, shift = k*d - pad.
//   ConvTranspose1d (dilation 1): output p = n*s + r' (r' in [0, s)); p + pad = q*s + r with
//     q = n + floor((r' + pad) / s) and r = (r' + pad) mod s, so tap j (k = j*s + r) reads
//     t = q - j. The phases r' with the same delta = floor((r' + pad) / s) share shift delta - j;
//     they form a group (at most two deltas), rows (oc, r') with r' fastest. A group's phases are
//     further cut into runs of a power of two, so a 128-row tile holds whole output channels and
//     its epilogue writes runs of consecutive output positions.
// Taps of phase r beyond K are packed as zeros.
#pragma once

#include <cstdint>
#include <string>

#include "convbench/shape.hpp"
#include "host_device.hpp"

namespace convbench::tc::wg {

constexpr int kBm = 128;       // tile rows: two consumer warpgroups of 64
constexpr int kBk = 32;        // input channels per pipeline stage: one 128-byte swizzle row
constexpr int kMaxGroups = 12; // two deltas, each cut into at most 6 power-of-two runs
constexpr int kMaxSplit = 8;   // a thread-block cluster of at most 8 (portable size)
constexpr int kThreads = 288;  // two consumer warpgroups, one producer warp
constexpr int kSmemBytes = 227 * 1024; // the opt-in shared memory of a block on sm_90
constexpr int kTilePad = 8; // epilogue tile row pitch BN + 8: conflict-free float2 stores

// Column tiles the kernels are built for (wgmma N). f32x3 keeps a half stage's products apart from
// the sum, two accumulators, so its tiles stop at 128 columns (128 of its 168 registers).
constexpr int kTileNs[] = {64, 96, 128, 192, 256};
constexpr int kTileNsX3[] = {64, 96, 128};

enum class Math { tf32, f32x3 };

struct Plan {
  // The convolution.
  int batch, cin, cout, l_in, l_out;
  int k, stride, pad, dilation;
  bool transposed, bias;
  int cin_pad;  // row pitch of xT and of the packed weights, in floats (a multiple of 4)
  int taps;     // T: K (forward), ceil(K / s) (transposed)
  int tap_step; // shift of tap j + 1 over tap j: d (forward), -1 (transposed)
  int s_out;    // output positions per column: 1 (forward), s (transposed)
  int n_cols;   // columns of every group: ceil(l_out / s_out)
  int rows;     // packed weight rows, all groups
  int groups;
  int shift[kMaxGroups];       // xT row offset of tap 0 of group g
  int np[kMaxGroups];          // phases of group g (a power of two dividing kBm)
  int r_lo[kMaxGroups];        // its first phase r'
  int row_off[kMaxGroups];     // its first packed row
  int m_begin[kMaxGroups + 1]; // its first m tile; m_begin[groups] = every m tile
  // The tiling.
  Math math;
  int bn;             // tile columns
  int n_tiles;        // per group and batch item
  int m_tiles;        // all groups
  int chunks;         // ceil(cin / kBk)
  int iters;          // chunks * taps: the pipeline stages of one unsplit tile
  int split;          // cluster size: the iterations cut into this many ranks
  int iters_per_rank; // ceil(iters / split)
  int stages;         // pipeline depth
};

// Why the wgmma kernels do not compute `s` ("" when they do): forward with stride 1, or
// transposed with dilation 1 and a stride of at most 64; tensors below 2^31 elements.
std::string unsupported_reason(const ConvShape &s);

// The plan for `s` on a device with `sms` multiprocessors: the column tile and split with the
// least modelled time (see plan.cpp). Tests force a tile (bn_override) or a split
// (split_override); a forced value the shape cannot take falls back to the automatic choice.
Plan plan(const ConvShape &s, Math m, int sms, int bn_override = 0, int split_override = 0);

// Bytes of one pipeline stage (A and B tiles, both planes for f32x3) and the shared memory the
// kernel asks for (stages, the barriers, 1 KiB of alignment slack).
int stage_bytes(int bn, Math m);
int smem_bytes(const Plan &p);
// The modelled time of a plan in cycles of one multiprocessor; plan() minimises it.
double cost(const Plan &p, int sms);
// Whether cutting `iters` into `split` ranks of ceil(iters / split) leaves none empty.
bool ranks_nonempty(int iters, int split);

// Floats of the packed weights (one plane) and of the transposed input (one plane).
int64_t packed_weight_floats(const Plan &p);
int64_t transposed_input_floats(const Plan &p);
// Tensor-core multiply-adds per call: every tile cell, padding included, times every iteration
// and kBk channels; three products per multiply-add for f32x3.
int64_t issued_macs(const Plan &p);
// e.g. "wgmma tf32 m64n128k8 tile 128x128x32 stages 6 split 2 (weights packed)".
std::string kernel_name(const Plan &p);

// ---- index maps, shared by the device kernels and the host emulation ----

// One block's tile: group, first row within the group, first column, batch item.
struct Tile {
  int g, m0, n0, b;
};
CONVBENCH_HD Tile tile_of(const Plan &p, int block) {
  Tile t;
  const int nt = block % p.n_tiles;
  const int rest = block / p.n_tiles;
  const int mt = rest % p.m_tiles;
  t.b = rest / p.m_tiles;
  t.n0 = nt * p.bn;
  t.g = 0;
  while (t.g + 1 < p.groups && mt >= p.m_begin[t.g + 1])
    ++t.g;
  t.m0 = (mt - p.m_begin[t.g]) * kBm;
  return t;
}
CONVBENCH_HD int blocks_per_rank(const Plan &p) { return p.n_tiles * p.m_tiles * p.batch; }

// Iteration `it` of a tile: channel chunk c (outer) and tap j (inner, so the taps of one chunk
// read overlapping windows of xT while they are in L2). Coordinates of its two TMA boxes:
// A (channel, packed row, tap) and B (channel, xT row, batch item).
struct Coords {
  int ch, a_row, tap, b_row;
};
CONVBENCH_HD Coords coords(const Plan &p, const Tile &t, int it) {
  const int c = it / p.taps, j = it - c * p.taps;
  return {c * kBk, p.row_off[t.g] + t.m0, j, t.n0 + p.shift[t.g] + j * p.tap_step};
}

// The packed weight A[j][row][ic] (0 for a tap beyond K), read from torch's layout.
CONVBENCH_HD float packed_weight(const Plan &p, const float *w, int j, int row, int ic) {
  if (!p.transposed)
    return w[(int64_t(row) * p.cin + ic) * p.k + j];
  int g = 0;
  while (g + 1 < p.groups && row >= p.row_off[g + 1])
    ++g;
  const int rho = row - p.row_off[g];
  const int oc = rho / p.np[g], rp = p.r_lo[g] + rho % p.np[g];
  const int k = j * p.stride + (rp + p.pad) % p.stride;
  return k < p.k ? w[(int64_t(ic) * p.cout + oc) * p.k + k] : 0.0f;
}

// Cell e of a tile in output order (phase fastest, then column, then output channel): its row and
// column in the tile and its index in y, or -1 outside the output.
struct Cell {
  int row, col;
  int64_t y;
};
CONVBENCH_HD Cell cell_of(const Plan &p, const Tile &t, int e) {
  const int np = p.np[t.g];
  const int ph = e % np;
  const int col = (e / np) % p.bn;
  const int ocl = e / (np * p.bn);
  Cell c{ocl * np + ph, col, -1};
  const int oc = (t.m0 / np) + ocl;
  const int64_t pos = int64_t(t.n0 + col) * p.s_out + p.r_lo[t.g] + ph;
  if (oc < p.cout && pos < p.l_out)
    c.y = (int64_t(t.b) * p.cout + oc) * p.l_out + pos;
  return c;
}
// The output channel of tile row `row` (for the bias).
CONVBENCH_HD int oc_of(const Plan &p, const Tile &t, int row) { return (t.m0 + row) / p.np[t.g]; }

} // namespace convbench::tc::wg
