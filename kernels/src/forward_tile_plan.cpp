// cuda-f32's forward tile kernel, host side: which shapes it takes and its plan (the kernel's
// tile shape, grid and split). Plain C++, so the host tests check the plan without a GPU.
#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "forward_tile_plan.hpp"

namespace convbench::cuda::detail {

namespace {

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int kBk = kForwardTileBk;

// The cluster reduction's cost in steps of the main loop (the partial tile through shared memory,
// two cluster barriers, the remote reads): what a split must save to be chosen.
constexpr int64_t kSplitCostSteps = 8;

// The compiled tile shape of bm x bn, or nullptr.
const ForwardTileShape *compiled_shape(int bm, int bn) {
  for (const ForwardTileShape &c : kForwardTileShapes)
    if (c.bm == bm && c.bn == bn)
      return &c;
  return nullptr;
}

// The reduction's steps of kBk (cin x k taps) for a shape.
int64_t reduction_steps(const ConvShape &s) { return cdiv(s.cin * s.k, kBk); }

} // namespace

int64_t forward_tile_cost(const ForwardTilePlan &p, int sms) {
  const ForwardTileShape *sh = compiled_shape(p.bm, p.bn);
  if (sh == nullptr)
    return -1;
  const int64_t blocks = p.m_tiles * p.n_tiles * p.batch * p.split;
  const int64_t waves = cdiv(blocks, int64_t(sms) * sh->blocks_per_sm);
  return waves * (cdiv(p.steps, p.split) + (p.split > 1 ? kSplitCostSteps : 0));
}

bool forward_tile_ranks_nonempty(int64_t steps, int split) {
  return (split - 1) * cdiv(steps, split) < steps;
}

std::string forward_tile_shape_unsupported_reason(const ConvShape &s) {
  if (s.op != ConvOp::forward)
    return "a ConvTranspose1d stage: the forward tile kernel runs Conv1d stages only";
  if (s.cout < kForwardTileMinCout)
    return "cout " + std::to_string(s.cout) + " is below the tile kernel's " +
           std::to_string(kForwardTileMinCout);
  constexpr int64_t kInt = 2147483647LL - 256 * 8; // 32-bit indices, with a tile's overhang
  const int64_t l_out = s.l_out();
  if (s.weight_elems() > kInt || s.cin * s.l_in > kInt || s.cout * l_out > kInt ||
      l_out * s.stride + s.k * s.dilation > kInt)
    return "tensors past the tile kernel's 32-bit indices";
  // Grid limits with the largest split (8 along z).
  if (cdiv(s.cout, 32) > 65535 || s.batch * 8 > 65535)
    return "cout or batch past the tile kernel's grid limits";
  return "";
}

bool forward_tile_supported(const ConvShape &s) {
  return forward_tile_shape_unsupported_reason(s).empty();
}

namespace {
// The plan of `s` in tile shape `sh` with `split`, before any check of the split.
ForwardTilePlan plan_in(const ConvShape &s, const ForwardTileShape &sh, int split) {
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
  p.steps = reduction_steps(s);
  p.bm = sh.bm;
  p.bn = sh.bn;
  p.threads = sh.threads;
  p.m_tiles = cdiv(p.cout, sh.bm);
  p.n_tiles = cdiv(p.l_out, sh.bn);
  p.split = split;
  return p;
}
} // namespace

ForwardTilePlan forward_tile_plan(const ConvShape &s, int sms, int split_override,
                                  int shape_override) {
  ForwardTilePlan p{};
  int64_t best = -1;
  for (int i = 0; i < int(std::size(kForwardTileShapes)); ++i) {
    if (shape_override >= 0 && shape_override != i)
      continue;
    for (int split = 1; split <= 8; ++split) {
      const ForwardTilePlan c = plan_in(s, kForwardTileShapes[i], split);
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

ForwardTilePlan forward_tile_forced_plan(const ConvShape &s, const ForwardTile &t) {
  const std::string why = cuda::forward_tile_unsupported_reason(s, t);
  if (!why.empty())
    throw std::invalid_argument(why);
  if (const ForwardTileShape *sh = compiled_shape(t.bm, t.bn))
    return plan_in(s, *sh, t.split);
  throw std::logic_error("forward tile " + std::to_string(t.bm) + "x" + std::to_string(t.bn) +
                         " passed its check but is not in the table");
}

int64_t forward_tile_issued_macs(const ForwardTilePlan &p) {
  return p.batch * p.m_tiles * p.bm * p.n_tiles * p.bn * p.steps * kBk;
}

int64_t forward_tile_inside_tiles(const ForwardTilePlan &p) {
  int64_t n = 0;
  for (int64_t t = 0; t < p.n_tiles; ++t)
    n += forward_tile_columns_inside(p, t * p.bn) ? 1 : 0;
  return n;
}

std::string forward_tile_name(const ForwardTilePlan &p) {
  std::string n = "implicit-gemm f32 fma " + std::to_string(p.bm) + "x" + std::to_string(p.bn) +
                  "x" + std::to_string(kBk);
  if (p.split > 1)
    n += " split " + std::to_string(p.split);
  return n;
}

} // namespace convbench::cuda::detail

namespace convbench::cuda {

std::vector<ForwardTile> forward_tile_variants() {
  std::vector<ForwardTile> out;
  for (const detail::ForwardTileShape &sh : detail::kForwardTileShapes)
    for (int split = 1; split <= 8; ++split)
      out.push_back({sh.bm, sh.bn, split});
  return out;
}

std::string forward_tile_unsupported_reason(const ConvShape &s, const ForwardTile &t) {
  const std::string tile = std::to_string(t.bm) + "x" + std::to_string(t.bn);
  if (detail::compiled_shape(t.bm, t.bn) == nullptr)
    return "tile " + tile + " is not compiled (see forward_tile_variants())";
  if (t.split < 1 || t.split > 8)
    return "split " + std::to_string(t.split) + " is outside 1..8";
  if (std::string why = detail::forward_tile_shape_unsupported_reason(s); !why.empty())
    return why;
  constexpr int kBk = detail::kForwardTileBk;
  const int64_t steps = detail::reduction_steps(s);
  if (!detail::forward_tile_ranks_nonempty(steps, t.split))
    return "split " + std::to_string(t.split) +
           " leaves a rank without steps (cin x k = " + std::to_string(s.cin * s.k) + ": " +
           std::to_string(steps) + " steps of " + std::to_string(kBk) + ")";
  return "";
}

} // namespace convbench::cuda
