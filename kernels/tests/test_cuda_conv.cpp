// Device arm gates. cuda-f64 must be byte-identical (memcmp) to cpu-f64 on every stage shape of
// the models in bench/data/models.json and on random shapes; cuda-f32 must be within the stated
// tolerance and really accumulate in f32. Without a usable GPU every test here SKIPS with
// device_available()'s reason.
//
// Environment:
//   CONVBENCH_EXPECT_GPU=1        a missing GPU is a failure, not a skip (set it on the GPU box)
//   CONVBENCH_SANITIZER_SMALL=1   model shapes at 1 frame and the 3 (k, dilation) pairs, no
//                                 multi-GB grid test: for compute-sanitizer runs
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "convbench/cpu_conv.hpp"
#include "convbench/cuda_check.hpp"
#include "convbench/cuda_conv.hpp"
#include "cuda/forward_tile.hpp"
#include "forward_tile_emulation.hpp"
#include "model_stages.hpp"
#include "test_support.hpp"

namespace convbench {
namespace {

using cuda::Accum;
using testing::describe;
using testing::differing_cells;
using testing::IcOrder;
using testing::Problem;
using testing::relative_l2;

using testing::sanitizer_small;

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  return v && std::string(v) == "1";
}

#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why_;                                                                              \
    if (!cuda::device_available(&why_))                                                            \
      GTEST_SKIP() << "no usable GPU: " << why_;                                                   \
  } while (0)

using convbench::testing::reference_f64;

std::vector<float> run_resident(const Problem &p, Accum acc) {
  cuda::ResidentConv conv(p.shape, acc, p.w.data(), p.bias());
  std::vector<float> y(size_t(p.shape.output_elems()), std::nanf(""));
  conv.upload_input(p.x.data());
  conv.launch();
  conv.download_output(y.data());
  return y;
}

std::vector<float> run_per_call(const Problem &p, Accum acc) {
  std::vector<float> y(size_t(p.shape.output_elems()), std::nanf(""));
  cuda::per_call_conv(p.shape, acc, p.x.data(), p.w.data(), p.bias(), y.data());
  return y;
}

// memcmp over the whole output, and on failure the first differing cell in bits.
::testing::AssertionResult byte_identical(const std::vector<float> &got,
                                          const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ";
  if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0)
    return ::testing::AssertionSuccess();
  size_t i = 0;
  while (std::memcmp(&got[i], &want[i], sizeof(float)) == 0)
    ++i;
  return ::testing::AssertionFailure()
         << differing_cells(got, want) << " of " << got.size() << " cells differ; first at " << i
         << ": got " << std::hexfloat << got[i] << " want " << want[i] << std::defaultfloat;
}

TEST(CudaDevice, AvailabilityIsExplained) {
  std::string why;
  const bool ok = cuda::device_available(&why);
  if (env_flag("CONVBENCH_EXPECT_GPU")) {
    ASSERT_TRUE(ok) << "CONVBENCH_EXPECT_GPU=1 but: " << why;
  }
  if (!ok) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "no usable GPU: " << why;
  }
}

// ---- Model stage shapes (bench/data/models.json), at 96 frames ----------------------------

struct StageCase {
  std::string name;
  ConvShape shape;
};

// Every upsample stage (ConvTranspose1d), and the AMP block Conv1d shapes at its output
// (ch x ch, k in {3, 7, 11}, dilation in {1, 3, 5}, padding that keeps the length).
std::vector<StageCase> stage_cases() {
  const int64_t frames = sanitizer_small() ? 1 : 96;
  std::vector<StageCase> cases;
  for (const testing::ModelFamily &m : testing::model_families()) {
    for (const testing::Stage &st : testing::model_stages(m, frames)) {
      const ConvShape &up = st.shape;
      const std::string stage = m.name + "_" + st.name;
      cases.push_back({stage, up});
      for (int64_t k : {3, 7, 11})
        for (int64_t d : {1, 3, 5}) {
          if (sanitizer_small() &&
              !((k == 3 && d == 1) || (k == 7 && d == 3) || (k == 11 && d == 5)))
            continue;
          cases.push_back({stage + "_amp_k" + std::to_string(k) + "_d" + std::to_string(d),
                           testing::amp_shape(up.cout, k, d, up.l_out())});
        }
    }
  }
  return cases;
}

