// The wgmma kernels' plan: which shapes they take, the row groups, the orientation, the tiling and
// its cost model. Plain C++, so the host tests check every plan without a GPU.
#include "wg_plan.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "cost_model.hpp"

namespace convbench::tc::wg {

namespace {

// The cost model (constants in cost_model.hpp, the device's own numbers from DeviceFacts): an
// iteration takes the longer of its MMAs and its TMA fill, plus the positions-on-M fragments,
// which do not overlap the block's own MMAs (a register A operand must be ready before its wgmma
// issues; three times for f32x3's hi and lo parts): on the H200 this made up0 of the 512x model at
// 1536 frames 15% slower with positions on M than with rows on M at the same N, and the long
// stages 1.6-2.6x faster.
using namespace cost_model;

// Largest power of two <= v (v >= 1).
int floor_pow2(int v) {
  int p = 1;
  while (p * 2 <= v)
    p *= 2;
  return p;
}

// Appends phases [r_lo, r_lo + count) of one delta as power-of-two runs, largest first.
void add_runs(Plan &p, int r_lo, int count, int shift) {
  while (count > 0) {
    const int np = floor_pow2(count);
    const int g = p.groups++;
    p.np[g] = np;
    p.lg[g] = 0;
    while ((1 << p.lg[g]) < np)
      ++p.lg[g];
    p.r_lo[g] = r_lo;
    p.shift[g] = shift;
    r_lo += np;
    count -= np;
  }
}

// Positions on M: the bytes of one window as the cost model's terms were fitted: a window of
// 136 positions for every iteration, one plane (place_windows sets the real pipeline).
int fitted_window_bytes(const Plan &p) {
  return p.along == Along::rows ? 0 : int(cdiv(int64_t(kWindows[0]) * kBk * 4, 1024) * 1024);
}

// Pipeline buffers for a rank of `iters` iterations: as many as shared memory holds (at most 8),
// but no more than the iterations (a smaller block leaves room for a second one on the
// multiprocessor), and enough for the epilogue's tile; 0 when shared memory cannot hold that.
// Positions on M: each buffer with a fitted window (place_windows sets the real ones).
// The buffers (each priced with a fitted window) that hold the epilogue's tile, two at the least.
int tile_buffers(const Plan &p) {
  return std::max(2, int(cdiv(tile_floats(p) * 4, buffer_bytes(p) + fitted_window_bytes(p))));
}

int buffers_for(const Plan &p, int iters) {
  const int most = std::min(8, (kSmemBytes - 2048) / (buffer_bytes(p) + fitted_window_bytes(p)));
  const int want = std::max(tile_buffers(p), std::min(most, iters));
  return want <= most ? want : 0;
}

// Positions on M: the pipeline of the plan's pick (priced with a fitted window per iteration).
// One input window serves every tap of a chunk where their span fits the widest; the windows are
// then as many as keep the loads as far ahead (at least two, so that the next chunk's loads while
// this one's taps compute), or more where the epilogue's tile needs their room. A window holds
// the input rounded to tf32 in place, and for f32x3 its lo parts in a second plane. The buffers
// are cut where shared memory would not hold them (to two at the least). A tile sweep of these
// kernels through wg_cost_fit would price the windows' saving.
void place_windows(Plan &p, bool per_chunk) {
  const int need = kWindowBase - (2 - p.gpb), span = (p.taps - 1) * std::abs(p.tap_step);
  Plan q = p;
  if (per_chunk && p.taps > 1 && need + span <= std::end(kWindows)[-1]) {
    q.wtaps = p.taps;
    q.win = *std::find_if(std::begin(kWindows), std::end(kWindows),
                          [&](int w) { return need + span <= w; });
  } else {
    q.wtaps = 1;
    q.win = kWindows[0];
  }
  auto set_windows = [&] {
    q.windows =
        q.wtaps == 1 ? q.buffers : std::min(q.chunks, std::max(2, int(cdiv(q.buffers, q.taps))));
    while (tile_floats(q) * 4 > pipeline_bytes(q) && q.windows < q.buffers)
      ++q.windows;
  };
  set_windows();
  while (smem_bytes(q) > kSmemBytes && q.buffers > 2) {
    --q.buffers;
    set_windows();
  }
  if (tile_floats(q) * 4 <= pipeline_bytes(q) && smem_bytes(q) <= kSmemBytes)
    p = q;
  else if (q.wtaps > 1)
    place_windows(p, false);
  else // two buffers with their windows always fit (kMaxAccumulators bounds the tiles)
    throw std::logic_error("wgmma plan: no pipeline fits shared memory: " + kernel_name(q));
}

// Positions on M: p's pipeline placed (place_windows) with the most buffers, at most p.buffers,
// that hold the most blocks on a multiprocessor: fewer buffers where that leaves room for another
// block (cost() prices blocks with a fitted window per buffer, not the real windows). Measured on
// the H100 (persist step, 384 frames): amp4's f32x3 N48 tile, two to a multiprocessor with two
// buffers, ran 1.29-1.41x faster than one to a multiprocessor with 6-7.
Plan most_blocks_pipeline(const Plan &p, bool per_chunk) {
  Plan pick = p;
  place_windows(pick, per_chunk);
  int most = blocks_per_sm(pick, smem_bytes(pick));
  for (int b = pick.buffers - 1; b >= tile_buffers(p); --b) {
    Plan q = p;
    q.buffers = b;
    place_windows(q, per_chunk);
    const int blocks = blocks_per_sm(q, smem_bytes(q));
    if (blocks > most)
      most = blocks, pick = q;
  }
  return pick;
}

// Whether both groups of a ConvTranspose1d fit one block with positions on M: two groups of equal
// phases, consecutive, one position apart.
bool pairable(const Plan &p) {
  return p.groups == 2 && p.np[0] == p.np[1] && p.r_lo[1] == p.r_lo[0] + p.np[0] &&
         p.shift[1] == p.shift[0] + 1;
}

} // namespace

// Fills the tiling of plan c (orientation, gpb, n set) for its sets: row tiles per set.
void tile_sets(Plan &c) {
  c.sets = c.groups / c.gpb;
  c.row_tiles = 0;
  for (int k = 0; k < c.sets; ++k) {
    c.rt_begin[k] = c.row_tiles;
    c.row_tiles += int(cdiv(int64_t(c.cout) * c.np[k * c.gpb], c.row_tile));
  }
  c.rt_begin[c.sets] = c.row_tiles;
  c.col_tiles = int(cdiv(c.n_cols, c.col_tile));
}

std::string unsupported_reason(const ConvShape &s) {
  try {
    s.validate();
  } catch (const ShapeError &e) {
    return std::string("invalid shape: ") + e.what();
  }
  if (s.op == ConvOp::forward && s.stride != 1)
    return "the wgmma kernels take Conv1d with stride 1 only";
  if (s.op == ConvOp::transposed && s.dilation != 1)
    return "the wgmma kernels take ConvTranspose1d with dilation 1 only";
  if (s.op == ConvOp::transposed && s.stride > 64)
    return "the wgmma kernels take ConvTranspose1d with a stride of at most 64";
  const int64_t cin_pad = cdiv(s.cin, 4) * 4;
  const int64_t rows = s.op == ConvOp::forward ? s.cout : s.cout * s.stride;
  const int64_t taps = s.op == ConvOp::forward ? s.k : cdiv(s.k, s.stride);
  if (s.batch * s.l_in * cin_pad >= kInt || taps * rows * cin_pad >= kInt ||
      s.output_elems() >= kInt || s.input_elems() >= kInt || s.weight_elems() >= kInt ||
      s.l_in + s.padding + s.k * s.dilation >= kInt / 2)
    return "the wgmma kernels need tensors below 2^31 elements";
  return "";
}

int buffer_bytes(const Plan &p) {
  const int planes = p.math == Math::f32x3 ? 2 : 1;
  if (p.along == Along::rows)
    return planes * (kBm + p.n) * kBk * 4;
  return planes * p.gpb * p.n * kBk * 4; // 1024-byte multiples (n % 8 == 0): their swizzle
}

int window_bytes(const Plan &p) {
  const int planes = p.math == Math::f32x3 ? 2 : 1;
  return p.along == Along::rows ? 0 : planes * int(cdiv(int64_t(p.win) * kBk * 4, 1024) * 1024);
}

int64_t pipeline_bytes(const Plan &p) {
  return int64_t(p.buffers) * buffer_bytes(p) + int64_t(p.windows) * window_bytes(p);
}

// The pipeline, its barriers and 1 KiB of alignment slack (2 KiB in all beside the pipeline),
// and with persistent blocks the epilogue's tile after the barriers.
int smem_bytes(const Plan &p) {
  const int64_t tile = p.along == Along::positions && p.persistent ? tile_floats(p) * 4 : 0;
  return int(pipeline_bytes(p) + tile) + 2048;
}

int blocks_per_sm(const Plan &p, int smem) {
  const bool x3 = p.math == Math::f32x3;
  // Rows on M: accumulators of 96 or more per thread leave room for one block (ptxas: at most 90
  // registers below that, 118 and more from it).
  int by_regs = p.n * (x3 ? 2 : 1) / 2 >= 96 ? 1 : 2;
  if (p.along == Along::positions)
    by_regs = positions_blocks_by_registers(p.n, p.gpb, x3);
  return std::max(1, std::min(by_regs, (kSmemBytes + 1024) / (smem + 1024)));
}

int64_t tile_floats(const Plan &p) {
  if (p.along == Along::rows)
    return int64_t(kBm) * (p.n + kTilePad);
  int64_t most = 0; // the largest set's: its channels x (its phases x 128 positions + pad)
  for (int k = 0; k < p.sets; ++k) {
    const int np = p.np[k * p.gpb];
    most = std::max(most, int64_t(p.n / np) * (int64_t(kPm) * p.gpb * np + kRowPad));
  }
  return most;
}

bool ranks_nonempty(int iters, int split) {
  return int64_t(split - 1) * cdiv(iters, split) < iters;
}

double cost(const Plan &p, const DeviceFacts &d, const cost_model::WgFit &fit) {
  // Positions on M: priced with a fitted window per iteration (place_windows).
  const int x_fit = fitted_window_bytes(p);
  const int smem =
      p.along == Along::positions ? p.buffers * (buffer_bytes(p) + x_fit) + 2048 : smem_bytes(p);
  const double terms = p.math == Math::f32x3 ? 3.0 : 1.0;
  const double mma = terms * double(kBm) * p.n * p.gpb * kBk / kTf32MacsPerCycle;
  const double fill = double(buffer_bytes(p) + x_fit) / kFillBytesPerCycle;
  const double frags = p.along == Along::positions
                           ? kFragmentCycles * 4 * p.gpb * (terms > 1.0 ? fit.x3_fragments : 1.0)
                           : 0.0;
  const double iter = std::max(mma, fill) + frags + kWgIterOverhead;
  const int64_t ctas = int64_t(blocks_per_rank(p)) * p.split;
  // Blocks per multiprocessor: as shared memory and registers allow, splits whole.
  const int per_sm = blocks_per_sm(p, smem);
  const int64_t resident = std::max(1, d.sms * per_sm / p.split) * int64_t(p.split);
  const double waves = double(ctas) / double(resident); // blocks of a short tail overlap others
  const double tile_bytes = double(tile_floats(p)) * 4;
  const double epilogue = tile_bytes * (p.split > 1 ? 1.0 + p.split : 1.0) / kEpilogueBytesPerCycle;
  const double compute = std::ceil(waves) / per_sm *
                         (double(p.iters_per_rank) * iter + epilogue + kWgBlockOverhead +
                          fit.split_rank_cycles * (p.split - 1));
  // Every byte device memory must move: the packed weights once (the blocks of one row tile run
  // side by side), the input (once as it is, or read, written and read again through xT with
  // rows on M) once per row tile of a set when it is too large to stay in L2 between them, the
  // output (twice where a block writes only some of each position's phases: the sectors are
  // completed by another block, measured on the H200 as up to 1.6x slower on the long stages);
  // the transpose runs before the kernel, not beside it.
  const double planes = p.math == Math::f32x3 ? 2.0 : 1.0;
  const double x = 4.0 * double(p.batch) * p.cin * p.l_in;
  const int block_phases = p.gpb * p.np[0];
  const double y = 4.0 * double(p.batch) * p.cout * p.l_out * (block_phases < p.s_out ? 2.0 : 1.0);
  const double w = 4.0 * planes * double(packed_weight_floats(p));
  const double x_reads =
      x * (p.along == Along::rows ? planes : 1.0) > kL2Bytes ? double(p.row_tiles) / p.sets : 1.0;
  const double transpose = p.along == Along::rows ? x * (1.0 + 2.0 * planes) : 0.0;
  const double memory = (w + x * x_reads + y) / d.dram_bytes_per_cycle();
  return std::max(compute, memory) + fit.overlap_loss * std::min(compute, memory) +
         transpose / d.dram_bytes_per_cycle() + 1e-3 * double(ctas); // ties: fewer blocks
}

Plan geometry(const ConvShape &s) {
  Plan p{};
  p.batch = int(s.batch);
  p.cin = int(s.cin);
  p.cout = int(s.cout);
  p.l_in = int(s.l_in);
  p.l_out = int(s.l_out());
  p.k = int(s.k);
  p.stride = int(s.stride);
  p.pad = int(s.padding);
  p.dilation = int(s.dilation);
  p.transposed = s.op == ConvOp::transposed;
  p.bias = s.bias;
  p.cin_pad = int(cdiv(s.cin, 4) * 4);
  if (!p.transposed) {
    p.taps = p.k;
    p.tap_step = p.dilation;
    p.s_out = 1;
    add_runs(p, 0, 1, -p.pad);
  } else {
    p.taps = int(cdiv(p.k, p.stride));
    p.tap_step = -1;
    p.s_out = p.stride;
    // Phases r' < s - pad % s have delta = pad / s, the rest delta + 1.
    const int first = p.stride - p.pad % p.stride;
    add_runs(p, 0, first, p.pad / p.stride);
    add_runs(p, first, p.stride - first, p.pad / p.stride + 1);
  }
  p.n_cols = int(cdiv(p.l_out, p.s_out));
  p.rows = 0;
  for (int g = 0; g < p.groups; ++g) {
    p.row_off[g] = p.rows;
    p.rows += p.cout * p.np[g];
  }
  p.chunks = int(cdiv(p.cin, kBk));
  p.iters = p.chunks * p.taps;
  return p;
}

Plan plan(const ConvShape &s, Math m, const DeviceFacts &d, const Forced &f,
          const cost_model::WgFit &fit) {
  Plan p = geometry(s);
  p.math = m;

  Plan best{};
  double best_cost = -1.0;
  auto consider = [&](Plan c) {
    if (int64_t(blocks_per_rank(c)) * kMaxSplit >= kInt)
      return;
    for (c.split = 1; c.split <= (c.along == Along::rows ? kMaxSplit : 1); ++c.split) {
      if (!ranks_nonempty(c.iters, c.split) || (f.split > 0 && c.split != f.split))
        continue;
      c.iters_per_rank = int(cdiv(c.iters, c.split));
      c.buffers = buffers_for(c, c.iters_per_rank);
      if (c.buffers == 0)
        continue;
      if (f.stages > 0 && c.along == Along::positions) // forced fewer, the tile held
        c.buffers = std::min(c.buffers, std::max(tile_buffers(c), f.stages));
      const double k = cost(c, d, fit);
      // Ties: the earlier candidate (rows on M, smaller tiles), then the smaller split.
      if (best_cost >= 0.0 && k >= best_cost)
        continue;
      best_cost = k;
      best = c;
    }
  };

  // Rows on M: a 128-row tile of one group by bn positions.
  if (f.along != 2 && f.gpb <= 1) {
    const int *ns = m == Math::f32x3 ? kTileNsX3 : kTileNs;
    const int count = m == Math::f32x3 ? int(std::size(kTileNsX3)) : int(std::size(kTileNs));
    for (int i = 0; i < count; ++i) {
      if (f.n > 0 && ns[i] != f.n)
        continue;
      Plan c = p;
      c.along = Along::rows;
      c.gpb = 1;
      c.row_tile = kBm;
      c.n = c.col_tile = ns[i];
      tile_sets(c);
      consider(c);
    }
  }
  // Positions on M: 128 positions by ng rows of one group or of both: the input's rows must be
  // 16-byte aligned for its TMA box (l_in a multiple of 4), no split. Registers: the accumulators
  // (gpb x ng / 2, and as many again for f32x3's partial sums) stay within kMaxAccumulators.
  if (f.along != 1 && f.split <= 1 && p.l_in % 4 == 0) {
    for (int gpb : {2, 1}) {
      if ((f.gpb > 0 && gpb != f.gpb) || (gpb == 2 && !pairable(p)))
        continue;
      for (int ng : kRowNs) {
        if ((f.n > 0 && ng != f.n) || ng % p.np[0] != 0)
          continue;
        bool whole = true; // every group's tile holds whole output channels
        for (int g = 0; g < p.groups; ++g)
          whole = whole && ng % p.np[g] == 0;
        const int regs = gpb * ng / 2 * (m == Math::f32x3 ? 2 : 1);
        if (!whole || regs > kMaxAccumulators)
          continue;
        Plan c = p;
        c.along = Along::positions;
        c.gpb = gpb;
        c.row_tile = c.n = ng;
        c.col_tile = kPm;
        c.wtaps = 1; // priced with a fitted window per iteration (place_windows below)
        c.win = kWindows[0];
        tile_sets(c);
        consider(c);
      }
    }
  }
  if (best_cost < 0.0) // a forced variant the shape cannot take: the automatic choice
    return plan(s, m, d, {}, fit);
  if (best.along == Along::positions) {
    // The tile chosen, fewer buffers where that leaves room for another block (not priced by
    // cost(): the @stages arms measured it, on f32x3's tiles; tf32's N96 tiles would take it too,
    // unmeasured, so not yet; forced stages keep theirs).
    if (f.stages == 0 && best.math == Math::f32x3)
      best = most_blocks_pipeline(best, f.window != 1);
    else
      place_windows(best, f.window != 1);
    best.grid = blocks_per_rank(best);
    // Persistent blocks (each takes tiles b, b + grid, ...; the grid every block the device holds
    // at once) only where forced (the @persistent arms): measured on the H100 (persist step, AMP
    // blocks 4 and 5 at 96 and 384 frames, one tile per block against persistent, the plan's own
    // tile) they ran up to 13% faster on amp4.k3 and up to 26% slower on amp5's tf32 tiles, where
    // the device held a third one-tile block that the persistent grid did not count.
    if (f.persist == 2) {
      Plan q = best;
      q.persistent = true;
      const int per_sm = blocks_per_sm(q, smem_bytes(q));
      q.grid = int(std::min<int64_t>(blocks_per_rank(q), int64_t(d.sms) * per_sm));
      if (smem_bytes(q) <= kSmemBytes)
        best = q;
    }
  }
  return best;
}

int64_t packed_weight_floats(const Plan &p) { return int64_t(p.taps) * p.rows * p.cin_pad; }

int64_t transposed_input_floats(const Plan &p) {
  return p.along == Along::rows ? int64_t(p.batch) * p.l_in * p.cin_pad : 0;
}

int64_t issued_macs(const Plan &p) {
  const int64_t tile = p.along == Along::rows ? int64_t(kBm) * p.n : int64_t(kPm) * p.n * p.gpb;
  return int64_t(p.math == Math::f32x3 ? 3 : 1) * p.batch * p.row_tiles * p.col_tiles * tile *
         int64_t(p.iters) * kBk;
}

std::string kernel_name(const Plan &p) {
  const bool x3 = p.math == Math::f32x3;
  std::string n = std::string("wgmma ") + (x3 ? "3xtf32" : "tf32");
  if (p.along == Along::rows)
    n += " rows-on-M m64n" + std::to_string(p.n) + "k8 tile " + std::to_string(kBm) + "x" +
         std::to_string(p.n) + "x" + std::to_string(kBk);
  else
    n += " positions-on-M m64n" + std::to_string(p.n) + "k8 tile " + std::to_string(kPm) + "x" +
         (p.gpb == 2 ? "2x" : "") + std::to_string(p.n) + "x" + std::to_string(kBk);
  n += " stages " + std::to_string(p.buffers);
  if (p.along == Along::positions && p.wtaps > 1)
    n += " window " + std::to_string(p.win) + " per chunk";
  if (p.split > 1)
    n += " split " + std::to_string(p.split);
  if (p.along == Along::positions && p.persistent)
    n += " persistent " + std::to_string(p.grid) + " blocks";
  return n + " (weights packed)";
}

} // namespace convbench::tc::wg
