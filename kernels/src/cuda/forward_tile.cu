// cuda-f32's forward Conv1d kernel (forward_tile.hpp has the mapping and the contract).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "cluster_launch.cuh"
#include "convbench/cuda_check.hpp"
#include "forward_tile.hpp"

namespace cg = cooperative_groups;

namespace convbench::cuda::detail {

namespace {

constexpr int kBk = kForwardTileBk;
constexpr int kAPad = 4; // As rows padded: the transposing store is conflict-free

// One tile shape: kBm x kBn cells, 8 x 8 per thread, so kBm * kBn / 64 threads, laid out as
// kBm / 8 rows of kBn / 8 threads. kMinBlocks per multiprocessor is asked of ptxas (a 128-register
// cap at 512 threads per multiprocessor).
template <int Bm, int Bn> struct Tile {
  static constexpr int kBm = Bm, kBn = Bn, kThreads = Bm * Bn / 64, kCols = Bn / 8;
  static constexpr int kMinBlocks = 512 / kThreads;
  static constexpr int kLoadsA = Bm * kBk / kThreads;
  static_assert(Bm % 8 == 0 && Bm * kBk % kThreads == 0 &&
                    (Bn % kThreads == 0 || (kThreads % Bn == 0 && kBk % (kThreads / Bn) == 0)),
                "each thread stages the same number of elements of each slice");
};
using Tile128x128 = Tile<128, 128>;
using Tile32x256 = Tile<32, 256>;

// One 4-byte asynchronous copy global -> shared (cp.async, sm_80+), or 0 written where `valid`
// is false (src-size 0: nothing is read; `src` is then any mapped address).
__device__ __forceinline__ void copy4(float *dst, const float *src, bool valid) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
               "r"(valid ? 4 : 0)
               : "memory");
}
__device__ __forceinline__ void copies_issued() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copies_landed() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// Stages step `s`'s weight slice (kBm rows x kBk reduction indices, transposed) and gathered
// input slice (kBk reduction indices x kBn positions) into shared memory with asynchronous
// copies, so no staging registers are held while the previous step computes; 0 outside the
// shape. 32-bit indices: forward_tile_supported() keeps the weight and one batch item's input and
// output under 2^31 elements. `inside`: every column of this block's tile reads inside x at every
// tap (forward_tile_columns_inside); with a whole step of reduction indices, the input slice is
// then copied without a check, its rows' (ic, kk) walked from one division a step.
template <class T>
__device__ __forceinline__ void
stage(const ForwardTilePlan &p, const float *__restrict__ w, const float *__restrict__ xb, int m0,
      int n0, int s, int t, bool inside, float (*as)[T::kBm + kAPad], float (*bs)[T::kBn]) {
  const int r0 = s * kBk;
  const int cout = int(p.cout), red = int(p.reduction), k = int(p.k);
#pragma unroll
  for (int q = 0; q < T::kLoadsA; ++q) {
    const int e = t + T::kThreads * q;
    const int m = m0 + e / kBk, r = r0 + e % kBk;
    const bool in = m < cout && r < red;
    copy4(&as[e % kBk][e / kBk], in ? w + (m * red + r) : w, in);
  }
  // The input slice: each thread keeps its columns (kBnPerThread of them, or one shared by
  // kRowsApart threads' rows) and walks its rows.
  constexpr bool kWide = T::kBn >= T::kThreads;
  constexpr int kCols = kWide ? T::kBn / T::kThreads : 1;
  constexpr int kRows = kWide ? kBk : kBk * T::kBn / T::kThreads;
  constexpr int kRowStep = kWide ? 1 : T::kThreads / T::kBn;
  static_assert(kRowStep <= 2, "a row's (ic, kk) advances by at most two wraps of k");
  const int row0 = kWide ? 0 : t / T::kBn;
  const int col0 = kWide ? t : t % T::kBn;
  if (inside && r0 + kBk <= red) {
    int ic = (r0 + row0) / k, kk = r0 + row0 - ic * k;
    const int stride = int(p.stride), dilation = int(p.dilation), l_in = int(p.l_in);
    const float *x0 = xb + (n0 + col0) * stride - int(p.padding);
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      const float *src = x0 + ic * l_in + kk * dilation;
#pragma unroll
      for (int c = 0; c < kCols; ++c)
        copy4(&bs[row0 + j * kRowStep][col0 + c * T::kThreads], src + c * T::kThreads * stride,
              true);
      kk += kRowStep;
      if (kk >= k) {
        kk -= k;
        ++ic;
      }
      if (kRowStep > 1 && kk >= k) {
        kk -= k;
        ++ic;
      }
    }
    copies_issued();
    return;
  }
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    const int row = row0 + j * kRowStep, r = r0 + row;
    const int ic = r / k, kk = r - ic * k;
    const int shift = kk * int(p.dilation) - int(p.padding);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = col0 + c * T::kThreads, o = n0 + col;
      const int pos = o * int(p.stride) + shift;
      const bool in = r < red && o < int(p.l_out) && pos >= 0 && pos < int(p.l_in);
      copy4(&bs[row][col], in ? xb + (ic * int(p.l_in) + pos) : xb, in);
    }
  }
  copies_issued();
}

