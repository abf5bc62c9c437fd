// cuda-tf32's wgmma kernel (sm_90a): tf32 operands, f32 accumulate, one instantiation per tile
// width.
#include "wg_kernel.cuh"

namespace convbench::tc::wg {
void launch_tf32(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                 int planted) {
  switch (p.bn) {
  case 64:
    return launch_bn<64, false>(p, m, bias, y, st, planted);
  case 96:
    return launch_bn<96, false>(p, m, bias, y, st, planted);
  case 128:
    return launch_bn<128, false>(p, m, bias, y, st, planted);
  case 192:
    return launch_bn<192, false>(p, m, bias, y, st, planted);
  case 256:
    return launch_bn<256, false>(p, m, bias, y, st, planted);
  }
  throw std::invalid_argument("wgmma tf32: no kernel for a " + std::to_string(p.bn) +
                              "-column tile");
}
} // namespace convbench::tc::wg
