// cuda-f32x3: the convolution on the tensor cores (kernels/tc, the kernels of cuda-tf32) at f32
// accuracy, 3xTF32: each operand split into hi = tf32(a) and lo = tf32(a - hi), three products
// per k-step (lo*hi + hi*lo first, then hi*hi) into a fresh f32 accumulator per few k-steps whose
// sum is added to the total with FADD, bias last. Tolerance 1e-4
// relative L2, cuda-f32's bound: the split keeps ~22 bits of each operand, the dropped lo*lo is
// ~2^-22 of a product, so the f32 accumulation dominates the error as in cuda-f32 (the host
// emulation measures it at least 10x under cuda-tf32's; kernels/tc/tests). Floor "fp32_fma", as
// cuda-tf32: devices.json has no tensor-core rate; issued_macs counts the three products.
#include "arms/tc_arm.hpp"

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC
namespace convbench::bench {
class CudaF32x3 final : public TcArm {
public:
  tc::Precision precision() const override { return tc::Precision::f32x3; }
  double tolerance() const override { return 1e-4; }
  ArmFacts facts() const override { return {ArmPrecision::f32x3, "mma-tf32", ArmRole::candidate}; }
  std::string floor_kind() const override { return "fp32_fma"; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaF32x3)
#endif
