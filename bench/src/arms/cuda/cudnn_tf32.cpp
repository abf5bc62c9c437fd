// cudnn-tf32: the peer a user would pick instead (cuDNN through its legacy convolution API).
// Tolerance 5e-3 relative L2: tensor-op math: operands rounded to tf32's 10-bit mantissa (about
// 5e-4 relative each).
#include "arms/cudnn_arm.hpp"

#if CONVBENCH_HAVE_CUDNN
namespace convbench::bench {
class CudnnTF32 final : public CudnnArm {
public:
  cudnn::Mode mode() const override { return cudnn::Mode::tf32; }
  double tolerance() const override { return 5e-3; }
  ArmFacts facts() const override { return {ArmPrecision::tf32, "cudnn", ArmRole::peer}; }
  std::string floor_kind() const override { return "fp32_fma"; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudnnTF32)
#endif
