// The correctness gate end to end, through run_bench_conv itself: two deliberately wrong arms,
// each added in one file's worth of code (as a user adds an arm), must be recorded as failed,
// never timed, and make the exit status 4, while the result is still written.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "arms/host_arm.hpp"
#include "driver/run.hpp"
#include "plugin/plugin_arm.hpp"

namespace fs = std::filesystem;
using namespace convbench;
using namespace convbench::bench;

namespace {
// cpu-f64's exact output with one cell's last bit flipped: a bitwise gate must see 1 mismatch.
void one_bit_off(const ConvShape &s, const float *x, const float *w, const float *b, float *y,
                 ThreadPool &pool) {
  conv_cpu_f64(s, x, w, b, y, pool);
  uint32_t u;
  std::memcpy(&u, &y[s.output_elems() / 2], 4);
  u ^= 1u;
  std::memcpy(&y[s.output_elems() / 2], &u, 4);
}
// cpu-f32 without the bias: far outside any f32 tolerance.
void no_bias(const ConvShape &s, const float *x, const float *w, const float *, float *y,
             ThreadPool &pool) {
  conv_cpu_f32(s, x, w, nullptr, y, pool);
}

class OneBitOff final : public HostArm {
public:
  std::string name() const override { return "test-onebit"; }
  GateKind gate() const override { return GateKind::bitwise; }
  HostConvFn function() const override { return &one_bit_off; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "host", ArmRole::candidate}; }
};
class NoBias final : public HostArm {
public:
  std::string name() const override { return "test-nobias"; }
  GateKind gate() const override { return GateKind::tolerance; }
  double tolerance() const override { return 1e-4; }
  HostConvFn function() const override { return &no_bias; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::candidate}; }
};
} // namespace

CONVBENCH_REGISTER_ARM(OneBitOff)
CONVBENCH_REGISTER_ARM(NoBias)

// One small bench_conv run (base model, up3 at 4 frames, two fixed rounds, no lease, no
// counters) of `arms`, through run_bench_conv itself: its exit status and the record it wrote
// (null when it wrote none).
struct SmallRun {
  int rc = 0;
  nlohmann::json record;
};
SmallRun run_small(const std::string &arms, const std::string &tag) {
  fs::path dir = fs::temp_directory_path() / ("bench_gate_" + tag + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "r.json").string();
  const char *argv[] = {"bench_conv",
                        "--stage",
                        "up3",
                        "--model",
                        "bigvgan_base_22khz_80band",
                        "--frames",
                        "4",
                        "--reps",
                        "2",
                        "--target-ci", // the fixed count: two samples per gated case
                        "0",
                        "--arms",
                        arms.c_str(),
                        "--no-counters",
                        "--no-lease",
                        "--min-time",
                        "0.001",
                        "--out",
                        out.c_str()};
  SmallRun r;
  r.rc = run_bench_conv(int(sizeof argv / sizeof *argv), argv);
  std::ifstream in(out);
  if (in.good())
    r.record = nlohmann::json::parse(in);
  EXPECT_FALSE(fs::exists(out + ".journal")) << "the journal is left beside the record";
  fs::remove_all(dir);
  return r;
}

TEST(GateExit, WrongArmsFailTheGateAreNotTimedAndExit4) {
  const SmallRun run = run_small("cpu-f64,cpu-f32,test-onebit,test-nobias", "exit");
  // Planted: treating a failed gate as a warning (exit 0) fails this line.
  EXPECT_EQ(run.rc, 4);
  ASSERT_FALSE(run.record.is_null()) << "no result written for a failed gate";
  const auto &r = run.record;
  EXPECT_EQ(r["exit_status"], 4);
  int checked = 0;
  for (const auto &c : r["cases"]) {
    std::string arm = c["arm"];
    if (arm == "test-onebit") {
      EXPECT_EQ(c["gate"]["result"], "fail");
      EXPECT_EQ(c["gate"]["kind"], "bitwise");
      EXPECT_EQ(c["gate"]["mismatches"], 1); // exactly the flipped cell
      ++checked;
    } else if (arm == "test-nobias") {
      EXPECT_EQ(c["gate"]["result"], "fail");
      EXPECT_GT(c["gate"]["rel_l2_err"].get<double>(), 1e-2);
      ++checked;
    } else {
      EXPECT_EQ(c["gate"]["result"], "pass") << arm;
      EXPECT_EQ(c["samples"].size(), 2u) << arm;
      continue;
    }
    // A wrong arm is never timed. Planted: keeping its prepared arm and timing every case
    // regardless of its gate fails these.
    EXPECT_TRUE(c["samples"].empty()) << arm;
    EXPECT_TRUE(c["stats"].is_null()) << arm;
    for (const auto &o : r["plan"]["order"])
      for (const auto &id : o["cases"])
        EXPECT_NE(id, c["id"]);
  }
  EXPECT_EQ(checked, 2);
}

