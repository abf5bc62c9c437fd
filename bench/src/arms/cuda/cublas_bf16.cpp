// cublas-bf16: the ceiling of a bf16 arm: the case's GEMM with bf16 operands (rounded once, when
// prepared), f32 accumulation and output (cublasGemmEx). devices.json has no bf16 floor kind: the
// f32 one is recorded.
#include "arms/cublas_arm.hpp"

#if CONVBENCH_HAVE_CUBLAS
namespace convbench::bench {
class CublasBf16 final : public CublasArm {
public:
  cublas::Mode mode() const override { return cublas::Mode::bf16; }
  std::string floor_kind() const override { return "fp32_fma"; }
  ArmFacts facts() const override { return {ArmPrecision::bf16, "cublas", ArmRole::ceiling}; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CublasBf16)
#endif
