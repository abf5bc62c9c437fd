// Runs the fast kernels' tile code (src/polyphase_tile.hpp, the same functions the device kernel
// calls) on the host, block by block and barrier phase by barrier phase, and holds it to the
// contracts: f64 bitwise equal to conv_cpu_f64, f32 within the stated bound, the width probe.
// This checks the index mapping, the edges and the f64 addition order without a GPU; the device
// run of the same gates is fast_gpu_test.cpp.
//
// Teeth, planted once each while writing this test:
//  - j loop in compute() made ascending (t descending): both cancellation tests failed; the
//    random-shape gates did not see it (random data rarely rounds differently).
//  - c (the per-phase q offset) forced to 0: the binary crashed (negative output index).
//  - the x window read one column to the right: 5 of 6 tests failed.
//  - the x == 0 skip removed: F64SkipsZeroInputsAgainstInfiniteWeights failed (NaN cells); the
//    other gates cannot see it, since with finite weights the skip never changes a bit.
// Every gate runs for every compiled block configuration (fast_configs()):
//  - t_base one column right in the 32-cell config only (t128-c32-k16-u8): all 6 f64/f32 gates
//    failed, each naming t128-c32-k16-u8 and no other config.
//  - channels descending inside a chunk in t128-c16-k32-u16 only: both cancellation tests
//    failed naming it; the random-shape gates did not see it (as with the j-order plant).
//  - the cluster reduction dropping the last rank's partial (r < split - 1): F32WithinBound
//    failed on the first split config (t256-c64-k8-u16-r8-s2).
//  - cp.async staging, both seen failing F32WithinBound: an edge element whose t is
//    past the row marked with row kBk, which a full chunk's "row < channels left" let through
//    (a real bug while writing it: t128-c32-k16-u16-r8-a3, cin 38, l_in 63, the last 4 output
//    positions wrong); async_schedule copying chunk i + 2 into the buffer chunk i computes from
//    (t256-c64-k16-u16-r8-b2-a3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "configs.hpp"
#include "convbench/cpu_conv.hpp"
#include "convbench/fast_conv.hpp"
#include "fast_support.hpp"
#include "fast_test_problems.hpp"
#include "plan.hpp"
#include "polyphase_tile.hpp"

