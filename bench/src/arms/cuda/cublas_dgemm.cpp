// cublas-dgemm: the ceiling of the f64 arms (cuda-f64, cuda-f64-dmma): the case's GEMM in f64
// (cublasDgemm, which runs on the DMMA tensor cores of sm_80 and newer).
#include "arms/cublas_arm.hpp"

#if CONVBENCH_HAVE_CUBLAS
namespace convbench::bench {
class CublasDgemm final : public CublasArm {
public:
  cublas::Mode mode() const override { return cublas::Mode::dgemm; }
  std::string floor_kind() const override { return "fp64_dmma"; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "cublas", ArmRole::ceiling}; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CublasDgemm)
#endif
