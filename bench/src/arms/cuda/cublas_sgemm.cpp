// cublas-sgemm: the ceiling of the f32 SIMT arms (cuda-f32, cuda-f32x3): the case's GEMM in f32
// math, never TF32 (the check's 1e-5 bound fails TF32's ~2e-4).
#include "arms/cublas_arm.hpp"

#if CONVBENCH_HAVE_CUBLAS
namespace convbench::bench {
class CublasSgemm final : public CublasArm {
public:
  cublas::Mode mode() const override { return cublas::Mode::sgemm; }
  std::string floor_kind() const override { return "fp32_fma"; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "cublas", ArmRole::ceiling}; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CublasSgemm)
#endif
