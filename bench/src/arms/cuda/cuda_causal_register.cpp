// cuda-causal-register: the register kernel (each thread keeps its channel's taps and a sliding
// window in registers); f32 output.
#include "arms/causal_arm.hpp"

#if CONVBENCH_HAVE_CUDA
namespace convbench::bench {
class CudaCausalReg final : public CausalCudaArm {
public:
  cuda::CausalKernel kernel() const override { return cuda::CausalKernel::reg; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaCausalReg)
#endif
