// The wgmma kernels of cuda-tf32 and cuda-f32x3 (sm_90a): the shifted-window GEMMs of
// wg_plan.hpp with TMA loads into 128-byte-swizzled shared memory, an mbarrier pipeline between
// one producer warpgroup and two consumer warpgroups, and wgmma.mma_async from shared-memory
// descriptors. Included by wg_tf32.cu and wg_f32x3.cu, which are built for sm_90a only.
//
// A block computes one 128 x BN tile of one group: consumer warpgroup w (warps 4w..4w+3) owns
// rows 64w..64w+63; warp 8 is the producer (one lane issues every TMA load). Every thread takes
// part in the epilogue (no register reallocation between roles: 168 registers per thread, as
// three warps share a sub-partition's register file, hold the largest tile's accumulators).
// Each iteration (channel chunk c, tap j) is one pipeline stage: the A box (32 channels x 128
// packed rows of tap j) and the B box (32 channels x BN rows of xT from n0 + shift(g, j)), both
// K-major with 128-byte rows, as TMA writes them with CU_TENSOR_MAP_SWIZZLE_128B and as a
// K-major wgmma descriptor with 128-byte swizzle reads them (stride 1024 bytes per 8 rows; a k8
// step is 32 bytes further along the row).
//   tf32: 4 wgmma k8 steps per stage into one accumulator; one stage in flight behind the issue.
//   f32x3: each stage is two halves of 16 channels, each half's 2 k-steps x 3 products (lo*hi,
//     hi*lo, hi*hi) into a fresh accumulator (the MMA's f32 accumulation truncates: a long chain
//     in one accumulator loses bits), each half's sum added to the total with FADD (round to
//     nearest).
// The epilogue stages the tile through shared memory and writes it in output order (bias last).
// With split > 1 the iterations are cut over the blocks of a thread-block cluster; each leaves
// its partial tile in its shared memory and rank r adds its share of the cells over the ranks
// 0..split-1 in order (deterministic, no workspace).
#pragma once

#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "convbench/cuda_check.hpp"
#include "wg_launch.hpp"
#include "wg_plan.hpp"

