// Device gates of the fast kernels (label "gpu"): cuda-f64 fast bitwise equal to conv_cpu_f64 on
// every transposed stage of the three model families at 96 frames and on random supported
// shapes; cuda-f32 fast within the stated bound and the width probe at exactly 0.0; every
// output cell written (NaN poison before each launch). Without a GPU each test SKIPS with the
// reason. The host twin of these gates (fast_emulation_test.cpp) runs the same tile code on CI
// and records the planted faults it catches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "convbench/cpu_conv.hpp"
#include "convbench/cuda_conv.hpp"
#include "convbench/fast_conv.hpp"
#include "device_support.hpp"
#include "fast_support.hpp"
#include "fast_test_problems.hpp"

namespace convbench::fast {
namespace {

using peer_testing::DeviceFloats;
using peer_testing::differing_cells;
using peer_testing::nan_cells;
using peer_testing::Problem;

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!convbench::cuda::device_available(&why))                                                  \
      GTEST_SKIP() << "no usable GPU, fast kernels not run: " << why;                              \
  } while (0)

using convbench::testing::reference_f64;
using convbench::testing::sanitizer_small;

// Uploads, poisons the output with NaN, launches once, downloads. fused: the cuda-f64-fma
// variant (one __fma_rn per tap) instead of __dmul_rn + __dadd_rn.
std::vector<float> run_fast_once(const Problem &pr, bool f64, bool fused) {
  peer_testing::Stream st;
  DeviceFloats x(pr.x), w(pr.w), b(pr.shape.bias ? pr.b : std::vector<float>{0.0f});
  DeviceFloats y(static_cast<size_t>(pr.shape.output_elems()));
  y.poison(st.get());
  if (f64)
    launch_fast_f64(pr.shape, x.get(), w.get(), b.get(), y.get(), st.get(), fused);
  else
    launch_fast_f32(pr.shape, x.get(), w.get(), b.get(), y.get(), st.get());
  st.sync();
  return y.download();
}

// f64: runs both f64 variants, which must agree bit for bit (the product of two f32 values is
// exact in f64, so fma == dmul then dadd), and returns the dmul+dadd one. Every f64 gate below
// therefore holds for cuda-f64 and cuda-f64-fma alike.
std::vector<float> run_fast(const Problem &pr, bool f64) {
  std::vector<float> y = run_fast_once(pr, f64, false);
  if (f64) {
    const auto fused = run_fast_once(pr, true, true);
    EXPECT_EQ(differing_cells(fused, y), 0) << "cuda-f64-fma differs from cuda-f64";
  }
  return y;
}

using fast_testing::channel_cancellation_problem;
using fast_testing::describe;
using fast_testing::infinite_weight_problem;
using fast_testing::kDeviceLimits;
using fast_testing::tap_order_problem;

ConvShape random_supported_shape(std::mt19937_64 &rng) {
  return fast_testing::random_supported_shape(rng, kDeviceLimits);
}

TEST(FastGpu, F64BitwiseEqualOnEveryVocoderStageAt96Frames) {
  SKIP_WITHOUT_GPU();
  int cases = 0;
  for (const auto &st : peer_testing::all_stages(96)) {
    const Problem pr = peer_testing::random_problem(st.shape, 42);
    const auto ref = reference_f64(pr);
    const auto got = run_fast(pr, true);
    ASSERT_EQ(nan_cells(got), 0) << st.model << " " << st.name << ": cells left unwritten";
    ASSERT_EQ(differing_cells(got, ref), 0) << st.model << " " << st.name;
    ++cases;
  }
  EXPECT_EQ(cases, 16);
}

// Uploads, poisons, launches block configuration `cfg` once, downloads.
std::vector<float> run_config_once(const Problem &pr, const FastConfig &cfg, bool f64, bool fused) {
  peer_testing::Stream st;
  DeviceFloats x(pr.x), w(pr.w), b(pr.shape.bias ? pr.b : std::vector<float>{0.0f});
  DeviceFloats y(static_cast<size_t>(pr.shape.output_elems()));
  y.poison(st.get());
  if (f64)
    launch_fast_f64(pr.shape, x.get(), w.get(), b.get(), y.get(), st.get(), fused, cfg);
  else
    launch_fast_f32(pr.shape, x.get(), w.get(), b.get(), y.get(), st.get(), cfg);
  st.sync();
  return y.download();
}

