// What the tensor-core arms (cuda-tf32, cuda-f32x3, cuda-f64-dmma; kernels/tc) share:
// cuda_arm.hpp's two stagings over tc::ResidentTc and tc::per_call_tc. Compiled only when the build
// links convbench_tc (which defines CONVBENCH_HAVE_TC), so this file is inert until bench_core
// links it.
#pragma once

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC

#include <memory>
#include <string>

#include "arms/cuda_arm.hpp"
#include "convbench/cuda_conv.hpp"
#include "convbench/tc_conv.hpp"
#include "core/device_gate.hpp"
#include "plan/arm.hpp"

namespace convbench::bench {

class TcArm : public Arm {
public:
  std::string name() const override { return "cuda-" + tc::to_string(precision()); }
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::tolerance; }
  // No CUDA call: available() runs before the lease.
  bool available(std::string *why_not) const override { return gpu_visible(why_not); }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (refuse_causal(p, why_not))
      return false;
    for (const auto &s : p.shapes)
      if (!tc::tc_supported(s, precision(), why_not, options()))
        return false;
    return true;
  }
  double device_bytes(const Problem &p, const std::string &staging) const override {
    const tc::Precision prec = precision();
    const tc::TcOptions o = options();
    // The packed weights and the transposed input (wgmma) or the split-K workspace (WMMA) too.
    return staged_device_bytes(p, staging, [prec, o](const ConvShape &s) {
      return double(tc::tc_extra_device_bytes(s, prec, o));
    });
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &) const override {
    const tc::Precision prec = precision();
    const tc::TcOptions o = options();
    return prepare_staging<tc::ResidentTc>(
        p, staging,
        [prec, o](const ConvShape &s, const float *w, const float *b) {
          return std::make_unique<tc::ResidentTc>(s, prec, w, b, o);
        },
        [prec, o](const ConvShape &s, const float *x, const float *w, const float *b, float *y) {
          tc::per_call_tc(s, prec, x, w, b, y, o);
        });
  }
  // issued_macs counts tensor-core multiply-adds (HGMMA, HMMA, DMMA), not FFMA / DFMA: the fp32
  // and fp64 instruction counters of profiles/ do not see them.
  nlohmann::json describe(const Problem &p) const override {
    const tc::Precision prec = precision();
    const tc::TcOptions o = options();
    return describe_kernels(
        p, [prec, o](const ConvShape &s) { return tc::tc_kernel_name(s, prec, o); },
        [prec, o](const ConvShape &s) { return tc::tc_issued_macs(s, prec, o); });
  }
  virtual tc::Precision precision() const = 0;
  // A forced variant (the hidden tile arms, cuda_tc_tiles.cpp); the arms run the plan's choice.
  virtual tc::TcOptions options() const { return {}; }
};

} // namespace convbench::bench

#endif
