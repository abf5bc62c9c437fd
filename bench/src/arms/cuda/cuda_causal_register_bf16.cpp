// cuda-causal-register-bf16: the register kernel (each thread keeps its channel's taps and a
// sliding window in registers); the same kernel storing y as bf16: kept to show that a bf16
// equality gate misses order changes.
#include "arms/causal_arm.hpp"

#if CONVBENCH_HAVE_CUDA
namespace convbench::bench {
class CudaCausalRegBf16 final : public CausalCudaArm {
public:
  cuda::CausalKernel kernel() const override { return cuda::CausalKernel::reg; }
  cuda::CausalOut out() const override { return cuda::CausalOut::bf16; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaCausalRegBf16)
#endif
