// The wgmma kernels of cuda-tf32 and cuda-f32x3 (sm_90a): the shifted-window GEMMs of
// wg_plan.hpp with TMA loads into shared memory, an mbarrier pipeline between one producer warp
// and two consumer warpgroups, and wgmma.mma_async. Included by wg_tf32.cu and wg_f32x3.cu, which
// are built for sm_90a only.
//
// A block has two consumer warpgroups (warps 0-7; warpgroup w owns rows, or positions, 64w..64w+63
// of the tile's M) and a producer warp (warp 8, whose lane 0 issues every TMA load). Every thread
// takes part in the epilogue of a one-tile block (no register reallocation between roles: 168
// registers per thread, as three warps share a sub-partition's register file, hold the largest
// tile's accumulators; positions-on-M kernels the plan counts two to a multiprocessor are held
// to 96, positions_blocks_by_registers). Each iteration (channel chunk c, tap j) fills one
// pipeline buffer.
//   Rows on M (wg_rows_kernel): one 128 x BN tile of one group. The buffer holds the weights' box
//   (32
//     channels x 128 packed rows of tap j) and xT's box (32 channels x BN rows from n0 + shift(g,
//     j)), both K-major with 128-byte rows, as TMA writes them with CU_TENSOR_MAP_SWIZZLE_128B and
//     as a K-major wgmma descriptor with 128-byte swizzle reads them (stride 1024 bytes per 8
//     rows; a k8 step is 32 bytes further along the row).
//   Positions on M (wg_positions_kernel): 128 positions x NG rows of each of G groups (1, or 2:
//     both deltas of a ConvTranspose1d). Two rings: the buffer holds each group's weights' box
//     (32 channels x NG packed rows of tap j, as above: B); the windows, the input
//     x[b][c..c+31][from window_pos ..] (A; the box starts at the 16-byte boundary at or below,
//     as TMA requires), one per chunk serving all its taps (each tap reads it from its own
//     offset), or one per iteration where the taps' span does not fit a box (plan's wtaps). The
//     consumers round a window to tf32 in place once it lands (f32x3: hi in place, lo in a second
//     plane), then each thread reads its A fragments from it into registers (the second group's
//     one position further).
// Arithmetic:
//   tf32: 4 wgmma k8 steps per buffer and group into one accumulator.
//   f32x3: each buffer is two halves of 16 channels, each half's 2 k-steps x 3 products (lo*hi,
//     hi*lo, hi*hi) into a fresh accumulator (the MMA's f32 accumulation truncates: a long chain
//     in one accumulator loses bits), each half's sum added to the total with FADD (round to
//     nearest).
// The epilogue passes the tile through shared memory and writes it in output order (bias last):
// runs of each channel's phases x positions. Positions on M with persistent blocks (where forced;
// the grid every block the device holds at once): each block takes tiles blockIdx.x,
// + grid, ..., its rings' slots and phases running on from one tile into the next, so the
// producer loads the next tile while the consumers store this one, from an epilogue tile of its
// own (after the barriers) that the consumers alone fill and store, meeting at a named barrier.
// With split > 1 (rows on M) the iterations are cut over the blocks of a thread-block cluster; each
// leaves its partial tile in its shared memory and rank r adds its share of the channels over the
// ranks 0..split-1 in order (deterministic, no workspace).
#pragma once

#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "convbench/cuda_check.hpp"
#include "cuda/cluster_launch.cuh"
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
template <int R> __device__ __forceinline__ void fence_regs(uint32_t (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
    asm volatile("" : "+r"(d[i])::"memory");
}
// tf32 rounding (round to nearest, ties away: the tensor-op conversion), as bits.
__device__ __forceinline__ uint32_t to_tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}
// f32x3's split of v into tf32 hi and lo = tf32(v - hi) (0 where hi is infinite).
__device__ __forceinline__ void split_tf32(float v, uint32_t &hi, uint32_t &lo) {
  hi = to_tf32(v);
  const float h = __uint_as_float(hi);
  lo = isinf(h) ? 0u : to_tf32(v - h);
}

} // namespace dev

