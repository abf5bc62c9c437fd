// The tensor-core kernel (WMMA) over the polyphase tile of tc_tile.hpp, templated on the
// arithmetic (float: tf32 m16n16k8, f32 accumulate; Split<float>: the same MMA on hi and lo tf32
// parts of each operand, three products per k-step; double: DMMA m8n8k4, f64 accumulate), the
// taps per phase M and the block shape G. Included by tc_tf32.cu, tc_f32x3.cu and tc_f64.cu (one
// precision each, so they compile in parallel).
#pragma once

#include <cuda_runtime.h>
#include <mma.h>

#include <string>

#include "convbench/cuda_check.hpp"
#include "convbench/device_facts.hpp"
#include "tc_plan.hpp"
#include "tc_tile.hpp"

namespace convbench::tc::detail {

using namespace nvcuda;

// The arithmetic of one arm: the fragment shape, the staged element type E (also the
// accumulator, the workspace and the reduction's type), kParts planes of each operand tile in
// shared memory, and the kTerms products of one k-step, term t multiplying A's plane a_part(t) by
// B's plane b_part(t). stage() writes element v's parts, plane p at dst[p * plane].
template <typename T> struct Split {}; // 3xTF32 over T = float
template <typename T> struct Mma;
template <> struct Mma<float> {
  static constexpr int kM = 16, kN = 16, kK = 8;
  using In = wmma::precision::tf32;
  using E = float;
  static constexpr int kParts = 1, kTerms = 1;
  static __device__ __forceinline__ constexpr int a_part(int) { return 0; }
  static __device__ __forceinline__ constexpr int b_part(int) { return 0; }
  // The tensor-op conversion, once per element when it is staged (not per fragment load).
  static __device__ __forceinline__ void stage(float v, float *dst, int) {
    *dst = wmma::__float_to_tf32(v);
  }
};
template <> struct Mma<Split<float>> {
  static constexpr int kM = 16, kN = 16, kK = 8;
  using In = wmma::precision::tf32;
  using E = float;
  static constexpr int kParts = 2, kTerms = kSplitTerms;
  static __device__ __forceinline__ constexpr int a_part(int t) { return split_a_part(t); }
  static __device__ __forceinline__ constexpr int b_part(int t) { return split_b_part(t); }
  // hi = tf32(v); v - hi is exact in f32 and its tf32 rounding keeps 11 more bits. An infinite
  // hi gets lo = 0 (not inf - inf = NaN), so a non-finite operand behaves as in cuda-tf32.
  static __device__ __forceinline__ void stage(float v, float *dst, int plane) {
    const float hi = wmma::__float_to_tf32(v);
    dst[0] = hi;
    dst[plane] = isinf(hi) ? 0.0f : wmma::__float_to_tf32(v - hi);
  }
};
template <> struct Mma<double> {
  static constexpr int kM = 8, kN = 8, kK = 4;
  using In = double;
  using E = double;
  static constexpr int kParts = 1, kTerms = 1;
  static __device__ __forceinline__ constexpr int a_part(int) { return 0; }
  static __device__ __forceinline__ constexpr int b_part(int) { return 0; }
  static __device__ __forceinline__ void stage(float v, double *dst, int) {
    *dst = double(v); // exact
  }
};

// Shared memory of one block: kParts planes of the weight tile [kBM][kLda], then kParts planes
// of the M + 1 shifted x windows [slot][icl][kLdx] during the main loop, then the output tile
// [kBM][kLdc] for the epilogue. (Every plane is a multiple of 8 elements, so each keeps the
// first's 32-byte alignment.)
// Row pitches are padded by 4 elements against bank conflicts; WMMA wants 32-byte aligned
// fragment pointers and pitches that are multiples of 16 bytes, which these keep (kBM is a
// multiple of 32, fragment rows and columns start at multiples of 8 elements).
template <typename T, int M, class G> struct Layout {
  using E = typename Mma<T>::E;
  static constexpr int kParts = Mma<T>::kParts;
  static constexpr int kLda = G::kBKc * M + 4;
  static constexpr int kLdx = G::kBN + 4;
  static constexpr int kLdc = G::kBN + 4;
  static constexpr int kA = G::kBM * kLda;
  static constexpr int kX = (M + 1) * G::kBKc * kLdx;
  static constexpr int kC = G::kBM * kLdc;
  static constexpr int kMain = kParts * (kA + kX);
  static constexpr size_t kBytes = sizeof(E) * size_t(kMain > kC ? kMain : kC);
  static_assert(G::kBKc % Mma<T>::kK == 0, "whole k-steps per tap");
  static_assert(kA % 8 == 0 && kX % 8 == 0, "planes keep 32-byte alignment");
  // The opt-in limit of sm_80 / sm_90 (227 KiB per block).
  static_assert(kBytes <= 227 * 1024, "block tile exceeds the shared-memory opt-in limit");
};

template <typename T, int M, class G>
__global__ void __launch_bounds__(G::kThreads)
    tc_kernel(Plan P, const float *__restrict__ x, const float *__restrict__ w,
              const float *__restrict__ bias, float *__restrict__ y,
              typename Mma<T>::E *__restrict__ ws) {
  using MM = Mma<T>;
  using E = typename MM::E;
  using L = Layout<T, M, G>;
  constexpr int FM = kBOc / MM::kM; // fragments per warp along rows
  constexpr int FN = 32 / MM::kN;   // and along columns
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E *as = reinterpret_cast<E *>(smem_raw); // plane p of the weight tile at as + p * kA
  E *xs = as + L::kParts * L::kA;          // plane p of the x windows at xs + p * kX

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int wrr = warp / G::kWnc; // the warp's phase within the block
  const int wn = warp % G::kWnc;  // its 32-column slice
  const Block blk = block_coords<G>(P, blockIdx.x, blockIdx.y, blockIdx.z);
  const int delta = phase_delta(P, blk, wrr);

  // Split: the MMA's f32 accumulation aligns its addends to the largest and truncates (measured
  // on the H200: one accumulator over all of K left f32x3 only ~6x under tf32, rel-L2 1.4e-5 on
  // up0/96 against cuda-f32's 7e-7). So each chunk's products go into a fresh accumulator, and
  // the chunk sums are added with FADD (round to nearest) into `sum`: the truncation then acts
  // on a chunk's 3 x M x kBKc products only.
  constexpr bool kChunkSums = MM::kParts == 2;
  wmma::fragment<wmma::accumulator, MM::kM, MM::kN, MM::kK, E> acc[FM][FN], sum[FM][FN];
#pragma unroll
  for (int fm = 0; fm < FM; ++fm)
#pragma unroll
    for (int fn = 0; fn < FN; ++fn) {
      wmma::fill_fragment(acc[fm][fn], E(0));
      if constexpr (kChunkSums)
        wmma::fill_fragment(sum[fm][fn], E(0));
    }

  // When the slots split evenly over the threads (M * PB a multiple of 4: every vocoder stage
  // in the 64 x 64 and 128 x 32 tiles), thread tid owns slots tid + i * kThreads.
  constexpr bool kFixedSlots = weight_slots<G, M>() % G::kThreads == 0;
  constexpr int kSlotsPt = kFixedSlots ? weight_slots<G, M>() / G::kThreads : 1;
  WeightSlot slot[kSlotsPt];
  if constexpr (kFixedSlots) {
#pragma unroll
    for (int i = 0; i < kSlotsPt; ++i)
      slot[i] = weight_slot<G, M>(P, blk, tid + i * G::kThreads);
  }

  for (int64_t ch = blk.ch_begin; ch < blk.ch_end; ++ch) {
    const int64_t ic0 = ch * G::kBKc;
    __syncthreads(); // the previous chunk's fragments are loaded
    if constexpr (kFixedSlots) {
      // Each thread owns the same kSlotsPt weight slots in every chunk: per channel only the
      // channel offset changes (the general path below re-derives every index).
#pragma unroll
      for (int icl = 0; icl < G::kBKc; ++icl) {
        const int64_t ic = ic0 + icl;
        const float *wc = w + ic * P.cout * P.k;
#pragma unroll
        for (int i = 0; i < kSlotsPt; ++i) {
          const float v = (ic < P.cin && slot[i].ok) ? wc[slot[i].off] : 0.0f;
          MM::stage(v, as + slot[i].row * L::kLda + slot[i].kk0 + icl, L::kA);
        }
      }
    } else {
      for (int e = tid; e < weight_elements<G, M>(); e += G::kThreads) {
        int row, kk;
        const float v = weight_element<G, M>(P, blk, ic0, e, w, row, kk);
        MM::stage(v, as + row * L::kLda + kk, L::kA);
      }
    }
    for (int e = tid; e < x_elements<G, M>(); e += G::kThreads) {
      int d, icl, n;
      const float v = x_element<G, M>(P, blk, ic0, e, x, d, icl, n);
      MM::stage(v, xs + (d * G::kBKc + icl) * L::kLdx + n, L::kX);
    }
    __syncthreads();
    if constexpr (kChunkSums) {
#pragma unroll
      for (int fm = 0; fm < FM; ++fm)
#pragma unroll
        for (int fn = 0; fn < FN; ++fn)
          wmma::fill_fragment(acc[fm][fn], E(0));
    }
#pragma unroll
    for (int j = 0; j < M; ++j) {
      // Phase wrr, tap j reads slot M - 1 - j + delta (tc_tile.hpp).
      const E *xw = xs + (M - 1 - j + delta) * G::kBKc * L::kLdx + wn * 32;
      const E *aw = as + wrr * kBOc * L::kLda + j * G::kBKc;
#pragma unroll
      for (int ks = 0; ks < G::kBKc; ks += MM::kK) {
        wmma::fragment<wmma::matrix_a, MM::kM, MM::kN, MM::kK, typename MM::In, wmma::row_major>
            a[L::kParts][FM];
        wmma::fragment<wmma::matrix_b, MM::kM, MM::kN, MM::kK, typename MM::In, wmma::row_major>
            b[L::kParts][FN];
#pragma unroll
        for (int p = 0; p < L::kParts; ++p) {
#pragma unroll
          for (int fm = 0; fm < FM; ++fm)
            wmma::load_matrix_sync(a[p][fm], aw + p * L::kA + fm * MM::kM * L::kLda + ks, L::kLda);
#pragma unroll
          for (int fn = 0; fn < FN; ++fn)
            wmma::load_matrix_sync(b[p][fn], xw + p * L::kX + ks * L::kLdx + fn * MM::kN, L::kLdx);
        }
        // The terms in order (Split: lo*hi, hi*lo, then hi*hi), each into the same accumulator.
#pragma unroll
        for (int t = 0; t < MM::kTerms; ++t)
#pragma unroll
          for (int fm = 0; fm < FM; ++fm)
#pragma unroll
            for (int fn = 0; fn < FN; ++fn)
              wmma::mma_sync(acc[fm][fn], a[MM::a_part(t)][fm], b[MM::b_part(t)][fn], acc[fm][fn]);
      }
    }
    if constexpr (kChunkSums) {
#pragma unroll
      for (int fm = 0; fm < FM; ++fm)
#pragma unroll
        for (int fn = 0; fn < FN; ++fn)
#pragma unroll
          for (int i = 0; i < sum[fm][fn].num_elements; ++i)
            sum[fm][fn].x[i] = __fadd_rn(sum[fm][fn].x[i], acc[fm][fn].x[i]);
    }
  }
  if constexpr (kChunkSums) {
#pragma unroll
    for (int fm = 0; fm < FM; ++fm)
#pragma unroll
      for (int fn = 0; fn < FN; ++fn)
        acc[fm][fn] = sum[fm][fn];
  }

  // Epilogue through shared memory: the fragment layout is opaque, so each warp stores its tile
  // and the block writes y with the bias added LAST (as the reference), masked to the tensor;
  // a split block writes its raw partial sums to its workspace slice instead (tc_reduce).
  __syncthreads();
  E *cs = reinterpret_cast<E *>(smem_raw);
#pragma unroll
  for (int fm = 0; fm < FM; ++fm)
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
      wmma::store_matrix_sync(cs + (wrr * kBOc + fm * MM::kM) * L::kLdc + wn * 32 + fn * MM::kN,
                              acc[fm][fn], L::kLdc, wmma::mem_row_major);
  __syncthreads();
  const BlockPhases<G> ph = block_phases<G>(P, blk);
#pragma unroll
  for (int rr = 0; rr < G::kPB; ++rr)
    for (int e = tid; e < kBOc * G::kBN; e += G::kThreads) {
      const int ocl = e / G::kBN, n = e % G::kBN;
      const int64_t yi = output_index<G>(P, blk, ph, rr, ocl, n);
      if (yi < 0)
        continue;
      E v = cs[(rr * kBOc + ocl) * L::kLdc + n];
      if (P.splits > 1) {
        ws[blk.sp * (P.batch * P.cout * P.l_out) + yi] = v;
        continue;
      }
      if (P.bias)
        v += E(bias[blk.oc0 + ocl]);
      y[yi] = static_cast<float>(v);
    }
}

// Split-K: slices added in ascending split order, then the bias, one rounding to f32.
template <typename T>
__global__ void tc_reduce(int64_t cells, int64_t splits, int64_t cout, int64_t l_out,
                          const T *__restrict__ ws, const float *__restrict__ bias,
                          float *__restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < cells;
       i += int64_t(gridDim.x) * blockDim.x) {
    T v = ws[i];
    for (int64_t sp = 1; sp < splits; ++sp)
      v += ws[sp * cells + i];
    if (bias)
      v += T(bias[(i / l_out) % cout]);
    y[i] = static_cast<float>(v);
  }
}

