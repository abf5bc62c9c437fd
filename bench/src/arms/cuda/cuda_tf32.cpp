// cuda-tf32: the convolution on the tensor cores (kernels/tc: the wgmma kernels on an H100/H200,
// Conv1d and ConvTranspose1d; the WMMA polyphase GEMM elsewhere): operands rounded to tf32 as
// __float_to_tf32 does, f32 accumulate, bias last. Tolerance 5e-3 relative L2, as cudnn-tf32:
// each operand carries up to 2^-11 relative error (the emulation measures ~3e-4 on the vocoder
// stages). Floor "fp32_fma": devices.json has no tensor-core rate, so the fp32 FMA floor is the
// stated comparison (a tf32 kernel may legitimately beat it; ratios below 1 are expected).
#include "arms/tc_arm.hpp"

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC
namespace convbench::bench {
class CudaTf32 final : public TcArm {
public:
  tc::Precision precision() const override { return tc::Precision::tf32; }
  double tolerance() const override { return 5e-3; }
  ArmFacts facts() const override { return {ArmPrecision::tf32, "mma-tf32", ArmRole::candidate}; }
  std::string floor_kind() const override { return "fp32_fma"; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaTf32)
#endif
