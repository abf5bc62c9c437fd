// The polyphase kernel template and its launch, shared by fast_conv.cu (the default block
// configuration, every M) and fast_sweep_f32.cu / fast_sweep_f64.cu (the other configurations,
// M == 2 only; separate translation units so ninja compiles them side by side).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cluster_launch.cuh"
#include "polyphase_tile.hpp"

namespace convbench::fast::detail {

// The f64 kernel keeps the reference's x == 0 skip exactly; the f32 kernel promises a tolerance
// only and never skips.
template <typename T> constexpr bool kExactSkip = sizeof(T) == sizeof(double);
// Only the f32 kernel may split the input channels over a cluster (it changes the order).
template <typename T> constexpr bool kCanSplit = sizeof(T) == sizeof(float);

// Dynamic shared memory of a block: two shared-memory buffers (chunk c computes from one while
// chunk c + 1 is stored into the other; kBuffers of them for the cp.async configs), and, for a
// split, the partial tile, which reuses the buffers once the last chunk is done.
template <typename T, class TL> constexpr size_t smem_bytes(int split) {
  constexpr int kBuffers = TL::Cfg::kBuffers > 0 ? TL::Cfg::kBuffers : 2;
  const size_t buffers = kBuffers * sizeof(typename TL::Smem);
  const size_t partial = split > 1 ? sizeof(T) * TL::kThreads * TL::kCells : 0;
  return buffers > partial ? buffers : partial;
}

// Double-buffered staging, one barrier per chunk: chunk c + 1's global loads go to registers
// before chunk c computes from buffer c % 2, and are stored to the other buffer after it. That
// buffer was last read by chunk c - 1's compute, which every thread finished before the barrier
// that ended the previous iteration; the barrier after the store publishes chunk c + 1. (A single
// buffer would need a second barrier between compute and store, where warps stall.)
template <class TL>
__device__ __forceinline__ void
chunks_through_registers(const Plan &P, const typename TL::Block &blk,
                         const typename TL::Cursor &cur, int tid, const float *__restrict__ x,
                         const float *__restrict__ w, typename TL::Smem *buf,
                         typename TL::Acc &acc) {
  using T = typename TL::Value;
  using C = typename TL::Cfg;
  typename TL::Loads st;
  TL::load_chunk(P, blk, cur, blk.chunk0 * C::kBk, tid, x, w, st);
  TL::store_smem(tid, st, buf[0]);
  // f64 only: does the chunk in shared memory need the explicit x == 0 skip?
  bool skip = kExactSkip<T> && __syncthreads_or(TL::nonfinite_weights(st));
  if (!kExactSkip<T>)
    __syncthreads();
  int b = 0; // the buffer holding the chunk to compute
  for (int64_t chunk = blk.chunk0; chunk < blk.chunk1; ++chunk) {
    const bool more = chunk + 1 < blk.chunk1;
    if (more)
      TL::load_chunk(P, blk, cur, (chunk + 1) * C::kBk, tid, x, w, st);
    if (skip)
      TL::template compute<true>(tid, buf[b], acc);
    else
      TL::template compute<false>(tid, buf[b], acc);
    if (more) {
      TL::store_smem(tid, st, buf[b ^ 1]);
      if (kExactSkip<T>)
        skip = __syncthreads_or(TL::nonfinite_weights(st));
      else
        __syncthreads();
      b ^= 1;
    }
  }
}

// cp.async copies (f32, Config::kBuffers > 0): kBuffers buffers, chunks c + 1 .. c + kBuffers - 1
// in flight while chunk c computes. One barrier per chunk: it publishes chunk c (every thread
// has waited for its own copies of it) and tells that every thread is done computing chunk
// c - 1, whose buffer the copy issued next (chunk c + kBuffers - 1) overwrites. Every iteration
// commits one group (empty past the last chunk), so "all but kBuffers - 2 groups done" means
// chunk c is in.
template <class TL>
__device__ __forceinline__ void
chunks_async(const Plan &P, const typename TL::Block &blk, const typename TL::AsyncCursor &cur,
             int tid, const float *__restrict__ x, const float *__restrict__ w,
             typename TL::Smem *buf, typename TL::Acc &acc) {
  using C = typename TL::Cfg;
  struct Device {
    const Plan &P;
    const typename TL::Block &blk;
    const typename TL::AsyncCursor &cur;
    int tid;
    const float *x, *w;
    typename TL::Smem *buf;
    typename TL::Acc &acc;
    // One copy group per call, empty when `real` is false (past the last chunk).
    __device__ void copy(int i, int b, bool real) {
      if (real)
        TL::copy_chunk_async(P, blk, cur, (blk.chunk0 + i) * C::kBk, tid, x, w, buf[b]);
      async_commit();
    }
    __device__ void wait_for(int) {
      async_wait<C::kBuffers - 2>();
      __syncthreads();
    }
    __device__ void compute(int b) { TL::template compute<false>(tid, buf[b], acc); }
  };
  TL::async_schedule(static_cast<int>(blk.chunk1 - blk.chunk0),
                     Device{P, blk, cur, tid, x, w, buf, acc});
  async_wait<0>(); // nothing left in flight: a split's partial tile reuses the buffers
}

template <typename T, int M, int TR, bool Fused, class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    polyphase_kernel(Plan P, const float *__restrict__ x, const float *__restrict__ w,
                     const float *__restrict__ bias, float *__restrict__ y) {
  using TL = Tile<T, M, TR, Fused, C>;
  extern __shared__ float4 dynamic_smem[];
  typename TL::Smem *buf = reinterpret_cast<typename TL::Smem *>(dynamic_smem);
  const int tid = static_cast<int>(threadIdx.x);
  const typename TL::Block blk = TL::block_coords(P, blockIdx.x, blockIdx.y, blockIdx.z);
  typename TL::Acc acc;
  TL::zero(acc);
  if constexpr (C::kBuffers > 0)
    chunks_async<TL>(P, blk, TL::make_async_cursor(P, blk, tid), tid, x, w, buf, acc);
  else
    chunks_through_registers<TL>(P, blk, TL::make_cursor(P, blk, tid), tid, x, w, buf, acc);
  if constexpr (kCanSplit<T>) {
    if (P.split > 1) {
      // Partial sums through distributed shared memory: every rank publishes its tile (over its
      // shared-memory buffers, once all its threads are done computing), the cluster waits, each
      // rank adds its slice of cells over ranks 0..split-1 in order, and the cluster waits again so
      // no rank exits while another still reads its shared memory.
      T *partial = reinterpret_cast<T *>(dynamic_smem);
      namespace cg = cooperative_groups;
      cg::cluster_group cluster = cg::this_cluster();
      __syncthreads();
      TL::store_partial(tid, acc, partial);
      cluster.sync();
      TL::reduce_store(
          P, blk, tid, [&](int r) -> const T * { return cluster.map_shared_rank(partial, r); },
          bias, y);
      cluster.sync();
      return;
    }
  }
  TL::store_output(P, blk, tid, acc, bias, y);
}

template <typename T, int M, int TR, bool Fused, class C>
void launch_tr(const Plan &P, const float *x, const float *w, const float *b, float *y,
               cudaStream_t stream) {
  using TL = Tile<T, M, TR, Fused, C>;
  const dim3 grid(static_cast<unsigned>(P.groups * P.u_tiles), static_cast<unsigned>(P.oc_tiles),
                  static_cast<unsigned>(P.batch * P.split));
  auto kernel = polyphase_kernel<T, M, TR, Fused, C>;
  const size_t bytes = smem_bytes<T, TL>(P.split);
  if (bytes > 48 * 1024) {
    // Above the default 48 KiB a kernel must opt in. Once per kernel, size and device, not on
    // every (timed) launch: the attribute is per device, and a split's size differs per split.
    static std::atomic<uint64_t> configured[4]{};
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess)
      dev = 0;
    const uint64_t bit = uint64_t{1} << (dev & 63);
    std::atomic<uint64_t> &done = configured[P.split >= 8 ? 3 : P.split >= 4 ? 2 : P.split - 1];
    if (!(done.load(std::memory_order_relaxed) & bit)) {
      const cudaError_t e = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
      if (e != cudaSuccess)
        throw std::runtime_error(std::string("fast kernel: ") + std::to_string(bytes) +
                                 " bytes of shared memory: " + cudaGetErrorString(e));
      done.fetch_or(bit, std::memory_order_relaxed);
    }
  }
  // Split: a cluster of `split` blocks along z (one batch item's split ranges).
  const cudaError_t e = cuda::detail::launch_z_clusters(kernel, grid, dim3(C::kThreads), bytes,
                                                        stream, unsigned(P.split), P, x, w, b, y);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("fast kernel: launch (split ") + std::to_string(P.split) +
                             "): " + cudaGetErrorString(e));
}