// Readable names in test listings and ctest output instead of the parameter's bytes.
void PrintTo(const StageCase &c, std::ostream *os) { *os << c.name << ": " << describe(c.shape); }

class CudaModelStage : public ::testing::TestWithParam<StageCase> {};

// cuda-f64 in both staging modes is byte-identical to cpu-f64; cuda-f32 is within tolerance.
// (Planted: a cuda-f64 kernel that swept k ascending in the transposed gather, i.e. t descending,
// must fail every upsample stage here; so must one built with a fused multiply-add.)
TEST_P(CudaModelStage, F64ByteIdenticalAndF32WithinTolerance) {
  REQUIRE_GPU();
  const ConvShape &s = GetParam().shape;
  ASSERT_NO_THROW(s.validate());
  const Problem p = testing::random_problem(s, std::hash<std::string>{}(GetParam().name));
  const auto ref = reference_f64(p);
  EXPECT_TRUE(byte_identical(run_resident(p, Accum::f64), ref)) << "resident " << describe(s);
  EXPECT_TRUE(byte_identical(run_per_call(p, Accum::f64), ref)) << "per-call " << describe(s);
  const double err = relative_l2(run_resident(p, Accum::f32), ref);
  RecordProperty("cuda_f32_relative_l2", std::to_string(err));
  EXPECT_LE(err, testing::kF32RelativeL2Bound) << describe(s);
}

INSTANTIATE_TEST_SUITE_P(Models, CudaModelStage, ::testing::ValuesIn(stage_cases()),
                         [](const ::testing::TestParamInfo<StageCase> &i) { return i.param.name; });

// ---- Random shapes ---------------------------------------------------------------------------

class CudaRandom : public ::testing::TestWithParam<ConvOp> {};

// Stride, dilation, padding, output_padding, odd lengths, batch 2, no bias, and cin up to 300
// (so not a multiple of any tile). Staging alternates between resident and per-call.
TEST_P(CudaRandom, F64ByteIdenticalAndF32WithinTolerance) {
  REQUIRE_GPU();
  std::mt19937_64 rng(4242 + int(GetParam()));
  const int n = sanitizer_small() ? 40 : 300;
  double worst = 0.0;
  for (int i = 0; i < n; ++i) {
    const Problem p = testing::random_problem(testing::random_shape(rng, GetParam(), 300, 60), i);
    const auto ref = reference_f64(p);
    const auto got = i % 2 ? run_per_call(p, Accum::f64) : run_resident(p, Accum::f64);
    ASSERT_TRUE(byte_identical(got, ref)) << "shape " << i << ": " << describe(p.shape);
    const double err =
        relative_l2(i % 2 ? run_resident(p, Accum::f32) : run_per_call(p, Accum::f32), ref);
    worst = std::max(worst, err);
    ASSERT_LE(err, testing::kF32RelativeL2Bound) << "shape " << i << ": " << describe(p.shape);
  }
  std::printf("[ cuda-f32 ] %s: %d random shapes, worst relative L2 %.3g (bound %.1g)\n",
              to_string(GetParam()).c_str(), n, worst, testing::kF32RelativeL2Bound);
}

// ---- Exact properties ------------------------------------------------------------------------

class CudaExact : public ::testing::TestWithParam<ConvOp> {};

// The cancellation case with its teeth: the reversed-ic variant moves cells, and cuda-f64 equals
// the promised order, not the reversed one, in both staging modes.
TEST_P(CudaExact, CancellationPinsTheInputChannelOrder) {
  REQUIRE_GPU();
  const Problem p = testing::cancellation_problem(GetParam(), 7);
  const auto forward_order = testing::naive_f64(p, IcOrder::ascending);
  const auto reversed = testing::naive_f64(p, IcOrder::descending);
  const int64_t moved = differing_cells(forward_order, reversed);
  std::printf("[ cancellation ] %s: reversing the ic sweep moves %lld of %zu cells\n",
              to_string(GetParam()).c_str(), (long long)moved, forward_order.size());
  ASSERT_GT(moved, 0) << "the cancellation data cannot see an order change: no teeth";
  for (const auto &got : {run_resident(p, Accum::f64), run_per_call(p, Accum::f64)}) {
    EXPECT_TRUE(byte_identical(got, forward_order));
    EXPECT_EQ(differing_cells(got, reversed), moved);
  }
}