namespace {
// Two arms of one summation order (cpu-f32's), and one whose last bit differs in one cell: each
// within cpu-f32's tolerance of the reference, so only the bitwise sibling comparison tells.
void one_bit_off_f32(const ConvShape &s, const float *x, const float *w, const float *b, float *y,
                     ThreadPool &pool) {
  conv_cpu_f32(s, x, w, b, y, pool);
  uint32_t u;
  std::memcpy(&u, &y[s.output_elems() / 3], 4);
  u ^= 1u;
  std::memcpy(&y[s.output_elems() / 3], &u, 4);
}
class PeerBase final : public HostArm {
public:
  std::string name() const override { return "test-sibling-base"; }
  GateKind gate() const override { return GateKind::tolerance; }
  double tolerance() const override { return 1e-4; }
  HostConvFn function() const override { return &conv_cpu_f32; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::candidate}; }
};
class PeerSame final : public HostArm {
public:
  std::string name() const override { return "test-sibling-same"; }
  GateKind gate() const override { return GateKind::tolerance; }
  double tolerance() const override { return 1e-4; }
  std::string bitwise_sibling() const override { return "test-sibling-base"; }
  HostConvFn function() const override { return &conv_cpu_f32; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::candidate}; }
};
class PeerOff final : public HostArm {
public:
  std::string name() const override { return "test-sibling-off"; }
  GateKind gate() const override { return GateKind::tolerance; }
  double tolerance() const override { return 1e-4; }
  std::string bitwise_sibling() const override { return "test-sibling-base"; }
  HostConvFn function() const override { return &one_bit_off_f32; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::candidate}; }
};
} // namespace

CONVBENCH_REGISTER_ARM(PeerBase)
CONVBENCH_REGISTER_ARM(PeerSame)
CONVBENCH_REGISTER_ARM(PeerOff)

// The bitwise sibling gate: an arm one bit off its sibling in one cell fails (exit 4, not timed)
// though its tolerance gate against the reference passes; the arm equal to its sibling passes.
// Planted: gate_siblings skipped (no comparison) made the off arm pass and the exit 0.
TEST(GateExit, AnArmOneBitOffItsBitwisePeerFails) {
  const SmallRun run =
      run_small("cpu-f64,test-sibling-base,test-sibling-same,test-sibling-off", "sibling");
  EXPECT_EQ(run.rc, 4);
  ASSERT_FALSE(run.record.is_null());
  const auto &r = run.record;
  int seen = 0;
  for (const auto &c : r["cases"]) {
    const std::string arm = c["arm"];
    if (arm == "test-sibling-same" || arm == "test-sibling-off") {
      ++seen;
      const bool off = arm == "test-sibling-off";
      EXPECT_EQ(c["gate"]["sibling"]["arm"], "test-sibling-base/host") << arm;
      EXPECT_EQ(c["gate"]["sibling"]["mismatches"], off ? 1 : 0) << arm;
      EXPECT_EQ(c["gate"]["result"], off ? "fail" : "pass") << arm;
      EXPECT_LE(c["gate"]["rel_l2_err"].get<double>(), 1e-4) << arm; // the tolerance alone passes
      EXPECT_EQ(c["samples"].size(), off ? 0u : 2u) << arm;
    } else {
      EXPECT_FALSE(c["gate"].contains("sibling")) << arm;
    }
  }
  EXPECT_EQ(seen, 2);
}

namespace {
// A device fault as the plugin layer reports one (the CUDA context lost), in the gate's call.
void device_fault(const ConvShape &, const float *, const float *, const float *, float *,
                  ThreadPool &) {
  throw plugin::PluginFault("plugin /planted.so: arm test-device-fault: up3/4 host: CUDA error "
                            "in the stream after call: cudaErrorIllegalAddress (planted)",
                            "test-device-fault", true);
}
class DeviceFault final : public HostArm {
public:
  std::string name() const override { return "test-device-fault"; }
  GateKind gate() const override { return GateKind::tolerance; }
  double tolerance() const override { return 1e-4; }
  HostConvFn function() const override { return &device_fault; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::candidate}; }
};
} // namespace

