// cpu-f32: f32 accumulator, blocked partial sums as a blocked-GEMM convolution (and torch) do.
#include "arms/host_arm.hpp"

namespace convbench::bench {
class CpuF32 final : public HostArm {
public:
  std::string name() const override { return "cpu-f32"; }
  GateKind gate() const override { return GateKind::tolerance; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "host", ArmRole::candidate}; }
  // Relative L2 against the f64 reference. An f32 sum over Cin x K/stride taps of O(1) terms
  // errs by ~sqrt(taps) x 2^-24 relative, about 1e-6 at up0; 1e-4 leaves room without letting a
  // wrong tap or a dropped bias through (those give relative errors of 1e-2 and more).
  double tolerance() const override { return 1e-4; }
  HostConvFn function() const override { return &conv_cpu_f32; }
  // The causal op: the CUDA pair's per-cell arithmetic (f32, taps ascending, no FMA).
  CausalHostFn causal_function() const override { return &causal_cpu_f32; }
  // Which instruction set ran: cpu-f32 on an AVX-512 machine and on an AVX2 one are different
  // kernels, and their times are not comparable across machines without it.
  nlohmann::json describe(const Problem &) const override {
    const std::string isa = cpu_f32_isa();
    return {{"name", "cpu-f32 " + isa + " register-blocked polyphase GEMM"}, {"isa", isa}};
  }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CpuF32)
