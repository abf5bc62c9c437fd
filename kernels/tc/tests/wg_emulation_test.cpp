// The wgmma kernels' plan and index maps (src/wg_plan.hpp), run on the host: the weights packed by
// packed_weight(), the input transposed, every tile's iterations read through coords() with the
// TMA boxes' zero fill, the ranks' partial sums added, every cell stored through cell_of(), in
// f64, against conv_cpu_f64. What this holds is the decomposition (groups, phases, shifts, taps,
// packing, tiling, split, the epilogue's output order); the device's arithmetic (tf32, the
// swizzled descriptors, the pipeline) is held by the device gates in tc_gpu_test.cpp.
//
// Teeth: Emulation.PlantedFaultsAreCaught plants faults in the emulation's use of the maps (a
// tap's shift one row off, a group's first phase one off, the last iteration of each rank dropped,
// the last rank dropped, the tile's first column left unstored; with positions on M and both
// groups in a block, the second group's window without its one-position offset) and requires each
// to fail the comparison. Planted once each in wg_plan.hpp / wg_plan.cpp and seen failing here: the
// transposed weight's phase as (r' + pad) / stride instead of its remainder (Vocoder,
// RandomTransposedShapes); the second delta's shift without its + 1 (Vocoder,
// RandomTransposedShapes, Plan.GroupsArePowerOfTwoRuns...); one run per delta instead of
// power-of-two runs (RandomTransposedShapes, Plan.GroupsArePowerOfTwoRuns...).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fast_support.hpp"
#include "wg_plan.hpp"