namespace convbench::fast {
namespace {

using detail::Plan;
using peer_testing::differing_cells;
using peer_testing::Problem;

// The kernel's register-staged chunk loop (chunks_through_registers), phase by phase.
template <class TL>
void emulate_register_chunks(const Plan &P, const typename TL::Block &blk,
                             const std::vector<typename TL::Cursor> &cur, const float *x,
                             const float *w, typename TL::Smem *sm,
                             std::vector<typename TL::Loads> &st,
                             std::vector<typename TL::Acc> &acc) {
  using T = typename TL::Value;
  using C = typename TL::Cfg;
  constexpr int kThreads = C::kThreads;
  for (int t = 0; t < kThreads; ++t)
    TL::load_chunk(P, blk, cur[size_t(t)], blk.chunk0 * C::kBk, t, x, w, st[size_t(t)]);
  // __syncthreads_or of the device kernel: any thread's staged weights non-finite.
  auto any_nonfinite = [&] {
    bool any = false;
    for (int t = 0; t < kThreads; ++t)
      any |= TL::nonfinite_weights(st[size_t(t)]);
    return any && sizeof(T) == sizeof(double);
  };
  for (int t = 0; t < kThreads; ++t)
    TL::store_smem(t, st[size_t(t)], sm[0]);
  bool skip = any_nonfinite();
  int buf = 0;
  for (int64_t chunk = blk.chunk0; chunk < blk.chunk1; ++chunk) {
    const bool more = chunk + 1 < blk.chunk1;
    if (more)
      for (int t = 0; t < kThreads; ++t)
        TL::load_chunk(P, blk, cur[size_t(t)], (chunk + 1) * C::kBk, t, x, w, st[size_t(t)]);
    for (int t = 0; t < kThreads; ++t) {
      if (skip)
        TL::template compute<true>(t, sm[buf], acc[size_t(t)]);
      else
        TL::template compute<false>(t, sm[buf], acc[size_t(t)]);
    }
    if (more) {
      for (int t = 0; t < kThreads; ++t)
        TL::store_smem(t, st[size_t(t)], sm[buf ^ 1]);
      skip = any_nonfinite();
      buf ^= 1;
    }
  }
}

// The kernel's cp.async schedule (Tile::async_schedule, the code chunks_async runs), phase by
// phase: each copy and each compute runs for every thread before the next phase. The copies
// happen at once here, so a copy into the buffer being computed, or a chunk computed from the
// wrong buffer, changes the output and fails the gates.
template <class TL>
void emulate_async_chunks(const Plan &P, const typename TL::Block &blk,
                          const std::vector<typename TL::AsyncCursor> &cur, const float *x,
                          const float *w, typename TL::Smem *sm,
                          std::vector<typename TL::Acc> &acc) {
  using C = typename TL::Cfg;
  struct Host {
    const Plan &P;
    const typename TL::Block &blk;
    const std::vector<typename TL::AsyncCursor> &cur;
    const float *x, *w;
    typename TL::Smem *sm;
    std::vector<typename TL::Acc> &acc;
    void copy(int i, int b, bool real) {
      if (real)
        for (int t = 0; t < C::kThreads; ++t)
          TL::copy_chunk_async(P, blk, cur[size_t(t)], (blk.chunk0 + i) * C::kBk, t, x, w, sm[b]);
    }
    void wait_for(int) {}
    void compute(int b) {
      for (int t = 0; t < C::kThreads; ++t)
        TL::template compute<false>(t, sm[b], acc[size_t(t)]);
    }
  };
  TL::async_schedule(static_cast<int>(blk.chunk1 - blk.chunk0), Host{P, blk, cur, x, w, sm, acc});
}

template <typename T, int M, int TR, class C>
void emulate_tiles(const Plan &P, const float *x, const float *w, const float *b, float *y) {
  using TL = detail::Tile<T, M, TR, true, C>;
  constexpr int kThreads = C::kThreads;
  // The device kernel's shared-memory buffers: two (chunk c computes from sm[c % 2]), or kBuffers
  // for the cp.async configs (chunk c from sm[c % kBuffers]).
  constexpr int kBuffers = C::kBuffers > 0 ? C::kBuffers : 2;
  auto sm = std::make_unique<typename TL::Smem[]>(kBuffers);
  std::vector<typename TL::Loads> st(kThreads);
  std::vector<typename TL::Acc> acc(kThreads);
  // Split (f32): one cluster's ranks run one after another; their partial tiles are then added
  // by reduce_store exactly as the device's ranks do through distributed shared memory.
  std::vector<std::vector<T>> partial(size_t(P.split),
                                      std::vector<T>(size_t(kThreads * C::kCells)));
  for (int64_t b_item = 0; b_item < P.batch; ++b_item)
    for (int64_t by = 0; by < P.oc_tiles; ++by)
      for (int64_t bx = 0; bx < P.groups * P.u_tiles; ++bx) {
        for (int sp = 0; sp < P.split; ++sp) {
          const auto blk = TL::block_coords(P, bx, by, b_item * P.split + sp);
          // Poison shared memory per block, so a read of a slot no thread wrote shows up.
          std::fill_n(reinterpret_cast<unsigned char *>(sm.get()), kBuffers * sizeof(sm[0]), 0xFF);
          for (int t = 0; t < kThreads; ++t)
            TL::zero(acc[t]);
          if constexpr (C::kBuffers > 0) {
            std::vector<typename TL::AsyncCursor> cur;
            for (int t = 0; t < kThreads; ++t)
              cur.push_back(TL::make_async_cursor(P, blk, t));
            emulate_async_chunks<TL>(P, blk, cur, x, w, sm.get(), acc);
          } else {
            std::vector<typename TL::Cursor> cur;
            for (int t = 0; t < kThreads; ++t)
              cur.push_back(TL::make_cursor(P, blk, t));
            emulate_register_chunks<TL>(P, blk, cur, x, w, sm.get(), st, acc);
          }
          if (P.split == 1) {
            for (int t = 0; t < kThreads; ++t)
              TL::store_output(P, blk, t, acc[t], b, y);
          } else {
            // Poisoned first: a cell the partial store misses shows up as NaN.
            std::fill(partial[size_t(sp)].begin(), partial[size_t(sp)].end(),
                      std::numeric_limits<T>::quiet_NaN());
            for (int t = 0; t < kThreads; ++t)
              TL::store_partial(t, acc[t], partial[size_t(sp)].data());
          }
        }
        if (P.split > 1)
          for (int sp = 0; sp < P.split; ++sp) {
            const auto blk = TL::block_coords(P, bx, by, b_item * P.split + sp);
            for (int t = 0; t < kThreads; ++t)
              TL::reduce_store(
                  P, blk, t, [&](int r) -> const T * { return partial[size_t(r)].data(); }, b, y);
          }
      }
}

template <typename T, int M, class C>
void emulate_m(const Plan &P, const float *x, const float *w, const float *b, float *y) {
  switch (P.tr) {
  case 4:
    return emulate_tiles<T, M, 4, C>(P, x, w, b, y);
  case 2:
    return emulate_tiles<T, M, 2, C>(P, x, w, b, y);
  default:
    return emulate_tiles<T, M, 1, C>(P, x, w, b, y);
  }
}

// The host twin of launch_fast_f32 / launch_fast_f64 with block configuration `cfg`: the same
// refusal (fast_config_unsupported_reason), the same instantiations (the default for every M,
// the others for M == 2 only). Output starts as NaN: every cell must be written.
template <typename T>
std::vector<float> emulate(const Problem &pr, const FastConfig &cfg = default_fast_config()) {
  const std::string why =
      fast_config_unsupported_reason(pr.shape, cfg, sizeof(T) == sizeof(double));
  if (!why.empty())
    throw std::invalid_argument(why);
  const Plan P = detail::make_plan(pr.shape, cfg);
  std::vector<float> y(static_cast<size_t>(pr.shape.output_elems()),
                       std::numeric_limits<float>::quiet_NaN());
  const float *b = pr.bias();
  const float *x = pr.x.data(), *w = pr.w.data();
  detail::with_config(cfg, [&](auto c) {
    using C = decltype(c);
    if constexpr (C::kBuffers > 0 && !std::is_same_v<T, float>) {
      return; // an f32-only cp.async config: refused above for f64
    } else if constexpr (std::is_same_v<C, detail::DefaultConfig>) {
      switch (P.m) {
      case 1:
        return emulate_m<T, 1, C>(P, x, w, b, y.data());
      case 2:
        return emulate_m<T, 2, C>(P, x, w, b, y.data());
      case 3:
        return emulate_m<T, 3, C>(P, x, w, b, y.data());
      default:
        return emulate_m<T, 4, C>(P, x, w, b, y.data());
      }
    } else {
      emulate_m<T, 2, C>(P, x, w, b, y.data());
    }
  });
  return y;
}

using convbench::testing::reference_f64;

using fast_testing::channel_cancellation_problem;
using fast_testing::describe;
using fast_testing::infinite_weight_problem;
using fast_testing::kEmulationLimits;
using fast_testing::tap_order_problem;

ConvShape random_supported_shape(std::mt19937_64 &rng,
                                 const FastConfig &cfg = default_fast_config()) {
  return fast_testing::random_supported_shape(rng, kEmulationLimits, cfg);
}

TEST(FastEmulation, SupportCoversEveryVocoderStageAndRefusesForward) {
  int checked = 0;
  for (const auto &st : peer_testing::all_stages(96)) {
    EXPECT_TRUE(fast_supported(st.shape, true)) << st.model << " " << st.name;
    ++checked;
  }
  EXPECT_EQ(checked, 6 + 6 + 4);
  ConvShape fwd = peer_testing::all_stages(96).front().shape;
  fwd.op = ConvOp::forward;
  fwd.cin = 768;
  fwd.cout = 768;
  fwd.k = 3;
  fwd.stride = 1;
  fwd.padding = 1;
  EXPECT_FALSE(fast_supported(fwd, true));
  ConvShape dil = peer_testing::all_stages(96).front().shape;
  dil.dilation = 2;
  EXPECT_FALSE(fast_supported(dil, true));
  ConvShape odd_k = peer_testing::all_stages(96).front().shape;
  odd_k.k = 15;
  EXPECT_FALSE(fast_supported(odd_k, false));
  EXPECT_THROW(launch_fast_f32(fwd, nullptr, nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
}

// Every compiled block configuration (the sweep's candidates) keeps the contract.
TEST(FastEmulation, F64BitwiseEqualToReferenceOnRandomSupportedShapes) {
  int cases = 0;
  for (const FastConfig &cfg : fast_configs()) {
    std::mt19937_64 rng(20261129);
    for (int i = 0; i < 120; ++i) {
      const ConvShape s = random_supported_shape(rng, cfg);
      const Problem pr = peer_testing::random_problem(s, 1000 + i);
      const auto ref = reference_f64(pr);
      const auto got = emulate<double>(pr, cfg);
      ASSERT_EQ(differing_cells(got, ref), 0) << cfg.name() << ": " << describe(s);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 120 * static_cast<int>(fast_configs().size()));
}

TEST(FastEmulation, ConfigsAreTheDocumentedSetDefaultFirst) {
  const auto cfgs = fast_configs();
  ASSERT_EQ(cfgs.size(), 19u);
  EXPECT_EQ(cfgs.front(), default_fast_config());
  EXPECT_EQ(cfgs.front().name(), "t64-c16-k16-u8"); // launch_conv's kernel, unchanged
  ConvShape up0 = peer_testing::all_stages(96).front().shape;
  for (const auto &cfg : cfgs) {
    EXPECT_EQ(fast_config_unsupported_reason(up0, cfg), "") << cfg.name();
    // Issued MACs cover the valid ones (tile remainders add, never drop).
    EXPECT_GE(fast_issued_macs(up0, cfg), up0.valid_macs()) << cfg.name();
  }
  ConvShape m3 = up0;
  m3.k = 3 * m3.stride;
  EXPECT_EQ(fast_config_unsupported_reason(m3, cfgs.front()), "");
  EXPECT_NE(fast_config_unsupported_reason(m3, cfgs.back()), "");
  EXPECT_THROW(emulate<double>(peer_testing::random_problem(m3, 1), cfgs.back()),
               std::invalid_argument);
  FastConfig odd{96, 16, 16, 8};
  EXPECT_NE(fast_config_unsupported_reason(up0, odd).find("not compiled"), std::string::npos);
}

// The thread layout of every compiled block: each thread owns one (oc-group, u-group), all of
// them covered (the bitwise tests would also see a hole: their output starts as NaN); every
// block but the row-major controls is laid out in warp tiles, whose 32 lanes span kWarpU
// consecutive u-groups (one shared-memory wavefront per x read in f32) x kWarpO oc-groups.
// Planted faults seen failing: og_of without the warp's oc offset (holes and doubles); the warp
// tile's kWarpU condition inverted (every block row-major).
TEST(FastEmulation, ThreadLayoutCoversTheTileInWarpTiles) {
  std::apply(
      [](auto... cs) {
        (
            [&](auto c) {
              using C = decltype(c);
              const std::string name = detail::runtime_config<C>().name();
              std::vector<int> owner(size_t(C::kThreads), -1);
              for (int tid = 0; tid < C::kThreads; ++tid) {
                const int ug = C::ug_of(tid), og = C::og_of(tid);
                ASSERT_TRUE(ug >= 0 && ug < C::kUg && og >= 0 && og < C::kOg) << name << " " << tid;
                int &o = owner[size_t(og * C::kUg + ug)];
                EXPECT_EQ(o, -1) << name << ": (og " << og << ", ug " << ug << ") owned twice";
                o = tid;
              }
              EXPECT_EQ(C::kWarpU == 0, C::kRowMajor) << name;
              EXPECT_EQ(name.find("-rm") != std::string::npos, C::kRowMajor) << name;
              if constexpr (C::kWarpU != 0)
                for (int warp = 0; warp < C::kThreads / 32; ++warp) {
                  std::set<int> us, os;
                  for (int lane = 0; lane < 32; ++lane) {
                    us.insert(C::ug_of(warp * 32 + lane));
                    os.insert(C::og_of(warp * 32 + lane));
                  }
                  EXPECT_EQ(int(us.size()), C::kWarpU) << name;
                  EXPECT_EQ(*us.rbegin() - *us.begin(), C::kWarpU - 1)
                      << name << ": not consecutive";
                  EXPECT_EQ(int(os.size()), C::kWarpO) << name;
                }
            }(cs),
            ...);
      },
      detail::AllConfigs{});
}

// The vocoder stages with their strides, kernels and paddings, channels cut by 16 and 5 frames,
// so the host emulation stays fast; the full shapes run in fast_gpu_test.
TEST(FastEmulation, F64BitwiseEqualOnScaledVocoderStages) {
  int cases = 0;
  for (const FastConfig &cfg : fast_configs())
    for (auto st : peer_testing::all_stages(5)) {
      st.shape.cin = std::max<int64_t>(1, st.shape.cin / 16 + 3); // + 3: not a tile multiple
      st.shape.cout = std::max<int64_t>(1, st.shape.cout / 16 + 1);
      if (st.shape.l_in > 700)
        continue; // the late stages add nothing new at this size
      const Problem pr = peer_testing::random_problem(st.shape, 7);
      ASSERT_EQ(differing_cells(emulate<double>(pr, cfg), reference_f64(pr)), 0)
          << cfg.name() << " " << st.model << " " << st.name << ": " << describe(st.shape);
      ++cases;
    }
  EXPECT_GE(cases, 10 * static_cast<int>(fast_configs().size()));
}

// The gate's teeth on an order change: with a +2^40 / -2^40 pair of channels, summing the
// channels in reverse moves cells; the emulated kernel must still match exactly.
TEST(FastEmulation, F64KeepsOrderUnderCatastrophicCancellation) {
  const Problem pr = channel_cancellation_problem();
  const ConvShape &s = pr.shape;
  const auto ref = reference_f64(pr);
  // Reversed input-channel order through the same reference: the problem must be able to tell.
  Problem rev = pr;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t ic = 0; ic < s.cin; ++ic)
      std::copy_n(pr.x.begin() + (b * s.cin + ic) * s.l_in, s.l_in,
                  rev.x.begin() + (b * s.cin + (s.cin - 1 - ic)) * s.l_in);
  for (int64_t ic = 0; ic < s.cin; ++ic)
    std::copy_n(pr.w.begin() + ic * s.cout * s.k, s.cout * s.k,
                rev.w.begin() + (s.cin - 1 - ic) * s.cout * s.k);
  const int64_t moved = differing_cells(reference_f64(rev), ref);
  EXPECT_GT(moved, 0) << "the cancellation problem cannot see an order change";
  for (const FastConfig &cfg : fast_configs())
    EXPECT_EQ(differing_cells(emulate<double>(pr, cfg), ref), 0) << cfg.name();
}

// Per cell the reference adds (ic, t) with t ascending. One channel holds a +2^40 / -2^40 pair
// of taps over a constant input row, so two taps into the same cell cancel; the order of that
// pair decides on which grid (2^-12 or 2^-13) the small earlier sum is rounded.
std::vector<float> naive_f64(const Problem &pr, bool t_descending) {
  const ConvShape &s = pr.shape;
  const int64_t lo = s.l_out();
  std::vector<float> y(size_t(s.output_elems()));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t oc = 0; oc < s.cout; ++oc)
      for (int64_t p = 0; p < lo; ++p) {
        double acc = 0.0;
        for (int64_t ic = 0; ic < s.cin; ++ic)
          for (int64_t n = 0; n < s.l_in; ++n) {
            const int64_t t = t_descending ? s.l_in - 1 - n : n;
            const int64_t k = p + s.padding - t * s.stride;
            const float xv = pr.x[size_t((b * s.cin + ic) * s.l_in + t)];
            if (k < 0 || k >= s.k || xv == 0.0f)
              continue;
            acc += double(xv) * double(pr.w[size_t((ic * s.cout + oc) * s.k + k)]);
          }
        if (s.bias)
          acc += double(pr.b[size_t(oc)]);
        y[size_t((b * s.cout + oc) * lo + p)] = float(acc);
      }
  return y;
}

TEST(FastEmulation, F64KeepsTapOrderUnderCancellation) {
  const Problem pr = tap_order_problem();
  const auto ref = reference_f64(pr);
  ASSERT_EQ(differing_cells(naive_f64(pr, false), ref), 0) << "naive twin disagrees";
  EXPECT_GT(differing_cells(naive_f64(pr, true), ref), 0) << "the problem cannot see tap order";
  for (const FastConfig &cfg : fast_configs())
    EXPECT_EQ(differing_cells(emulate<double>(pr, cfg), ref), 0) << cfg.name();
}

// A channel whose inputs are all 0 while its weights are infinite: the reference skips those
// taps (finite output); a kernel that multiplied 0 * inf would write NaN.
TEST(FastEmulation, F64SkipsZeroInputsAgainstInfiniteWeights) {
  const Problem pr = infinite_weight_problem();
  const auto ref = reference_f64(pr);
  ASSERT_EQ(peer_testing::nan_cells(ref), 0);
  for (const FastConfig &cfg : fast_configs())
    EXPECT_EQ(differing_cells(emulate<double>(pr, cfg), ref), 0) << cfg.name();
}

// Every f32 candidate, the cluster splits included (their partial tiles added in rank order).
TEST(FastEmulation, F32WithinBoundOfReference) {
  int cases = 0;
  for (const FastConfig &cfg : fast_f32_configs()) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 60; ++i) {
      const ConvShape s = random_supported_shape(rng, cfg);
      const Problem pr = peer_testing::random_problem(s, 500 + i);
      const double err = peer_testing::relative_l2(emulate<float>(pr, cfg), reference_f64(pr));
      ASSERT_LT(err, peer_testing::kF32RelativeL2Bound) << cfg.name() << ": " << describe(s);
      ++cases; // NaN (an unwritten cell) fails the bound too
    }
  }
  EXPECT_EQ(cases, 60 * static_cast<int>(fast_f32_configs().size()));
}

// The split is an f32-only device: f64 refuses it (its order is the contract), and only the
// cluster sizes the reduction divides evenly are accepted.
TEST(FastEmulation, SplitIsF32OnlyAndPortableClusterSizes) {
  const ConvShape up0 = peer_testing::all_stages(96).front().shape;
  int splits = 0;
  for (const FastConfig &cfg : fast_f32_configs()) {
    if (cfg.split == 1)
      continue;
    ++splits;
    EXPECT_EQ(fast_config_unsupported_reason(up0, cfg, false), "") << cfg.name();
    EXPECT_NE(fast_config_unsupported_reason(up0, cfg, true).find("f32 only"), std::string::npos)
        << cfg.name();
    EXPECT_EQ(fast_issued_macs(up0, cfg), fast_issued_macs(up0, cfg.block())) << cfg.name();
  }
  EXPECT_GE(splits, 3);
  FastConfig three = default_fast_config(); // 64 x 16 = 1024 cells: 3 does not divide them
  three.split = 3;
  EXPECT_NE(fast_config_unsupported_reason(up0, three, false), "");
  FastConfig sixteen = three;
  sixteen.split = 16;
  EXPECT_NE(fast_config_unsupported_reason(up0, sixteen, false), "");
}

// launch_conv's configuration: every vocoder stage at the sweep's frame counts is in the tuning
// table for each arm (a table row naming a config that is not compiled, or a stage shape that
// bench_conv builds differently, falls back silently -- this catches it: planted once by
// renaming a row's config to t96: that case failed, naming the stage); other shapes
// get a compiled, supported config; the table's configs include splits only for f32.
TEST(FastEmulation, ChosenConfigIsTunedForEveryVocoderStageAndSupportedElsewhere) {
  int cases = 0, not_default = 0;
  for (int64_t frames : {96, 384, 1536})
    for (const auto &st : peer_testing::all_stages(frames))
      for (int arm = 0; arm < 3; ++arm) {
        const bool f64 = arm > 0, fused = arm == 2;
        bool tuned = false;
        const FastConfig c = choose_fast_config(st.shape, f64, fused, &tuned);
        EXPECT_TRUE(tuned) << st.model << " " << st.name << " " << frames << " arm " << arm;
        EXPECT_EQ(fast_config_unsupported_reason(st.shape, c, f64), "") << c.name();
        not_default += !(c == default_fast_config());
        ++cases;
      }
  EXPECT_EQ(cases, 3 * 16 * 3);
  EXPECT_GT(not_default, cases / 2);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    const ConvShape s = random_supported_shape(rng);
    for (int arm = 0; arm < 3; ++arm) {
      bool tuned = true;
      const FastConfig c = choose_fast_config(s, arm > 0, arm == 2, &tuned);
      EXPECT_FALSE(tuned);
      EXPECT_EQ(fast_config_unsupported_reason(s, c, arm > 0), "") << c.name() << describe(s);
    }
  }
}

