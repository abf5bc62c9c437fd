// cuda-causal-tiled: the tiled kernel (a channel tile staged through shared memory, the sequence in
// exact chunks); f32 output.
#include "arms/causal_arm.hpp"

#if CONVBENCH_HAVE_CUDA
namespace convbench::bench {
class CudaCausalTiled final : public CausalCudaArm {
public:
  cuda::CausalKernel kernel() const override { return cuda::CausalKernel::tiled; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaCausalTiled)
#endif
