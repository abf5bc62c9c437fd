// The Hopper tensor-core kernels of cuda-tf32 and cuda-f32x3 (wgmma, TMA), host side: the
// convolution as a set of shifted-window GEMMs, the tiling in two orientations, and the index maps
// that the device kernels and their host emulation (tests/wg_emulation_test.cpp) share. No CUDA
// headers here.
//
// Both ops become, for each tap j and each row group g,
//     Y_g[row][n] += A_g[j][row][ic] * x[b][ic][n + shift(g, j)]
// with the weights packed once into A[j][row][ic] (channels contiguous: the K-major operand wgmma
// takes for tf32), zero-filled where a window leaves the input.
//   Conv1d (stride 1): one group, row = oc, column n = p, tap j = k, shift = k*d - pad.
//   ConvTranspose1d (dilation 1): output p = n*s + r' (r' in [0, s)); p + pad = q*s + r with
//     q = n + floor((r' + pad) / s) and r = (r' + pad) mod s, so tap j (k = j*s + r) reads
//     t = q - j. The phases r' with the same delta = floor((r' + pad) / s) share shift delta - j;
//     they form a group (at most two deltas), rows (oc, r') with r' fastest. A group's phases are
//     further cut into runs of a power of two, so a tile holds whole output channels.
// Taps of phase r beyond K are packed as zeros.
//
// Two orientations of one block's tile (the plan picks the cheaper for the shape):
//   rows on M (the wide stages: many rows, few positions): a 128 x bn tile of one group, rows x
//     positions; A = the packed weights, B = the input transposed to xT[b][t][ic] each call (the
//     K-major B wgmma takes from shared memory for tf32); split over a thread-block cluster where
//     the tiles alone would not fill the device.
//   positions on M (the long stages: few rows, many positions): a 128 x ng tile per group,
//     positions x rows, of one group or of both groups of a ConvTranspose1d (the two deltas, whose
//     windows are one position apart) so the block writes every phase of its positions; A = the
//     input itself, read from a shared-memory window [channel][position] into registers by each
//     thread (no transposed copy), B = the packed weights.
#pragma once

#include <cstdint>
#include <string>

#include "convbench/device_facts.hpp"
#include "convbench/shape.hpp"
#include "cost_model.hpp"
#include "host_device.hpp"