// Zero inputs are skipped exactly as cpu-f64 skips them (+inf weights behind an all-zero channel
// stay finite; bias -0.0 over zero inputs stays -0.0 in the forward op).
TEST_P(CudaExact, SkipsZeroInputsLikeTheReference) {
  REQUIRE_GPU();
  ConvShape s;
  s.op = GetParam();
  s.cin = 2;
  s.cout = 3;
  s.k = 3;
  s.padding = 1;
  s.l_in = 9;
  Problem p = testing::random_problem(s, 5);
  for (int64_t t = 0; t < s.l_in; ++t)
    p.x[size_t(s.l_in + t)] = 0.0f;
  for (int64_t oc = 0; oc < s.cout; ++oc)
    for (int64_t k = 0; k < s.k; ++k)
      p.w[size_t(s.op == ConvOp::forward ? (oc * 2 + 1) * 3 + k : (3 + oc) * 3 + k)] =
          std::numeric_limits<float>::infinity();
  const auto got = run_resident(p, Accum::f64);
  for (float v : got)
    ASSERT_TRUE(std::isfinite(v));
  EXPECT_TRUE(byte_identical(got, reference_f64(p)));
  std::fill(p.x.begin(), p.x.end(), 0.0f);
  std::fill(p.w.begin(), p.w.end(), 1.0f);
  std::fill(p.b.begin(), p.b.end(), -0.0f);
  EXPECT_TRUE(byte_identical(run_resident(p, Accum::f64), reference_f64(p)));
}

// The width probe: cuda-f32 gives exactly 0.0, cuda-f64 2.4999998, both layouts.
TEST_P(CudaExact, WidthProbe) {
  REQUIRE_GPU();
  for (bool along_channels : {false, true}) {
    const Problem p = testing::probe_problem(GetParam(), along_channels);
    EXPECT_EQ(run_resident(p, Accum::f32).at(0), 0.0f)
        << "cuda-f32, along channels " << along_channels;
    EXPECT_EQ(run_per_call(p, Accum::f32).at(0), 0.0f) << "cuda-f32 per-call";
    EXPECT_EQ(run_resident(p, Accum::f64).at(0), testing::probe_f64_expected()) << "cuda-f64";
    EXPECT_NEAR(run_per_call(p, Accum::f64).at(0), 2.4999998510, 1e-6) << "cuda-f64 per-call";
  }
}

// Resident launches are repeatable (CUPTI replays a range) and the caller-buffer launch computes
// the same thing.
TEST_P(CudaExact, ResidentLaunchIsRepeatable) {
  REQUIRE_GPU();
  ConvShape s;
  s.op = GetParam();
  s.cin = 67;
  s.cout = 19;
  s.k = 5;
  s.stride = 2;
  s.dilation = 2;
  s.padding = 3;
  s.l_in = 45;
  const Problem p = testing::random_problem(s, 17);
  const auto ref = reference_f64(p);
  cuda::ResidentConv conv(s, Accum::f64, p.w.data(), p.bias());
  EXPECT_EQ(conv.shape().l_out(), s.l_out());
  EXPECT_NE(conv.stream(), nullptr);
  conv.upload_input(p.x.data());
  std::vector<float> y(size_t(s.output_elems()));
  for (int rep = 0; rep < 3; ++rep) {
    std::fill(y.begin(), y.end(), std::nanf(""));
    conv.launch();
    conv.launch();
    conv.download_output(y.data());
    EXPECT_TRUE(byte_identical(y, ref)) << "rep " << rep;
  }
  conv.launch(conv.d_input(), conv.d_output());
  std::fill(y.begin(), y.end(), std::nanf(""));
  conv.download_output(y.data());
  EXPECT_TRUE(byte_identical(y, ref));
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaRandom, ::testing::Values(ConvOp::forward, ConvOp::transposed),
                         [](const ::testing::TestParamInfo<ConvOp> &i) {
                           return to_string(i.param);
                         });
INSTANTIATE_TEST_SUITE_P(Ops, CudaExact, ::testing::Values(ConvOp::forward, ConvOp::transposed),
                         [](const ::testing::TestParamInfo<ConvOp> &i) {
                           return to_string(i.param);
                         });

// ---- cuda-f32's forward tile kernel (implicit GEMM, split over a cluster) --------------------