// Test-only faults the GPU tests must catch (never set by the arms): the cluster reduction leaves
// out the last rank; the last tap of every chunk is skipped.
enum class Planted : int { none = 0, drop_last_rank = 1, skip_last_tap = 2 };

// The block's shared memory from its 1024-byte aligned start: `buffers` buffers, then the full and
// empty barriers of each.
struct Pipeline {
  unsigned char *smem;
  uint64_t *full, *empty;
};
__device__ __forceinline__ unsigned char *aligned_1024(unsigned char *raw) {
  return reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(raw) + 1023) &
                                           ~uintptr_t(1023));
}
__device__ __forceinline__ Pipeline pipeline(unsigned char *raw, int buffers, int buffer_bytes) {
  unsigned char *smem = aligned_1024(raw);
  uint64_t *full = reinterpret_cast<uint64_t *>(smem + buffers * buffer_bytes);
  return {smem, full, full + buffers};
}
__device__ __forceinline__ void init_barriers(const Pipeline &pl, int buffers) {
  for (int s = 0; s < buffers; ++s) {
    dev::mbar_init(&pl.full[s], 1);
    dev::mbar_init(&pl.empty[s], 8); // every consumer warp releases a buffer
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// The producer warp's loop: every lane waits for the free buffer (the warp stays converged for the
// barriers after the loop), lane 0 arms the buffer's barrier for expect_bytes and issues its loads
// through load(buffer pointer, barrier, iteration).
template <class Load>
__device__ __forceinline__ void produce(const Pipeline &pl, int buffers, int buffer_bytes,
                                        int count, bool issuer, Load load, int expect_bytes) {
  for (int k = 0; k < count; ++k) {
    const int s = k % buffers;
    dev::mbar_wait(&pl.empty[s], ((k / buffers) & 1) ^ 1);
    if (issuer) {
      dev::mbar_expect_tx(&pl.full[s], expect_bytes);
      load(pl.smem + s * buffer_bytes, &pl.full[s], k);
    }
    __syncwarp();
  }
}

// Stores the tile's channels [first, last) from the shared-memory tile (at tile_off(o, cell)) plus
// the bias, warps 0..warps-1 of the block taking channels first + w, first + w + warps, ...;
// partial tiles of `ranks` cluster ranks are added in rank order when ranks > 1.
template <class Off>
__device__ __forceinline__ void
store_channels(const Plan &P, const Tile &t, const float *tile, const float *__restrict__ bias,
               float *__restrict__ y, int first, int last, int ranks, int warps, Off tile_off) {
  namespace cg = cooperative_groups;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int per = cells_per_channel(P, t);
  for (int o = first + warp; o < last; o += warps) {
    const int oc = tile_oc(P, t, o);
    if (oc >= P.cout)
      break; // the channels ascend with o
    const float bv = P.bias ? bias[oc] : 0.0f;
    for (int i = lane; i < per; i += 32) {
      const Cell c = cell_of(P, t, o, i);
      if (c.y < 0)
        continue;
      const int off = tile_off(o, i, c);
      float v;
      if (ranks <= 1) {
        v = tile[off];
      } else {
        cg::cluster_group cluster = cg::this_cluster();
        v = cluster.map_shared_rank(tile, 0)[off];
        for (int q = 1; q < ranks; ++q)
          v += cluster.map_shared_rank(tile, q)[off];
      }
      y[c.y] = v + bv;
    }
  }
}

template <int BN, bool X3>
__global__ void __launch_bounds__(kThreads, 1)
    wg_rows_kernel(const __grid_constant__ Maps maps, const Plan P, const float *__restrict__ bias,
                   float *__restrict__ y, int planted) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  namespace cg = cooperative_groups;
  constexpr int kA = kBm * kBk * 4; // bytes of one A plane of a buffer
  constexpr int kB = BN * kBk * 4;  // bytes of one B plane
  constexpr int kPlanes = X3 ? 2 : 1;
  constexpr int kBufferBytes = kPlanes * (kA + kB);
  constexpr int kRegs = BN / 2; // accumulators per thread
  constexpr int kPitch = BN + kTilePad;

  extern __shared__ unsigned char smem_raw[];
  const int buffers = P.buffers;
  const Pipeline pl = pipeline(smem_raw, buffers, kBufferBytes);
  const int tid = threadIdx.x;
  const int wg = tid / 128; // 0, 1: consumers; 2: the producer warp
  const Tile t = tile_of(P, blockIdx.x);
  const int rank = blockIdx.z;
  const int it0 = rank * P.iters_per_rank;
  const int count = min(it0 + P.iters_per_rank, P.iters) - it0;

  if (tid == 0) {
    init_barriers(pl, buffers);
    dev::prefetch_map(&maps.a);
    dev::prefetch_map(&maps.b);
  }
  __syncthreads();

  float acc[kRegs];
  if (wg == 2) {
    produce(
        pl, buffers, kBufferBytes, count, tid == 256,
        [&](unsigned char *st, uint64_t *bar, int k) {
          const Coords c = coords(P, t, it0 + k);
          // A skipped tap loads a zero-filled box (rows past the tensor): the buffer still
          // completes.
          const bool skip = planted == int(Planted::skip_last_tap) && c.tap == P.taps - 1;
          const int w_row = skip ? P.rows + kBm : c.w_row;
          dev::tma_load(st, &maps.a, bar, c.ch, w_row, c.tap);
          dev::tma_load(st + kA, &maps.b, bar, c.ch, c.x_pos, t.b);
          if constexpr (X3) {
            dev::tma_load(st + kA + kB, &maps.a_lo, bar, c.ch, w_row, c.tap);
            dev::tma_load(st + 2 * kA + kB, &maps.b_lo, bar, c.ch, c.x_pos, t.b);
          }
        },
        kBufferBytes);
  } else {
    const int cw = wg; // rows 64 cw .. 64 cw + 63 of the tile
    const bool warp_lane0 = (tid % 32) == 0;
#pragma unroll
    for (int i = 0; i < kRegs; ++i)
      acc[i] = 0.0f;
    if constexpr (!X3) {
      for (int k = 0; k < count; ++k) {
        const int s = k % buffers;
        dev::mbar_wait(&pl.full[s], (k / buffers) & 1);
        const unsigned char *st = pl.smem + s * kBufferBytes;
        const uint64_t da = dev::sw128_desc(st + cw * 64 * 128);
        const uint64_t db = dev::sw128_desc(st + kA);
        dev::fence_regs(acc);
        dev::wg_fence();
#pragma unroll
        for (int kk = 0; kk < kBk / 8; ++kk)
          Wgmma<BN>::mma(acc, da + 2 * kk, db + 2 * kk, 1);
        dev::wg_commit();
        dev::wg_wait<1>(); // the previous buffer's MMAs are done: release its buffers
        dev::fence_regs(acc);
        if (k > 0 && warp_lane0)
          dev::mbar_arrive(&pl.empty[(k - 1) % buffers]);
      }
      dev::wg_wait<0>();
      dev::fence_regs(acc);
    } else {
      // Each half buffer's products in `part` from zero, waited for, then added into acc with
      // FADD. While one consumer warpgroup waits and adds, the other's MMAs keep the tensor cores
      // busy. (Reading an accumulator while another wgmma group is in flight makes ptxas
      // serialise every wgmma, C7514; a second partial accumulator of 128 columns would not fit
      // 168 registers either.)
      float part[kRegs];
      for (int k = 0; k < count; ++k) {
        const int s = k % buffers;
        dev::mbar_wait(&pl.full[s], (k / buffers) & 1);
        const unsigned char *st = pl.smem + s * kBufferBytes;
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
          dev::mbar_arrive(&pl.empty[s]);
      }
    }
  }

  // Epilogue. Every consumer has waited for its last MMA; the buffers become the tile.
  __syncthreads();
  float *tile = reinterpret_cast<float *>(pl.smem);
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
  int first, last;
  rank_channels(P, t, rank, first, last);
  auto off = [](int, int, const Cell &c) { return c.row * kPitch + c.col; };
  if (P.split == 1) {
    __syncthreads();
    store_channels(P, t, tile, bias, y, first, last, 1, kThreads / 32, off);
    return;
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int ranks = planted == int(Planted::drop_last_rank) ? P.split - 1 : P.split;
  store_channels(P, t, tile, bias, y, first, last, ranks, kThreads / 32, off);
  cluster.sync(); // no rank's shared memory may go while another still reads it
#endif
}

// Positions on M: a consumer thread's accumulators into the epilogue's tile, tile[o][position *
// phases + phase] (pitch 128 x phases + kRowPad) for the block's channels o.
template <int NG, int G, int R>
__device__ __forceinline__ void accumulators_to_tile(const float (&acc)[G][R], float *tile, int lg,
                                                     int lq, int pitch) {
  const int tid = threadIdx.x, wg = tid / 128;
  const int lane = tid % 32, warp = (tid / 32) % 4;
  const int m0 = wg * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int gi = 0; gi < G; ++gi)
#pragma unroll
    for (int j = 0; j < NG / 8; ++j)
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int m = m0 + (v & 2 ? 8 : 0);
        const int n = j * 8 + (lane % 4) * 2 + (v & 1); // row within the group's tile
        const int o = n >> lg, q = (gi << lg) + (n & ((1 << lg) - 1));
        tile[o * pitch + (m << lq) + q] = acc[gi][4 * j + v];
      }
}

