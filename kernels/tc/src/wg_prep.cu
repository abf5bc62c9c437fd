// The wgmma kernels' operands: the weights packed into A[j][row][ic] (once, when a stage's
// weights are uploaded) and the input transposed into xT[b][t][ic] (every call), both rounded to
// tf32 as the tensor-op conversion does (cvt.rna: to nearest, ties away), with the lo parts of
// f32x3's split: lo = tf32(v - hi), 0 where hi is infinite (so a non-finite operand behaves as in
// cuda-tf32). The wgmma kernel reads them as they are: its tf32 operands are already rounded.
#include <algorithm>

#include "convbench/cuda_check.hpp"
#include "convbench/device_facts.hpp"
#include "wg_launch.hpp"

namespace convbench::tc::wg {
namespace {

__device__ __forceinline__ float to_tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return __uint_as_float(r);
}
__device__ __forceinline__ void split_tf32(float v, float &hi, float &lo) {
  hi = to_tf32(v);
  lo = isinf(hi) ? 0.0f : to_tf32(v - hi);
}

__global__ void pack_weights(const Plan P, const float *__restrict__ w, float *__restrict__ hi,
                             float *__restrict__ lo) {
  const int64_t n = int64_t(P.taps) * P.rows * P.cin_pad;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int ic = int(i % P.cin_pad);
    const int row = int((i / P.cin_pad) % P.rows);
    const int j = int(i / (int64_t(P.cin_pad) * P.rows));
    const float v = ic < P.cin ? packed_weight(P, w, j, row, ic) : 0.0f;
    float h, l;
    split_tf32(v, h, l);
    hi[i] = h;
    if (lo)
      lo[i] = l;
  }
}

// 32 x 32 tiles through shared memory: reads along t, writes along ic, both coalesced.
__global__ void transpose_input(const Plan P, const float *__restrict__ x, float *__restrict__ hi,
                                float *__restrict__ lo) {
  __shared__ float tile[32][33];
  const int t0 = blockIdx.x * 32, c0 = blockIdx.y * 32, b = blockIdx.z;
  const int tx = threadIdx.x, ty = threadIdx.y; // 32 x 8 threads
  for (int i = ty; i < 32; i += 8) {
    const int c = c0 + i, t = t0 + tx;
    tile[i][tx] = (c < P.cin && t < P.l_in) ? x[(int64_t(b) * P.cin + c) * P.l_in + t] : 0.0f;
  }
  __syncthreads();
  for (int i = ty; i < 32; i += 8) {
    const int t = t0 + i, c = c0 + tx;
    if (t < P.l_in && c < P.cin_pad) {
      const int64_t o = (int64_t(b) * P.l_in + t) * P.cin_pad + c;
      float h, l;
      split_tf32(tile[tx][i], h, l);
      hi[o] = h;
      if (lo)
        lo[o] = l;
    }
  }
}

} // namespace

void launch_pack(const Plan &p, const float *d_w, float *hi, float *lo, cudaStream_t st) {
  const int64_t n = packed_weight_floats(p);
  const unsigned blocks = unsigned(std::min<int64_t>((n + 255) / 256, device_facts().sms * 32));
  pack_weights<<<blocks, 256, 0, st>>>(p, d_w, hi, lo);
  CONVBENCH_CUDA_CHECK(cudaGetLastError()); // pack_weights launch
}

void launch_transpose(const Plan &p, const float *d_x, float *hi, float *lo, cudaStream_t st) {
  const dim3 grid(unsigned((p.l_in + 31) / 32), unsigned((p.cin_pad + 31) / 32), unsigned(p.batch));
  transpose_input<<<grid, dim3(32, 8), 0, st>>>(p, d_x, hi, lo);
  CONVBENCH_CUDA_CHECK(cudaGetLastError()); // transpose_input launch
}

} // namespace convbench::tc::wg