// The tile kernel on caller buffers with a forced split: the output of one launch.
std::vector<float> run_tile(const Problem &p, int shape, int split, bool planted = false) {
  const ConvShape &s = p.shape;
  const auto plan = cuda::detail::forward_tile_plan(s, 132, split, shape);
  EXPECT_EQ(plan.split, split) << describe(s);
  float *d[4] = {};
  const std::vector<float> *host[3] = {&p.x, &p.w, &p.b};
  const size_t n[4] = {p.x.size(), p.w.size(), p.b.size(), size_t(s.output_elems())};
  for (int i = 0; i < 4; ++i) {
    CONVBENCH_CUDA_CHECK(cudaMalloc(&d[i], std::max<size_t>(n[i], 1) * sizeof(float)));
    if (i < 3 && n[i])
      CONVBENCH_CUDA_CHECK(
          cudaMemcpy(d[i], host[i]->data(), n[i] * sizeof(float), cudaMemcpyHostToDevice));
  }
  CONVBENCH_CUDA_CHECK(cudaMemset(d[3], 0xff, n[3] * sizeof(float))); // NaN where never written
  cuda::detail::prepare_forward_tile(plan);
  (planted ? cuda::detail::launch_forward_tile_planted : cuda::detail::launch_forward_tile)(
      plan, d[0], d[1], s.bias ? d[2] : nullptr, d[3], nullptr);
  std::vector<float> y(n[3]);
  CONVBENCH_CUDA_CHECK(cudaMemcpy(y.data(), d[3], n[3] * sizeof(float), cudaMemcpyDeviceToHost));
  for (float *ptr : d)
    CONVBENCH_CUDA_CHECK(cudaFree(ptr));
  return y;
}

// Both tile shapes with every split (1-8) on shapes whose cout, length and reduction are not
// multiples of a tile, with stride, dilation, padding, batch 3 and no bias: within cuda-f32's
// bound of the reference, every cell written, and each split's result the same bits on a second
// launch (the cluster adds its ranks in order). The planted reduction that leaves out the last
// rank's partial must fail the same bound on every split > 1.
TEST(CudaForwardTile, EverySplitWithinToleranceAndDeterministic) {
  REQUIRE_GPU();
  std::mt19937_64 rng(77);
  for (int i = 0; i < (sanitizer_small() ? 1 : 6); ++i) {
    ConvShape s;
    s.op = ConvOp::forward;
    s.batch = 1 + i % 3;
    s.cin = 37 + int64_t(rng() % 200);
    s.cout = 16 + int64_t(rng() % 300);
    s.k = 1 + int64_t(rng() % 11);
    s.stride = 1 + i % 2;
    s.dilation = 1 + int64_t(rng() % 5);
    s.padding = s.dilation * (s.k - 1) / 2 + i % 2;
    s.l_in = 50 + int64_t(rng() % 400);
    s.bias = i % 4 != 3;
    ASSERT_NO_THROW(s.validate());
    const Problem p = testing::random_problem(s, 900 + i);
    const auto ref = reference_f64(p);
    for (int shape : {0, 1})
      for (int split = 1; split <= 8; ++split) {
        if (sanitizer_small() && split != 1 && split != 3 && split != 8)
          continue; // under the sanitizers: one split of each kind (none, odd, the largest)
        if (cuda::detail::forward_tile_plan(s, 132, split, shape).split != split)
          continue; // too few reduction steps for this split
        const std::string what =
            describe(s) + " shape " + std::to_string(shape) + " split " + std::to_string(split);
        const auto y = run_tile(p, shape, split);
        EXPECT_LE(relative_l2(y, ref), testing::kF32RelativeL2Bound) << what;
        EXPECT_TRUE(byte_identical(run_tile(p, shape, split), y)) << what;
        if (split > 1) {
          EXPECT_GT(relative_l2(run_tile(p, shape, split, true), ref), testing::kF32RelativeL2Bound)
              << "planted: the last rank left out, " << what;
        }
      }
  }
}