namespace convbench::tc::wg {

constexpr int kBm = 128; // rows on M: tile rows, two consumer warpgroups of 64
constexpr int kPm = 128; // positions on M: tile positions, two consumer warpgroups of 64
constexpr int kBk = 32;  // input channels per pipeline buffer: one 128-byte swizzle row
// Positions on M: the input window of one tap is 128 positions, + 1 for the second group, + 3
// for the box's 16-byte aligned start; one window serves every tap of a channel chunk where the
// taps' span, (taps - 1) x |tap step| more, fits the widest window (else a window per tap). The
// widths are the shared-memory pitch, 8 mod 32 words (conflict-free fragment loads), and
// constants of the kernels (a pitch the compiler knows keeps the fragments' addresses in one
// register): the narrowest that holds the span (a TMA box takes at most 256 positions).
constexpr int kWindowBase = 128 + 1 + 3;
constexpr int kWindows[] = {136, 168, 232};
constexpr int kMaxGroups = 12;         // two deltas, each cut into at most 6 power-of-two runs
constexpr int kMaxSplit = 8;           // a thread-block cluster of at most 8 (portable size)
constexpr int kThreads = 288;          // two consumer warpgroups, one producer warp
constexpr int kSmemBytes = 227 * 1024; // the opt-in shared memory of a block on sm_90
constexpr int kTilePad = 8; // rows on M: epilogue tile row pitch bn + 8, conflict-free stores
constexpr int kRowPad = 4;  // positions on M: epilogue tile row pitch 128 x phases + 4

// wgmma N the kernels are built for. Rows on M (N = positions): f32x3 keeps a half buffer's
// products apart from the sum, two accumulators, so its tiles stop at 128 (128 of 168 registers).
// Positions on M (N = rows per group; two groups hold two sets of accumulators).
constexpr int kTileNs[] = {64, 96, 128, 192, 256};
constexpr int kTileNsX3[] = {64, 96, 128};
constexpr int kRowNs[] = {8, 16, 24, 32, 48, 64, 96, 128, 192};
// Positions on M: accumulator registers per thread (groups x ng / 2, twice that for f32x3) the
// kernels take without spilling (ptxas: 168 registers, the A fragments and addresses beside).
constexpr int kMaxAccumulators = 96;
// Positions on M: the blocks of 288 threads a multiprocessor holds by registers, the kernels'
// __launch_bounds__ and the plan's count alike. Two only where a thread uses at most 96 registers:
// a block's 9 warps are allocated registers as 12 (a whole number per sub-partition; CUDA's
// occupancy calculator, cuda_occupancy.h, gives one block at 98). Left free, ptxas takes more
// (168 for tf32 at N 96 with 48 accumulators); held to 96 it spills nothing up to 48
// accumulators with one group per block, or 32 with two (f32x3 N 24 x 2 spilled 40 bytes).
constexpr int positions_blocks_by_registers(int ng, int gpb, bool x3) {
  const int acc = gpb * ng / 2 * (x3 ? 2 : 1);
  return (gpb == 1 ? acc <= 48 : acc <= 32) ? 2 : 1;
}
// The plans' host arithmetic, shared with the DMMA plan (dm_plan.cpp): a / b rounded up, and
// the bound every tensor, packed operand and 32-bit index stays below.
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kInt = 2147483647LL;

enum class Math { tf32, f32x3 };
enum class Along { rows, positions };

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
  int shift[kMaxGroups];   // input offset of tap 0 of group g
  int np[kMaxGroups];      // phases of group g (a power of two)
  int lg[kMaxGroups];      // log2 np[g]
  int r_lo[kMaxGroups];    // its first phase r'
  int row_off[kMaxGroups]; // its first packed row
  // The tiling.
  Math math;
  Along along;
  int gpb;                      // groups per block: 1, or 2 (positions on M, both deltas)
  int sets;                     // groups / gpb: block rows are tiles of one set
  int row_tile;                 // packed rows of one group per tile: kBm, or ng (positions on M)
  int col_tile;                 // positions per tile: bn (rows on M), or kPm
  int n;                        // wgmma N: bn (rows on M) or ng (positions on M)
  int rt_begin[kMaxGroups + 1]; // the first row tile of set k; rt_begin[sets] = every row tile
  int row_tiles;                // all sets
  int col_tiles;                // per set and batch item
  int chunks;                   // ceil(cin / kBk)
  int iters;                    // chunks * taps: the pipeline iterations of one unsplit tile
  int split;                    // cluster size: the iterations cut into this many ranks
  int iters_per_rank;           // ceil(iters / split)
  int buffers;                  // pipeline depth (positions on M: of the weights' boxes)
  // Positions on M: the taps one input window serves (every tap of a chunk, or 1: a window per
  // iteration), its width in positions (the box's and the shared-memory pitch), and the windows
  // the pipeline holds (as many as the weights' boxes when each iteration has its own).
  int wtaps, win, windows;
  // Positions on M: persistent blocks, `grid` of them (as many as the device holds at once), each
  // taking tiles block, block + grid, ... with its pipeline running on from one tile into the
  // next, and its epilogue's tile in shared memory of its own (the next tile's loads are in
  // flight while the consumers store this one). Else one tile per block (grid = every tile) and
  // the epilogue's tile over the pipeline's buffers.
  bool persistent;
  int grid;
};

// A variant forced by the tests and the tile arms (0: the plan's choice).
struct Forced {
  int along = 0;   // 1: rows on M, 2: positions on M
  int n = 0;       // wgmma N
  int split = 0;   // rows on M
  int gpb = 0;     // positions on M: groups per block
  int window = 0;  // positions on M: 1, an input window per tap even where one per chunk fits
  int persist = 0; // positions on M: 1, one tile per block; 2, persistent blocks
  int stages = 0;  // positions on M: at most this many pipeline buffers (2 at the least)
};