// Every compiled block configuration (the sweep's candidates, fast_configs()) on every stage at
// 96 frames: f64 dmul+dadd and f64 fma bitwise equal to cpu-f64, f32 within the bound. The
// emulation test records the per-config faults this gate's host twin caught.
TEST(FastGpu, EveryConfigKeepsTheContractsOnEveryVocoderStageAt96Frames) {
  SKIP_WITHOUT_GPU();
  int cases = 0;
  for (const auto &st : peer_testing::all_stages(96)) {
    const Problem pr = peer_testing::random_problem(st.shape, 44);
    const auto ref = reference_f64(pr);
    for (const FastConfig &cfg : fast_configs()) {
      const std::string where = cfg.name() + " " + st.model + " " + st.name;
      for (bool fused : {false, true}) {
        const auto got = run_config_once(pr, cfg, true, fused);
        ASSERT_EQ(nan_cells(got), 0) << where << (fused ? " f64-fma" : " f64") << ": unwritten";
        ASSERT_EQ(differing_cells(got, ref), 0) << where << (fused ? " f64-fma" : " f64");
      }
      const auto got32 = run_config_once(pr, cfg, false, true);
      ASSERT_EQ(nan_cells(got32), 0) << where << " f32: unwritten";
      EXPECT_LT(peer_testing::relative_l2(got32, ref), peer_testing::kF32RelativeL2Bound)
          << where << " f32";
      ++cases;
    }
  }
  EXPECT_EQ(cases, 16 * static_cast<int>(fast_configs().size()));
}

// The f32 candidates that `pick` selects (fast_f32_configs()) against cpu-f64 within the f32
// bound, every output cell written. Splits: one that dropped a rank's partial, or read a rank's
// shared memory after it exited, fails here (the emulation test's twin failed on a dropped last
// rank). cp.async staging: the emulation test runs the same schedule (Tile::async_schedule) on
// the host, where a copy into the buffer being computed and an edge element past the row copied
// as data were seen failing; here the device's own ordering (wait_group, barrier) is checked.
template <class Pick>
void expect_f32_within_bound(const std::vector<Problem> &problems, int min_cases, Pick pick) {
  int cases = 0;
  for (const Problem &pr : problems) {
    const auto ref = reference_f64(pr);
    for (const FastConfig &cfg : fast_f32_configs()) {
      if (!pick(cfg))
        continue;
      const auto got = run_config_once(pr, cfg, false, true);
      ASSERT_EQ(nan_cells(got), 0) << cfg.name() << ": unwritten " << describe(pr.shape);
      EXPECT_LT(peer_testing::relative_l2(got, ref), peer_testing::kF32RelativeL2Bound)
          << cfg.name() << " " << describe(pr.shape);
      ++cases;
    }
  }
  EXPECT_GE(cases, min_cases);
}
bool is_split(const FastConfig &c) { return c.split != 1; }
bool is_async(const FastConfig &c) { return c.buffers != 0; }

// Every vocoder stage at 1 and 96 frames, inputs from `seed`.
std::vector<Problem> vocoder_problems(uint64_t seed) {
  std::vector<Problem> problems;
  for (int64_t frames : {1, 96})
    for (const auto &st : peer_testing::all_stages(frames))
      problems.push_back(peer_testing::random_problem(st.shape, seed));
  return problems;
}
// `count` small random shapes that `cfg` supports (every non-default config is compiled for
// M == 2 only, so they keep K == 2 * stride), drawn from rng_seed, inputs from seed0 + i.
std::vector<Problem> small_problems(uint64_t rng_seed, const FastConfig &cfg, uint64_t seed0,
                                    int count = 12) {
  std::vector<Problem> problems;
  std::mt19937_64 rng(rng_seed);
  for (int i = 0; i < count; ++i)
    problems.push_back(peer_testing::random_problem(
        fast_testing::random_supported_shape(rng, {3, 300, 150, 200}, cfg), seed0 + i));
  return problems;
}

TEST(FastGpu, F32ClusterSplitsKeepTheBoundOnEveryVocoderStage) {
  SKIP_WITHOUT_GPU();
  expect_f32_within_bound(vocoder_problems(45), 32 * 3, is_split);
}

// Small random shapes (odd channels; empty split ranges when chunks < split): small enough for
// scripts/h200.sh's compute-sanitizer filter (*SplitsSmall*), which checks the distributed
// shared-memory reduction under memcheck and racecheck. Under the sanitizer
// (CONVBENCH_SANITIZER_SMALL=1) the first 4 of the 12 shapes: every split config still runs, but
// racecheck of all 12 shapes x every split config is too slow for one call.
TEST(FastGpu, F32ClusterSplitsSmallRandomShapes) {
  SKIP_WITHOUT_GPU();
  const int count = sanitizer_small() ? 4 : 12;
  expect_f32_within_bound(small_problems(99, fast_f32_configs().back(), 46, count), count * 3,
                          is_split);
}

// The f32-only cp.async configurations (buffers != 0, every split of them too).
TEST(FastGpu, F32AsyncStagingKeepsTheBoundOnEveryVocoderStage) {
  SKIP_WITHOUT_GPU();
  expect_f32_within_bound(vocoder_problems(47), 32 * 4, is_async);
}

// Small random shapes (odd channels, a partial last chunk, short rows: the edge columns and the
// clamped addresses), small enough for scripts/h200.sh's compute-sanitizer filter
// (*AsyncStagingSmall*): memcheck and racecheck of the cp.async copies and their barrier.
TEST(FastGpu, F32AsyncStagingSmallRandomShapes) {
  SKIP_WITHOUT_GPU();
  FastConfig async;
  for (const FastConfig &c : fast_f32_configs())
    if (c.buffers != 0 && c.split == 1)
      async = c;
  ASSERT_NE(async.buffers, 0) << "no cp.async config compiled";
  expect_f32_within_bound(small_problems(101, async, 60), 12 * 4, is_async);
}

