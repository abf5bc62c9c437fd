// cuda-causal-tiled-bf16: the tiled kernel (a channel tile staged through shared memory, the
// sequence in exact chunks); the same kernel storing y as bf16: kept to show that a bf16 equality
// gate misses order changes.
#include "arms/causal_arm.hpp"

#if CONVBENCH_HAVE_CUDA
namespace convbench::bench {
class CudaCausalTiledBf16 final : public CausalCudaArm {
public:
  cuda::CausalKernel kernel() const override { return cuda::CausalKernel::tiled; }
  cuda::CausalOut out() const override { return cuda::CausalOut::bf16; }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaCausalTiledBf16)
#endif
