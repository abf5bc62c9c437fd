// The tensor pipes under the counter instrument (fp-throughput's tensor paths):
//  - the loops of tensor_loops.hpp (DMMA, HMMA tf32 / bf16, HGMMA tf32 / bf16 / fp16), whose
//    multiply-adds are known exactly;
//  - the tensor-core arms cuda-f64-dmma, cuda-tf32 and cuda-f32x3 (resident) on stages up0..up3
//    of the default model at 96 frames: the FLOP of the arm's precision equals 2 x the
//    multiply-adds its plan issues (tile padding included; three products per multiply-add for
//    f32x3), exactly, and no other tensor precision counts anything.
// Planted faults checked on every run: the DMMA kernel with the last iteration of every split
// dropped (TcOptions::planted) must fail the check; the same real capture derived through a profile
// whose DMMA FLOP scale is doubled must fail it.
// Where no GPU is visible the tests skip with the reason; with CONVBENCH_EXPECT_GPU=1 (the GPU
// box) they fail instead.
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "convbench/cuda_conv.hpp"
#include "convbench/profiles/counters.hpp"
#include "convbench/tc_conv.hpp"
#include "convbench/tensor_loops.hpp"
#include "model_stages.hpp"

namespace cp = convbench::profiles;
namespace tc = convbench::tc;
namespace loops = convbench::tc::loops;
using nlohmann::json;

namespace {

bool expect_gpu() {
  const char *v = std::getenv("CONVBENCH_EXPECT_GPU");
  return v && std::string(v) == "1";
}

// "" when the tensor-core kernels run here (a compute capability 9.0 device), else why not.
std::string why_no_device() {
  std::string why;
  if (!convbench::cuda::device_available(&why))
    return "no GPU: " + why;
  return loops::device_reason();
}

std::vector<float> nonzero_random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.25f, 1.0f);
  std::vector<float> v(n);
  for (auto &x : v)
    x = (rng() & 1 ? 1.0f : -1.0f) * mag(rng);
  return v;
}

double num(const json &j, const std::string &k) {
  return j.contains(k) && j.at(k).is_number() ? j.at(k).get<double>() : -1.0;
}

// The shipped profile with the DMMA path's FLOP per counted unit doubled: the planted wrong scale.
cp::Profile doubled_fp64_scale() {
  std::ifstream f(std::string(PROFILES_SOURCE_DIR) + "/fp-throughput.json");
  json doc = json::parse(f);
  for (json &d : doc["derived"])
    if (d["name"] == "tensor_fp64_flop")
      d["sum"][0]["scale"] = 2 * d["sum"][0].value("scale", 1.0);
  const cp::KnownMetrics known =
      cp::KnownMetrics::load(std::string(PROFILES_SOURCE_DIR) + "/known_metrics.txt");
  return cp::parse_profile(doc.dump(), "planted-scale.json", known);
}

class TensorCounters : public ::testing::Test {
protected:
  void SetUp() override {
    if (const std::string why = why_no_device(); !why.empty()) {
      if (expect_gpu())
        FAIL() << "CONVBENCH_EXPECT_GPU=1 but: " << why;
      GTEST_SKIP() << why;
    }
    profile_ = cp::load_profile("fp-throughput", PROFILES_SOURCE_DIR);
    session_ = cp::CounterSession::open(profile_, 0);
    const json d = session_->describe();
    ASSERT_EQ(d.at("status"), "ready") << d.dump();
    // A refused tensor metric is recorded, not fatal to the capture; here it fails the test,
    // naming CUPTI's error: the profile must be corrected (tensor_probe says to what).
    ASSERT_FALSE(d.contains("rejected_metrics")) << d.at("rejected_metrics").dump();
  }

  // One resident call of a tensor-core arm on `stage` (upN of the default model at 96 frames).
  json run_arm(const std::string &stage, tc::Precision prec, const tc::TcOptions &o,
               double *issued) {
    const auto &m = convbench::testing::default_model();
    const convbench::ConvShape s =
        convbench::testing::model_stages(m, 96).at(std::stoul(stage.substr(2))).shape;
    const auto w = nonzero_random(size_t(s.weight_elems()), 1);
    const auto b = nonzero_random(size_t(s.cout), 2);
    const auto x = nonzero_random(size_t(s.input_elems()), 3);
    tc::ResidentTc conv(s, prec, w.data(), b.data(), o);
    conv.upload_input(x.data());
    auto stream = static_cast<cudaStream_t>(conv.stream());
    conv.launch(); // warm: module load stays out of the range
    cudaStreamSynchronize(stream);
    *issued = double(tc::tc_issued_macs(s, prec, o));
    name_ = tc::tc_kernel_name(s, prec, o);
    return session_->capture(
        [&] {
          conv.launch();
          cudaStreamSynchronize(stream);
        },
        1e-4, s.flops());
  }

