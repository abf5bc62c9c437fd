// The counter instrument's teeth, on the GPU: kernels with a known instruction mix must give
// exactly the analytic counts, and a planted FMA in the f64 chain must make the zero-DFMA check
// fail on every run. Skips, with the reason, where no GPU is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <iostream>
#include <stdexcept>

#include "convbench/profiles/counters.hpp"
#include "mix_kernels.cuh"

namespace cp = convbench::profiles;
namespace mix = convbench::profiles::mix;
using nlohmann::json;

namespace {

// Not a multiple of the 256-thread block: the idle tail threads must not be counted.
constexpr int kN = 1000003;
constexpr int kM = 64;
constexpr double kCells = double(kN) * kM; // 64,000,192: exact in a double

std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  cudaGetLastError();
  if (e != cudaSuccess)
    return std::string("no GPU: cudaGetDeviceCount: ") + cudaGetErrorString(e);
  if (n == 0)
    return "no GPU: cudaGetDeviceCount returned 0";
  return "";
}

class InstructionMix : public ::testing::Test {
protected:
  void SetUp() override {
    if (const std::string why = no_gpu_reason(); !why.empty())
      GTEST_SKIP() << why;
    profile_ = cp::load_profile("fp-throughput", PROFILES_SOURCE_DIR);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(mix::alloc(buf_, kN), cudaSuccess);
    session_ = cp::CounterSession::open(profile_, 0);
    const json d = session_->describe();
    std::cout << "session: " << d.dump() << "\n";
    // CUPTI works on the H200; a refusal there is a failure, not a skip.
    ASSERT_EQ(d.at("status"), "ready") << d.dump();
  }
  void TearDown() override { mix::release(buf_); }

  // One capture of `launch`; asserts it was collected with the planned number of passes.
  json capture(cudaError_t (*launch)(const mix::Buffers &, int)) {
    const json b = session_->capture(
        [&] {
          if (launch(buf_, kM) != cudaSuccess)
            throw std::runtime_error("launch failed");
        },
        1e-3, 2 * kCells);
    std::cout << b.dump() << "\n";
    EXPECT_EQ(b.at("status"), "collected") << b.dump();
    if (b.at("status") != "collected")
      return json::object();
    EXPECT_GE(b.at("passes").get<int>(), 1);
    EXPECT_EQ(b.at("passes"), b.at("passes_planned"));
    EXPECT_EQ(b.at("range"), "convbench-counters");
    return b.at("metrics");
  }

  cp::Profile profile_;
  mix::Buffers buf_;
  std::unique_ptr<cp::CounterSession> session_;
};

} // namespace

TEST_F(InstructionMix, DmulDaddChainCountsExactly) {
  const json m = capture(mix::dmul_dadd);
  ASSERT_FALSE(m.empty());
  const cp::CountCheck c = cp::check_fp64_nofma(m, kCells, kCells, 0);
  EXPECT_TRUE(c.ok) << c.summary();
  // And no fp32 arithmetic sneaks in.
  EXPECT_EQ(m.at(cp::metric::ffma), 0.0);
  EXPECT_EQ(m.at(cp::metric::fadd), 0.0);
  EXPECT_EQ(m.at(cp::metric::fmul), 0.0);
}

TEST_F(InstructionMix, FfmaChainCountsExactly) {
  const json m = capture(mix::ffma);
  ASSERT_FALSE(m.empty());
  const cp::CountCheck c = cp::check_f32_fma_only(m, kCells);
  EXPECT_TRUE(c.ok) << c.summary();
  EXPECT_TRUE(cp::check_no_fp64(m).ok) << cp::check_no_fp64(m).summary();
}

// The planted mutation, exercised on every run: the same chain through fma() must be caught.
TEST_F(InstructionMix, PlantedFmaFailsTheZeroDfmaCheck) {
  const json m = capture(mix::dfma_mutant);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.at(cp::metric::dfma), kCells); // the instrument sees the mutation exactly
  const cp::CountCheck c = cp::check_fp64_nofma(m, kCells, kCells, 0);
  EXPECT_FALSE(c.ok) << "an f64 chain full of DFMA passed the zero-DFMA check";
  EXPECT_NE(c.summary().find("DFMA = 64000192, expected 0"), std::string::npos) << c.summary();
}

TEST_F(InstructionMix, DerivedFiguresFromTheCapture) {
  const json b = session_->capture([&] { ASSERT_EQ(mix::dmul_dadd(buf_, kM), cudaSuccess); }, 1e-3,
                                   2 * kCells);
  ASSERT_EQ(b.at("status"), "collected") << b.dump();
  const json &d = b.at("derived");
  EXPECT_EQ(d.at("fp64_flop"), 2 * kCells);
  EXPECT_DOUBLE_EQ(d.at("fp64_tflops").get<double>(), 2 * kCells / 1e-3 * 1e-12);
  EXPECT_EQ(d.at("fp64_share_pct"), 100.0);
  EXPECT_DOUBLE_EQ(d.at("counted_over_nominal_flop").get<double>(), 1.0);
  EXPECT_GT(d.at("fp64_peak_tflops").get<double>(), 0.0);
  EXPECT_GT(d.at("fp64_pipe_util_pct").get<double>(), 0.0);
  EXPECT_EQ(b.at("units").at("fp64_tflops"), "TFLOP/s");
}

// Cleanup on every path: work that throws inside the range propagates, and the session still
// captures afterwards (the range was popped, stopped and the profiler disabled).
TEST_F(InstructionMix, ThrowingWorkLeavesTheSessionUsable) {
  EXPECT_THROW(session_->capture([] { throw std::runtime_error("work failed"); }, 1e-3, 1.0),
               std::runtime_error);
  const json m = capture(mix::dmul_dadd);
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(cp::check_fp64_nofma(m, kCells, kCells, 0).ok);
}