template <int NG, int G, bool X3, int kWin, bool kPersistent>
__global__ void __launch_bounds__(kThreads, positions_blocks_by_registers(NG, G, X3))
    wg_positions_kernel(const __grid_constant__ Maps maps, const Plan P,
                        const float *__restrict__ bias, float *__restrict__ y, int planted) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  constexpr int kW = NG * kBk * 4; // bytes of one group's weights box (one plane)
  constexpr int kPlanes = X3 ? 2 : 1;
  constexpr int kBufferBytes = kPlanes * G * kW; // the weights' boxes of one iteration
  constexpr int kRegs = NG / 2;                  // accumulators per thread and group
  constexpr int win = kWin; // the window's positions (the plan's win): its pitch in floats
  constexpr int kX = (win * kBk * 4 + 1023) / 1024 * 1024; // a window plane's bytes
  constexpr int kSlot = kPlanes * kX; // f32x3: the lo parts' plane after the window

  extern __shared__ unsigned char smem_raw[];
  const int buffers = P.buffers, windows = P.windows, wtaps = P.wtaps;
  // The weights' ring, then the windows' ring, then both rings' full and empty barriers, then
  // (persistent blocks) the epilogue's tile.
  unsigned char *smem = aligned_1024(smem_raw);
  unsigned char *xring = smem + buffers * kBufferBytes;
  uint64_t *xfull = reinterpret_cast<uint64_t *>(xring + windows * kSlot);
  uint64_t *xempty = xfull + windows;
  uint64_t *wfull = xempty + windows, *wempty = wfull + buffers;
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  // The block's tiles: blockIdx.x, + step, ... below every tile's count (step: the blocks
  // launched; one tile per block unless persistent).
  const int tiles = blocks_per_rank(P), step = launched_blocks(P);
  const int count = P.iters;

  if (tid == 0) {
    for (int s = 0; s < buffers; ++s) {
      dev::mbar_init(&wfull[s], 1);
      dev::mbar_init(&wempty[s], 8); // every consumer warp releases a buffer
    }
    for (int s = 0; s < windows; ++s) {
      dev::mbar_init(&xfull[s], 1);
      dev::mbar_init(&xempty[s], 8);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    dev::prefetch_map(&maps.a);
    dev::prefetch_map(&maps.b);
  }
  __syncthreads();

  float acc[G][kRegs];
  if (wg == 2) {
    // Iteration k of each tile: a new window where it is the first of the taps one window serves,
    // then each group's weights' box. Every lane waits (the warp stays converged), lane 0 arms the
    // barriers and issues the loads. A window's barrier expects its box, not its padding. The
    // slots and their phases run on from one tile into the next.
    const bool issuer = tid == 256;
    int s = 0, s_phase = 0, xs = 0, x_phase = 0;
    for (int tb = blockIdx.x; tb < tiles; tb += step) {
      const Tile t = tile_of(P, tb);
      for (int k = 0; k < count; ++k) {
        const Coords c = coords(P, t, k);
        if (k % wtaps == 0) {
          dev::mbar_wait(&xempty[xs], x_phase ^ 1);
          if (issuer) {
            dev::mbar_expect_tx(&xfull[xs], win * kBk * 4);
            // A box starts 16-byte aligned (its innermost coordinate a multiple of 4 floats): the
            // window starts up to 3 positions early, and the consumers skip them.
            dev::tma_load(xring + xs * kSlot, &maps.b, &xfull[xs], window_pos(P, t, k) & ~3, c.ch,
                          t.b);
          }
          if (++xs == windows)
            xs = 0, x_phase ^= 1;
        }
        dev::mbar_wait(&wempty[s], s_phase ^ 1);
        if (issuer) {
          dev::mbar_expect_tx(&wfull[s], kBufferBytes);
          unsigned char *st = smem + s * kBufferBytes;
          const bool skip = planted == int(Planted::skip_last_tap) && c.tap == P.taps - 1;
#pragma unroll
          for (int gi = 0; gi < G; ++gi) {
            const int w_row = skip ? P.rows + NG : P.row_off[t.g + gi] + t.r0;
            dev::tma_load(st + gi * kW, &maps.a, &wfull[s], c.ch, w_row, c.tap);
            if constexpr (X3)
              dev::tma_load(st + (G + gi) * kW, &maps.a_lo, &wfull[s], c.ch, w_row, c.tap);
          }
        }
        if (++s == buffers)
          s = 0, s_phase ^= 1;
        __syncwarp();
      }
    }
  } else {
    const int lane = tid % 32, warp = (tid / 32) % 4;
    const bool warp_lane0 = lane == 0;
    // The thread's A fragment rows (positions) within the window: warpgroup wg's 64 positions,
    // warp's 16 of them; a0 / a2 at row g, a1 / a3 at g + 8; channels t and t + 4 of each k-step.
    const int prow = wg * 64 + warp * 16 + lane / 4;
    const int pch = lane % 4;
    float part[G][kRegs];
    // Running counters, not divisions: the buffer and window slots and their phases, the tap
    // within the chunk (they run on from one tile into the next).
    int s = 0, s_phase = 0, xs = 0, x_phase = 0, tap = 0, in_window = 0;
    for (int tb = blockIdx.x; tb < tiles; tb += step) {
#pragma unroll
      for (int gi = 0; gi < G; ++gi)
#pragma unroll
        for (int i = 0; i < kRegs; ++i)
          acc[gi][i] = 0.0f;
      // Tap j reads from position x0 + j x tap_step; its window starts at window_pos rounded down
      // to a multiple of 4 (the chunk's, or the tap's own).
      const Tile t0 = tile_of(P, tb);
      const int x0 = coords(P, t0, 0).x_pos, chunk_win = window_pos(P, t0, 0) & ~3;
      for (int k = 0; k < count; ++k) {
        uint32_t *slot = reinterpret_cast<uint32_t *>(xring + xs * kSlot);
        if (in_window == 0) {
          // A new window: the consumers round it to tf32 in place once for all its taps (f32x3:
          // its hi parts, the lo parts into the second plane), then meet at a named barrier (the
          // producer warp is not in it). The writes are fenced against the TMA load that will
          // refill the slot once it is released.
          dev::mbar_wait(&xfull[xs], x_phase);
          for (int e = tid; e < win * kBk; e += 256) {
            const float v = __uint_as_float(slot[e]);
            if constexpr (X3)
              dev::split_tf32(v, slot[e], slot[kX / 4 + e]);
            else
              slot[e] = dev::to_tf32(v);
          }
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          asm volatile("bar.sync 1, 256;" ::: "memory");
        }
        dev::mbar_wait(&wfull[s], s_phase);
        const unsigned char *st = smem + s * kBufferBytes;
        const int pos = x0 + tap * P.tap_step;
        const uint32_t *xw = slot + (pos - (wtaps > 1 ? chunk_win : pos & ~3));
#pragma unroll
        for (int half = 0; half < (X3 ? 2 : 1); ++half) {
          constexpr int kSteps = X3 ? 2 : 4; // k8 steps per wgmma group
          // Every A fragment of this group of k-steps, loaded before the MMAs are issued (a
          // register A operand must not change until its wgmma completes).
          uint32_t ahi[G][kSteps][4], alo[G][kSteps][4];
#pragma unroll
          for (int gi = 0; gi < G; ++gi)
#pragma unroll
            for (int ks = 0; ks < kSteps; ++ks) {
              const int kk = half * kSteps + ks;
              const uint32_t *f = xw + (kk * 8 + pch) * win + prow + gi; // + gi: the shift
              constexpr int kOff[4] = {0, 8, 4 * win, 4 * win + 8};
#pragma unroll
              for (int r = 0; r < 4; ++r) {
                ahi[gi][ks][r] = f[kOff[r]];
                if constexpr (X3)
                  alo[gi][ks][r] = f[kX / 4 + kOff[r]];
              }
              dev::fence_regs(ahi[gi][ks]);
              if constexpr (X3)
                dev::fence_regs(alo[gi][ks]);
            }
#pragma unroll
          for (int gi = 0; gi < G; ++gi)
            dev::fence_regs(X3 ? part[gi] : acc[gi]);
          dev::wg_fence();
#pragma unroll
          for (int gi = 0; gi < G; ++gi) {
            const uint64_t bhi = dev::sw128_desc(st + gi * kW);
            const uint64_t blo = dev::sw128_desc(st + (G + gi) * kW);
#pragma unroll
            for (int ks = 0; ks < kSteps; ++ks) {
              const int kk = half * kSteps + ks;
              if constexpr (X3) {
                WgmmaRS<NG>::mma(part[gi], alo[gi][ks], bhi + 2 * kk, ks); // ks == 0: a fresh sum
                WgmmaRS<NG>::mma(part[gi], ahi[gi][ks], blo + 2 * kk, 1);
                WgmmaRS<NG>::mma(part[gi], ahi[gi][ks], bhi + 2 * kk, 1);
              } else {
                WgmmaRS<NG>::mma(acc[gi], ahi[gi][ks], bhi + 2 * kk, 1);
              }
            }
          }
          dev::wg_commit();
          dev::wg_wait<0>();
#pragma unroll
          for (int gi = 0; gi < G; ++gi) {
#pragma unroll
            for (int ks = 0; ks < kSteps; ++ks) {
              dev::fence_regs(ahi[gi][ks]);
              if constexpr (X3)
                dev::fence_regs(alo[gi][ks]);
            }
            dev::fence_regs(X3 ? part[gi] : acc[gi]);
            if constexpr (X3) {
#pragma unroll
              for (int i = 0; i < kRegs; ++i)
                acc[gi][i] = __fadd_rn(acc[gi][i], part[gi][i]);
            }
          }
        }
        if (warp_lane0)
          dev::mbar_arrive(&wempty[s]);
        if (++s == buffers)
          s = 0, s_phase ^= 1;
        if (++tap == P.taps)
          tap = 0;
        if (++in_window == wtaps) { // the window's last tap: release it
          if (warp_lane0)
            dev::mbar_arrive(&xempty[xs]);
          in_window = 0;
          if (++xs == windows)
            xs = 0, x_phase ^= 1;
        }
      }
      if constexpr (kPersistent) {
        // The tile through the block's own epilogue tile, by the consumers alone (the producer
        // warp is already loading the next tile): they wait until every one of them has stored
        // the last tile from it, fill it, and meet again before storing this one.
        // The tile's coordinates again, not kept through the iterations (registers: ptxas's
        // common subexpression is broken by the empty asm).
        int te = tb;
        asm volatile("" : "+r"(te));
        const Tile t = tile_of(P, te);
        float *tile = reinterpret_cast<float *>(wempty + buffers);
        const int lg = P.lg[t.g], lq = block_phases_log2(P, t);
        const int pitch = (kPm << lq) + kRowPad;
        asm volatile("bar.sync 2, 256;" ::: "memory");
        accumulators_to_tile<NG>(acc, tile, lg, lq, pitch);
        asm volatile("bar.sync 2, 256;" ::: "memory");
        store_channels(P, t, tile, bias, y, 0, tile_channels(P, t), 1, 8,
                       [pitch](int o, int i, const Cell &) { return o * pitch + i; });
      }
    }
  }
  if constexpr (kPersistent)
    return;

  // One tile per block: the tile over the pipeline's buffers (every load has landed), in output
  // order, then stored channel by channel by every warp.
  __syncthreads();
  const Tile t = tile_of(P, blockIdx.x);
  float *tile = reinterpret_cast<float *>(smem);
  const int lg = P.lg[t.g];
  const int lq = block_phases_log2(P, t);
  const int pitch = (kPm << lq) + kRowPad;
  if (wg < 2)
    accumulators_to_tile<NG>(acc, tile, lg, lq, pitch);
  __syncthreads();
  store_channels(P, t, tile, bias, y, 0, tile_channels(P, t), 1, kThreads / 32,
                 [pitch](int o, int i, const Cell &) { return o * pitch + i; });
#endif
}