// The device's bits are the host emulation's (forward_tile_emulate: each rank's fmaf chain in
// reduction order, the partials in rank order, then the bias), on both tile shapes and every
// split: a stronger gate than the tolerance, which a wrong tap of small weight could pass.
// Then long rows, where most tiles are inside (forward_tile_columns_inside: staged without bounds
// checks, (ic, kk) walked a row at a time) beside the edge tiles: k 1, a dilated k 11, stride 2, a
// reduction that is not a whole number of steps.
TEST(CudaForwardTile, DeviceEqualsHostEmulation) {
  REQUIRE_GPU();
  std::mt19937_64 rng(11);
  std::vector<ConvShape> shapes;
  for (int i = 0; i < (sanitizer_small() ? 1 : 4); ++i)
    shapes.push_back(testing::random_shape(rng, ConvOp::forward, 150, 340, 16, 216));
  const int64_t longs[][5] = {// cin, cout, k, dilation, stride
                              {40, 48, 7, 3, 1},
                              {24, 96, 11, 5, 1},
                              {33, 40, 1, 1, 1},
                              {19, 32, 3, 1, 2}};
  for (const auto &[cin, cout, k, d, stride] : longs) {
    ConvShape s = testing::amp_shape(cin, k, d, stride == 1 ? 1100 : 2300);
    s.cout = cout;
    s.stride = stride;
    shapes.push_back(s);
  }
  int64_t inside = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ConvShape &s = shapes[i];
    const Problem p = testing::random_problem(s, 70 + i);
    for (int shape : {0, 1})
      for (int split = 1; split <= 8; ++split) {
        const auto plan = cuda::detail::forward_tile_plan(s, 132, split, shape);
        if (plan.split != split || (sanitizer_small() && split > 2))
          continue;
        inside += cuda::detail::forward_tile_inside_tiles(plan);
        std::vector<float> want(size_t(s.output_elems()));
        testing::forward_tile_emulate(plan, p.x.data(), p.w.data(), p.bias(), want.data());
        EXPECT_TRUE(byte_identical(run_tile(p, shape, split), want))
            << describe(s) << " shape " << shape << " split " << split;
      }
  }
  EXPECT_GT(inside, 0) << "no tile took the unchecked staging";
}

// The cluster reduction on the smallest shape that has one (one tile, two ranks of one step
// each, both tile shapes): small enough for racecheck to finish, which the split test is not.
TEST(CudaForwardTile, SmallestClusterForTheSanitizers) {
  REQUIRE_GPU();
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = 4;
  s.cout = 20;
  s.k = 3;
  s.padding = 1;
  s.l_in = 20;
  const Problem p = testing::random_problem(s, 5);
  const auto ref = reference_f64(p);
  for (int shape : {0, 1}) {
    const auto y = run_tile(p, shape, 2);
    EXPECT_LE(relative_l2(y, ref), testing::kF32RelativeL2Bound) << "shape " << shape;
    EXPECT_GT(relative_l2(run_tile(p, shape, 2, true), ref), testing::kF32RelativeL2Bound)
        << "planted: the last rank left out, shape " << shape;
  }
}

// The product path: cuda-f32 runs the tile kernel on the AMP convolutions (BigVGAN 512x amp0 at
// 1536 frames here), cuda-f64 and the simple kernel do not; issued multiply-adds count every
// padded tile cell times every padded step. (The plan's own choices, e.g. the split at 96 frames
// and the narrow tile for amp5, are the host tests' in test_forward_tile_plan.cpp.)
TEST(CudaForwardTile, ChosenForTheAmpConvolutions) {
  const ConvShape amp = testing::amp_shape(768, 7, 3, 768 * 16);
  EXPECT_NE(cuda::kernel_name(amp, Accum::f32, cuda::Kernel::best).find("implicit-gemm"),
            std::string::npos);
  EXPECT_EQ(cuda::kernel_name(amp, Accum::f64, cuda::Kernel::best).find("implicit-gemm"),
            std::string::npos);
  EXPECT_EQ(cuda::kernel_name(amp, Accum::f32, cuda::Kernel::simple).find("implicit-gemm"),
            std::string::npos);
  const auto plan = cuda::detail::forward_tile_plan(amp, 132);
  EXPECT_EQ(cuda::issued_macs(amp, Accum::f32, cuda::Kernel::best),
            int64_t(6 * 128) * (96 * 128) * (768 * 7));
  EXPECT_GE(cuda::detail::forward_tile_issued_macs(plan), amp.valid_macs());
}

