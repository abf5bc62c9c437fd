// cuda-f32's forward tile kernel, host side: the plan it launches (kernels/src/forward_tile_plan
// .hpp). The plan decides the grid, the tile shape and the cluster split, so it must never leave
// a rank without steps, must cover every output cell and must be the cheapest of its
// alternatives under the model it states. No GPU needed; the kernel's own gates run on the device
// (kernels_cuda_tests: CudaForwardTile).
//
// Planted faults seen failing (then reverted): forward_tile_ranks_nonempty() written `<=`
// (RanksNeverEmpty fails); the plan keeping the first feasible split instead
// of the cheapest (PlanIsTheCheapestAlternative fails on the AMP shapes); n_tiles computed from
// l_in instead of l_out (TilesCoverEveryCell fails on the strided shapes).
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "convbench/device_facts.hpp"
#include "forward_tile_emulation.hpp"
#include "forward_tile_plan.hpp"
#include "model_stages.hpp"
#include "test_support.hpp"

namespace convbench {
namespace {

using cuda::detail::forward_tile_cost;
using cuda::detail::forward_tile_issued_macs;
using cuda::detail::forward_tile_plan;
using cuda::detail::forward_tile_ranks_nonempty;
using cuda::detail::forward_tile_supported;
using cuda::detail::ForwardTilePlan;
using cuda::detail::kForwardTileShapes;
using testing::describe;

constexpr int kSms = convbench::kPlanningDevice.sms; // the H200's

// Every AMP Conv1d of the model families (after each upsample: ch x ch, k in {3, 7, 11}, dilation
// {1, 3, 5} with the length-keeping padding) and each family's pre conv, at several lengths and
// batches, then random forward shapes with stride, dilation and padding.
std::vector<ConvShape> shapes() {
  std::vector<ConvShape> out;
  for (const testing::ModelFamily &m : testing::model_families())
    for (int64_t frames : {1, 96, 384, 1536})
      for (int64_t batch : {1, 3})
        for (const testing::Stage &st : testing::model_stages(m, frames, batch))
          for (int64_t k : {3, 7, 11})
            for (int64_t d : {1, 3, 5})
              out.push_back(testing::amp_shape(st.shape.cout, k, d, st.shape.l_out(), batch));
  std::mt19937_64 rng(31);
  for (int i = 0; i < 400; ++i)
    out.push_back(testing::random_shape(rng, ConvOp::forward, 600, 5000, 16, 916));
  return out;
}

// The ranks' step ranges as the kernel computes them: per = ceil(steps / split), rank r runs
// [min(r * per, steps), min(r * per + per, steps)).
bool brute_force_nonempty(int64_t steps, int split) {
  const int64_t per = (steps + split - 1) / split;
  for (int r = 0; r < split; ++r) {
    const int64_t s0 = std::min(r * per, steps), s1 = std::min(s0 + per, steps);
    if (s1 <= s0)
      return false;
  }
  return true;
}

TEST(ForwardTilePlan, RanksNeverEmpty) {
  for (int64_t steps = 1; steps <= 300; ++steps)
    for (int split = 1; split <= 8; ++split)
      EXPECT_EQ(forward_tile_ranks_nonempty(steps, split), brute_force_nonempty(steps, split))
          << "steps " << steps << " split " << split;
}

TEST(ForwardTilePlan, TilesCoverEveryCell) {
  for (const ConvShape &s : shapes()) {
    ASSERT_NO_THROW(s.validate()) << describe(s);
    ASSERT_TRUE(forward_tile_supported(s)) << describe(s);
    const ForwardTilePlan p = forward_tile_plan(s, kSms);
    EXPECT_GE(p.m_tiles * p.bm, s.cout) << describe(s);
    EXPECT_LT((p.m_tiles - 1) * p.bm, s.cout) << describe(s);
    EXPECT_GE(p.n_tiles * p.bn, s.l_out()) << describe(s);
    EXPECT_LT((p.n_tiles - 1) * p.bn, s.l_out()) << describe(s);
    EXPECT_EQ(p.steps * cuda::detail::kForwardTileBk >= s.cin * s.k, true) << describe(s);
    EXPECT_TRUE(p.split >= 1 && p.split <= 8 && brute_force_nonempty(p.steps, p.split))
        << describe(s) << " split " << p.split;
    EXPECT_GE(forward_tile_issued_macs(p), s.valid_macs()) << describe(s);
    EXPECT_EQ(p.bm * p.bn, p.threads * 64) << "8 x 8 cells per thread";
  }
}

// A tile is "inside" (staged without bounds checks) exactly when every column of it is an output
// position and reads x inside [0, l_in) at every tap: brute force over its columns and taps, on
// both tile shapes. Both answers occur on the AMP shapes (padding makes the first tile an edge).
TEST(ForwardTilePlan, InsideTilesReadOnlyInsideTheInput) {
  int64_t inside = 0, edge = 0;
  for (const ConvShape &s : shapes())
    for (int shape = 0; shape < int(std::size(kForwardTileShapes)); ++shape) {
      const ForwardTilePlan p = forward_tile_plan(s, kSms, 0, shape);
      int64_t here = 0;
      for (int64_t t = 0; t < p.n_tiles; ++t) {
        bool brute = true;
        for (int64_t col = 0; col < p.bn && brute; ++col) {
          const int64_t o = t * p.bn + col;
          brute = o < p.l_out;
          for (int64_t kk = 0; kk < p.k && brute; ++kk) {
            const int64_t pos = o * p.stride + kk * p.dilation - p.padding;
            brute = pos >= 0 && pos < p.l_in;
          }
        }
        ASSERT_EQ(cuda::detail::forward_tile_columns_inside(p, t * p.bn), brute)
            << describe(s) << " shape " << shape << " n-tile " << t;
        here += brute ? 1 : 0;
      }
      EXPECT_EQ(cuda::detail::forward_tile_inside_tiles(p), here) << describe(s);
      inside += here;
      edge += p.n_tiles - here;
    }
  EXPECT_GT(inside, 0);
  EXPECT_GT(edge, 0);
}

// The chosen plan costs no more, under the stated model, than any other tile shape and split
// with no empty rank.
TEST(ForwardTilePlan, PlanIsTheCheapestAlternative) {
  for (const ConvShape &s : shapes()) {
    const ForwardTilePlan p = forward_tile_plan(s, kSms);
    const int64_t chosen = forward_tile_cost(p, kSms);
    ASSERT_GT(chosen, 0) << describe(s);
    for (int shape = 0; shape < int(std::size(kForwardTileShapes)); ++shape)
      for (int split = 1; split <= 8; ++split) {
        if (!brute_force_nonempty(p.steps, split))
          continue;
        const ForwardTilePlan alt = forward_tile_plan(s, kSms, split, shape);
        ASSERT_EQ(alt.split, split);
        ASSERT_EQ(alt.bm, kForwardTileShapes[shape].bm);
        EXPECT_LE(chosen, forward_tile_cost(alt, kSms))
            << describe(s) << ": shape " << shape << " split " << split << " is cheaper";
      }
  }
}

// A split the steps cannot give falls back to the automatic choice; the examples the kernel's
// device test names hold here too.
TEST(ForwardTilePlan, OverridesAndTheAmpExamples) {
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = 3;
  s.cout = 64;
  s.k = 3; // 9 taps: 2 steps
  s.l_in = 100;
  EXPECT_EQ(forward_tile_plan(s, kSms, 8).split, forward_tile_plan(s, kSms).split);
  // BigVGAN 512x amp0 at 96 frames: 36 tiles of 128 x 128
  const ForwardTilePlan at96 = forward_tile_plan(testing::amp_shape(768, 7, 3, 768), kSms);
  EXPECT_EQ(at96.bm, 128);
  EXPECT_GT(at96.split, 1);
  EXPECT_LE(at96.m_tiles * at96.n_tiles * at96.split, 2 * kSms) << "one wave";
  EXPECT_EQ(forward_tile_plan(testing::amp_shape(24, 7, 3, 96 * 512), kSms).bm, 32); // amp5
}

// A forced tile (the sweep's arms, cuda-f32@fwd-<bm>x<bn>-s<split>) gives exactly its plan, or
// refuses with the reason: never the cost model's choice in its name. Every compiled tile shape
// with every split 1..8 is a variant. Planted faults seen failing (then reverted): the forced
// plan built with split 1 (ExactlyTheForcedPlanOrItsReason fails on every split > 1); the reason
// not checking for an empty rank (the 2-step shape's split 3 accepted).
TEST(ForwardTileForce, ExactlyTheForcedPlanOrItsReason) {
  const auto variants = cuda::forward_tile_variants();
  ASSERT_EQ(variants.size(), std::size(kForwardTileShapes) * 8);
  int forced = 0, refused = 0, unlike_the_choice = 0;
  for (const ConvShape &s : shapes()) {
    const ForwardTilePlan chosen = forward_tile_plan(s, kSms);
    for (const cuda::ForwardTile &t : variants) {
      const std::string why = cuda::forward_tile_unsupported_reason(s, t);
      const int64_t bk = cuda::detail::kForwardTileBk, steps = (s.cin * s.k + bk - 1) / bk;
      EXPECT_EQ(why.empty(), brute_force_nonempty(steps, t.split))
          << describe(s) << " split " << t.split << ": " << why;
      if (!why.empty()) {
        try {
          cuda::detail::forward_tile_forced_plan(s, t);
          ADD_FAILURE() << describe(s) << " split " << t.split << " ran despite: " << why;
        } catch (const std::invalid_argument &e) {
          EXPECT_EQ(e.what(), why);
        }
        ++refused;
        continue;
      }
      const ForwardTilePlan p = cuda::detail::forward_tile_forced_plan(s, t);
      EXPECT_EQ(p.bm, t.bm) << describe(s);
      EXPECT_EQ(p.bn, t.bn) << describe(s);
      EXPECT_EQ(p.split, t.split) << describe(s);
      EXPECT_EQ(p.threads * 64, p.bm * p.bn) << describe(s);
      EXPECT_GE(p.m_tiles * p.bm, s.cout) << describe(s);
      EXPECT_GE(p.n_tiles * p.bn, s.l_out()) << describe(s);
      EXPECT_GE(forward_tile_cost(p, kSms), forward_tile_cost(chosen, kSms)) << describe(s);
      unlike_the_choice += p.bm != chosen.bm || p.split != chosen.split;
      ++forced;
    }
  }
  EXPECT_GT(forced, 0);
  EXPECT_GT(unlike_the_choice, 0) << "every forced plan was the automatic one";
  ConvShape two_steps; // 12 taps: 2 steps of 8, so splits 3..8 leave a rank empty
  two_steps.op = ConvOp::forward;
  two_steps.cin = 4;
  two_steps.cout = 64;
  two_steps.k = 3;
  two_steps.l_in = 100;
  EXPECT_TRUE(cuda::forward_tile_unsupported_reason(two_steps, {128, 128, 2}).empty());
  EXPECT_NE(cuda::forward_tile_unsupported_reason(two_steps, {128, 128, 3})
                .find("split 3 leaves a rank without steps"),
            std::string::npos);
  EXPECT_GT(refused, 0);
}

// Each refusal names its cause, in the order a reader would check it.
TEST(ForwardTileForce, RefusalsNameTheirReason) {
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = 64;
  s.cout = 64;
  s.k = 7;
  s.padding = 3;
  s.l_in = 384;
  const auto reason = [&](const cuda::ForwardTile &t) {
    return cuda::forward_tile_unsupported_reason(s, t);
  };
  EXPECT_EQ(reason({32, 256, 8}), "");
  EXPECT_NE(reason({64, 64, 1}).find("tile 64x64 is not compiled"), std::string::npos);
  EXPECT_NE(reason({128, 128, 9}).find("split 9 is outside 1..8"), std::string::npos);
  EXPECT_NE(reason({128, 128, 0}).find("split 0 is outside 1..8"), std::string::npos);
  s.cout = 15;
  EXPECT_NE(reason({128, 128, 1}).find("cout 15 is below"), std::string::npos);
  s.cout = 64;
  s.op = ConvOp::transposed;
  s.stride = 4;
  s.k = 8;
  s.padding = 2;
  EXPECT_NE(reason({128, 128, 1}).find("ConvTranspose1d"), std::string::npos);
  EXPECT_THROW(cuda::detail::forward_tile_forced_plan(s, {128, 128, 1}), std::invalid_argument);
}

TEST(ForwardTilePlan, SupportedShapes) {
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = 8;
  s.cout = 16;
  s.k = 3;
  s.l_in = 50;
  EXPECT_TRUE(forward_tile_supported(s));
  s.cout = 15; // the post conv's kind: one thread per cell
  EXPECT_FALSE(forward_tile_supported(s));
  s.cout = 16;
  s.op = ConvOp::transposed;
  EXPECT_FALSE(forward_tile_supported(s));
  s.op = ConvOp::forward;
  s.cin = 1 << 16;
  s.l_in = 1 << 16; // 2^32 input elements per batch item: past 32-bit indices
  EXPECT_FALSE(forward_tile_supported(s));
}

// The host emulation (the device test's bitwise reference) computes the convolution: within
// cuda-f32's bound of cpu-f64 on odd shapes, both tile shapes, every split; and it models the
// split: on the same problem, splits that cut the sum elsewhere give other bits somewhere.
// Planted (seen failing, then reverted): the emulation's tap index `pos` without the padding
// (the shapes with padding out of tolerance).
TEST(ForwardTileEmulation, WithinToleranceAndTheSplitIsItsOwnOrder) {
  std::mt19937_64 rng(5);
  int moved = 0;
  for (int i = 0; i < 6; ++i) {
    const ConvShape s = testing::random_shape(rng, ConvOp::forward, 110, 80, 16, 76);
    const testing::Problem pr = testing::random_problem(s, 40 + i);
    const auto ref = testing::reference_f64(pr);
    for (int shape : {0, 1}) {
      std::vector<float> first;
      for (int split = 1; split <= 8; ++split) {
        const ForwardTilePlan p = forward_tile_plan(s, kSms, split, shape);
        if (p.split != split)
          continue;
        std::vector<float> y(size_t(s.output_elems()));
        testing::forward_tile_emulate(p, pr.x.data(), pr.w.data(), pr.bias(), y.data());
        EXPECT_LE(testing::relative_l2(y, ref), testing::kF32RelativeL2Bound)
            << describe(s) << " shape " << shape << " split " << split;
        if (first.empty())
          first = y;
        else
          moved += testing::differing_cells(first, y) > 0;
      }
    }
  }
  EXPECT_GT(moved, 0) << "no split changed a bit: the emulation ignores the split";
}

} // namespace
} // namespace convbench
