// cuda-f32x3's wgmma kernel (sm_90a): 3xTF32 (hi and lo tf32 parts, three products per k-step
// into a fresh accumulator per half stage, the halves added with FADD), one instantiation per
// tile width.
#include "wg_kernel.cuh"

namespace convbench::tc::wg {
void launch_f32x3(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                  int planted) {
  switch (p.bn) {
  case 64:
    return launch_bn<64, true>(p, m, bias, y, st, planted);
  case 96:
    return launch_bn<96, true>(p, m, bias, y, st, planted);
  case 128:
    return launch_bn<128, true>(p, m, bias, y, st, planted);
  }
  throw std::invalid_argument("wgmma f32x3: no kernel for a " + std::to_string(p.bn) +
                              "-column tile");
}
} // namespace convbench::tc::wg
