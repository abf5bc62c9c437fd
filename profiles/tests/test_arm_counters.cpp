// The real device arms under the counter instrument: cuda-f64 and cuda-f32 (resident staging) for
// stages up0..up3 of the default model (bigvgan_v2_44khz_128band_512x) at 96 frames, and three of
// its forward Conv1d stages (pre, amp0.k7.d3, post: a forward stage starts from the bias, so it
// has no bias adds).
//   cuda-f64 must show DFMA == 0, DMUL == the multiply-adds it performs, DADD == those plus the
//   bias adds; cuda-f32 must show fp32 work and no fp64 work at all.
// The planted mutation for these checks lives in profiles_gpu_tests (an fma() chain that the same
// check_fp64_nofma() must reject on every run). Skips, with the reason, where no GPU is visible.
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "convbench/cuda_conv.hpp"
#include "convbench/profiles/counters.hpp"
#include "convbench/shape.hpp"
#include "model_stages.hpp"

namespace cp = convbench::profiles;
namespace cc = convbench::cuda;
using convbench::ConvOp;
using convbench::ConvShape;
using nlohmann::json;

namespace {

// A stage of the default model of bench/data/models.json (bigvgan_v2_44khz_128band_512x) at
// `frames`: upI (ConvTranspose1d), or a forward Conv1d the vocoder runs: pre, amp0.k7.d3 (the
// first AMP block's k 7, dilation 3 conv), post. convbench/models.hpp derives the shapes.
ConvShape stage_shape(const std::string &name, int64_t frames) {
  ConvShape s = convbench::testing::default_model().named_shape(name, frames);
  s.validate();
  return s;
}

// What a cuda-f64 kernel adds: per issued tap one __dmul_rn and one __dadd_rn (the fast
// polyphase kernel also issues the taps that padding and tile remainders cut off, with x staged
// as 0: cuda::issued_macs() counts them; the simple kernel issues exactly valid_macs()); the
// accumulator starts from a conversion (0.0 for transposed, the bias for forward), not an add; a
// transposed stage adds the bias LAST, one __dadd_rn per output cell. Inputs here are never 0,
// so no tap is skipped: exact, tolerance 0.
double bias_adds(const ConvShape &s) {
  const double cells = double(s.batch) * double(s.cout) * double(s.l_out());
  return s.bias && s.op == ConvOp::transposed ? cells : 0.0;
}

std::vector<float> nonzero_random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.25f, 1.0f);
  std::vector<float> v(n);
  for (auto &x : v)
    x = (rng() & 1 ? 1.0f : -1.0f) * mag(rng);
  return v;
}

// Best of a few event-timed launches: the denominator of the derived rates printed below.
double best_launch_seconds(cc::ResidentConv &conv) {
  auto stream = static_cast<cudaStream_t>(conv.stream());
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(a, stream);
    conv.launch();
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = std::min(best, ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

double num(const json &j, const char *k) {
  return j.contains(k) && j.at(k).is_number() ? j.at(k).get<double>() : -1.0;
}

class ArmCounters : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    std::string why;
    if (!cc::device_available(&why))
      GTEST_SKIP() << "no GPU: " << why;
    profile_ = cp::load_profile("fp-throughput", PROFILES_SOURCE_DIR);
    session_ = cp::CounterSession::open(profile_, 0);
    ASSERT_EQ(session_->describe().at("status"), "ready") << session_->describe().dump();
  }

  // Captures one arm of one stage; returns the counters block.
  json run_arm(const ConvShape &s, cc::Accum acc, cc::Kernel kernel = cc::Kernel::best) {
    const auto w = nonzero_random(size_t(s.weight_elems()), 1);
    const auto bias = nonzero_random(size_t(s.cout), 2);
    const auto x = nonzero_random(size_t(s.input_elems()), 3);
    cc::ResidentConv conv(s, acc, w.data(), bias.data(), kernel);
    conv.upload_input(x.data());
    conv.launch(); // warm: module load and first-launch costs stay out of the timing
    cudaStreamSynchronize(static_cast<cudaStream_t>(conv.stream()));
    const double best = best_launch_seconds(conv);
    return session_->capture([&] { conv.launch(); }, best, s.flops());
  }

  cp::Profile profile_;
  std::unique_ptr<cp::CounterSession> session_;
};

} // namespace

