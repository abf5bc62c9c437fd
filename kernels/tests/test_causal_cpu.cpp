// The causal depthwise conv1d's host arms: the reference computes the stated formula in the stated
// order, the final state and the per-sequence initial state are honoured, cpu-f32 stays within
// its tolerance, and the order gate has teeth on an engineered cancellation input.
//
// Planted faults seen failing here while writing it:
//  - the reference's tap loop reversed (k descending): ReferenceIsTheStatedOrder and
//    CancellationMovesCellsWhenTapsReverse failed.
//  - the final state copied from xpad[length - 1 + j] (one early): FinalStateIsLastValues failed
//    (and the emulation's final-state gate against the reference).
//  - exp_f32 without the low part of ln 2: ExpWithinTwoUlp failed (thousands of ulp).
//  - has_initial_state ignored (every sequence took the state): PerSequenceInitialState and
//    FinalStateIsLastValues failed.
#include <gtest/gtest.h>

#include <cmath>

#include "causal_test_support.hpp"

namespace convbench::causal_testing {
namespace {

// The formula, cell by cell, with the tap order a parameter: k ascending (the promise) or not.
Output formula_f64(const CausalProblem &p, bool reversed) {
  const auto &s = p.s;
  Output o{std::vector<float>(size_t(s.output_elems())), {}};
  for (int64_t row = 0; row < s.batch * s.channels; ++row) {
    const int64_t c = row % s.channels, b = row / s.channels;
    const bool st = s.initial_state && p.has_state[size_t(b)];
    auto xpad = [&](int64_t j) -> double {
      if (j >= s.k - 1)
        return p.x[size_t(row * s.length + j - (s.k - 1))];
      return st ? p.state[size_t(row * (s.k - 1) + j)] : 0.0;
    };
    for (int64_t t = 0; t < s.length; ++t) {
      double acc = s.bias ? double(p.b[size_t(c)]) : 0.0;
      for (int64_t i = 0; i < s.k; ++i) {
        const int64_t k = reversed ? s.k - 1 - i : i;
        acc += double(p.w[size_t(c * s.k + k)]) * xpad(t + k);
      }
      if (s.activation == Activation::silu)
        acc = acc / (1.0 + std::exp(-acc));
      o.y[size_t(row * s.length + t)] = float(acc);
    }
  }
  return o;
}

TEST(CausalCpu, ReferenceIsTheStatedOrder) {
  int asserted = 0;
  for (bool state : {false, true})
    for (int64_t k : {2, 3, 4, 5})
      for (int64_t l : {1, 2, 3, 64, 257}) {
        const auto p = random_problem(shape(3, 5, l, state, k), uint64_t(l * 10 + k));
        const Output ref = run_host(p, true);
        EXPECT_EQ(cells_differ(ref.y, formula_f64(p, false).y), 0) << name(p.s);
        ++asserted;
      }
  EXPECT_EQ(asserted, 40);
}

TEST(CausalCpu, FinalStateIsLastValues) {
  for (bool state : {false, true})
    for (int64_t l : {1, 2, 3, 4, 100}) {
      const auto p = random_problem(shape(2, 3, l, state), uint64_t(l));
      const Output o = run_host(p, true);
      for (int64_t row = 0; row < 6; ++row)
        for (int64_t j = 0; j < 3; ++j) {
          // xpad index l + j: x[l + j - 3] when that is >= 0, else the state (or 0).
          const int64_t xi = l + j - 3;
          const bool st = state && p.has_state[size_t(row / 3)];
          const float want =
              xi >= 0 ? p.x[size_t(row * l + xi)] : (st ? p.state[size_t(row * 3 + l + j)] : 0.0f);
          EXPECT_EQ(o.fs[size_t(row * 3 + j)], want) << "l " << l << " row " << row << " j " << j;
        }
    }
}

TEST(CausalCpu, PerSequenceInitialState) {
  auto p = random_problem(shape(4, 6, 8, true), 7);
  const Output with = run_host(p, true);
  auto q = p;
  q.s.initial_state = false;
  const Output without = run_host(q, true);
  for (int64_t b = 0; b < 4; ++b) {
    const std::vector<float> a(with.y.begin() + b * 48, with.y.begin() + (b + 1) * 48);
    const std::vector<float> c(without.y.begin() + b * 48, without.y.begin() + (b + 1) * 48);
    if (p.has_state[size_t(b)])
      EXPECT_GT(cells_differ(a, c), 0) << "sequence " << b << " must read its initial state";
    else
      EXPECT_EQ(cells_differ(a, c), 0) << "sequence " << b << " has no initial state";
  }
}

TEST(CausalCpu, SameBitsAtAnyThreadCount) {
  const auto p = random_problem(shape(2, 33, 100, true), 3);
  Output one{std::vector<float>(size_t(p.s.output_elems())),
             std::vector<float>(size_t(p.s.state_elems()))};
  ThreadPool single(1);
  causal_cpu_f64(p.s, p.tensors(one.y.data(), one.fs.data()), single);
  EXPECT_EQ(cells_differ(one.y, run_host(p, true).y), 0);
}

TEST(CausalCpu, F32WithinTolerance) {
  for (bool state : {false, true})
    for (Activation a : {Activation::none, Activation::silu}) {
      const auto p = random_problem(shape(2, 64, 300, state, 4, a), 11);
      const Output ref = run_host(p, true), f32 = run_host(p, false);
      EXPECT_LE(rel_l2(f32.y, ref.y), kF32Tolerance) << name(p.s);
      EXPECT_EQ(cells_differ(f32.fs, ref.fs), 0) << "the final state is a copy";
    }
}

// Taps [2^60, 1, -2^60, 1] over ones: in the promised order the 1 after +2^60 is lost and the
// last one survives (1); reversed, the first 1 meets -2^60 and is lost, the other after it (0).
CausalProblem cancellation(int64_t l) {
  auto p = random_problem(shape(1, 4, l, false, 4, Activation::none), 1);
  std::fill(p.x.begin(), p.x.end(), 1.0f);
  std::fill(p.b.begin(), p.b.end(), 0.0f);
  const float big = std::ldexp(1.0f, 60);
  for (int64_t c = 0; c < 4; ++c) {
    p.w[size_t(c * 4 + 0)] = big;
    p.w[size_t(c * 4 + 1)] = 1.0f;
    p.w[size_t(c * 4 + 2)] = -big;
    p.w[size_t(c * 4 + 3)] = 1.0f;
  }
  return p;
}

TEST(CausalCpu, CancellationMovesCellsWhenTapsReverse) {
  const auto p = cancellation(64);
  const Output ref = run_host(p, true);
  const int64_t moved = cells_differ(ref.y, formula_f64(p, true).y);
  std::printf("reversed tap order moves %lld of %zu reference cells\n", (long long)moved,
              ref.y.size());
  EXPECT_GT(moved, 0) << "the cancellation input does not see the tap order: no teeth";
  EXPECT_EQ(cells_differ(ref.y, formula_f64(p, false).y), 0)
      << "reference equals the promised order";
  EXPECT_EQ(ref.y[10], 1.0f) << "full window, promised order";
}

// The portable exp the f32 SiLU uses (host and device alike): within 2 f32 ulp of the true value
// over the range it is used on, saturating outside it.
TEST(CausalCpu, ExpWithinTwoUlp) {
  double worst = 0;
  int points = 0;
  for (double a = -86.9; a < 87.9; a += 0.00173) {
    const float af = float(a);
    const double want = std::exp(double(af));
    const float got = causal_detail::exp_f32(af);
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    worst = std::max(worst, std::abs(double(got) - want) / ulp);
    ++points;
  }
  std::printf("exp_f32: worst %.2f ulp over %d points\n", worst, points);
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(causal_detail::exp_f32(-100.0f), 0.0f);
  EXPECT_TRUE(std::isinf(causal_detail::exp_f32(100.0f)));
}

TEST(CausalCpu, RejectsBadShapes) {
  EXPECT_THROW(shape(1, 0, 4, false).validate(), ShapeError);
  EXPECT_THROW(shape(1, 4, 0, false).validate(), ShapeError);
  EXPECT_THROW(shape(1, 4, 4, false, 1).validate(), ShapeError);
  EXPECT_NO_THROW(shape(8, 8192, 8192, true).validate());
  std::string why;
  EXPECT_FALSE(cuda::causal_supported(shape(1, 4, 4, false, 5), &why));
  EXPECT_NE(why.find("k in {2, 3, 4}"), std::string::npos) << why;
}

} // namespace
} // namespace convbench::causal_testing
