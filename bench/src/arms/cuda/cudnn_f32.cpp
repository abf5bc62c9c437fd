// cudnn-f32: the peer a user would pick instead (cuDNN through its legacy convolution API).
// Tolerance 5e-5 relative L2: IEEE f32 with FMA math and no tensor-op conversion; Find may pick FFT
// or Winograd, whose transforms add error beyond plain f32 summation (kernels/cudnn/tests states
// the same bound).
#include "arms/cudnn_arm.hpp"

#if CONVBENCH_HAVE_CUDNN
namespace convbench::bench {
class CudnnF32 final : public CudnnArm {
public:
  cudnn::Mode mode() const override { return cudnn::Mode::f32; }
  double tolerance() const override { return 5e-5; }
  ArmFacts facts() const override { return {ArmPrecision::f32, "cudnn", ArmRole::peer}; }
  std::string floor_kind() const override { return "fp32_fma"; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudnnF32)
#endif
