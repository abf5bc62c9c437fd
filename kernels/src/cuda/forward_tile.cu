// cuda-f32's forward Conv1d kernel (forward_tile.hpp has the mapping and the contract).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "convbench/cuda_check.hpp"
#include "forward_tile.hpp"

namespace cg = cooperative_groups;

namespace convbench::cuda::detail {

namespace {

constexpr int kBm = kForwardTileBm, kBn = kForwardTileBn, kBk = kForwardTileBk;
constexpr int kThreads = 256; // 16 x 16 threads, 8 x 8 cells each
constexpr int kAPad = 4;      // As rows padded: the transposing store is conflict-free
constexpr int kLoads = kBm * kBk / kThreads; // A (and B) elements each thread stages per step
static_assert(kBm == kBn && kLoads == 4, "the staging below assumes 128 x 128 x 8 and 256 threads");

// Stages step `s`'s weight slice (kBm rows x kBk reduction indices) and gathered input slice
// (kBk reduction indices x kBn positions) into registers; 0 outside the shape.
struct Stage {
  float a[kLoads], b[kLoads];

  // 32-bit indices: forward_tile_supported() keeps the weight and one batch item's input and
  // output under 2^31 elements.
  __device__ void load(const ForwardTilePlan &p, const float *__restrict__ w,
                       const float *__restrict__ xb, int m0, int n0, int s, int t) {
    const int r0 = s * kBk;
    const int cout = int(p.cout), red = int(p.reduction), k = int(p.k);
#pragma unroll
    for (int q = 0; q < kLoads; ++q) {
      const int e = t + kThreads * q;
      const int m = m0 + e / kBk, r = r0 + e % kBk;
      a[q] = m < cout && r < red ? w[m * red + r] : 0.0f;
    }
    const int o = n0 + t % kBn;
    const int base = o * int(p.stride) - int(p.padding);
    const bool o_in = o < int(p.l_out);
#pragma unroll
    for (int q = 0; q < kLoads; ++q) {
      const int r = r0 + (t + kThreads * q) / kBn;
      float v = 0.0f;
      if (r < red && o_in) {
        const int ic = r / k, kk = r - ic * k;
        const int pos = base + kk * int(p.dilation);
        if (pos >= 0 && pos < int(p.l_in))
          v = xb[ic * int(p.l_in) + pos];
      }
      b[q] = v;
    }
  }

  __device__ void store(float (*as)[kBm + kAPad], float (*bs)[kBn], int t) const {
#pragma unroll
    for (int q = 0; q < kLoads; ++q) {
      const int e = t + kThreads * q;
      as[e % kBk][e / kBk] = a[q];
      bs[e / kBn][e % kBn] = b[q];
    }
  }
};

__device__ __forceinline__ void load4(float *dst, const float *src) {
  const float4 v = *reinterpret_cast<const float4 *>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

// Thread (ty, tx) owns rows ty*4 + {0..3} and 64 + ty*4 + {0..3} of the tile, columns tx*4 +
// {0..3} and 64 + tx*4 + {0..3}: float4 shared-memory reads, broadcast across the warp's two ty.
__device__ __forceinline__ int tile_row(int ty, int i) {
  return (i < 4 ? 0 : 64) + ty * 4 + (i & 3);
}

__global__ void __launch_bounds__(kThreads, 2)
    forward_tile_kernel(ForwardTilePlan p, const float *__restrict__ x, const float *__restrict__ w,
                        const float *__restrict__ bias, float *__restrict__ y, int ranks_added) {
  __shared__ __align__(16) float as[2][kBk][kBm + kAPad];
  __shared__ __align__(16) float bs[2][kBk][kBn];
  extern __shared__ __align__(16) float partial[]; // kBm x kBn, split > 1 only

  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int n0 = int(blockIdx.x) * kBn, m0 = int(blockIdx.y) * kBm;
  const int64_t bi = blockIdx.z / p.split;
  const int rank = int(blockIdx.z % p.split);
  const int steps = int(p.steps), per = (steps + p.split - 1) / p.split;
  const int s0 = rank * per < steps ? rank * per : steps;
  const int s1 = s0 + per < steps ? s0 + per : steps;
  const float *xb = x + bi * p.cin * p.l_in;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      acc[i][j] = 0.0f;

  Stage st;
  if (s0 < s1) {
    st.load(p, w, xb, m0, n0, s0, t);
    st.store(as[0], bs[0], t);
  }
  __syncthreads();
  for (int s = s0; s < s1; ++s) {
    const int buf = (s - s0) & 1;
    const bool next = s + 1 < s1;
    if (next)
      st.load(p, w, xb, m0, n0, s + 1, t); // in flight while this step computes
#pragma unroll
    for (int j = 0; j < kBk; ++j) {
      float a[8], b[8];
      load4(a, &as[buf][j][ty * 4]);
      load4(a + 4, &as[buf][j][64 + ty * 4]);
      load4(b, &bs[buf][j][tx * 4]);
      load4(b + 4, &bs[buf][j][64 + tx * 4]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int c = 0; c < 8; ++c)
          acc[i][c] = fmaf(a[i], b[c], acc[i][c]);
    }
    if (next)
      st.store(as[buf ^ 1], bs[buf ^ 1], t);
    __syncthreads();
  }

  float *yb = y + bi * p.cout * p.l_out;
  const int cout = int(p.cout), l_out = int(p.l_out);
  if (p.split == 1) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int m = m0 + tile_row(ty, i);
      if (m >= cout)
        continue;
      const float bv = bias ? bias[m] : 0.0f;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int o = n0 + tile_row(tx, c);
        if (o < l_out)
          yb[m * l_out + o] = acc[i][c] + bv;
      }
    }
    return;
  }