template <typename T, int M, class G>
void launch_shape(Plan P, const float *x, const float *w, const float *b, float *y, cudaStream_t st,
                  void *ws, size_t ws_bytes) {
  using E = typename Mma<T>::E;
  tile_plan(P, G::kPB, G::kBN, G::kBKc);
  set_splits(P, chosen_splits(P));
  if (P.splits > 1 && (ws == nullptr || ws_bytes < workspace_bytes(P, sizeof(E))))
    set_splits(P, 1); // no (or too small a) workspace: unsplit
  constexpr size_t bytes = Layout<T, M, G>::kBytes;
  // Above 48 KiB a kernel must opt in; once per instantiation, outside any timed region after
  // the first call.
  static const cudaError_t attr = cudaFuncSetAttribute(
      tc_kernel<T, M, G>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  CONVBENCH_CUDA_CHECK(attr); // cudaFuncSetAttribute(tc_kernel)
  const dim3 grid(unsigned(P.phase_blocks * P.u_tiles), unsigned(P.oc_tiles), unsigned(P.batch));
  const dim3 grid_z(grid.x, grid.y, unsigned(P.batch * P.splits));
  tc_kernel<T, M, G><<<grid_z, G::kThreads, bytes, st>>>(P, x, w, b, y, static_cast<E *>(ws));
  CONVBENCH_CUDA_CHECK(cudaGetLastError()); // tc_kernel launch
  if (P.splits > 1) {
    const int64_t cells = P.batch * P.cout * P.l_out;
    const int64_t blocks = std::min<int64_t>(ceil_div(cells, 256), device_facts().sms * 16);
    tc_reduce<E><<<unsigned(blocks), 256, 0, st>>>(
        cells, P.splits, P.cout, P.l_out, static_cast<const E *>(ws), P.bias ? b : nullptr, y);
    CONVBENCH_CUDA_CHECK(cudaGetLastError()); // tc_reduce launch
  }
}

template <typename T, int BKC>
void launch_precision(const ConvShape &s, const float *x, const float *w, const float *b, float *y,
                      void *stream, void *ws, size_t ws_bytes) {
  const Plan P = base_plan(s);
  const Shape g = choose_shape(P);
  auto st = static_cast<cudaStream_t>(stream);
  auto by_m = [&](auto geometry) {
    using G = decltype(geometry);
    switch (P.m) {
    case 1:
      return launch_shape<T, 1, G>(P, x, w, b, y, st, ws, ws_bytes);
    case 2:
      return launch_shape<T, 2, G>(P, x, w, b, y, st, ws, ws_bytes);
    case 3:
      return launch_shape<T, 3, G>(P, x, w, b, y, st, ws, ws_bytes);
    default:
      return launch_shape<T, 4, G>(P, x, w, b, y, st, ws, ws_bytes);
    }
  };
  switch (g) {
  case Shape::p1w4:
    return by_m(Geometry<1, 4, BKC>{});
  case Shape::p2w2:
    return by_m(Geometry<2, 2, BKC>{});
  case Shape::p4w1:
    return by_m(Geometry<4, 1, BKC>{});
  }
}

} // namespace convbench::tc::detail
