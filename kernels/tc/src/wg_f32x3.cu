// cuda-f32x3's wgmma kernels (sm_90a): 3xTF32 (hi and lo tf32 parts, three products per k-step
// into a fresh accumulator per half buffer, the halves added with FADD); one instantiation per
// orientation and width.
#include "wg_kernel.cuh"

namespace convbench::tc::wg {
void launch_f32x3(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                  int planted) {
  launch_any<true>(p, m, bias, y, st, planted, nullptr);
}
int resident_blocks_f32x3(const Plan &p) {
  int blocks = 0;
  launch_any<true>(p, Maps{}, nullptr, nullptr, nullptr, 0, &blocks);
  return blocks;
}
} // namespace convbench::tc::wg