// Why the wgmma kernels do not compute `s` ("" when they do): forward with stride 1, or
// transposed with dilation 1 and a stride of at most 64; tensors below 2^31 elements.
std::string unsupported_reason(const ConvShape &s);

// The convolution's decomposition alone: the op's fields, taps, groups, packed rows and columns,
// chunks and iterations of kBk channels; no tiling (the DMMA kernels' plan, dm_plan.hpp, tiles
// the same groups its own way).
Plan geometry(const ConvShape &s);
// Fills the row tiles of every set (rt_begin, row_tiles) and the column tiles of a plan whose
// gpb, row_tile and col_tile are set.
void tile_sets(Plan &c);

// The plan for `s` on device `d`: the orientation, tile and split with
// the least modelled time (see plan.cpp). A forced variant the shape cannot take falls back to the
// automatic choice (the caller can compare).
Plan plan(const ConvShape &s, Math m, const DeviceFacts &d, const Forced &f = {},
          const cost_model::WgFit &fit = cost_model::kWgFit);

// Bytes of one pipeline buffer: rows on M, both operands' boxes (both planes of each for f32x3);
// positions on M, the weights' boxes of the block's groups (both planes for f32x3), the input
// windows apart (window_bytes: one box, 1024-aligned, and the lo plane for f32x3; 0 with rows on
// M). The pipeline's bytes (every buffer and window) and the shared memory the kernel asks for
// (those, the barriers, 1 KiB of alignment slack).
int buffer_bytes(const Plan &p);
int window_bytes(const Plan &p);
int64_t pipeline_bytes(const Plan &p);
int smem_bytes(const Plan &p);
// Floats of the epilogue's tile in shared memory (over the buffers, or its own with persistent
// blocks).
int64_t tile_floats(const Plan &p);
// Blocks one multiprocessor holds at once of a plan's kernel: by its shared memory and by its
// registers (positions on M: positions_blocks_by_registers; rows on M: one where a thread holds 96
// accumulators or more).
int blocks_per_sm(const Plan &p, int smem);
// The modelled time of a plan in cycles of one multiprocessor; plan() minimises it.
double cost(const Plan &p, const DeviceFacts &d, const cost_model::WgFit &fit = cost_model::kWgFit);
// Whether cutting `iters` into `split` ranks of ceil(iters / split) leaves none empty.
bool ranks_nonempty(int iters, int split);

// Floats of the packed weights (one plane) and of the transposed input (one plane; 0 with
// positions on M, which reads the input as it is).
int64_t packed_weight_floats(const Plan &p);
int64_t transposed_input_floats(const Plan &p);
// Tensor-core multiply-adds per call: every tile cell, padding included, times every iteration
// and kBk channels; three products per multiply-add for f32x3.
int64_t issued_macs(const Plan &p);
// e.g. "wgmma tf32 rows-on-M m64n128k8 tile 128x128x32 stages 6 split 2 (weights packed)".
std::string kernel_name(const Plan &p);

// ---- index maps, shared by the device kernels and the host emulation ----

// One block's tile: its first group (gpb groups from it), first packed row within the group,
// first position, batch item.
struct Tile {
  int g, r0, n0, b;
};
CONVBENCH_HD Tile tile_of(const Plan &p, int block) {
  Tile t;
  const int ct = block % p.col_tiles;
  const int rest = block / p.col_tiles;
  const int rt = rest % p.row_tiles;
  t.b = rest / p.row_tiles;
  t.n0 = ct * p.col_tile;
  int set = 0;
  while (set + 1 < p.sets && rt >= p.rt_begin[set + 1])
    ++set;
  t.g = set * p.gpb;
  t.r0 = (rt - p.rt_begin[set]) * p.row_tile;
  return t;
}
CONVBENCH_HD int blocks_per_rank(const Plan &p) { return p.col_tiles * p.row_tiles * p.batch; }
// The blocks a launch starts (per rank): every tile's, or the persistent blocks.
CONVBENCH_HD int launched_blocks(const Plan &p) {
  return p.along == Along::positions && p.persistent ? p.grid : blocks_per_rank(p);
}