namespace convbench::tc::wg {
namespace {

using convbench::testing::describe;
using convbench::testing::reference_f64;
using peer_testing::Problem;

constexpr DeviceFacts kDevice = kPlanningDevice; // the H200 the plans were tuned on

enum class Fault {
  none,
  shift,
  r_lo,
  last_iter,
  last_rank,
  column,
  pair_window,
  narrow_window,
  tile_step
};

// The packed weights, as launch_pack writes them, and the input by position (no tf32
// rounding here: the maps are what is under test). They depend on the row groups, not on the
// tiling or the orientation, so one packing serves every plan of a shape.
struct Operands {
  std::vector<float> a, xt;
};
Operands pack(const Plan &p, const Problem &pr) {
  Operands o{std::vector<float>(size_t(packed_weight_floats(p)), 0.0f),
             std::vector<float>(size_t(p.batch) * p.l_in * p.cin_pad, 0.0f)};
  for (int j = 0; j < p.taps; ++j)
    for (int row = 0; row < p.rows; ++row)
      for (int ic = 0; ic < p.cin; ++ic)
        o.a[(size_t(j) * p.rows + row) * p.cin_pad + ic] =
            packed_weight(p, pr.w.data(), j, row, ic);
  for (int b = 0; b < p.batch; ++b)
    for (int ic = 0; ic < p.cin; ++ic)
      for (int t = 0; t < p.l_in; ++t)
        o.xt[(size_t(b) * p.l_in + t) * p.cin_pad + ic] =
            pr.x[(size_t(b) * p.cin + ic) * p.l_in + t];
  return o;
}

// The output the kernel's decomposition gives, in f64 (the products and sums exact enough that
// only a wrong index can move a cell by more than ~1e-12 relative). Also counts the stores per
// cell: each must be written exactly once.
std::vector<float> emulate(const Plan &p, const Problem &pr, const Operands &o,
                           std::vector<int> &writes, Fault fault = Fault::none) {
  // TMA's view: a box element outside the tensor's dims reads 0.
  auto A = [&](int ch, int row, int tap) {
    return (ch < p.cin && row >= 0 && row < p.rows && tap < p.taps)
               ? double(o.a[(size_t(tap) * p.rows + row) * p.cin_pad + ch])
               : 0.0;
  };
  auto B = [&](int ch, int t, int b) {
    return (ch < p.cin && t >= 0 && t < p.l_in)
               ? double(o.xt[(size_t(b) * p.l_in + t) * p.cin_pad + ch])
               : 0.0;
  };
  Plan q = p;
  if (fault == Fault::shift)
    q.shift[0] += 1;
  if (fault == Fault::narrow_window)
    q.win = kWindows[0];
  if (fault == Fault::r_lo)
    q.r_lo[q.groups - 1] += 1;
  std::vector<float> y(size_t(pr.shape.output_elems()), std::nanf(""));
  writes.assign(y.size(), 0);
  // The kernel's walk: block b takes tiles b, b + step, ... (step: the blocks launched; one tile
  // each unless persistent).
  const int step = launched_blocks(q) + (fault == Fault::tile_step ? 1 : 0);
  for (int block = 0; block < launched_blocks(q); ++block)
    for (int tb = block; tb < blocks_per_rank(q); tb += step) {
      const Tile t = tile_of(q, tb);
      for (int rank = 0; rank < q.split; ++rank) { // the ranks store their shares of the channels
        int first, last;
        rank_channels(q, t, rank, first, last);
        for (int o = first; o < last; ++o)
          for (int i = 0; i < cells_per_channel(q, t); ++i) {
            const Cell c = cell_of(q, t, o, i);
            if (c.y < 0 || (fault == Fault::column && c.col == 0))
              continue;
            if (c.y >= int64_t(y.size()))
              throw std::out_of_range("cell past the output");
            double v = 0.0;
            const int ranks = fault == Fault::last_rank ? q.split - 1 : q.split;
            for (int r = 0; r < ranks; ++r) {
              const int it0 = r * q.iters_per_rank;
              int it1 = std::min(it0 + q.iters_per_rank, q.iters);
              if (fault == Fault::last_iter)
                --it1;
              // The cell's group reads its own weights' rows and its window (the second group of
              // a paired block one position further: its shift).
              const int w_off = q.row_off[c.group] - q.row_off[t.g];
              const int x_off = fault == Fault::pair_window ? 0 : q.shift[c.group] - q.shift[t.g];
              for (int it = it0; it < it1; ++it) {
                const Coords k = coords(q, t, it);
                const int x = k.x_pos + x_off + c.col;
                // Positions on M: the input comes from the window staged for the iteration, win
                // positions from window_pos rounded down to a multiple of 4; a read outside it
                // would be another tap's or another chunk's data.
                if (q.along == Along::positions) {
                  const int at = x - (window_pos(q, t, it) & ~3);
                  if (at < 0 || at >= q.win)
                    v = std::nan("");
                }
                for (int ic = 0; ic < kBk; ++ic)
                  v += A(k.ch + ic, k.w_row + w_off + c.row, k.tap) * B(k.ch + ic, x, t.b);
              }
            }
            if (q.bias)
              v += pr.b[size_t(tile_oc(q, t, o))];
            y[size_t(c.y)] = float(v);
            ++writes[size_t(c.y)];
          }
      }
    }
  return y;
}

// Emulates every column tile and split the plan can take for the shape (and the plan's own
// choice), each against the reference: every cell written once, relative L2 below 1e-6 (f64
// sums rounded once to f32: ~1e-8; a wrong index: ~1).
void check_shape(const ConvShape &s, uint64_t seed, const std::string &what, bool all_tiles) {
  const Problem pr = peer_testing::random_problem(s, seed);
  const auto ref = reference_f64(pr);
  std::vector<Plan> plans{plan(s, Math::tf32, kDevice)};
  if (all_tiles) {
    for (int bn : kTileNs)
      plans.push_back(plan(s, Math::tf32, kDevice, {1, bn, 1, 0}));
    plans.push_back(plan(s, Math::f32x3, kDevice, {1, 64, 3, 0}));
    for (int ng : kRowNs)
      for (int gpb : {1, 2})
        for (int window : {0, 1}) { // one window per chunk where it fits; one per tap
          const Plan q = plan(s, Math::tf32, kDevice, {2, ng, 0, gpb, window});
          if (q.along == Along::positions && q.n == ng && q.gpb == gpb &&
              (window == 0 || q.wtaps == 1))
            plans.push_back(q);
        }
  }
  const Operands o = pack(plans[0], pr);
  for (const Plan &p : plans) {
    std::vector<int> writes;
    const auto y = emulate(p, pr, o, writes);
    const std::string where = what + " [" + kernel_name(p) + "]";
    EXPECT_EQ(std::count_if(writes.begin(), writes.end(), [](int w) { return w != 1; }), 0)
        << "cells not written exactly once, " << where;
    EXPECT_LE(peer_testing::relative_l2(y, ref), 1e-6) << where;
  }
}

TEST(Emulation, EveryVocoderStageAt1And3Frames) {
  for (int64_t frames : {1, 3})
    for (const auto &st : peer_testing::all_stages(frames))
      check_shape(st.shape, 11, st.model + " " + st.name + " @" + std::to_string(frames),
                  frames == 1);
}

// The AMP block's Conv1d (every kernel and dilation) and conv_pre / conv_post, at reduced
// channels (the maps do not depend on the channel count beyond the chunking, which the odd
// counts here exercise).
TEST(Emulation, ForwardStagesOfTheGenerator) {
  for (int64_t k : {3, 7, 11})
    for (int64_t d : {1, 3, 5})
      check_shape(convbench::testing::amp_shape(40, k, d, 150), uint64_t(k * 10 + d),
                  "amp k" + std::to_string(k) + " d" + std::to_string(d), k == 7);
  ConvShape pre = convbench::testing::amp_shape(1, 7, 1, 96);
  pre.cin = 80;
  pre.cout = 70;
  check_shape(pre, 5, "conv_pre", true);
  ConvShape post = convbench::testing::amp_shape(1, 7, 1, 300);
  post.cin = 33;
  check_shape(post, 6, "conv_post", true);
}

TEST(Emulation, RandomTransposedShapes) {
  std::mt19937_64 rng(21);
  int n = 0;
  while (n < 40) {
    ConvShape s = convbench::testing::random_shape(rng, ConvOp::transposed, 70, 40, 1, 40);
    s.stride = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    s.dilation = 1;
    s.output_padding = std::min<int64_t>(s.output_padding, s.stride - 1);
    if (!unsupported_reason(s).empty())
      continue;
    ++n;
    check_shape(s, uint64_t(n), describe(s), n % 4 == 0);
  }
}

TEST(Emulation, RandomForwardShapes) {
  std::mt19937_64 rng(22);
  int n = 0;
  while (n < 40) {
    ConvShape s = convbench::testing::random_shape(rng, ConvOp::forward, 70, 120, 1, 40);
    s.stride = 1;
    if (!unsupported_reason(s).empty())
      continue;
    ++n;
    check_shape(s, uint64_t(n), describe(s), n % 4 == 0);
  }
}

TEST(Emulation, PlantedFaultsAreCaught) {
  // up0 of the 512x model at 2 frames with a forced split, so each fault has something to break.
  const ConvShape s = peer_testing::all_stages(2)[0].shape;
  const Problem pr = peer_testing::random_problem(s, 3);
  const auto ref = reference_f64(pr);
  const Plan p = plan(s, Math::tf32, kDevice, {1, 64, 4, 0});
  const Operands o = pack(p, pr);
  ASSERT_EQ(p.split, 4);
  ASSERT_EQ(p.groups, 2);
  for (Fault f : {Fault::shift, Fault::r_lo, Fault::last_iter, Fault::last_rank, Fault::column}) {
    std::vector<int> writes;
    const auto y = emulate(p, pr, o, writes, f);
    const bool once = std::all_of(writes.begin(), writes.end(), [](int w) { return w == 1; });
    const double e = peer_testing::relative_l2(y, ref);
    EXPECT_TRUE(!once || !(e <= 1e-6))
        << "planted fault " << int(f) << " not caught (rel-L2 " << e << ")";
  }
  // Positions on M with one window per chunk: a window too narrow for the taps' span (k 11,
  // dilation 5: 50 positions past the first tap's).
  const ConvShape amp = convbench::testing::amp_shape(40, 11, 5, 300);
  const Problem pa = peer_testing::random_problem(amp, 4);
  const Plan w = plan(amp, Math::tf32, kDevice, {2, 48, 0, 1});
  ASSERT_EQ(w.along, Along::positions);
  ASSERT_EQ(w.wtaps, w.taps);
  ASSERT_GT(w.win, kWindows[0]);
  std::vector<int> writes;
  EXPECT_FALSE(peer_testing::relative_l2(emulate(w, pa, pack(w, pa), writes, Fault::narrow_window),
                                         reference_f64(pa)) <= 1e-6);
}

// Persistent blocks (positions on M) on a device of 4 multiprocessors, so that each block takes
// several tiles (b, b + grid, ...): Conv1d at every window width with a partial last tile, and
// ConvTranspose1d with both groups in a block; every cell written once, within 1e-6 of the
// reference. A walk one tile too far per step must fail that (seen failing with it).
TEST(Emulation, PersistentBlocksWalkEveryTile) {
  DeviceFacts small = kDevice;
  small.sms = 4;
  std::vector<std::pair<ConvShape, int>> shapes; // the shape, its groups per block
  for (const auto &[k, d] : {std::pair{3, 1}, {7, 3}, {11, 5}})
    shapes.push_back({convbench::testing::amp_shape(40, k, d, 2404), 1});
  shapes.push_back(
      {convbench::testing::model_stages(convbench::testing::default_model(), 10).back().shape, 2});
  int walked = 0;
  for (const auto &[s, gpb] : shapes) {
    const Plan p = plan(s, Math::tf32, small, {2, 0, 0, gpb, 0, 2});
    const std::string what = describe(s) + " [" + kernel_name(p) + "]";
    ASSERT_EQ(p.along, Along::positions) << what;
    ASSERT_TRUE(p.persistent) << what;
    ASSERT_EQ(p.gpb, gpb) << what;
    ASSERT_LT(2 * launched_blocks(p), blocks_per_rank(p)) << what; // two tiles or more a block
    const Problem pr = peer_testing::random_problem(s, 9);
    const auto ref = reference_f64(pr);
    const Operands o = pack(p, pr);
    for (Fault f : {Fault::none, Fault::tile_step}) {
      std::vector<int> writes;
      const auto y = emulate(p, pr, o, writes, f);
      const bool once = std::all_of(writes.begin(), writes.end(), [](int w) { return w == 1; });
      const bool close = peer_testing::relative_l2(y, ref) <= 1e-6;
      if (f == Fault::none) {
        EXPECT_TRUE(once && close) << what;
      } else {
        EXPECT_FALSE(once && close) << "a walk one tile too far not caught, " << what;
      }
    }
    ++walked;
  }
  EXPECT_EQ(walked, 4);
}

// Persistent blocks only where forced: the plan itself takes one tile per block (measured mixed,
// wg_plan.cpp); forced (@persistent), positions on M take them wherever shared memory holds the
// pipeline and the epilogue's own tile, the grid every block the device holds or every tile where
// fewer; forced one tile per block (@one-tile) never. Every stage and AMP Conv1d of the default
// model at 96, 384 and 1536 frames, both maths (seen failing with the grid left at every tile, and
// with persistence taken by the plan itself).
TEST(Plan, PersistentBlocksWhereForced) {
  int persistent = 0;
  for (int64_t frames : {96, 384, 1536}) {
    for (const auto &st :
         convbench::testing::stages_and_amp(convbench::testing::default_model(), frames))
      for (Math m : {Math::tf32, Math::f32x3}) {
        const Plan p = plan(st.shape, m, kDevice);
        const std::string what = st.name + "/" + std::to_string(frames) + " " + kernel_name(p);
        EXPECT_LE(smem_bytes(p), kSmemBytes) << what;
        EXPECT_FALSE(p.persistent) << what;
        EXPECT_EQ(kernel_name(p).find("persistent"), std::string::npos) << what;
        EXPECT_EQ(launched_blocks(p), blocks_per_rank(p)) << what;
        Forced one;
        one.persist = 1;
        EXPECT_FALSE(plan(st.shape, m, kDevice, one).persistent) << what;
        if (p.along != Along::positions)
          continue;
        Forced f2; // the plan's own tile, persistent
        f2.along = 2;
        f2.n = p.n;
        f2.gpb = p.gpb;
        f2.persist = 2;
        const Plan q = plan(st.shape, m, kDevice, f2);
        Plan both = p;
        both.persistent = true;
        const int64_t held = int64_t(kDevice.sms) * blocks_per_sm(both, smem_bytes(both));
        EXPECT_EQ(q.persistent, smem_bytes(both) <= kSmemBytes) << what;
        if (q.persistent) {
          ++persistent;
          EXPECT_LE(smem_bytes(q), kSmemBytes) << what;
          EXPECT_EQ(launched_blocks(q), std::min<int64_t>(held, blocks_per_rank(q))) << what;
          EXPECT_NE(kernel_name(q).find("persistent"), std::string::npos) << what;
        }
      }
  }
  EXPECT_GT(persistent, 0);
}

// Pipeline buffers with positions on M. The plan takes, for f32x3's tiles, the most buffers that
// hold the most blocks on a multiprocessor (tf32's keep theirs): its own tile with any other count
// (forced stages 2-4, and 8: the buffers before any were cut) holds no more blocks, and somewhere
// (amp4.k3.d1's f32x3 tile among them) the cut gives a block more. Forced stages (the hidden arms
// "<arm>@stages<S>"): at most S buffers, or as many as hold the epilogue's tile, in shared memory.
// Every stage and AMP Conv1d of the default model at 96, 384 and 1536 frames, both maths (seen
// failing with the cut left out, with the forced count ignored, and with it taken below the
// epilogue's tile).
TEST(Plan, BuffersHoldTheMostBlocks) {
  int cut = 0, amp4_x3 = 0;
  for (int64_t frames : {96, 384, 1536}) {
    for (const auto &st :
         convbench::testing::stages_and_amp(convbench::testing::default_model(), frames))
      for (Math m : {Math::tf32, Math::f32x3}) {
        Forced own; // the plan's own tile, as the plan buffers it
        const Plan auto_plan = plan(st.shape, m, kDevice);
        if (auto_plan.along != Along::positions)
          continue;
        own.along = 2;
        own.n = auto_plan.n;
        own.gpb = auto_plan.gpb;
        const Plan p = plan(st.shape, m, kDevice, own);
        const int bp = blocks_per_sm(p, smem_bytes(p));
        const std::string name = st.name + "/" + std::to_string(frames) + " " + kernel_name(p);
        ASSERT_EQ(p.buffers, auto_plan.buffers) << name;
        for (int s : {2, 3, 4, 8}) {
          Forced f = own;
          f.stages = s;
          const Plan q = plan(st.shape, m, kDevice, f);
          const std::string what = name + ", stages " + std::to_string(s) + ": " + kernel_name(q);
          ASSERT_EQ(q.n, p.n) << what;
          const int64_t tile = tile_floats(q) * 4;
          EXPECT_LE(smem_bytes(q), kSmemBytes) << what;
          EXPECT_GE(q.buffers, 2) << what;
          EXPECT_LE(q.buffers, std::max<int64_t>(s, (tile + buffer_bytes(q) - 1) / buffer_bytes(q)))
              << "more buffers than forced, " << what;
          EXPECT_TRUE(q.persistent || pipeline_bytes(q) >= tile)
              << "the epilogue's tile does not fit the pipeline, " << what;
          const int bq = blocks_per_sm(q, smem_bytes(q));
          if (m == Math::f32x3) { // tf32's tiles keep their buffers (unmeasured)
            EXPECT_LE(bq, bp) << "more blocks with other buffers than the plan's, " << what;
          } else if (s == 8) {
            EXPECT_EQ(q.buffers, p.buffers) << what;
          }
          if (s == 8)
            cut += bq < bp;
        }
        if (m == Math::f32x3 && st.name.rfind("amp4.k3.d1", 0) == 0 && p.n == 48) {
          ++amp4_x3;
          EXPECT_EQ(bp, 2) << name;
        }
      }
  }
  EXPECT_GT(cut, 0);
  EXPECT_GT(amp4_x3, 0);
}

TEST(Plan, GroupsArePowerOfTwoRunsCoveringEveryPhaseOnce) {
  for (int s = 1; s <= 64; ++s)
    for (int pad : {0, 1, s / 2, s - 1, s, s + 3, 2 * s + 1}) {
      ConvShape c;
      c.op = ConvOp::transposed;
      c.cin = 3;
      c.cout = 5;
      c.k = 2 * s;
      c.stride = s;
      c.padding = pad;
      c.l_in = 7;
      if (!unsupported_reason(c).empty())
        continue;
      const Plan p = plan(c, Math::tf32, kDevice);
      std::vector<int> seen(size_t(s), 0);
      for (int g = 0; g < p.groups; ++g) {
        EXPECT_EQ(p.np[g] & (p.np[g] - 1), 0) << "s " << s << " pad " << pad;
        EXPECT_EQ(kBm % p.np[g], 0);
        for (int r = p.r_lo[g]; r < p.r_lo[g] + p.np[g]; ++r)
          ++seen[size_t(r)];
        // Every phase of a group has the group's delta: shift = floor((r' + pad) / s).
        for (int r = p.r_lo[g]; r < p.r_lo[g] + p.np[g]; ++r)
          EXPECT_EQ(p.shift[g], (r + pad) / s) << "s " << s << " pad " << pad << " r' " << r;
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), s) << "s " << s << " pad " << pad;
      EXPECT_LE(p.groups, kMaxGroups);
    }
}

TEST(Plan, ChoiceIsTheCheapestAndFitsSharedMemory) {
  int checked = 0, positions = 0;
  for (int64_t frames : {1, 96, 384, 1536})
    for (const auto &st : peer_testing::all_stages(frames))
      for (Math m : {Math::tf32, Math::f32x3}) {
        // The tile and split cost() picks, before the buffers are cut for another block (forced
        // stages 8: the buffers as many as shared memory and the iterations allow).
        const Plan p = plan(st.shape, m, kDevice, {0, 0, 0, 0, 0, 0, 8});
        EXPECT_TRUE(ranks_nonempty(p.iters, p.split));
        EXPECT_LE(smem_bytes(p), kSmemBytes);
        EXPECT_GE(p.buffers, 2);
        EXPECT_LE(tile_floats(p) * 4, pipeline_bytes(p));
        if (p.along == Along::positions) { // one window per chunk wherever the span fits
          EXPECT_EQ(p.wtaps, p.taps) << st.name << " " << kernel_name(p);
          if (p.wtaps == 1)
            EXPECT_EQ(p.windows, p.buffers) << st.name;
          else // the next chunk's window loads while this one's taps compute
            EXPECT_GE(p.windows, std::min(2, p.chunks)) << st.name;
          EXPECT_LE(p.windows, p.buffers) << st.name;
        }
        positions += p.along == Along::positions;
        const double best = cost(p, kDevice);
        for (int along : {1, 2})
          for (int n : {8, 16, 24, 32, 48, 64, 96, 128, 192, 256})
            for (int sp = 1; sp <= kMaxSplit; ++sp)
              for (int gpb : {1, 2}) {
                const Plan q = plan(st.shape, m, kDevice, {along, n, sp, gpb, 0, 0, 8});
                if (int(q.along) + 1 == along && q.n == n && q.split == sp && q.gpb == gpb) {
                  EXPECT_GE(cost(q, kDevice), best) << st.name << " " << kernel_name(q);
                }
              }
        ++checked;
      }
  EXPECT_EQ(checked, 4 * 16 * 2);
  EXPECT_GT(positions, 0); // the long stages take the positions-on-M kernel
}

// Positions on M, every stage of every model at 96 and 1536 frames, both maths: the pick's windows
// (one per chunk, where the span fits) and a window per tap forced, each within shared memory with
// room for the epilogue's tile; f32x3's windows hold a second plane, so its per-tap pipeline is
// cut to fewer buffers than the model priced, never below two (seen failing with that cut left
// out of place_windows).
TEST(Plan, WindowsFitSharedMemoryEitherWay) {
  int positions = 0;
  for (int64_t frames : {96, 1536})
    for (const auto &st : peer_testing::all_stages(frames))
      for (Math m : {Math::tf32, Math::f32x3})
        for (int window : {0, 1}) {
          const Plan p = plan(st.shape, m, kDevice, {2, 0, 0, 0, window});
          if (p.along != Along::positions)
            continue;
          ++positions;
          const std::string what = st.name + " " + kernel_name(p);
          EXPECT_LE(smem_bytes(p), kSmemBytes) << what;
          EXPECT_LE(tile_floats(p) * 4, pipeline_bytes(p)) << what;
          EXPECT_GE(p.buffers, 2) << what;
          if (window == 1 || p.taps == 1) {
            EXPECT_EQ(p.wtaps, 1) << what;
            EXPECT_EQ(p.windows, p.buffers) << what;
            EXPECT_EQ(p.win, kWindows[0]) << what;
          } else {
            EXPECT_EQ(p.wtaps, p.taps) << what;
            EXPECT_GE(p.win, kWindowBase - (2 - p.gpb) + (p.taps - 1) * std::abs(p.tap_step))
                << what;
          }
        }
  EXPECT_GT(positions, 20);
}

TEST(Plan, ForcedVariantsAreHonouredOrFallBack) {
  const ConvShape s = peer_testing::all_stages(96)[0].shape; // up0: 96 iterations
  const Plan p = plan(s, Math::tf32, kDevice, {1, 192, 5, 0});
  EXPECT_EQ(p.along, Along::rows);
  EXPECT_EQ(p.n, 192);
  EXPECT_EQ(p.split, 5);
  EXPECT_EQ(p.iters_per_rank, 20);
  const Plan x3 = plan(s, Math::f32x3, kDevice, {1, 256, 1, 0}); // f32x3 has no 256-column tile
  EXPECT_LE(x3.n, 128);
  ConvShape post = convbench::testing::amp_shape(1, 7, 1, 300);
  post.cin = 8; // one chunk x 7 taps: 7 iterations, a split of 8 would leave a rank empty
  const Plan q = plan(post, Math::tf32, kDevice, {1, 0, 8, 0});
  EXPECT_TRUE(ranks_nonempty(q.iters, q.split));
  EXPECT_LT(q.split, 8);
  // up5 of the 512x model: 24 output channels, stride 2, both deltas in one block of 24 rows each.
  const ConvShape up5 = peer_testing::all_stages(96)[5].shape;
  const Plan r = plan(up5, Math::tf32, kDevice, {2, 24, 0, 2});
  EXPECT_EQ(r.along, Along::positions);
  EXPECT_EQ(r.gpb, 2);
  EXPECT_EQ(r.n, 24);
  EXPECT_EQ(r.row_tiles, 1);
  EXPECT_EQ(tile_channels(r, tile_of(r, 0)), 24);
  EXPECT_EQ(cells_per_channel(r, tile_of(r, 0)), kPm * 2); // both phases of 128 positions
  // No positions-on-M kernel for an input whose rows are not 16-byte aligned (l_in % 4 != 0).
  ConvShape odd = up5;
  odd.l_in = 97;
  EXPECT_EQ(plan(odd, Math::tf32, kDevice, {2, 24, 0, 2}).along, Along::rows);
}

// Measured: the tile sweep (scripts/device/steps/tune.sh) of cuda-f32x3 on the 512x model at 96
// frames, on an H100: up0 with positions on M (the earlier model's pick, m64n32 both groups)
// 149 us, rows on M n96 split 2 71 us; up1 positions on M n96 67 us, rows on M n96 55 us. The
// model now charges f32x3's fragments 3x and each extra split rank; with the earlier constants
// (fragments 2x, no split or overlap term) this test failed on up0 (positions on M, n48).
TEST(Plan, ShortStagesOfF32x3TakeRowsOnM) {
  for (int i : {0, 1}) {
    const ConvShape s = peer_testing::all_stages(96)[size_t(i)].shape;
    const Plan p = plan(s, Math::f32x3, kDevice);
    EXPECT_EQ(p.along, Along::rows) << "up" << i << ": " << kernel_name(p);
    EXPECT_EQ(p.n, 96) << "up" << i << ": " << kernel_name(p);
    EXPECT_LE(p.split, 2) << "up" << i << ": " << kernel_name(p);
  }
}

TEST(Plan, RefusesWhatTheKernelsDoNotTake) {
  ConvShape s = convbench::testing::amp_shape(8, 3, 1, 20);
  s.stride = 2;
  EXPECT_NE(unsupported_reason(s).find("stride 1"), std::string::npos);
  ConvShape t = peer_testing::all_stages(1)[0].shape;
  t.dilation = 2;
  t.padding = 0;
  EXPECT_NE(unsupported_reason(t).find("dilation 1"), std::string::npos);
  t.dilation = 1;
  t.stride = 65;
  t.k = 130;
  EXPECT_NE(unsupported_reason(t).find("at most 64"), std::string::npos);
  t = peer_testing::all_stages(1)[0].shape;
  t.cin = 0;
  EXPECT_NE(unsupported_reason(t).find("invalid shape"), std::string::npos);
}

} // namespace
} // namespace convbench::tc::wg