  // split > 1: each rank leaves its partial tile in its shared memory; rank r then adds rows
  // [r, r + 1) * kBm / split of the tile over ranks 0..split-1 in order, and the bias.
  cg::cluster_group cluster = cg::this_cluster();
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int c = 0; c < 8; c += 4)
      *reinterpret_cast<float4 *>(&partial[tile_row(ty, i) * kBn + tile_row(tx, c)]) =
          make_float4(acc[i][c], acc[i][c + 1], acc[i][c + 2], acc[i][c + 3]);
  cluster.sync();
  const int rows = kBm / p.split;
  for (int cell = t; cell < rows * kBn; cell += kThreads) {
    const int ml = rank * rows + cell / kBn, nl = cell % kBn;
    const int m = m0 + ml, o = n0 + nl;
    float sum = cluster.map_shared_rank(partial, 0)[ml * kBn + nl];
    for (int q = 1; q < ranks_added; ++q) // p.split but in the planted test variant
      sum += cluster.map_shared_rank(partial, q)[ml * kBn + nl];
    if (m < cout && o < l_out)
      yb[m * l_out + o] = sum + (bias ? bias[m] : 0.0f);
  }
  cluster.sync(); // no rank's shared memory may go while another still reads it
}

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr size_t kPartialBytes = size_t(kBm) * kBn * sizeof(float);

} // namespace

bool forward_tile_supported(const ConvShape &s) {
  if (s.op != ConvOp::forward || s.cout < 32)
    return false;
  constexpr int64_t kInt = 2147483647LL - kBn * 8; // 32-bit indices, with a tile's overhang
  const int64_t l_out = s.l_out();
  if (s.weight_elems() > kInt || s.cin * s.l_in > kInt || s.cout * l_out > kInt ||
      l_out * s.stride + s.k * s.dilation > kInt)
    return false;
  // Grid limits with the largest split (8 along z).
  return cdiv(s.cout, kBm) <= 65535 && s.batch * 8 <= 65535;
}

ForwardTilePlan forward_tile_plan(const ConvShape &s, int sms, int split_override) {
  ForwardTilePlan p{};
  p.batch = s.batch;
  p.cin = s.cin;
  p.cout = s.cout;
  p.k = s.k;
  p.stride = s.stride;
  p.dilation = s.dilation;
  p.padding = s.padding;
  p.l_in = s.l_in;
  p.l_out = s.l_out();
  p.reduction = s.cin * s.k;
  p.steps = cdiv(p.reduction, kBk);
  p.m_tiles = cdiv(p.cout, kBm);
  p.n_tiles = cdiv(p.l_out, kBn);
  const int64_t tiles = p.m_tiles * p.n_tiles * p.batch;
  // Every rank gets at least one step (the last rank's range starts before the end).
  const auto fits = [&](int n) { return (n - 1) * cdiv(p.steps, n) < p.steps; };
  int split = 1;
  if (split_override > 0) {
    while (split * 2 <= std::min(split_override, 8) && fits(split * 2))
      split *= 2;
  } else {
    while (split < 8 && tiles * split < 2LL * sms && p.steps / (split * 2) >= 8)
      split *= 2;
  }
  p.split = split;
  return p;
}

int64_t forward_tile_issued_macs(const ForwardTilePlan &p) {
  return p.batch * p.m_tiles * kBm * p.n_tiles * kBn * p.steps * kBk;
}

std::string forward_tile_name(const ForwardTilePlan &p) {
  std::string n = "implicit-gemm f32 fma " + std::to_string(kBm) + "x" + std::to_string(kBn) + "x" +
                  std::to_string(kBk);
  if (p.split > 1)
    n += " split " + std::to_string(p.split);
  return n;
}

void prepare_forward_tile(const ForwardTilePlan &p) {
  if (p.split > 1)
    CONVBENCH_CUDA_CHECK(cudaFuncSetAttribute(
        forward_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kPartialBytes)));
}

namespace {
void enqueue(const ForwardTilePlan &p, const float *d_x, const float *d_w, const float *d_b,
             float *d_y, cudaStream_t stream, int ranks_added) {
  const dim3 grid(unsigned(p.n_tiles), unsigned(p.m_tiles), unsigned(p.batch * p.split));
  if (p.split == 1) {
    forward_tile_kernel<<<grid, kThreads, 0, stream>>>(p, d_x, d_w, d_b, d_y, ranks_added);
    CONVBENCH_CUDA_CHECK(cudaGetLastError());
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = kPartialBytes;
  cfg.stream = stream;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = unsigned(p.split);
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CONVBENCH_CUDA_CHECK(
      cudaLaunchKernelEx(&cfg, forward_tile_kernel, p, d_x, d_w, d_b, d_y, ranks_added));
}
} // namespace

void launch_forward_tile(const ForwardTilePlan &p, const float *d_x, const float *d_w,
                         const float *d_b, float *d_y, cudaStream_t stream) {
  enqueue(p, d_x, d_w, d_b, d_y, stream, p.split);
}

void launch_forward_tile_planted(const ForwardTilePlan &p, const float *d_x, const float *d_w,
                                 const float *d_b, float *d_y, cudaStream_t stream) {
  enqueue(p, d_x, d_w, d_b, d_y, stream, p.split - 1);
}

} // namespace convbench::cuda::detail
