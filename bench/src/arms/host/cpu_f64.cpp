// cpu-f64: the reference every other arm is gated against (f64 accumulator per output cell).
#include "arms/host_arm.hpp"

namespace convbench::bench {
class CpuF64 final : public HostArm {
public:
  std::string name() const override { return "cpu-f64"; }
  GateKind gate() const override { return GateKind::reference; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "host", ArmRole::reference}; }
  HostConvFn function() const override { return &conv_cpu_f64; }
  CausalHostFn causal_function() const override { return &causal_cpu_f64; }
  nlohmann::json describe(const Problem &) const override {
    const std::string isa = cpu_f64_isa();
    return {{"name", "cpu-f64 reference (" + isa + " register tile, one f64 accumulator per cell)"},
            {"isa", isa}};
  }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CpuF64)
