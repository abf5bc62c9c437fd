// cuda-tf32: the polyphase GEMM on the tensor cores, tf32 operands, f32 accumulate.
#include "convbench/tc_conv.hpp"
#include "tc_kernel.cuh"

namespace convbench::tc {
void launch_wmma_tf32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                      float *d_y, void *stream, void *workspace, size_t workspace_bytes) {
  detail::launch_precision<float, detail::kBKcTf32>(s, d_x, d_w, d_b, d_y, stream, workspace,
                                                    workspace_bytes);
}
} // namespace convbench::tc
