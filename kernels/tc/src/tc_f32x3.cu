// cuda-f32x3: the polyphase GEMM on the tensor cores with each operand split into hi and lo tf32
// parts (3xTF32: lo*hi + hi*lo, then hi*hi per k-step), f32 accumulate.
#include "convbench/tc_conv.hpp"
#include "tc_kernel.cuh"

namespace convbench::tc {
void launch_wmma_f32x3(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                       float *d_y, void *stream, void *workspace, size_t workspace_bytes) {
  detail::launch_precision<detail::Split<float>, detail::kBKcF32x3>(s, d_x, d_w, d_b, d_y, stream,
                                                                    workspace, workspace_bytes);
}
} // namespace convbench::tc
