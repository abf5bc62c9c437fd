// cuda-f32: f32 accumulation on the device, gated by relative L2 against cpu-f64.
#include "arms/cuda_arm.hpp"

namespace convbench::bench {
class CudaF32 final : public CudaArm {
public:
  std::string name() const override { return "cuda-f32"; }
  GateKind gate() const override { return GateKind::tolerance; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "simt-fma", ArmRole::candidate}; }
  double tolerance() const override { return 1e-4; } // same bound and reasoning as cpu-f32
  std::string floor_kind() const override { return "fp32_fma"; }
  cuda::Accum accum() const override { return cuda::Accum::f32; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaF32)