template <typename T, int M, bool Fused, class C>
void launch_m(const Plan &P, const float *x, const float *w, const float *b, float *y,
              cudaStream_t stream) {
  switch (P.tr) {
  case 4:
    return launch_tr<T, M, 4, Fused, C>(P, x, w, b, y, stream);
  case 2:
    return launch_tr<T, M, 2, Fused, C>(P, x, w, b, y, stream);
  default:
    return launch_tr<T, M, 1, Fused, C>(P, x, w, b, y, stream);
  }
}

// Launches block configuration C for any M in [1, 4] (the caller has checked P.m).
template <typename T, bool Fused, class C>
void launch_all_m(const Plan &P, const float *x, const float *w, const float *b, float *y,
                  cudaStream_t st) {
  switch (P.m) {
  case 1:
    return launch_m<T, 1, Fused, C>(P, x, w, b, y, st);
  case 2:
    return launch_m<T, 2, Fused, C>(P, x, w, b, y, st);
  case 3:
    return launch_m<T, 3, Fused, C>(P, x, w, b, y, st);
  default:
    return launch_m<T, 4, Fused, C>(P, x, w, b, y, st);
  }
}

// The non-default configurations (fast_sweep_*.cu): P.m == 2 and `config` compiled, both
// checked by the caller through fast_config_unsupported_reason().
void launch_sweep_f32(const FastConfig &config, const Plan &P, const float *x, const float *w,
                      const float *b, float *y, cudaStream_t st);
void launch_sweep_f64(const FastConfig &config, bool fused, const Plan &P, const float *x,
                      const float *w, const float *b, float *y, cudaStream_t st);

} // namespace convbench::fast::detail