// A stage at a length the sweep did not time gets the table's row for the same channels, kernel,
// stride and padding at the nearest swept length (log scale; the 256x and 512x models share
// stage shapes at different lengths). Planted fault seen failing: the geomean fallback for every
// untuned shape (the cases whose nearest row differs from it failed).
TEST(FastEmulation, UnsweptLengthsTakeTheNearestSweptRowOfTheirStage) {
  std::vector<peer_testing::Stage> swept;
  for (int64_t f : {96, 384, 1536})
    for (const auto &st : peer_testing::all_stages(f))
      swept.push_back(st);
  auto same_stage = [](const ConvShape &a, const ConvShape &b) {
    return a.cin == b.cin && a.cout == b.cout && a.k == b.k && a.stride == b.stride &&
           a.padding == b.padding;
  };
  int checked = 0, differs_from_fallback = 0;
  for (int64_t frames : {60, 200, 1000})
    for (const auto &st : peer_testing::all_stages(frames)) {
      const ConvShape *near = nullptr;
      double best = 0, second = 1e9;
      for (const auto &sw : swept)
        if (same_stage(sw.shape, st.shape)) {
          const double d = std::fabs(std::log(double(sw.shape.l_in) / double(st.shape.l_in)));
          if (!near || d < best) {
            second = near ? best : second;
            near = &sw.shape;
            best = d;
          } else {
            second = std::min(second, d);
          }
        }
      ASSERT_NE(near, nullptr) << st.name;
      if (second - best < 1e-9)
        continue; // a tie: either row is right
      for (int arm = 0; arm < 3; ++arm) {
        bool tuned = true;
        const FastConfig c = choose_fast_config(st.shape, arm > 0, arm == 2, &tuned);
        const FastConfig want = choose_fast_config(*near, arm > 0, arm == 2);
        EXPECT_FALSE(tuned);
        EXPECT_EQ(c.name(), want.name()) << st.model << " " << st.name << " " << frames;
        ConvShape other = st.shape;
        other.cin += 1; // not a stage of the table: the geomean fallback
        differs_from_fallback += !(want == choose_fast_config(other, arm > 0, arm == 2));
        ++checked;
      }
    }
  EXPECT_GT(checked, 3 * 16);
  EXPECT_GT(differs_from_fallback, 0); // else this test could not tell the two apart
}

TEST(FastEmulation, WidthProbeF32GivesZeroF64GivesTwoPointFive) {
  const Problem pr = peer_testing::width_probe();
  ASSERT_TRUE(fast_supported(pr.shape, false));
  EXPECT_EQ(emulate<float>(pr).at(0), 0.0f);
  EXPECT_EQ(emulate<double>(pr).at(0), peer_testing::width_probe_f64());
  EXPECT_NEAR(peer_testing::width_probe_f64(), 2.5f, 1e-6f);
}

} // namespace
} // namespace convbench::fast
