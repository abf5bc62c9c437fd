// cuda-tf32's wgmma kernels (sm_90a): tf32 operands, f32 accumulate; one instantiation per
// orientation and width.
#include "wg_kernel.cuh"

namespace convbench::tc::wg {
void launch_tf32(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                 int planted) {
  launch_any<false>(p, m, bias, y, st, planted, nullptr);
}
int resident_blocks_tf32(const Plan &p) {
  int blocks = 0;
  launch_any<false>(p, Maps{}, nullptr, nullptr, nullptr, 0, &blocks);
  return blocks;
}
} // namespace convbench::tc::wg