CONVBENCH_REGISTER_ARM(DeviceFault)

// A fault that loses the CUDA context, in the gate: exit 1 and the record as far as the gate
// got (status faulted, the arm named, the gates done kept, the rest not-run), no journal left.
// Planted: the gate's PluginFault not caught (the old path: exit 1, no record) fails this.
TEST(GateExit, ADeviceFaultInTheGateWritesAFaultedRecord) {
  const SmallRun run = run_small("cpu-f64,cpu-f32,test-device-fault", "fault");
  EXPECT_EQ(run.rc, 1);
  ASSERT_FALSE(run.record.is_null()) << "no record of a run that faulted in its gate";
  const auto &r = run.record;
  EXPECT_EQ(r["status"], "faulted");
  EXPECT_EQ(r["exit_status"], 1);
  EXPECT_EQ(r["fault"]["arm"], "test-device-fault");
  EXPECT_EQ(r["fault"]["during"], "gate");
  EXPECT_TRUE(r["fault"]["context_lost"].get<bool>());
  for (const auto &c : r["cases"]) {
    EXPECT_TRUE(c["samples"].empty()) << c["id"];
    if (c["arm"] == "cpu-f64") {
      EXPECT_EQ(c["gate"]["result"], "pass"); // gated before the fault: kept
    }
    if (c["arm"] == "test-device-fault") {
      EXPECT_EQ(c["gate"]["result"], "not-run");
    }
  }
}

namespace {
// A ceiling as the gate sees one (GateKind::gemm): a host GEMM of 8 x 8 x 8 checked against the
// f64 product by its own check, never against the convolution's reference. `Wrong`: B read
// transposed, the fault the cuBLAS ceilings' GPU test plants.
template <bool Wrong> class HostGemmPrepared final : public PreparedArm {
public:
  void call() override {
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        float s = 0;
        for (int p = 0; p < 8; ++p)
          s += a(i, p) * (Wrong ? b(j, p) : b(p, j));
        c_[i * 8 + j] = s;
      }
  }
  void output(float *) override {}
  GateResult own_check() override {
    call();
    GateResult g;
    g.kind = GateKind::gemm;
    g.tolerance = 1e-5;
    double err2 = 0, ref2 = 0;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        double ref = 0;
        for (int p = 0; p < 8; ++p)
          ref += double(a(i, p)) * double(b(p, j));
        err2 += (c_[i * 8 + j] - ref) * (c_[i * 8 + j] - ref);
        ref2 += ref * ref;
        ++g.cells;
      }
    g.rel_l2_err = std::sqrt(err2 / ref2);
    g.pass = g.rel_l2_err <= g.tolerance;
    return g;
  }

private:
  static float a(int i, int p) { return float((i * 7 + p * 3) % 11) - 5.0f; }
  static float b(int p, int j) { return float((p * 5 + j * 2) % 13) - 6.0f; }
  float c_[64] = {};
};
template <bool Wrong> class HostGemm final : public Arm {
public:
  std::string name() const override { return Wrong ? "test-gemm-wrong" : "test-gemm"; }
  bool device() const override { return false; }
  GateKind gate() const override { return GateKind::gemm; }
  double tolerance() const override { return 1e-5; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::ceiling}; }
  std::string floor_kind() const override { return ""; }
  bool available(std::string *) const override { return true; }
  std::unique_ptr<PreparedArm> prepare(const Problem &, const std::string &,
                                       const ArmContext &) const override {
    return std::make_unique<HostGemmPrepared<Wrong>>();
  }
};
} // namespace

CONVBENCH_REGISTER_ARM(HostGemm<false>)
CONVBENCH_REGISTER_ARM(HostGemm<true>)