TEST_P(ArmCounters, CudaF64HasNoFmaAndExactCounts) {
  const std::string stage = GetParam();
  const ConvShape s = stage_shape(stage, 96);
  const json b = run_arm(s, cc::Accum::f64);
  ASSERT_EQ(b.at("status"), "collected") << b.dump();
  const json &m = b.at("metrics");
  const double dmul = double(cc::issued_macs(s, cc::Accum::f64, cc::Kernel::best));
  const double dadd = dmul + bias_adds(s);
  const cp::CountCheck c = cp::check_fp64_nofma(m, dmul, dadd, 0);
  EXPECT_TRUE(c.ok) << stage << " cuda-f64: " << c.summary();
  const json &d = b.at("derived");
  std::printf("%s/96/cuda-f64: passes %d  DMUL %.0f (issued %.0f)  DADD %.0f (expect %.0f)  "
              "DFMA %.0f  fp64 %.3f TFLOP/s (%.1f%% of %.2f)  fp64 pipe %.1f%%  DRAM %.3f TB/s\n",
              stage.c_str(), b.at("passes").get<int>(), num(m, cp::metric::dmul), dmul,
              num(m, cp::metric::dadd), dadd, num(m, cp::metric::dfma), num(d, "fp64_tflops"),
              num(d, "fp64_pct_of_peak"), num(d, "fp64_peak_tflops"), num(d, "fp64_pipe_util_pct"),
              num(d, "dram_tbps"));
}

TEST_P(ArmCounters, CudaF32HasNoFp64Work) {
  const std::string stage = GetParam();
  const ConvShape s = stage_shape(stage, 96);
  const json b = run_arm(s, cc::Accum::f32);
  ASSERT_EQ(b.at("status"), "collected") << b.dump();
  const json &m = b.at("metrics");
  const cp::CountCheck c = cp::check_no_fp64(m);
  EXPECT_TRUE(c.ok) << stage << " cuda-f32: " << c.summary();
  EXPECT_EQ(num(m, cp::metric::ffma), double(cc::issued_macs(s, cc::Accum::f32, cc::Kernel::best)))
      << stage << " cuda-f32: one FFMA per issued tap";
  const json &d = b.at("derived");
  std::printf("%s/96/cuda-f32: passes %d  FFMA %.0f (valid_macs %lld)  FADD %.0f  FMUL %.0f  "
              "fp32 %.3f TFLOP/s (%.1f%% of %.2f)  DRAM %.3f TB/s\n",
              stage.c_str(), b.at("passes").get<int>(), num(m, cp::metric::ffma),
              static_cast<long long>(s.valid_macs()), num(m, cp::metric::fadd),
              num(m, cp::metric::fmul), num(d, "fp32_tflops"), num(d, "fp32_pct_of_peak"),
              num(d, "fp32_peak_tflops"), num(d, "dram_tbps"));
}

// cuda-f64-fma: the same kernel with one __fma_rn per tap. The counts flip: DFMA == issued taps,
// no DMUL, DADD only for the bias. check_fp64_nofma() must reject it (the real-kernel twin of the
// planted fma() chain in profiles_gpu_tests).
TEST_P(ArmCounters, CudaF64FmaCountsFlip) {
  const std::string stage = GetParam();
  const ConvShape s = stage_shape(stage, 96);
  const json b = run_arm(s, cc::Accum::f64, cc::Kernel::fused);
  ASSERT_EQ(b.at("status"), "collected") << b.dump();
  const json &m = b.at("metrics");
  const double issued = double(cc::issued_macs(s, cc::Accum::f64, cc::Kernel::fused));
  EXPECT_EQ(num(m, cp::metric::dfma), issued);
  EXPECT_EQ(num(m, cp::metric::dmul), 0.0);
  EXPECT_EQ(num(m, cp::metric::dadd), bias_adds(s));
  EXPECT_FALSE(cp::check_fp64_nofma(m, issued, issued + bias_adds(s), 0).ok);
  const json &d = b.at("derived");
  std::printf("%s/96/cuda-f64-fma: passes %d  DFMA %.0f  fp64 %.3f TFLOP/s (%.1f%% of %.2f)  "
              "fp64 pipe %.1f%%\n",
              stage.c_str(), b.at("passes").get<int>(), num(m, cp::metric::dfma),
              num(d, "fp64_tflops"), num(d, "fp64_pct_of_peak"), num(d, "fp64_peak_tflops"),
              num(d, "fp64_pipe_util_pct"));
}

INSTANTIATE_TEST_SUITE_P(DefaultModel96Frames, ArmCounters,
                         ::testing::Values("up0", "up1", "up2", "up3", "pre", "amp0.k7.d3", "post"),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &ch : n)
                             ch = ch == '.' ? '_' : ch;
                           return n;
                         });
