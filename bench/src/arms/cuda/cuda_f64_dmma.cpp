// cuda-f64-dmma: the convolution on the fp64 tensor cores (DMMA; kernels/tc): on an H100/H200 the
// shifted-window GEMMs with mma.sync m16n8k16 (dm_plan.hpp), elsewhere the polyphase GEMM on WMMA
// m8n8k4; f32 inputs converted to f64 exactly, f64 accumulate, bias last, one rounding to f32.
// Not byte-identical to cpu-f64 (another addition order): a cell equals the reference or sits one
// f32 ulp from it (the f64 sums differ by ~1e-16 relative and straddle an f32 rounding midpoint
// with odds ~1e-6 per cell). Tolerance 1e-9 relative L2, as cudnn-f64: a 1e-12 bound does not
// hold, since a single one-ulp cell among up0's 590k at 96 frames gives ~1e-10
// (kernels/tc/tests/tc_support.hpp). Floor "fp64_dmma": the DMMA rate devices.json holds
// (measured by tensor_peak).
#include "arms/tc_arm.hpp"

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC
namespace convbench::bench {
class CudaF64Dmma final : public TcArm {
public:
  tc::Precision precision() const override { return tc::Precision::f64; }
  double tolerance() const override { return 1e-9; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "dmma", ArmRole::candidate}; }
  std::string floor_kind() const override { return "fp64_dmma"; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaF64Dmma)
#endif
