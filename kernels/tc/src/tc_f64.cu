// cuda-f64-dmma: the polyphase GEMM on the fp64 tensor cores (DMMA), f64 operands (converted
// exactly from f32) and f64 accumulate.
#include "convbench/tc_conv.hpp"
#include "tc_kernel.cuh"

namespace convbench::tc {
void launch_wmma_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, void *workspace, size_t workspace_bytes) {
  detail::launch_precision<double, detail::kBKcF64>(s, d_x, d_w, d_b, d_y, stream, workspace,
                                                    workspace_bytes);
}
} // namespace convbench::tc