TEST(FastGpu, F64BitwiseEqualOnRandomSupportedShapes) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(99);
  int cases = 0;
  for (int i = 0; i < 150; ++i) {
    const ConvShape s = random_supported_shape(rng);
    const Problem pr = peer_testing::random_problem(s, 2000 + i);
    const auto got = run_fast(pr, true);
    ASSERT_EQ(nan_cells(got), 0) << describe(s);
    ASSERT_EQ(differing_cells(got, reference_f64(pr)), 0) << describe(s);
    ++cases;
  }
  EXPECT_EQ(cases, 150);
}

// Tap order inside one channel: a +2^40 / -2^40 pair over a constant row (see the emulation
// test, where reversing the tap order was planted and caught).
TEST(FastGpu, F64KeepsTapOrderUnderCancellation) {
  SKIP_WITHOUT_GPU();
  const Problem pr = tap_order_problem();
  EXPECT_EQ(differing_cells(run_fast(pr, true), reference_f64(pr)), 0);
}

// The exact-property problems (tap order, channel order across chunks, zero skip) on every
// compiled block configuration, both f64 variants. Small shapes, so scripts/h200.sh's
// compute-sanitizer filter (*Cancellation*) runs racecheck and memcheck over every config's
// shared-memory layout.
TEST(FastGpu, EveryConfigKeepsOrderUnderCancellationAndSkipsZeroInputs) {
  SKIP_WITHOUT_GPU();
  std::vector<Problem> problems;
  problems.push_back(tap_order_problem());
  problems.push_back(channel_cancellation_problem());
  problems.push_back(infinite_weight_problem());
  int cases = 0;
  for (const Problem &pr : problems) {
    const auto ref = reference_f64(pr);
    ASSERT_EQ(nan_cells(ref), 0);
    for (const FastConfig &cfg : fast_configs())
      for (bool fused : {false, true}) {
        EXPECT_EQ(differing_cells(run_config_once(pr, cfg, true, fused), ref), 0)
            << cfg.name() << (fused ? " f64-fma " : " f64 ") << describe(pr.shape);
        ++cases;
      }
  }
  EXPECT_EQ(cases, 3 * 2 * static_cast<int>(fast_configs().size()));
}

TEST(FastGpu, F64SkipsZeroInputsAgainstInfiniteWeights) {
  SKIP_WITHOUT_GPU();
  const Problem pr = infinite_weight_problem();
  const auto ref = reference_f64(pr);
  ASSERT_EQ(nan_cells(ref), 0);
  EXPECT_EQ(differing_cells(run_fast(pr, true), ref), 0);
}

TEST(FastGpu, F32WithinBoundOnEveryVocoderStageAt96Frames) {
  SKIP_WITHOUT_GPU();
  int cases = 0;
  for (const auto &st : peer_testing::all_stages(96)) {
    const Problem pr = peer_testing::random_problem(st.shape, 43);
    const auto got = run_fast(pr, false);
    ASSERT_EQ(nan_cells(got), 0) << st.model << " " << st.name;
    const double err = peer_testing::relative_l2(got, reference_f64(pr));
    EXPECT_LT(err, peer_testing::kF32RelativeL2Bound) << st.model << " " << st.name;
    RecordProperty(st.model + "." + st.name + ".rel_l2", std::to_string(err));
    ++cases;
  }
  EXPECT_EQ(cases, 16);
}

TEST(FastGpu, F32WithinBoundOnRandomSupportedShapes) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(98);
  int cases = 0;
  for (int i = 0; i < 100; ++i) {
    const ConvShape s = random_supported_shape(rng);
    const Problem pr = peer_testing::random_problem(s, 3000 + i);
    const auto got = run_fast(pr, false);
    ASSERT_EQ(nan_cells(got), 0) << describe(s);
    ASSERT_LT(peer_testing::relative_l2(got, reference_f64(pr)), peer_testing::kF32RelativeL2Bound)
        << describe(s);
    ++cases;
  }
  EXPECT_EQ(cases, 100);
}

TEST(FastGpu, F32IsRepeatable) {
  SKIP_WITHOUT_GPU();
  const Problem pr = peer_testing::random_problem(peer_testing::all_stages(96).front().shape, 8);
  EXPECT_EQ(differing_cells(run_fast(pr, false), run_fast(pr, false)), 0);
}

TEST(FastGpu, WidthProbeF32GivesZeroF64GivesTwoPointFive) {
  SKIP_WITHOUT_GPU();
  const Problem pr = peer_testing::width_probe();
  EXPECT_EQ(run_fast(pr, false).at(0), 0.0f) << "an f32 accumulator must lose the 0.1 taps";
  EXPECT_EQ(run_fast(pr, true).at(0), peer_testing::width_probe_f64());
}

} // namespace
} // namespace convbench::fast