  void print(const std::string &what, const json &b, double issued) {
    const json &d = b.at("derived");
    std::printf("%s [%s]: passes %d  issued MACs %.0f  FLOP fp64 %.0f tf32 %.0f bf16 %.0f "
                "fp16 %.0f  DMMA %.0f HMMA %.0f HGMMA %.0f warp inst  tensor busy %.1f%%\n",
                what.c_str(), name_.c_str(), b.at("passes").get<int>(), issued,
                num(d, "tensor_fp64_flop"), num(d, "tensor_tf32_flop"), num(d, "tensor_bf16_flop"),
                num(d, "tensor_fp16_flop"),
                num(b.at("metrics"), "sm__inst_executed_pipe_tensor_op_dmma.sum"),
                num(b.at("metrics"), "sm__inst_executed_pipe_tensor_op_hmma.sum"),
                num(b.at("metrics"), "sm__inst_executed_pipe_tensor_op_gmma.sum"),
                num(d, "tensor_pipe_util_pct"));
  }

  cp::Profile profile_;
  std::unique_ptr<cp::CounterSession> session_;
  std::string name_;
};

const char *kStages[] = {"up0", "up1", "up2", "up3"};

} // namespace

TEST_F(TensorCounters, LoopsCountTheirMultiplyAddsExactly) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (loops::Kind k : loops::kinds()) {
    const loops::Info i = loops::info(k);
    const int units = i.warpgroup ? 2 : 4;
    loops::launch(k, sms, units, 16);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << i.name;
    const json b = session_->capture(
        [&] {
          loops::launch(k, sms, units, 16);
          cudaDeviceSynchronize();
        },
        1e-4, 1.0);
    ASSERT_EQ(b.at("status"), "collected") << b.dump();
    const double macs = double(loops::issued(k, sms, units, 16).macs);
    name_ = i.ptx;
    print(i.name, b, macs);
    const cp::CountCheck c = cp::check_tensor_work(profile_, b.at("derived"), i.precision, macs);
    EXPECT_TRUE(c.ok) << i.name << ": " << c.summary();
  }
}

TEST_F(TensorCounters, DmmaArmCountsWhatItsPlanIssues) {
  const cp::Profile planted = doubled_fp64_scale();
  for (const char *stage : kStages) {
    double issued = 0;
    const json b = run_arm(stage, tc::Precision::f64, {}, &issued);
    ASSERT_EQ(b.at("status"), "collected") << b.dump();
    print(std::string(stage) + "/96/cuda-f64-dmma", b, issued);
    const cp::CountCheck c = cp::check_tensor_work(profile_, b.at("derived"), "fp64", issued);
    EXPECT_TRUE(c.ok) << stage << " cuda-f64-dmma: " << c.summary();
    // The planted wrong scale, on the real counts.
    const json wrong = cp::derive(planted, b.at("metrics"), 1e-4, 1.0);
    EXPECT_FALSE(cp::check_tensor_work(planted, wrong, "fp64", issued).ok) << stage;
  }
}

TEST_F(TensorCounters, DmmaWithADroppedIterationFails) {
  tc::TcOptions o;
  o.planted = 1; // dm_launch.hpp's kPlantDropIter: the last iteration of every split not issued
  double issued = 0;
  const json b = run_arm("up0", tc::Precision::f64, o, &issued);
  ASSERT_EQ(b.at("status"), "collected") << b.dump();
  print("up0/96/cuda-f64-dmma (planted: iteration dropped)", b, issued);
  const cp::CountCheck c = cp::check_tensor_work(profile_, b.at("derived"), "fp64", issued);
  EXPECT_FALSE(c.ok) << "a DMMA kernel that issues fewer MMAs than its plan passed the check";
  EXPECT_LT(num(b.at("derived"), "tensor_fp64_flop"), 2 * issued);
}

TEST_F(TensorCounters, Tf32ArmCountsWhatItsPlanIssues) {
  for (const char *stage : kStages) {
    double issued = 0;
    const json b = run_arm(stage, tc::Precision::tf32, {}, &issued);
    ASSERT_EQ(b.at("status"), "collected") << b.dump();
    print(std::string(stage) + "/96/cuda-tf32", b, issued);
    const cp::CountCheck c = cp::check_tensor_work(profile_, b.at("derived"), "tf32", issued);
    EXPECT_TRUE(c.ok) << stage << " cuda-tf32: " << c.summary();
  }
}

// Three tf32 products per multiply-add: issued_macs already counts them.
TEST_F(TensorCounters, F32x3ArmCountsItsThreeProducts) {
  for (const char *stage : kStages) {
    double issued = 0;
    const json b = run_arm(stage, tc::Precision::f32x3, {}, &issued);
    ASSERT_EQ(b.at("status"), "collected") << b.dump();
    print(std::string(stage) + "/96/cuda-f32x3", b, issued);
    const cp::CountCheck c = cp::check_tensor_work(profile_, b.at("derived"), "tf32", issued);
    EXPECT_TRUE(c.ok) << stage << " cuda-f32x3: " << c.summary();
    EXPECT_FALSE(cp::check_tensor_work(profile_, b.at("derived"), "tf32", issued / 3).ok)
        << stage << ": one product counted instead of three";
  }
}
