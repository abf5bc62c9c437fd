// The DMMA kernels' plan: tile, split and their cost model. Plain C++, so the host tests check
// every plan without a GPU.
#include "dm_plan.hpp"

#include <algorithm>
#include <cmath>

#include "cost_model.hpp"

namespace convbench::tc::dm {

namespace {

using wg::cdiv;
using wg::kInt;

// The cost model (constants in cost_model.hpp, the device's own numbers from DeviceFacts): the
// busiest multiprocessor's DMMA time at tile_time() of the peak rate against the device memory
// every byte crosses; 1 KiB of a multiprocessor's shared memory is reserved per block.
using namespace cost_model;

// The time a tile's multiply-adds take over the DMMA rate, measured on the H200 (the tile sweep,
// `h200.sh tiles` with TILE_ARMS='cuda-f64-dmma@*', up0 and up1 of the 512x model at 1536 frames,
// stages whose rows fill every tile): 128x32 at 1.25x the floor, 128x64, 64x64 and 32x128 1.33x,
// 64x128 1.36x. The warps of the smaller tiles load more fragments per multiply-add; 128x32 keeps
// three blocks (twelve warps) on a multiprocessor.
double tile_time(int bm, int bn) {
  if (bm == 128 && bn == 32)
    return 1.25;
  return bm == 64 && bn == 128 ? 1.36 : 1.33;
}

} // namespace

std::string unsupported_reason(const ConvShape &s) {
  std::string why = wg::unsupported_reason(s);
  const std::string wg = "the wgmma kernels";
  if (const auto at = why.find(wg); at != std::string::npos)
    why.replace(at, wg.size(), "the DMMA kernels");
  if (why.empty()) {
    const int64_t rows = s.op == ConvOp::forward ? s.cout : s.cout * s.stride;
    const int64_t taps = s.op == ConvOp::forward ? s.k : cdiv(s.k, s.stride);
    if (taps * rows * cdiv(s.cin, kBk) * kBk >= kInt)
      why = "the DMMA kernels need packed weights below 2^31 elements";
  }
  return why;
}

int smem_bytes(const Plan &p) {
  return kBuffers * (p.g.row_tile * kApitch * 8 + kBk * (p.g.col_tile + kBpad) * 4);
}

double cost(const Plan &p, const DeviceFacts &d) {
  const int bm = p.g.row_tile, bn = p.g.col_tile;
  const double mma = double(bm) * bn * kBk / kF64MacsPerCycle;
  const int64_t ctas = int64_t(blocks(p)) * p.g.split;
  // The busiest multiprocessor: nb blocks, per_sm at a time sharing its DMMA pipes.
  const int64_t nb = cdiv(ctas, d.sms);
  const int64_t rounds = cdiv(nb, p.per_sm);
  const double compute = double(p.g.iters_per_rank) * double(nb) * mma * tile_time(bm, bn) +
                         double(rounds) * kDmBlockOverhead;
  // Device memory: the packed weights once (the column tiles of a row tile run side by side), the
  // input once per row tile when it does not stay in L2, the output (twice where a tile holds only
  // some of each position's phases: another block completes the sectors), and the workspace's
  // slices written and read again.
  const double x = 4.0 * double(p.g.batch) * p.g.cin * p.g.l_in;
  const double x_reads = x > kL2Bytes ? double(p.g.row_tiles) : 1.0;
  const double cells = double(p.g.batch) * p.g.cout * p.g.l_out;
  const double y = 4.0 * cells * (p.g.np[0] < p.g.s_out ? 2.0 : 1.0);
  const double w = 8.0 * double(packed_weight_doubles(p));
  const double ws = p.g.split > 1 ? 8.0 * cells * p.g.split * 2.0 : 0.0;
  // Ties: fewer blocks.
  return std::max(compute, (w + x * x_reads + y) / d.dram_bytes_per_cycle()) +
         ws / d.dram_bytes_per_cycle() + 1e-3 * double(ctas);
}

Plan plan(const ConvShape &s, const DeviceFacts &d, const Forced &f) {
  Plan base{};
  base.g = wg::geometry(s);
  base.g.chunks = int(cdiv(base.g.cin, kBk));
  base.g.iters = base.g.chunks * base.g.taps;
  base.kpitch = base.g.chunks * kBk;

  Plan best{};
  double best_cost = -1.0;
  for (const TileShape &ts : kTiles) {
    if ((f.bm > 0 && ts.bm != f.bm) || (f.bn > 0 && ts.bn != f.bn))
      continue;
    Plan c = base;
    c.g.along = wg::Along::rows;
    c.g.gpb = 1;
    c.g.row_tile = ts.bm;
    c.g.n = c.g.col_tile = ts.bn;
    wg::tile_sets(c.g);
    c.per_sm = std::min(blocks_by_registers(ts.bm, ts.bn), d.smem_per_sm / (smem_bytes(c) + 1024));
    if (int64_t(blocks(c)) * kMaxSplit >= kInt)
      continue;
    for (c.g.split = 1; c.g.split <= kMaxSplit; ++c.g.split) {
      if (!wg::ranks_nonempty(c.g.iters, c.g.split) || (f.split > 0 && c.g.split != f.split))
        continue;
      if (c.g.split > 1 && double(c.g.batch) * c.g.cout * c.g.l_out * c.g.split >= double(kInt))
        continue; // the workspace's index
      c.g.iters_per_rank = int(cdiv(c.g.iters, c.g.split));
      c.g.buffers = kBuffers;
      const double k = cost(c, d);
      // Ties: the earlier tile, then the smaller split.
      if (best_cost >= 0.0 && k >= best_cost)
        continue;
      best_cost = k;
      best = c;
    }
  }
  if (best_cost < 0.0) // a forced variant the shape cannot take: the automatic choice
    return plan(s, d);
  return best;
}

int64_t packed_weight_doubles(const Plan &p) { return int64_t(p.g.taps) * p.g.rows * p.kpitch; }

int64_t workspace_doubles(const Plan &p) {
  return p.g.split > 1 ? int64_t(p.g.split) * p.g.batch * p.g.cout * p.g.l_out : 0;
}

int64_t issued_macs(const Plan &p) {
  return int64_t(p.g.batch) * p.g.row_tiles * p.g.col_tiles * p.g.row_tile * p.g.col_tile *
         int64_t(p.g.iters) * kBk;
}

std::string kernel_name(const Plan &p) {
  std::string n = "dmma f64 m16n8k16 tile " + std::to_string(p.g.row_tile) + "x" +
                  std::to_string(p.g.col_tile) + "x" + std::to_string(kBk) + " stages " +
                  std::to_string(kBuffers);
  if (p.g.split > 1)
    n += " split " + std::to_string(p.g.split);
  return n + " (weights packed)";
}

} // namespace convbench::tc::dm
