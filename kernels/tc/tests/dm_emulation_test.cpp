// The DMMA kernels' plan and index maps (src/dm_plan.hpp), run on the host: the weights packed
// as dm_pack packs them (kpitch, zero past cin), every block's iterations read through step() with
// the kernel's zero fill (rows outside the group, channels past cin, positions outside the input),
// the split slices added in order, every tile cell stored through y_index(), in f64 against
// conv_cpu_f64. What this holds is the tiling (tiles of every shape, splits, the epilogue's
// output index); the m16n8k16 fragments and the pipeline are held by the device gates
// (tc_gpu_test.cpp, Dmma.*).
//
// Teeth: DmEmulation.PlantedFaultsAreCaught plants faults in the emulation's use of the maps (the
// input window one position late, the last iteration of each split dropped, the last split's slice
// left out of the sum, the tile's first column unstored, the bias taken by packed row instead of by
// output channel) and requires each to fail. Planted once in dm_plan.hpp and
// seen failing here: y_index's phase without r_lo (EveryVocoderStage..., RandomShapesEveryTile),
// split_iters' last split not clipped to iters (every test with a split: a step past the packed
// weights).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dm_plan.hpp"
#include "fast_support.hpp"

namespace convbench::tc::dm {
namespace {

using convbench::testing::describe;
using convbench::testing::reference_f64;
using peer_testing::Problem;

constexpr DeviceFacts kDevice = kPlanningDevice; // the H200 the plans were tuned on

enum class Fault { none, shift, last_iter, last_split, column, bias_row };

std::vector<double> pack(const Plan &p, const Problem &pr) {
  std::vector<double> a(size_t(packed_weight_doubles(p)), 0.0);
  for (int j = 0; j < p.g.taps; ++j)
    for (int row = 0; row < p.g.rows; ++row)
      for (int ic = 0; ic < p.g.cin; ++ic)
        a[(size_t(j) * p.g.rows + row) * size_t(p.kpitch) + size_t(ic)] =
            double(wg::packed_weight(p.g, pr.w.data(), j, row, ic));
  return a;
}

// The output of the plan's decomposition, in f64; `writes` counts the stores per cell.
std::vector<float> emulate(const Plan &p, const Problem &pr, const std::vector<double> &a,
                           std::vector<int> &writes, Fault fault = Fault::none) {
  const int bm = p.g.row_tile, bn = p.g.col_tile;
  std::vector<float> y(size_t(pr.shape.output_elems()), std::nanf(""));
  writes.assign(y.size(), 0);
  std::vector<double> tile(size_t(bm) * bn);
  for (int block = 0; block < blocks(p); ++block) {
    const wg::Tile t = wg::tile_of(p.g, block);
    std::fill(tile.begin(), tile.end(), 0.0);
    const int splits = fault == Fault::last_split ? p.g.split - 1 : p.g.split;
    for (int sp = 0; sp < splits; ++sp) { // the slices, added in split order
      int it0, it1;
      split_iters(p, sp, it0, it1);
      if (fault == Fault::last_iter)
        --it1;
      for (int it = it0; it < it1; ++it) {
        const Step k = step(p, t, it);
        if (k.ch >= p.kpitch || k.tap >= p.g.taps)
          throw std::out_of_range("a step past the packed weights");
        for (int row = 0; row < bm; ++row) {
          const int64_t w_row = k.w_row + row;
          if (!row_in_group(p, t, row) || w_row >= p.g.rows)
            continue; // staged as zeros
          for (int icl = 0; icl < kBk; ++icl) {
            const double wv = a[(size_t(k.tap) * p.g.rows + size_t(w_row)) * size_t(p.kpitch) +
                                size_t(k.ch + icl)];
            const int ic = k.ch + icl;
            if (ic >= p.g.cin || wv == 0.0)
              continue;
            for (int col = 0; col < bn; ++col) {
              const int tp = k.x_pos + col + (fault == Fault::shift ? 1 : 0);
              if (tp < 0 || tp >= p.g.l_in)
                continue;
              tile[size_t(row) * bn + col] +=
                  wv * double(pr.x[(size_t(t.b) * p.g.cin + size_t(ic)) * p.g.l_in + size_t(tp)]);
            }
          }
        }
      }
    }
    for (int row = 0; row < bm; ++row)
      for (int col = 0; col < bn; ++col) {
        const int64_t yi = y_index(p, t, row, col);
        if (yi < 0 || (fault == Fault::column && col == 0))
          continue;
        if (yi >= int64_t(y.size()))
          throw std::out_of_range("cell past the output");
        double v = tile[size_t(row) * bn + col];
        if (p.g.bias)
          v += pr.b[size_t(fault == Fault::bias_row ? (t.r0 + row) % p.g.cout
                                                    : (t.r0 + row) >> p.g.lg[t.g])];
        y[size_t(yi)] = float(v);
        ++writes[size_t(yi)];
      }
  }
  return y;
}

// The plan's choice, and with all_tiles every tile shape (and one split of 3), each against the
// reference: every cell written once, relative L2 below 1e-6 (f64 sums rounded once: ~1e-8).
void check_shape(const ConvShape &s, uint64_t seed, const std::string &what, bool all_tiles) {
  const Problem pr = peer_testing::random_problem(s, seed);
  const auto ref = reference_f64(pr);
  std::vector<Plan> plans{plan(s, kDevice)};
  if (all_tiles) {
    for (const TileShape &ts : kTiles)
      plans.push_back(plan(s, kDevice, {ts.bm, ts.bn, 1}));
    plans.push_back(plan(s, kDevice, {64, 64, 3}));
  }
  const std::vector<double> a = pack(plans[0], pr);
  for (const Plan &p : plans) {
    std::vector<int> writes;
    const auto y = emulate(p, pr, a, writes);
    const std::string where = what + " [" + kernel_name(p) + "]";
    EXPECT_EQ(std::count_if(writes.begin(), writes.end(), [](int w) { return w != 1; }), 0)
        << "cells not written exactly once, " << where;
    EXPECT_LE(peer_testing::relative_l2(y, ref), 1e-6) << where;
  }
}

TEST(DmEmulation, EveryVocoderStageAt1And3Frames) {
  for (int64_t frames : {1, 3})
    for (const auto &st : peer_testing::all_stages(frames))
      check_shape(st.shape, 12, st.model + " " + st.name + " @" + std::to_string(frames),
                  frames == 1);
}

TEST(DmEmulation, ForwardStagesOfTheGenerator) {
  for (int64_t k : {3, 7, 11})
    for (int64_t d : {1, 3, 5})
      check_shape(convbench::testing::amp_shape(24, k, d, 150), uint64_t(k * 10 + d),
                  "amp k" + std::to_string(k) + " d" + std::to_string(d), k == 3);
  ConvShape post = convbench::testing::amp_shape(1, 7, 1, 300);
  post.cin = 33;
  check_shape(post, 6, "conv_post", true);
}

TEST(DmEmulation, RandomShapesEveryTile) {
  std::mt19937_64 rng(23);
  int n = 0;
  while (n < 30) {
    const bool tr = n % 3 != 0;
    ConvShape s = convbench::testing::random_shape(rng, tr ? ConvOp::transposed : ConvOp::forward,
                                                   40, 60, 1, 40);
    if (tr) {
      s.stride = std::uniform_int_distribution<int64_t>(1, 9)(rng);
      s.dilation = 1;
      s.output_padding = std::min<int64_t>(s.output_padding, s.stride - 1);
    } else {
      s.stride = 1;
    }
    if (!unsupported_reason(s).empty())
      continue;
    ++n;
    check_shape(s, uint64_t(n), describe(s), n % 5 == 0);
  }
}

TEST(DmEmulation, PlantedFaultsAreCaught) {
  // up1 of the 512x model at 2 frames (stride 4: two groups of two phases; 48 chunks x 2 taps),
  // a 64 x 64 tile split 3, so each fault has something to break.
  const ConvShape s = peer_testing::all_stages(2)[1].shape;
  const Problem pr = peer_testing::random_problem(s, 4);
  const auto ref = reference_f64(pr);
  const Plan p = plan(s, kDevice, {64, 64, 3});
  ASSERT_EQ(p.g.split, 3);
  ASSERT_EQ(p.g.groups, 2);
  const std::vector<double> a = pack(p, pr);
  for (Fault f :
       {Fault::shift, Fault::last_iter, Fault::last_split, Fault::column, Fault::bias_row}) {
    std::vector<int> writes;
    const auto y = emulate(p, pr, a, writes, f);
    const bool once = std::all_of(writes.begin(), writes.end(), [](int w) { return w == 1; });
    const double e = peer_testing::relative_l2(y, ref);
    EXPECT_TRUE(!once || !(e <= 1e-6))
        << "planted fault " << int(f) << " not caught (rel-L2 " << e << ")";
  }
}

TEST(DmPlan, ChoiceIsTheCheapestOfEveryVariant) {
  int checked = 0;
  for (int64_t frames : {1, 96, 384, 1536})
    for (const auto &st : peer_testing::all_stages(frames)) {
      const Plan p = plan(st.shape, kDevice);
      EXPECT_TRUE(wg::ranks_nonempty(p.g.iters, p.g.split));
      EXPECT_LE(smem_bytes(p) * p.per_sm, 228 * 1024 - 1024 * p.per_sm) << st.name;
      EXPECT_GE(p.per_sm, 1);
      EXPECT_EQ(p.kpitch % kBk, 0);
      const double best = cost(p, kDevice);
      for (const TileShape &ts : kTiles)
        for (int sp = 1; sp <= kMaxSplit; ++sp) {
          const Plan q = plan(st.shape, kDevice, {ts.bm, ts.bn, sp});
          if (q.g.row_tile == ts.bm && q.g.col_tile == ts.bn && q.g.split == sp) {
            EXPECT_GE(cost(q, kDevice), best) << st.name << " " << kernel_name(q);
          }
        }
      ++checked;
    }
  EXPECT_EQ(checked, 4 * 16);
  // The small-N stages at 96 frames are split (too few tiles for 132 multiprocessors); the long
  // ones at 1536 frames are not.
  EXPECT_GT(plan(peer_testing::all_stages(96)[0].shape, kDevice).g.split, 1);
  EXPECT_EQ(plan(peer_testing::all_stages(1536)[0].shape, kDevice).g.split, 1);
}

TEST(DmPlan, ForcedVariantsAreHonouredOrFallBack) {
  const ConvShape s = peer_testing::all_stages(96)[0].shape; // up0: 96 chunks x 2 taps
  const Plan p = plan(s, kDevice, {64, 128, 5});
  EXPECT_EQ(p.g.row_tile, 64);
  EXPECT_EQ(p.g.col_tile, 128);
  EXPECT_EQ(p.g.split, 5);
  EXPECT_EQ(p.g.iters_per_rank, (p.g.iters + 4) / 5);
  EXPECT_EQ(kernel_name(p).find("dmma f64 m16n8k16 tile 64x128x16"), 0u) << kernel_name(p);
  const Plan q = plan(s, kDevice, {96, 64, 1}); // no 96-row tile: the plan's own choice
  EXPECT_EQ(cost(q, kDevice), cost(plan(s, kDevice), kDevice));
  ConvShape post = convbench::testing::amp_shape(1, 7, 1, 300);
  post.cin = 8; // one chunk x 7 taps: a split of 8 would leave a split empty
  EXPECT_LT(plan(post, kDevice, {0, 0, 8}).g.split, 8);
}

TEST(DmPlan, RefusesWhatTheKernelsDoNotTake) {
  ConvShape s = convbench::testing::amp_shape(8, 3, 1, 20);
  s.stride = 2;
  EXPECT_NE(unsupported_reason(s).find("the DMMA kernels take Conv1d with stride 1"),
            std::string::npos)
      << unsupported_reason(s);
  s = peer_testing::all_stages(1)[0].shape;
  s.cin = 0;
  EXPECT_NE(unsupported_reason(s).find("invalid shape"), std::string::npos);
}

} // namespace
} // namespace convbench::tc::dm
