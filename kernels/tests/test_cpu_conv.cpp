// Host arm gates: cpu-f64 is the reference contract (order, skip, bias placement, thread-count
// invariance); cpu-f32 is within a stated tolerance and really accumulates in f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "convbench/cpu_conv.hpp"
#include "test_support.hpp"

namespace convbench {
namespace {

using testing::differing_cells;
using testing::IcOrder;
using testing::naive_f64;
using testing::Problem;
using testing::relative_l2;

std::vector<float> run_f64(const Problem& p, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(size_t(p.shape.output_elems()), std::nanf(""));
  conv_cpu_f64(p.shape, p.x.data(), p.w.data(), p.bias(), y.data(), pool);
  return y;
}

std::vector<float> run_f32(const Problem& p, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(size_t(p.shape.output_elems()), std::nanf(""));
  conv_cpu_f32(p.shape, p.x.data(), p.w.data(), p.bias(), y.data(), pool);
  return y;
}

class CpuF64 : public ::testing::TestWithParam<ConvOp> {};
class CpuF32 : public ::testing::TestWithParam<ConvOp> {};

std::string op_name(const ::testing::TestParamInfo<ConvOp>& info) { return to_string(info.param); }

// cpu-f64 performs exactly the contract's additions: bitwise equal to the cell-by-cell reference
// on random shapes. (Planted: dropping one unit of padding in the transposed scatter failed here
// with 1026 cells. A k-ascending scatter, i.e. t descending, was NOT caught on random data: the
// f64 accumulator hides a reorder of two taps. The cancellation test below catches that one.)
TEST_P(CpuF64, MatchesTheContractBitwiseOnRandomShapes) {
  std::mt19937_64 rng(20261129 + int(GetParam()));
  for (int i = 0; i < 150; ++i) {
    const Problem p = testing::random_problem(testing::random_shape(rng, GetParam(), 70, 40), i);
    const auto ref = naive_f64(p, IcOrder::ascending);
    ASSERT_EQ(differing_cells(run_f64(p, 3), ref), 0)
        << "shape " << i << ": cin " << p.shape.cin << " cout " << p.shape.cout << " k "
        << p.shape.k << " stride " << p.shape.stride << " dil " << p.shape.dilation << " pad "
        << p.shape.padding << " opad " << p.shape.output_padding << " l_in " << p.shape.l_in;
  }
}

// The cancellation case, with its teeth: reversing the input-channel sweep moves cells, and
// cpu-f64 matches the promised order, not the reversed one. (Planted: an ic-descending cpu-f64
// failed both assertions, 190 of 190 cells moved; a k-ascending transposed scatter failed the
// first with 17 cells moved.)
TEST_P(CpuF64, CancellationPinsTheInputChannelOrder) {
  const Problem p = testing::cancellation_problem(GetParam(), 7);
  const auto forward_order = naive_f64(p, IcOrder::ascending);
  const auto reversed = naive_f64(p, IcOrder::descending);
  const int64_t moved = differing_cells(forward_order, reversed);
  std::printf("[ cancellation ] %s: reversing the ic sweep moves %lld of %zu cells\n",
              to_string(GetParam()).c_str(), (long long)moved, forward_order.size());
  ASSERT_GT(moved, 0) << "the cancellation data cannot see an order change: the test has no teeth";
  const auto got = run_f64(p, 2);
  EXPECT_EQ(differing_cells(got, forward_order), 0);
  EXPECT_EQ(differing_cells(got, reversed), moved);
}

// Bitwise identical at any thread count (output channels are partitioned, never split).
// (Planted: a split-K forward that sums the two halves of the input channels separately when the
// pool has more than one thread failed at 2, 3, 8 and 16 threads on the cancellation data, 190
// cells each; the plain random data alone did not move.)
TEST_P(CpuF64, BitwiseEqualAtAnyThreadCount) {
  Problem p = testing::cancellation_problem(GetParam(), 11);
  p.shape.cout = 37;  // not a multiple of any of the thread counts
  p = testing::random_problem(p.shape, 11);
  const auto one = run_f64(p, 1);
  for (int threads : {2, 3, 8, 16}) EXPECT_EQ(differing_cells(run_f64(p, threads), one), 0) << threads;
  const Problem c = testing::cancellation_problem(GetParam(), 12);
  const auto c1 = run_f64(c, 1);
  for (int threads : {2, 3, 8, 16}) EXPECT_EQ(differing_cells(run_f64(c, threads), c1), 0) << threads;
}

// A zero input is skipped, not multiplied: with +inf weights on a channel whose input is all 0.0
// the output stays finite and equals the answer without that channel. And with bias -0.0 and all
// inputs 0, the forward output keeps -0.0 (0 * w would have turned it into +0.0).
// (Planted: removing the skip failed the isfinite assertion for both ops.)
TEST_P(CpuF64, SkipsZeroInputs) {
  ConvShape s;
  s.op = GetParam();
  s.cin = 2;
  s.cout = 3;
  s.k = 3;
  s.padding = 1;
  s.l_in = 9;
  Problem p = testing::random_problem(s, 5);
  for (int64_t t = 0; t < s.l_in; ++t) p.x[size_t(s.l_in + t)] = 0.0f;  // ic 1 is all zero
  for (int64_t oc = 0; oc < s.cout; ++oc)
    for (int64_t k = 0; k < s.k; ++k)
      p.w[size_t(s.op == ConvOp::forward ? (oc * 2 + 1) * 3 + k : (3 + oc) * 3 + k)] =
          std::numeric_limits<float>::infinity();
  Problem one = p;
  one.shape.cin = 1;
  one.x.resize(size_t(s.l_in));
  one.w.clear();
  for (int64_t oc = 0; oc < s.cout; ++oc)
    for (int64_t k = 0; k < s.k; ++k)
      one.w.push_back(p.w[size_t(s.op == ConvOp::forward ? (oc * 2) * 3 + k : oc * 3 + k)]);
  const auto got = run_f64(p, 2);
  for (float v : got) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(differing_cells(got, run_f64(one, 1)), 0);

  if (GetParam() == ConvOp::forward) {
    Problem z = p;
    std::fill(z.x.begin(), z.x.end(), 0.0f);
    std::fill(z.w.begin(), z.w.end(), 1.0f);
    std::fill(z.b.begin(), z.b.end(), -0.0f);
    for (float v : run_f64(z, 1)) EXPECT_TRUE(v == 0.0f && std::signbit(v));
  }
}

// The width probe of facts.md: an f64 accumulator keeps the 25 x 0.1 that f32 loses.
TEST_P(CpuF64, WidthProbeGivesTwoAndAHalf) {
  for (bool along_channels : {false, true}) {
    const Problem p = testing::probe_problem(GetParam(), along_channels);
    const auto y = run_f64(p, 1);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0], testing::probe_f64_expected()) << "along channels " << along_channels;
    EXPECT_NEAR(y[0], 2.4999998510, 1e-6);
  }
}

