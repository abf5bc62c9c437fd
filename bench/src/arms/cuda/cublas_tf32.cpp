// cublas-tf32: the ceiling of cuda-tf32: the case's GEMM on the tensor cores in TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32), f32 operands and output.
#include "arms/cublas_arm.hpp"

#if CONVBENCH_HAVE_CUBLAS
namespace convbench::bench {
class CublasTf32 final : public CublasArm {
public:
  cublas::Mode mode() const override { return cublas::Mode::tf32; }
  std::string floor_kind() const override { return "fp32_fma"; }
  ArmFacts facts() const override { return {ArmPrecision::tf32, "cublas", ArmRole::ceiling}; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CublasTf32)
#endif
