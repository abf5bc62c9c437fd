// cuda-f64: byte-identical to cpu-f64 (same f64 addition order, __dmul_rn/__dadd_rn, no FMA).
#include "arms/cuda_arm.hpp"

namespace convbench::bench {
class CudaF64 final : public CudaArm {
public:
  std::string name() const override { return "cuda-f64"; }
  GateKind gate() const override { return GateKind::bitwise; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "simt", ArmRole::candidate}; }
  // Two fp64 instructions (mul, add) per multiply-add: half the FMA rate.
  std::string floor_kind() const override { return "fp64_nofma"; }
  cuda::Accum accum() const override { return cuda::Accum::f64; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaF64)