// A forced tile (cuda::Block{ForwardTile}: the sweep's arms) is exactly the plan it names in the
// record and in the counters' multiply-adds, never the cost model's choice; where it cannot run
// the shape, or with another accumulator or kernel, it throws with the reason instead of falling
// back. No GPU needed: nothing is launched. Planted faults seen failing (then reverted):
// forward_tile_for() ignoring block.forward (the automatic plan named; the f64 and refused forces
// did not throw).
TEST(CudaForwardTile, AForcedTileIsExactlyItsPlanOrThrows) {
  const ConvShape amp = testing::amp_shape(96, 7, 1, 6144);
  for (const cuda::ForwardTile &t : cuda::forward_tile_variants()) {
    const std::string what =
        std::to_string(t.bm) + "x" + std::to_string(t.bn) + " split " + std::to_string(t.split);
    const auto plan = cuda::detail::forward_tile_forced_plan(amp, t);
    EXPECT_EQ(cuda::kernel_name(amp, Accum::f32, cuda::Kernel::best, t),
              cuda::detail::forward_tile_name(plan))
        << what;
    EXPECT_EQ(cuda::issued_macs(amp, Accum::f32, cuda::Kernel::best, t),
              cuda::detail::forward_tile_issued_macs(plan))
        << what;
    EXPECT_THROW(cuda::kernel_name(amp, Accum::f64, cuda::Kernel::best, t), std::invalid_argument)
        << what;
    EXPECT_THROW(cuda::issued_macs(amp, Accum::f32, cuda::Kernel::simple, t), std::invalid_argument)
        << what;
  }
  EXPECT_EQ(cuda::kernel_name(amp, Accum::f32, cuda::Kernel::best, cuda::ForwardTile{32, 256, 3}),
            "implicit-gemm f32 fma 32x256x8 split 3");
  ConvShape one_step = amp; // 2 x 3 taps: one step, no rank for a second
  one_step.cin = 2;
  one_step.k = 3;
  one_step.padding = 1;
  try {
    cuda::kernel_name(one_step, Accum::f32, cuda::Kernel::best, cuda::ForwardTile{128, 128, 2});
    ADD_FAILURE() << "a split with an empty rank was named";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("leaves a rank without steps"), std::string::npos)
        << e.what();
  }
}

// The tile kernel accumulates in f32 too: the width probe along input channels, widened to 32
// output channels, gives exactly 0.0 in every row (27 taps: 4 steps, never split).
TEST(CudaForwardTile, WidthProbe) {
  REQUIRE_GPU();
  Problem p = testing::probe_problem(ConvOp::forward, true);
  const std::vector<float> taps = p.w;
  p.shape.cout = 32;
  p.w.clear();
  for (int64_t oc = 0; oc < p.shape.cout; ++oc)
    p.w.insert(p.w.end(), taps.begin(), taps.end());
  ASSERT_TRUE(cuda::detail::forward_tile_supported(p.shape));
  for (float v : run_resident(p, Accum::f32))
    EXPECT_EQ(v, 0.0f);
}

// More output cells than one capped grid covers (2^20 blocks x 256 threads = 2^28): the
// grid-stride loop and 64-bit cell indices must reach every cell. 300M cells, 1.2 GB of output.
TEST(CudaGrid, GridStrideCoversMoreCellsThanOneGrid) {
  REQUIRE_GPU();
  if (sanitizer_small())
    GTEST_SKIP() << "CONVBENCH_SANITIZER_SMALL=1: multi-GB case left out";
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = s.cout = s.k = 1;
  s.l_in = (int64_t(1) << 28) + 12345;
  Problem p{s, testing::random_values(s.l_in, 1), {0.75f}, {0.5f}};
  EXPECT_TRUE(byte_identical(run_resident(p, Accum::f64), reference_f64(p)));
}

// A failing CUDA call is an error naming the call, never ignored: 4 TiB of weights cannot be
// allocated. (Left out of sanitizer runs: memcheck reports the failed cudaMalloc by design.)
TEST(CudaErrors, AllocationFailureNamesTheCall) {
  REQUIRE_GPU();
  ConvShape s;
  s.cin = 1 << 13;
  s.cout = 1 << 13;
  s.k = 1 << 14; // 2^40 weights
  s.l_in = 1;
  const float dummy = 0.0f;
  try {
    cuda::ResidentConv conv(s, Accum::f64, &dummy, &dummy);
    FAIL() << "allocating 4 TiB succeeded";
  } catch (const cuda::CudaError &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaMalloc"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda_conv.cu:"), std::string::npos) << what;
  }
  // The device is still usable afterwards.
  const Problem p = testing::probe_problem(ConvOp::forward, false);
  EXPECT_EQ(run_resident(p, Accum::f32).at(0), 0.0f);
}

} // namespace
} // namespace convbench
