// The wgmma kernels' plan: which shapes they take, the row groups, the tiling and its cost model.
// Plain C++, so the host tests check every plan without a GPU.
#include "wg_plan.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace convbench::tc::wg {

namespace {

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kInt = 2147483647LL;

// The cost model's constants, in cycles of one multiprocessor (H200: 132 of them at ~1.9 GHz).
// tf32 wgmma: 1024 multiply-adds per cycle; L2 -> shared memory through TMA: ~48 bytes per
// cycle; device memory: ~1750 bytes per cycle for the whole device (3.3 TB/s sustained); each
// iteration's fixed cost (barriers, the descriptors): 32 cycles; the epilogue's shared-memory
// tile and stores: ~64 bytes per cycle.
constexpr double kMacsPerCycle = 1024.0;
constexpr double kFillBytesPerCycle = 48.0;
constexpr double kDramBytesPerCycle = 1750.0;
constexpr double kIterOverhead = 32.0;
constexpr double kEpilogueBytesPerCycle = 64.0;

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
    p.r_lo[g] = r_lo;
    p.shift[g] = shift;
    r_lo += np;
    count -= np;
  }
}

bool fits(const Plan &p) { return p.stages >= 2; }

} // namespace

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

int stage_bytes(int bn, Math m) { return (m == Math::f32x3 ? 2 : 1) * (kBm + bn) * kBk * 4; }

int smem_bytes(const Plan &p) { return p.stages * stage_bytes(p.bn, p.math) + 2048; }

bool ranks_nonempty(int iters, int split) {
  return int64_t(split - 1) * cdiv(iters, split) < iters;
}

double cost(const Plan &p, int sms) {
  const double terms = p.math == Math::f32x3 ? 3.0 : 1.0;
  const double mma = terms * double(kBm) * p.bn * kBk / kMacsPerCycle;
  const double fill = double(stage_bytes(p.bn, p.math)) / kFillBytesPerCycle;
  const double iter = std::max(mma, fill) + kIterOverhead;
  const int64_t ctas = int64_t(blocks_per_rank(p)) * p.split;
  const int64_t resident = std::max(1, sms / p.split) * int64_t(p.split);
  const double waves = double(cdiv(ctas, resident));
  const double tile_bytes = double(kBm) * p.bn * 4;
  const double epilogue = tile_bytes * (p.split > 1 ? 1.0 + p.split : 1.0) / kEpilogueBytesPerCycle;
  const double compute = waves * (double(p.iters_per_rank) * iter + epilogue);
  // Every byte device memory must move: the packed weights once per column tile that is not in
  // L2 at the same time (taken as once), the transposed input, the output.
  const double planes = p.math == Math::f32x3 ? 2.0 : 1.0;
  const double bytes =
      4.0 * (planes * (double(packed_weight_floats(p)) + double(transposed_input_floats(p))) +
             double(p.batch) * p.cout * p.l_out);
  return std::max(compute, bytes / kDramBytesPerCycle);
}

Plan plan(const ConvShape &s, Math m, int sms, int bn_override, int split_override) {
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
  p.math = m;
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
  p.m_tiles = 0;
  for (int g = 0; g < p.groups; ++g) {
    p.row_off[g] = p.rows;
    p.m_begin[g] = p.m_tiles;
    p.rows += p.cout * p.np[g];
    p.m_tiles += int(cdiv(int64_t(p.cout) * p.np[g], kBm));
  }
  p.m_begin[p.groups] = p.m_tiles;
  p.chunks = int(cdiv(p.cin, kBk));
  p.iters = p.chunks * p.taps;

  const int *ns = m == Math::f32x3 ? kTileNsX3 : kTileNs;
  const int n_count = m == Math::f32x3 ? int(std::size(kTileNsX3)) : int(std::size(kTileNs));
  Plan best{};
  double best_cost = -1.0;
  for (int i = 0; i < n_count; ++i) {
    if (bn_override > 0 && ns[i] != bn_override)
      continue;
    Plan c = p;
    c.bn = ns[i];
    c.n_tiles = int(cdiv(p.n_cols, c.bn));
    c.stages = std::min(8, (kSmemBytes - 2048) / stage_bytes(c.bn, m));
    if (!fits(c) || int64_t(kBm) * (c.bn + kTilePad) * 4 > int64_t(c.stages) * stage_bytes(c.bn, m))
      continue;
    if (int64_t(blocks_per_rank(c)) * kMaxSplit >= kInt)
      continue;
    for (c.split = 1; c.split <= kMaxSplit; ++c.split) {
      if (!ranks_nonempty(c.iters, c.split) || (split_override > 0 && c.split != split_override))
        continue;
      c.iters_per_rank = int(cdiv(c.iters, c.split));
      const double k = cost(c, sms);
      // Ties: the smaller column tile first in the list, then the smaller split.
      if (best_cost >= 0.0 && k >= best_cost)
        continue;
      best_cost = k;
      best = c;
    }
  }
  if (best_cost < 0.0) // a forced tile or split the shape cannot take: the automatic choice
    return plan(s, m, sms);
  return best;
}

int64_t packed_weight_floats(const Plan &p) { return int64_t(p.taps) * p.rows * p.cin_pad; }

int64_t transposed_input_floats(const Plan &p) { return int64_t(p.batch) * p.l_in * p.cin_pad; }

int64_t issued_macs(const Plan &p) {
  return int64_t(p.math == Math::f32x3 ? 3 : 1) * p.batch * p.m_tiles * kBm * p.n_tiles * p.bn *
         int64_t(p.iters) * kBk;
}

std::string kernel_name(const Plan &p) {
  const bool x3 = p.math == Math::f32x3;
  std::string n = std::string("wgmma ") + (x3 ? "3xtf32" : "tf32") + " m64n" +
                  std::to_string(p.bn) + "k8 tile " + std::to_string(kBm) + "x" +
                  std::to_string(p.bn) + "x" + std::to_string(kBk) + " stages " +
                  std::to_string(p.stages);
  if (p.split > 1)
    n += " split " + std::to_string(p.split);
  return n + " (weights packed)";
}

} // namespace convbench::tc::wg