// The ceilings' gate: a GEMM arm is checked by its own host product, not compared with the
// convolution it does not compute; the right one passes and is timed as role "ceiling", the one
// with B transposed fails (exit 4, not timed). Planted (seen failing): the own check's verdict
// forced to pass (test-gemm-wrong timed, exit 0).
TEST(GateExit, ACeilingIsCheckedByItsOwnGemm) {
  const SmallRun run = run_small("cpu-f64,test-gemm,test-gemm-wrong", "gemm");
  EXPECT_EQ(run.rc, 4);
  ASSERT_FALSE(run.record.is_null());
  int seen = 0;
  for (const auto &c : run.record["cases"]) {
    const std::string arm = c["arm"];
    if (arm.rfind("cpu-f64", 0) == 0) { // the reference, and its A/A twin (--twins kinds)
      EXPECT_EQ(c["role"], "reference") << arm;
      continue;
    }
    ++seen;
    const bool wrong = arm == "test-gemm-wrong";
    EXPECT_EQ(c["role"], "ceiling") << arm;
    EXPECT_EQ(c["gate"]["kind"], "gemm") << arm;
    EXPECT_EQ(c["gate"]["cells"], 64) << arm;
    EXPECT_EQ(c["gate"]["tolerance"], 1e-5) << arm;
    EXPECT_EQ(c["gate"]["result"], wrong ? "fail" : "pass") << arm;
    EXPECT_EQ(c["samples"].size(), wrong ? 0u : 2u) << arm;
  }
  EXPECT_EQ(seen, 2);
}

namespace {
// A ceiling that computes nothing, as the gate sees one (GateKind::self): a host copy of 256
// bytes whose own check poisons the destination with 0xFF and compares it with the source byte
// for byte. `Short`: the copy leaves its last 16 bytes, the fault cuda-copy's GPU test plants.
template <bool Short> class HostCopyPrepared final : public PreparedArm {
public:
  HostCopyPrepared() {
    for (size_t i = 0; i < sizeof src_; ++i)
      src_[i] = uint8_t(i % 251);
  }
  void call() override { std::memcpy(dst_, src_, sizeof src_ - (Short ? 16 : 0)); }
  void output(float *) override {}
  GateResult own_check() override {
    std::memset(dst_, 0xFF, sizeof dst_);
    call();
    GateResult g;
    g.kind = GateKind::self;
    g.cells = int64_t(sizeof src_);
    for (size_t i = 0; i < sizeof src_; ++i)
      g.mismatches += src_[i] != dst_[i];
    g.pass = g.mismatches == 0;
    return g;
  }

private:
  uint8_t src_[256], dst_[256] = {};
};
template <bool Short> class HostCopy final : public Arm {
public:
  std::string name() const override { return Short ? "test-copy-short" : "test-copy"; }
  bool device() const override { return false; }
  GateKind gate() const override { return GateKind::self; }
  ArmFacts facts() const override { return {std::nullopt, "memcpy", ArmRole::ceiling}; }
  std::string floor_kind() const override { return ""; }
  bool available(std::string *) const override { return true; }
  std::unique_ptr<PreparedArm> prepare(const Problem &, const std::string &,
                                       const ArmContext &) const override {
    return std::make_unique<HostCopyPrepared<Short>>();
  }
};
} // namespace

CONVBENCH_REGISTER_ARM(HostCopy<false>)
CONVBENCH_REGISTER_ARM(HostCopy<true>)

// A ceiling that checks itself (GateKind::self): its own check decides, not the convolution's
// reference; the whole copy passes and is timed, the copy short by 16 bytes fails (exit 4, not
// timed), and the record says what was checked. Planted (seen failing): gate_case sending only
// GateKind::gemm to the arm's own check (the self arms compared with the reference: both failed).
TEST(GateExit, ACeilingThatComputesNothingIsCheckedByItself) {
  const SmallRun run = run_small("cpu-f64,test-copy,test-copy-short", "self");
  EXPECT_EQ(run.rc, 4);
  ASSERT_FALSE(run.record.is_null());
  int seen = 0;
  for (const auto &c : run.record["cases"]) {
    const std::string arm = c["arm"];
    if (arm.rfind("cpu-f64", 0) == 0)
      continue;
    ++seen;
    const bool wrong = arm == "test-copy-short";
    EXPECT_EQ(c["role"], "ceiling") << arm;
    EXPECT_TRUE(c["precision"].is_null()) << arm;
    EXPECT_EQ(c["gate"]["kind"], "self") << arm;
    EXPECT_EQ(c["gate"]["cells"], 256) << arm;
    EXPECT_EQ(c["gate"]["mismatches"], wrong ? 16 : 0) << arm;
    EXPECT_TRUE(c["gate"]["tolerance"].is_null()) << arm;
    EXPECT_TRUE(c["gate"]["max_abs_err"].is_null()) << arm;
    EXPECT_FALSE(c["gate"].contains("allclose_rel_needed")) << arm;
    EXPECT_EQ(c["gate"]["result"], wrong ? "fail" : "pass") << arm;
    EXPECT_EQ(c["samples"].size(), wrong ? 0u : 2u) << arm;
  }
  EXPECT_EQ(seen, 2);
}