template <int BN, bool X3>
void launch_rows(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                 int planted, int *resident) {
  auto kernel = wg_rows_kernel<BN, X3>;
  // Above 48 KiB a kernel must opt in; once per instantiation, to the most any plan asks.
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  CONVBENCH_CUDA_CHECK(attr); // cudaFuncSetAttribute(wg_rows_kernel)
  if (resident) {
    CONVBENCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        resident, kernel, kThreads, size_t(smem_bytes(p)))); // wg_rows_kernel
    return;
  }
  CONVBENCH_CUDA_CHECK(cuda::detail::launch_z_clusters(
      kernel, dim3(unsigned(blocks_per_rank(p)), 1, unsigned(p.split)), dim3(kThreads),
      size_t(smem_bytes(p)), st, unsigned(p.split), m, p, bias, y, planted));
}

template <int NG, int G, bool X3, int W, bool kPersistent>
void launch_window(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                   int planted, int *resident) {
  auto kernel = wg_positions_kernel<NG, G, X3, W, kPersistent>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  CONVBENCH_CUDA_CHECK(attr); // cudaFuncSetAttribute(wg_positions_kernel)
  if (resident) {
    CONVBENCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        resident, kernel, kThreads, size_t(smem_bytes(p)))); // wg_positions_kernel
    return;
  }
  kernel<<<unsigned(launched_blocks(p)), kThreads, size_t(smem_bytes(p)), st>>>(m, p, bias, y,
                                                                                planted);
  CONVBENCH_CUDA_CHECK(cudaGetLastError()); // wg_positions_kernel launch
}
template <int NG, int G, bool X3, int W>
void launch_window(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                   int planted, int *resident) {
  if (p.persistent)
    return launch_window<NG, G, X3, W, true>(p, m, bias, y, st, planted, resident);
  return launch_window<NG, G, X3, W, false>(p, m, bias, y, st, planted, resident);
}

