// cuda-f32's forward tile kernel, host side: which shapes it takes and its plan (the kernel's
// tile shape, grid and split). Plain C++, so the host tests check the plan without a GPU.
#include <algorithm>
#include <iterator>
#include <string>

#include "forward_tile_plan.hpp"

namespace convbench::cuda::detail {

namespace {

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int kBk = kForwardTileBk;

// The cluster reduction's cost in steps of the main loop (the partial tile through shared memory,
// two cluster barriers, the remote reads): what a split must save to be chosen.
constexpr int64_t kSplitCostSteps = 8;

} // namespace

int64_t forward_tile_cost(const ForwardTilePlan &p, int sms) {
  const ForwardTileShape *sh = nullptr;
  for (const ForwardTileShape &c : kForwardTileShapes)
    if (c.bm == p.bm && c.bn == p.bn)
      sh = &c;
  if (sh == nullptr)
    return -1;
  const int64_t blocks = p.m_tiles * p.n_tiles * p.batch * p.split;
  const int64_t waves = cdiv(blocks, int64_t(sms) * sh->blocks_per_sm);
  return waves * (cdiv(p.steps, p.split) + (p.split > 1 ? kSplitCostSteps : 0));
}

bool forward_tile_ranks_nonempty(int64_t steps, int split) {
  return (split - 1) * cdiv(steps, split) < steps;
}

bool forward_tile_supported(const ConvShape &s) {
  if (s.op != ConvOp::forward || s.cout < kForwardTileMinCout)
    return false;
  constexpr int64_t kInt = 2147483647LL - 256 * 8; // 32-bit indices, with a tile's overhang
  const int64_t l_out = s.l_out();
  if (s.weight_elems() > kInt || s.cin * s.l_in > kInt || s.cout * l_out > kInt ||
      l_out * s.stride + s.k * s.dilation > kInt)
    return false;
  // Grid limits with the largest split (8 along z).
  return cdiv(s.cout, 32) <= 65535 && s.batch * 8 <= 65535;
}

ForwardTilePlan forward_tile_plan(const ConvShape &s, int sms, int split_override,
                                  int shape_override) {
  ForwardTilePlan p{};
  p.batch = s.batch;
  p.cin = s.cin;
  p.cout = s.cout;
  p.k = s.k;
  p.stride = s.stride;
  p.dilation = s.dilation;
  p.padding = s.padding;
  p.l_in = s.l_in;
  p.l_out = s.l_out();
  p.reduction = s.cin * s.k;
  p.steps = cdiv(p.reduction, kBk);
  int64_t best = -1;
  for (int i = 0; i < int(std::size(kForwardTileShapes)); ++i) {
    const ForwardTileShape &sh = kForwardTileShapes[i];
    if (shape_override >= 0 && shape_override != i)
      continue;
    ForwardTilePlan c = p;
    c.bm = sh.bm;
    c.bn = sh.bn;
    c.threads = sh.threads;
    c.m_tiles = cdiv(p.cout, sh.bm);
    c.n_tiles = cdiv(p.l_out, sh.bn);
    for (c.split = 1; c.split <= 8; ++c.split) {
      if (!forward_tile_ranks_nonempty(c.steps, c.split) ||
          (split_override > 0 && c.split != split_override))
        continue;
      const int64_t cost = forward_tile_cost(c, sms);
      if (best >= 0 && cost >= best) // ties: the earlier shape, the smaller split
        continue;
      best = cost;
      p = c;
    }
  }
  if (best < 0) // a forced split the steps cannot give: the automatic choice
    return forward_tile_plan(s, sms, 0, shape_override);
  return p;
}

int64_t forward_tile_issued_macs(const ForwardTilePlan &p) {
  return p.batch * p.m_tiles * p.bm * p.n_tiles * p.bn * p.steps * kBk;
}

std::string forward_tile_name(const ForwardTilePlan &p) {
  std::string n = "implicit-gemm f32 fma " + std::to_string(p.bm) + "x" + std::to_string(p.bn) +
                  "x" + std::to_string(kBk);
  if (p.split > 1)
    n += " split " + std::to_string(p.split);
  return n;
}

} // namespace convbench::cuda::detail
