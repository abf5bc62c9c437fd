// cuda-f64-fma: byte-identical to cpu-f64 with one fp64 instruction per multiply-add. The product
// of two f32 values has at most 48 significant bits, so it is exact in f64 and
// __fma_rn(x, w, acc) rounds exactly what __dadd_rn(acc, __dmul_rn(x, w)) rounds: the same bits
// at the FMA floor (half the no-FMA floor of cuda-f64). Gated by memcmp like cuda-f64.
#include "arms/cuda_arm.hpp"

namespace convbench::bench {
class CudaF64Fma final : public CudaArm {
public:
  std::string name() const override { return "cuda-f64-fma"; }
  GateKind gate() const override { return GateKind::bitwise; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "simt-fma", ArmRole::candidate}; }
  std::string floor_kind() const override { return "fp64_fma"; }
  cuda::Accum accum() const override { return cuda::Accum::f64; }
  cuda::Kernel kernel() const override { return cuda::Kernel::fused; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaF64Fma)