// Iteration `it` of a tile: channel chunk c (outer) and tap j (inner, so the taps of one chunk
// read overlapping input windows while they are in L2). Where its boxes start: the weights
// (channel, packed row of the tile's first group, tap) and the input (channel, position or xT
// row of the first group, batch item). With two groups per block, the second group's weights
// start at its own row_off + r0, and its input window one position further (shift[g + 1]).
struct Coords {
  int ch, w_row, tap, x_pos;
};
CONVBENCH_HD Coords coords(const Plan &p, const Tile &t, int it) {
  const int c = it / p.taps, j = it - c * p.taps;
  return {c * kBk, p.row_off[t.g] + t.r0, j, t.n0 + p.shift[t.g] + j * p.tap_step};
}

// Positions on M: the first input position of the window iteration `it` reads (its chunk's,
// where one window serves every tap: the lowest tap's), and the window's index among the tile's
// (TMA loads it from the 16-byte boundary at or below that position).
CONVBENCH_HD int window_pos(const Plan &p, const Tile &t, int it) {
  if (p.wtaps == 1)
    return coords(p, t, it).x_pos;
  return t.n0 + p.shift[t.g] + (p.tap_step < 0 ? (p.taps - 1) * p.tap_step : 0);
}
CONVBENCH_HD int window_of(const Plan &p, int it) { return it / p.wtaps; }

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

// The epilogue's walk over a tile, in output order: it holds `tile_channels` output channels,
// each a run of `cells_per_channel` cells, consecutive cells at consecutive output positions
// where the phases are:
//   rows on M: channel o has 2^lg rows (its phases: rows (o << lg) + phase) of bn columns; cell i
//     is phase i & (2^lg - 1), column i >> lg;
//   positions on M: channel o has the block's gpb * 2^lg phases at each of its 128 positions;
//     cell i is phase q = i & (gpb * 2^lg - 1) (group g + (q >> lg), row (o << lg) + (q & (2^lg -
//     1)) of that group's tile), position i >> log2(gpb * 2^lg).
// cell_of names the cell's group, its row within the group's tile and its column (position
// within the tile), and its index in y (-1: outside the output).
CONVBENCH_HD int block_phases_log2(const Plan &p, const Tile &t) {
  return p.lg[t.g] + (p.gpb == 2 ? 1 : 0);
}
CONVBENCH_HD int tile_channels(const Plan &p, const Tile &t) { return p.row_tile >> p.lg[t.g]; }
CONVBENCH_HD int cells_per_channel(const Plan &p, const Tile &t) {
  return p.col_tile << block_phases_log2(p, t);
}
CONVBENCH_HD int tile_oc(const Plan &p, const Tile &t, int o) { return (t.r0 >> p.lg[t.g]) + o; }
struct Cell {
  int group, row, col;
  int64_t y;
};
CONVBENCH_HD Cell cell_of(const Plan &p, const Tile &t, int o, int i) {
  const int lg = p.lg[t.g];
  const int lq = block_phases_log2(p, t);
  const int q = i & ((1 << lq) - 1), col = i >> lq; // phase within the block, position
  Cell c{t.g + (q >> lg), (o << lg) + (q & ((1 << lg) - 1)), col, -1};
  const int oc = tile_oc(p, t, o);
  const int64_t pos = int64_t(t.n0 + col) * p.s_out + p.r_lo[t.g] + q;
  if (oc < p.cout && pos < p.l_out)
    c.y = (int64_t(t.b) * p.cout + oc) * p.l_out + pos;
  return c;
}
// The channels [first, last) of a tile that rank `rank` of a split stores (all of them unsplit).
CONVBENCH_HD void rank_channels(const Plan &p, const Tile &t, int rank, int &first, int &last) {
  const int n = tile_channels(p, t);
  const int share = (n + p.split - 1) / p.split;
  first = rank * share < n ? rank * share : n;
  last = first + share < n ? first + share : n;
}

} // namespace convbench::tc::wg