// The kernel of the plan's window width (kWindows).
template <int NG, int G, bool X3>
void launch_positions(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                      int planted, int *resident) {
  static_assert(sizeof(kWindows) / sizeof(kWindows[0]) == 3, "a kernel per window width");
  switch (p.win) {
  case kWindows[0]:
    return launch_window<NG, G, X3, kWindows[0]>(p, m, bias, y, st, planted, resident);
  case kWindows[1]:
    return launch_window<NG, G, X3, kWindows[1]>(p, m, bias, y, st, planted, resident);
  case kWindows[2]:
    return launch_window<NG, G, X3, kWindows[2]>(p, m, bias, y, st, planted, resident);
  }
  throw std::invalid_argument("wgmma: no positions-on-M kernel for a window of " +
                              std::to_string(p.win));
}

// One precision's launch: the plan's orientation and widths. With `resident` set, no launch: the
// blocks of that kernel one multiprocessor holds, into *resident.
template <bool X3>
void launch_any(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                int planted, int *resident) {
  const std::string what = std::string("wgmma ") + (X3 ? "f32x3" : "tf32");
  if (p.along == Along::rows) {
    switch (p.n) {
    case 64:
      return launch_rows<64, X3>(p, m, bias, y, st, planted, resident);
    case 96:
      return launch_rows<96, X3>(p, m, bias, y, st, planted, resident);
    case 128:
      return launch_rows<128, X3>(p, m, bias, y, st, planted, resident);
    case 192:
      if constexpr (!X3)
        return launch_rows<192, X3>(p, m, bias, y, st, planted, resident);
      break;
    case 256:
      if constexpr (!X3)
        return launch_rows<256, X3>(p, m, bias, y, st, planted, resident);
      break;
    }
    throw std::invalid_argument(what + ": no rows-on-M kernel for N " + std::to_string(p.n));
  }
  auto by_g = [&](auto ng) {
    constexpr int NG = decltype(ng)::value;
    if (p.gpb == 2) {
      if constexpr (NG * 2 * (X3 ? 2 : 1) / 2 <= kMaxAccumulators)
        return launch_positions<NG, 2, X3>(p, m, bias, y, st, planted, resident);
      throw std::invalid_argument(what + ": no paired positions-on-M kernel for N " +
                                  std::to_string(NG));
    }
    if constexpr (NG * (X3 ? 2 : 1) / 2 <= kMaxAccumulators)
      return launch_positions<NG, 1, X3>(p, m, bias, y, st, planted, resident);
    throw std::invalid_argument(what + ": no positions-on-M kernel for N " + std::to_string(NG));
  };
  switch (p.n) {
  case 8:
    return by_g(std::integral_constant<int, 8>{});
  case 16:
    return by_g(std::integral_constant<int, 16>{});
  case 24:
    return by_g(std::integral_constant<int, 24>{});
  case 32:
    return by_g(std::integral_constant<int, 32>{});
  case 48:
    return by_g(std::integral_constant<int, 48>{});
  case 64:
    return by_g(std::integral_constant<int, 64>{});
  case 96:
    return by_g(std::integral_constant<int, 96>{});
  case 128:
    return by_g(std::integral_constant<int, 128>{});
  case 192:
    return by_g(std::integral_constant<int, 192>{});
  }
  throw std::invalid_argument(what + ": no positions-on-M kernel for N " + std::to_string(p.n));
}

} // namespace convbench::tc::wg