// cpu-f32 against the reference: relative L2 within kF32RelativeL2Bound (justified in
// test_support.hpp) on random shapes, including cin that crosses the 64-channel blocks.
TEST_P(CpuF32, WithinToleranceOfTheReference) {
  std::mt19937_64 rng(99 + int(GetParam()));
  double worst = 0.0;
  for (int i = 0; i < 80; ++i) {
    const Problem p = testing::random_problem(testing::random_shape(rng, GetParam(), 200, 40), i);
    const auto ref = run_f64(p, 2);
    const double err = relative_l2(run_f32(p, 2), ref);
    worst = std::max(worst, err);
    ASSERT_LE(err, testing::kF32RelativeL2Bound) << "shape " << i;
  }
  std::printf("[ cpu-f32 ] %s worst relative L2 %.3g (bound %.1g)\n", to_string(GetParam()).c_str(),
              worst, testing::kF32RelativeL2Bound);
  // The gate's teeth: dropping one input channel (of 150) must exceed the bound by far.
  ConvShape s;
  s.op = GetParam();
  s.cin = 150;
  s.cout = 4;
  s.k = 4;
  s.stride = 2;
  s.padding = 1;
  s.l_in = 33;
  Problem p = testing::random_problem(s, 3);
  const auto ref = run_f64(p, 2);
  for (int64_t oc = 0; oc < s.cout; ++oc)
    for (int64_t k = 0; k < s.k; ++k)
      p.w[size_t(s.op == ConvOp::forward ? (oc * s.cin + 77) * s.k + k : (77 * s.cout + oc) * s.k + k)] =
          0.0f;
  EXPECT_GT(relative_l2(run_f32(p, 2), ref), 100 * testing::kF32RelativeL2Bound);
}

// An f32 arm that gives 2.5 on the probe is not an f32 arm. (Planted: f64 accumulators in
// cpu-f32 gave 2.5 and failed here, while its relative L2 against the reference, 6e-8, passed.)
TEST_P(CpuF32, WidthProbeGivesExactlyZero) {
  for (bool along_channels : {false, true}) {
    const Problem p = testing::probe_problem(GetParam(), along_channels);
    const auto y = run_f32(p, 1);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0], 0.0f) << "along channels " << along_channels;
  }
}

TEST_P(CpuF32, BitwiseEqualAtAnyThreadCount) {
  ConvShape s;
  s.op = GetParam();
  s.cin = 130;
  s.cout = 37;
  s.k = 5;
  s.stride = 3;
  s.padding = 2;
  s.l_in = 41;
  const Problem p = testing::random_problem(s, 21);
  const auto one = run_f32(p, 1);
  for (int threads : {2, 3, 8, 16}) EXPECT_EQ(differing_cells(run_f32(p, threads), one), 0) << threads;
}

TEST(CpuConv, RejectsAnInvalidShape) {
  ConvShape s;
  s.cin = 0;
  ThreadPool pool(1);
  EXPECT_THROW(conv_cpu_f64(s, nullptr, nullptr, nullptr, nullptr, pool), ShapeError);
  EXPECT_THROW(conv_cpu_f32(s, nullptr, nullptr, nullptr, nullptr, pool), ShapeError);
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuF64, ::testing::Values(ConvOp::forward, ConvOp::transposed),
                         op_name);
INSTANTIATE_TEST_SUITE_P(Ops, CpuF32, ::testing::Values(ConvOp::forward, ConvOp::transposed),
                         op_name);

}  // namespace
}  // namespace convbench