namespace convbench::tc::wg {

#include "wgmma_ops.inc"

namespace dev {

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n"
               ".reg .pred done;\n"
               "WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra WAIT;\n"
               "}\n" ::"r"(smem_u32(bar)),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, uint64_t *bar, int c0,
                                         int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void prefetch_map(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// K-major operand with 128-byte swizzle: start address, leading offset 1 (unused when swizzled),
// stride 1024 bytes between 8-row groups, swizzle mode 1. A k8 step adds 32 bytes (2 units).
__device__ __forceinline__ uint64_t sw128_desc(const void *tile) {
  const uint32_t a = smem_u32(tile);
  return uint64_t((a & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
__device__ __forceinline__ void wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of the accumulators across a wait or an issue.
template <int R> __device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
}

} // namespace dev

// Test-only faults the GPU tests must catch (never set by the arms): the cluster reduction leaves
// out the last rank; the last tap of every chunk is skipped.
enum class Planted : int { none = 0, drop_last_rank = 1, skip_last_tap = 2 };

template <int BN, bool X3>
__global__ void __launch_bounds__(kThreads, 1)
    wg_conv_kernel(const __grid_constant__ Maps maps, const Plan P, const float *__restrict__ bias,
                   float *__restrict__ y, int planted) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  namespace cg = cooperative_groups;
  constexpr int kA = kBm * kBk * 4; // bytes of one A plane of a stage
  constexpr int kB = BN * kBk * 4;  // bytes of one B plane
  constexpr int kPlanes = X3 ? 2 : 1;
  constexpr int kStage = kPlanes * (kA + kB);
  constexpr int kRegs = BN / 2; // accumulators per thread
  constexpr int kPitch = BN + kTilePad;

  extern __shared__ unsigned char smem_raw[];
  unsigned char *smem = reinterpret_cast<unsigned char *>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const int stages = P.stages;
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + stages * kStage);
  uint64_t *empty = full + stages;

  const int tid = threadIdx.x;
  const int wg = tid / 128; // 0, 1: consumers; 2: the producer warp
  const Tile t = tile_of(P, blockIdx.x);
  const int rank = blockIdx.z;
  const int it0 = rank * P.iters_per_rank;
  const int it1 = min(it0 + P.iters_per_rank, P.iters);
  const int count = it1 - it0;

  if (tid == 0) {
    for (int s = 0; s < stages; ++s) {
      dev::mbar_init(&full[s], 1);
      dev::mbar_init(&empty[s], 8); // every consumer warp releases a stage
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    dev::prefetch_map(&maps.a);
    dev::prefetch_map(&maps.b);
  }
  __syncthreads();

  float acc[kRegs];
  if (wg == 2) {
    // The producer warp: every lane waits for the free stage (the warp stays converged for the
    // barriers after the loop), lane 0 issues the loads.
    const bool issuer = tid == 256;
    for (int k = 0; k < count; ++k) {
      const int s = k % stages;
      dev::mbar_wait(&empty[s], ((k / stages) & 1) ^ 1);
      if (issuer) {
        const Coords c = coords(P, t, it0 + k);
        const bool skip = planted == int(Planted::skip_last_tap) && c.tap == P.taps - 1;
        unsigned char *st = smem + s * kStage;
        dev::mbar_expect_tx(&full[s], kStage);
        // A skipped tap loads a zero-filled box (rows past the tensor): the stage still completes.
        const int a_row = skip ? P.rows * P.taps + kBm : c.a_row;
        dev::tma_load(st, &maps.a, &full[s], c.ch, a_row, c.tap);
        dev::tma_load(st + kA, &maps.b, &full[s], c.ch, c.b_row, t.b);
        if constexpr (X3) {
          dev::tma_load(st + kA + kB, &maps.a_lo, &full[s], c.ch, a_row, c.tap);
          dev::tma_load(st + 2 * kA + kB, &maps.b_lo, &full[s], c.ch, c.b_row, t.b);
        }
      }
      __syncwarp();
    }
  } else {
    const int cw = wg; // rows 64 cw .. 64 cw + 63 of the tile
    const int warp_lane0 = (tid % 32) == 0;
#pragma unroll
    for (int i = 0; i < kRegs; ++i)
      acc[i] = 0.0f;
    if constexpr (!X3) {
      for (int k = 0; k < count; ++k) {
        const int s = k % stages;
        dev::mbar_wait(&full[s], (k / stages) & 1);
        const unsigned char *st = smem + s * kStage;
        const uint64_t da = dev::sw128_desc(st + cw * 64 * 128);
        const uint64_t db = dev::sw128_desc(st + kA);
        dev::fence_regs(acc);
        dev::wg_fence();
#pragma unroll
        for (int kk = 0; kk < kBk / 8; ++kk)
          Wgmma<BN>::mma(acc, da + 2 * kk, db + 2 * kk, 1);
        dev::wg_commit();
        dev::wg_wait<1>(); // the previous stage's MMAs are done: release its buffers
        dev::fence_regs(acc);
        if (k > 0 && warp_lane0)
          dev::mbar_arrive(&empty[(k - 1) % stages]);
      }
      dev::wg_wait<0>();
      dev::fence_regs(acc);
    } else {
      // Each half stage's products in `part` from zero, waited for, then added into acc with
      // FADD. While one consumer warpgroup waits and adds, the other's MMAs keep the tensor cores
      // busy. (Reading an accumulator while another wgmma group is in flight makes ptxas
      // serialise every wgmma, C7514; a second partial accumulator of 128 columns would not fit 168
      // registers either.)
      float part[kRegs];
      for (int k = 0; k < count; ++k) {
        const int s = k % stages;
        dev::mbar_wait(&full[s], (k / stages) & 1);
        const unsigned char *st = smem + s * kStage;
        const uint64_t ahi = dev::sw128_desc(st + cw * 64 * 128);
        const uint64_t bhi = dev::sw128_desc(st + kA);
        const uint64_t alo = dev::sw128_desc(st + kA + kB + cw * 64 * 128);
        const uint64_t blo = dev::sw128_desc(st + 2 * kA + kB);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          dev::fence_regs(part);
          dev::wg_fence();
#pragma unroll
          for (int kk = 2 * half; kk < 2 * half + 2; ++kk) {
            Wgmma<BN>::mma(part, alo + 2 * kk, bhi + 2 * kk, kk - 2 * half); // 0: a fresh sum
            Wgmma<BN>::mma(part, ahi + 2 * kk, blo + 2 * kk, 1);
            Wgmma<BN>::mma(part, ahi + 2 * kk, bhi + 2 * kk, 1);
          }
          dev::wg_commit();
          dev::wg_wait<0>();
          dev::fence_regs(part);
#pragma unroll
          for (int i = 0; i < kRegs; ++i)
            acc[i] = __fadd_rn(acc[i], part[i]);
        }
        if (warp_lane0)
          dev::mbar_arrive(&empty[s]);
      }
    }
  }

  // Epilogue. Every consumer has waited for its last MMA; the stage buffers become the tile.
  __syncthreads();
  float *tile = reinterpret_cast<float *>(smem);
  if (wg < 2) {
    const int lane = tid % 32, warp = (tid / 32) % 4;
    const int r0 = wg * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = j * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2 *>(&tile[r0 * kPitch + col]) =
          make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2 *>(&tile[(r0 + 8) * kPitch + col]) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
  const int cells = kBm * BN;
  if (P.split == 1) {
    __syncthreads();
    for (int e = tid; e < cells; e += kThreads) {
      const Cell c = cell_of(P, t, e);
      if (c.y < 0)
        continue;
      float v = tile[c.row * kPitch + c.col];
      if (P.bias)
        v += bias[oc_of(P, t, c.row)];
      y[c.y] = v;
    }
    return;
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int ranks = planted == int(Planted::drop_last_rank) ? P.split - 1 : P.split;
  const int share = (cells + P.split - 1) / P.split;
  const int first = rank * share, last = min(first + share, cells);
  for (int e = first + tid; e < last; e += kThreads) {
    const Cell c = cell_of(P, t, e);
    if (c.y < 0)
      continue;
    const int off = c.row * kPitch + c.col;
    float v = cluster.map_shared_rank(tile, 0)[off];
    for (int q = 1; q < ranks; ++q)
      v += cluster.map_shared_rank(tile, q)[off];
    if (P.bias)
      v += bias[oc_of(P, t, c.row)];
    y[c.y] = v;
  }
  cluster.sync(); // no rank's shared memory may go while another still reads it
#endif
}

template <int BN, bool X3>
void launch_bn(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
               int planted) {
  auto kernel = wg_conv_kernel<BN, X3>;
  // Above 48 KiB a kernel must opt in; once per instantiation, to the most any plan asks.
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  CONVBENCH_CUDA_CHECK(attr); // cudaFuncSetAttribute(wg_conv_kernel)
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(blocks_per_rank(p)), 1, unsigned(p.split));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = size_t(smem_bytes(p));
  cfg.stream = st;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = unsigned(p.split);
  cfg.attrs = at;
  cfg.numAttrs = p.split > 1 ? 1 : 0;
  CONVBENCH_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, m, p, bias, y, planted));
}

} // namespace convbench::tc::wg
