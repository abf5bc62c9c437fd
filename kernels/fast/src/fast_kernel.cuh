// The polyphase kernel template and its launch, shared by fast_conv.cu (the default block
// configuration, every M) and fast_sweep_f32.cu / fast_sweep_f64.cu (the other configurations,
// M == 2 only; separate translation units so ninja compiles them side by side).
#pragma once

#include <cuda_runtime.h>

#include "polyphase_tile.hpp"

namespace convbench::fast::detail {

// The f64 kernel keeps the reference's x == 0 skip exactly; the f32 kernel promises a tolerance
// only and never skips.
template <typename T> constexpr bool kExactSkip = sizeof(T) == sizeof(double);

// One chunk of C::kBk channels is staged while the previous one computes (global loads into
// registers before compute(), stored to shared memory after the barrier).
template <typename T, int M, int TR, bool Fused, class C>
__global__ void __launch_bounds__(C::kThreads)
    polyphase_kernel(Plan P, const float *__restrict__ x, const float *__restrict__ w,
                     const float *__restrict__ bias, float *__restrict__ y) {
  using TL = Tile<T, M, TR, Fused, C>;
  static_assert(sizeof(typename TL::Smem) <= 48 * 1024, "static shared memory limit");
  __shared__ typename TL::Smem sm;
  const int tid = static_cast<int>(threadIdx.x);
  const typename TL::Block blk = TL::block_coords(P, blockIdx.x, blockIdx.y, blockIdx.z);
  typename TL::Acc acc;
  TL::zero(acc);
  typename TL::Stage st;
  const int64_t chunks = (P.cin + C::kBk - 1) / C::kBk;
  TL::load_global(P, blk, 0, tid, x, w, st);
  TL::store_smem(tid, st, sm);
  // f64 only: does the chunk in shared memory need the explicit x == 0 skip?
  bool skip = kExactSkip<T> && __syncthreads_or(TL::nonfinite_weights(st));
  if (!kExactSkip<T>)
    __syncthreads();
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const bool more = chunk + 1 < chunks;
    if (more)
      TL::load_global(P, blk, (chunk + 1) * C::kBk, tid, x, w, st);
    if (skip)
      TL::template compute<true>(tid, sm, acc);
    else
      TL::template compute<false>(tid, sm, acc);
    __syncthreads();
    if (more) {
      TL::store_smem(tid, st, sm);
      if (kExactSkip<T>)
        skip = __syncthreads_or(TL::nonfinite_weights(st));
      else
        __syncthreads();
    }
  }
  TL::store_output(P, blk, tid, acc, bias, y);
}

template <typename T, int M, int TR, bool Fused, class C>
void launch_tr(const Plan &P, const float *x, const float *w, const float *b, float *y,
               cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(P.groups * P.u_tiles), static_cast<unsigned>(P.oc_tiles),
                  static_cast<unsigned>(P.batch));
  polyphase_kernel<T, M, TR, Fused, C><<<grid, C::kThreads, 0, stream>>>(P, x, w, b, y);
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
