// cudnn-f64: the peer a user would pick instead (cuDNN through its legacy convolution API).
// Tolerance 1e-9 relative L2: double tensors, one rounding to f32 at the end: f32-rounding level
// differences from the reference's addition order only.
#include "arms/cudnn_arm.hpp"

#if CONVBENCH_HAVE_CUDNN
namespace convbench::bench {
class CudnnF64 final : public CudnnArm {
public:
  cudnn::Mode mode() const override { return cudnn::Mode::f64; }
  double tolerance() const override { return 1e-9; }
  ArmFacts facts() const override { return {ArmPrecision::f64, "cudnn", ArmRole::peer}; }
  std::string floor_kind() const override { return "fp64_fma"; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudnnF64)
#endif