__device__ __forceinline__ void load4(float *dst, const float *src) {
  const float4 v = *reinterpret_cast<const float4 *>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

// Thread (ty, tx) owns rows ty*4 + {0..3} and kBm/2 + ty*4 + {0..3} of the tile, columns tx*4 +
// {0..3} and kBn/2 + tx*4 + {0..3}: float4 shared-memory reads, broadcast where lanes share ty.
template <int Half> __device__ __forceinline__ int owned(int t, int i) {
  return (i < 4 ? 0 : Half) + t * 4 + (i & 3);
}

template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    forward_tile_kernel(ForwardTilePlan p, const float *__restrict__ x, const float *__restrict__ w,
                        const float *__restrict__ bias, float *__restrict__ y, int ranks_added) {
  constexpr int kBm = T::kBm, kBn = T::kBn;
  __shared__ __align__(16) float as[2][kBk][kBm + kAPad];
  __shared__ __align__(16) float bs[2][kBk][kBn];
  extern __shared__ __align__(16) float partial[]; // kBm x kBn, split > 1 only

  const int t = threadIdx.x, tx = t % T::kCols, ty = t / T::kCols;
  const int n0 = int(blockIdx.x) * kBn, m0 = int(blockIdx.y) * kBm;
  const int64_t bi = blockIdx.z / p.split;
  const int rank = int(blockIdx.z % p.split);
  const int steps = int(p.steps), per = (steps + p.split - 1) / p.split;
  const int s0 = rank * per < steps ? rank * per : steps;
  const int s1 = s0 + per < steps ? s0 + per : steps;
  const float *xb = x + bi * p.cin * p.l_in;
  const bool inside = forward_tile_columns_inside(p, n0);

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      acc[i][j] = 0.0f;

  if (s0 < s1)
    stage<T>(p, w, xb, m0, n0, s0, t, inside, as[0], bs[0]);
  copies_landed();
  __syncthreads();
  for (int s = s0; s < s1; ++s) {
    const int buf = (s - s0) & 1;
    if (s + 1 < s1) // in flight while this step computes (every thread is past reading buf ^ 1)
      stage<T>(p, w, xb, m0, n0, s + 1, t, inside, as[buf ^ 1], bs[buf ^ 1]);
#pragma unroll
    for (int j = 0; j < kBk; ++j) {
      float a[8], b[8];
      load4(a, &as[buf][j][ty * 4]);
      load4(a + 4, &as[buf][j][kBm / 2 + ty * 4]);
      load4(b, &bs[buf][j][tx * 4]);
      load4(b + 4, &bs[buf][j][kBn / 2 + tx * 4]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int c = 0; c < 8; ++c)
          acc[i][c] = fmaf(a[i], b[c], acc[i][c]);
    }
    copies_landed();
    __syncthreads();
  }

  float *yb = y + bi * p.cout * p.l_out;
  const int cout = int(p.cout), l_out = int(p.l_out);
  if (p.split == 1) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int m = m0 + owned<kBm / 2>(ty, i);
      if (m >= cout)
        continue;
      const float bv = bias ? bias[m] : 0.0f;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int o = n0 + owned<kBn / 2>(tx, c);
        if (o < l_out)
          yb[m * l_out + o] = acc[i][c] + bv;
      }
    }
    return;
  }

  // split > 1: each rank leaves its partial tile in its shared memory; rank r then adds its
  // ceil(kBm / split) rows of the tile over ranks 0..split-1 in order, and the bias.
  cg::cluster_group cluster = cg::this_cluster();
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int c = 0; c < 8; c += 4)
      *reinterpret_cast<float4 *>(&partial[owned<kBm / 2>(ty, i) * kBn + owned<kBn / 2>(tx, c)]) =
          make_float4(acc[i][c], acc[i][c + 1], acc[i][c + 2], acc[i][c + 3]);
  cluster.sync();
  const int rows = (kBm + p.split - 1) / p.split;
  const int first = rank * rows, last = first + rows < kBm ? first + rows : kBm;
  for (int cell = first * kBn + t; cell < last * kBn; cell += T::kThreads) {
    const int ml = cell / kBn, nl = cell % kBn;
    const int m = m0 + ml, o = n0 + nl;
    float sum = cluster.map_shared_rank(partial, 0)[cell];
    for (int q = 1; q < ranks_added; ++q) // p.split but in the planted test variant
      sum += cluster.map_shared_rank(partial, q)[cell];
    if (m < cout && o < l_out)
      yb[m * l_out + o] = sum + (bias ? bias[m] : 0.0f);
  }
  cluster.sync(); // no rank's shared memory may go while another still reads it
}

