// Host side of the tensor-core kernels: the launch plan and the block shape chosen for a shape.
// Host-only, shared with the emulation test.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "convbench/device_facts.hpp"
#include "convbench/shape.hpp"
#include "polyphase_plan.hpp"
#include "tc_tile.hpp"

namespace convbench::tc::detail {

// Channels per chunk: 16 for tf32 (two k = 8 steps per tap), 8 for f64 (two k = 4 steps), 8 for
// f32x3 (one k = 8 step of three products per tap: its hi and lo planes then take the shared
// memory tf32's 16-channel chunk takes, about 51 KB at most, so three blocks still fit an SM).
constexpr int kBKcTf32 = 16;
constexpr int kBKcF64 = 8;
constexpr int kBKcF32x3 = 8;

// The three block shapes, all 4 warps: 32 x 128, 64 x 64, 128 x 32 (rows x columns).
enum class Shape { p1w4, p2w2, p4w1 };
inline int shape_pb(Shape g) { return g == Shape::p1w4 ? 1 : g == Shape::p2w2 ? 2 : 4; }
inline int shape_wnc(Shape g) { return 4 / shape_pb(g); }
inline const char *shape_name(Shape g) {
  return g == Shape::p1w4 ? "32x128" : g == Shape::p2w2 ? "64x64" : "128x32";
}

inline std::string unsupported_reason(const ConvShape &s) {
  const std::string why = polyphase::unsupported_reason(s);
  if (!why.empty())
    return "the tensor-core kernels need a polyphase ConvTranspose1d: " + why;
  if (s.batch > 65535)
    return "the tensor-core kernels take at most 65535 batch items (grid z)";
  const int64_t lim = int64_t(1) << 31;
  if (s.input_elems() >= lim || s.weight_elems() >= lim || s.output_elems() >= lim)
    return "the tensor-core kernels need tensors below 2^31 elements";
  return "";
}

inline Plan base_plan(const ConvShape &s) {
  const std::string why = unsupported_reason(s);
  if (!why.empty())
    throw std::invalid_argument("tensor-core conv: " + why);
  Plan P{};
  static_cast<polyphase::Geometry &>(P) = polyphase::geometry(s);
  P.u_cols = 0;
  for (int64_t r = 0; r < P.s; ++r)
    P.u_cols = std::max(P.u_cols, phase_cells(P, r));
  return P;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Fills the tiling of P for a block of pb phases x bn columns and chunks of bkc channels.
// Split-K is chosen for an H200 (132 SMs, 3 resident 128-thread blocks each at these kernels'
// 128-168 registers): with fewer tile blocks than 132 x 3 the channel chunks are split until
// there are about that many, keeping at least 4 chunks per split and at most 8 splits. (At 96
// frames up0 has 144 tiles of 128 x 32 and 96 tf32 chunks: 3 splits of 32.) A pure function of
// the shape, so a kernel name and the emulation test know it without a device.
constexpr int64_t kTargetBlocks = kPlanningDevice.sms * 3;
constexpr int64_t kMinChunksPerSplit = 4;
constexpr int64_t kMaxSplits = 8;

inline void set_splits(Plan &P, int64_t splits) {
  splits = std::max<int64_t>(1, std::min(splits, P.ic_chunks));
  P.chunks_per_split = ceil_div(P.ic_chunks, splits);
  P.splits = ceil_div(P.ic_chunks, P.chunks_per_split); // no empty split
}

inline int64_t chosen_splits(const Plan &P) {
  const int64_t blocks = P.phase_blocks * P.u_tiles * P.oc_tiles * P.batch;
  if (blocks >= kTargetBlocks)
    return 1;
  int64_t sp = std::min(ceil_div(kTargetBlocks, blocks), kMaxSplits);
  sp = std::min(sp, std::max<int64_t>(1, P.ic_chunks / kMinChunksPerSplit));
  sp = std::min(sp, std::max<int64_t>(1, 65535 / P.batch)); // grid z = batch x splits
  return sp;
}

// Fills the tiling of P for a block of pb phases x bn columns and chunks of bkc channels;
// unsplit (splits = 1) until set_splits.
inline void tile_plan(Plan &P, int pb, int bn, int bkc) {
  P.phase_blocks = ceil_div(P.s, pb);
  P.u_tiles = std::max<int64_t>(1, ceil_div(P.u_cols, bn));
  P.oc_tiles = ceil_div(P.cout, kBOc);
  P.ic_chunks = ceil_div(P.cin, bkc);
  set_splits(P, 1);
}
inline void tile_plan(Plan &P, Shape g, int bkc) {
  tile_plan(P, shape_pb(g), 32 * shape_wnc(g), bkc);
}

// Tile cells (rows x columns over all blocks) that shape g computes for P: the padded work.
inline int64_t padded_cells(const Plan &P, Shape g) {
  Plan Q = P;
  tile_plan(Q, g, 1);
  return Q.phase_blocks * shape_pb(g) * Q.oc_tiles * kBOc * Q.u_tiles * 32 * shape_wnc(g);
}

// The block shape with the least padded work; ties go to the square 64 x 64 tile. (At 96 frames
// every phase has 96 columns: 128 x 32 computes 96, 64 x 64 128; stride 2 leaves half of a
// 4-phase block empty, so there 64 x 64 or 32 x 128 wins.)
inline Shape choose_shape(const Plan &P) {
  Shape best = Shape::p2w2;
  int64_t best_cells = padded_cells(P, best);
  for (Shape g : {Shape::p4w1, Shape::p1w4}) {
    const int64_t c = padded_cells(P, g);
    if (c < best_cells) {
      best = g;
      best_cells = c;
    }
  }
  return best;
}

// Workspace of a split launch: one partial output per split, in the accumulator's type.
inline size_t workspace_bytes(const Plan &P, size_t elem_bytes) {
  return P.splits > 1 ? size_t(P.splits) * size_t(P.batch * P.cout * P.l_out) * elem_bytes : 0;
}

inline int64_t issued_macs(const Plan &P, Shape g, int bkc) {
  Plan Q = P;
  tile_plan(Q, g, bkc);
  return P.batch * padded_cells(P, g) * Q.ic_chunks * bkc * P.m;
}

} // namespace convbench::tc::detail