// The plan's table of tile shapes (forward_tile_plan.cpp) is these kernels'.
static_assert(kForwardTileShapes[0].bm == Tile128x128::kBm &&
                  kForwardTileShapes[0].bn == Tile128x128::kBn &&
                  kForwardTileShapes[0].threads == Tile128x128::kThreads &&
                  kForwardTileShapes[0].blocks_per_sm == Tile128x128::kMinBlocks,
              "shape 0 is the 128 x 128 tile");
static_assert(kForwardTileShapes[1].bm == Tile32x256::kBm &&
                  kForwardTileShapes[1].bn == Tile32x256::kBn &&
                  kForwardTileShapes[1].threads == Tile32x256::kThreads &&
                  kForwardTileShapes[1].blocks_per_sm == Tile32x256::kMinBlocks,
              "shape 1 is the 32 x 256 tile");

template <class T> size_t partial_bytes() { return size_t(T::kBm) * T::kBn * sizeof(float); }

template <class T>
void enqueue(const ForwardTilePlan &p, const float *d_x, const float *d_w, const float *d_b,
             float *d_y, cudaStream_t stream, int ranks_added) {
  const dim3 grid(unsigned(p.n_tiles), unsigned(p.m_tiles), unsigned(p.batch * p.split));
  // Split: a cluster of `split` blocks along z, the ranks of one tile.
  CONVBENCH_CUDA_CHECK(launch_z_clusters(forward_tile_kernel<T>, grid, dim3(T::kThreads),
                                         p.split > 1 ? partial_bytes<T>() : 0, stream,
                                         unsigned(p.split), p, d_x, d_w, d_b, d_y, ranks_added));
}

void enqueue_any(const ForwardTilePlan &p, const float *d_x, const float *d_w, const float *d_b,
                 float *d_y, cudaStream_t stream, int ranks_added) {
  if (p.bm == Tile128x128::kBm)
    enqueue<Tile128x128>(p, d_x, d_w, d_b, d_y, stream, ranks_added);
  else
    enqueue<Tile32x256>(p, d_x, d_w, d_b, d_y, stream, ranks_added);
}

} // namespace

void prepare_forward_tile(const ForwardTilePlan &p) {
  if (p.split == 1)
    return;
  if (p.bm == Tile128x128::kBm)
    CONVBENCH_CUDA_CHECK(cudaFuncSetAttribute(forward_tile_kernel<Tile128x128>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              int(partial_bytes<Tile128x128>())));
  else
    CONVBENCH_CUDA_CHECK(cudaFuncSetAttribute(forward_tile_kernel<Tile32x256>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              int(partial_bytes<Tile32x256>())));
}

void launch_forward_tile(const ForwardTilePlan &p, const float *d_x, const float *d_w,
                         const float *d_b, float *d_y, cudaStream_t stream) {
  enqueue_any(p, d_x, d_w, d_b, d_y, stream, p.split);
}

void launch_forward_tile_planted(const ForwardTilePlan &p, const float *d_x, const float *d_w,
                                 const float *d_b, float *d_y, cudaStream_t stream) {
  enqueue_any(p, d_x, d_w, d_b, d_y, stream, p.split - 1);
}

} // namespace convbench::cuda::detail
