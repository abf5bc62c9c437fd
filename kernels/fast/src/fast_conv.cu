// The fast polyphase kernels (see polyphase_tile.hpp for the index mapping and the f64 order).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "convbench/fast_conv.hpp"
#include "plan.hpp"
#include "polyphase_tile.hpp"

namespace convbench::fast {
namespace detail {
namespace {

// The f64 kernel keeps the reference's x == 0 skip exactly; the f32 kernel promises a tolerance
// only and never skips.
template <typename T> constexpr bool kExactSkip = sizeof(T) == sizeof(double);

// One chunk of kBk channels is staged while the previous one computes (global loads into
// registers before compute(), stored to shared memory after the barrier).
template <typename T, int M, int TR, bool Fused>
__global__ void __launch_bounds__(kThreads)
    polyphase_kernel(Plan P, const float *__restrict__ x, const float *__restrict__ w,
                     const float *__restrict__ bias, float *__restrict__ y) {
  using TL = Tile<T, M, TR, Fused>;
  __shared__ typename TL::Smem sm;
  const int tid = static_cast<int>(threadIdx.x);
  const typename TL::Block blk = TL::block_coords(P, blockIdx.x, blockIdx.y, blockIdx.z);
  typename TL::Acc acc;
  TL::zero(acc);
  typename TL::Stage st;
  const int64_t chunks = (P.cin + kBk - 1) / kBk;
  TL::load_global(P, blk, 0, tid, x, w, st);
  TL::store_smem(tid, st, sm);
  // f64 only: does the chunk in shared memory need the explicit x == 0 skip?
  bool skip = kExactSkip<T> && __syncthreads_or(TL::nonfinite_weights(st));
  if (!kExactSkip<T>)
    __syncthreads();
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const bool more = chunk + 1 < chunks;
    if (more)
      TL::load_global(P, blk, (chunk + 1) * kBk, tid, x, w, st);
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

template <typename T, int M, int TR, bool Fused>
void launch_tr(const Plan &P, const float *x, const float *w, const float *b, float *y,
               cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(P.groups * P.u_tiles), static_cast<unsigned>(P.oc_tiles),
                  static_cast<unsigned>(P.batch));
  polyphase_kernel<T, M, TR, Fused><<<grid, kThreads, 0, stream>>>(P, x, w, b, y);
}

template <typename T, int M, bool Fused>
void launch_m(const Plan &P, const float *x, const float *w, const float *b, float *y,
              cudaStream_t stream) {
  switch (P.tr) {
  case 4:
    return launch_tr<T, M, 4, Fused>(P, x, w, b, y, stream);
  case 2:
    return launch_tr<T, M, 2, Fused>(P, x, w, b, y, stream);
  default:
    return launch_tr<T, M, 1, Fused>(P, x, w, b, y, stream);
  }
}

template <typename T, bool Fused>
void launch(const ConvShape &s, const float *x, const float *w, const float *b, float *y,
            void *stream, const char *name) {
  const Plan P = make_plan(s);
  if (P.groups * P.u_tiles > 2147483647LL || P.oc_tiles > 65535 || P.batch > 65535)
    throw std::invalid_argument(std::string(name) + ": grid too large for this shape");
  if (P.bias && b == nullptr)
    throw std::invalid_argument(std::string(name) + ": bias is null");
  auto st = static_cast<cudaStream_t>(stream);
  switch (P.m) {
  case 1:
    launch_m<T, 1, Fused>(P, x, w, b, y, st);
    break;
  case 2:
    launch_m<T, 2, Fused>(P, x, w, b, y, st);
    break;
  case 3:
    launch_m<T, 3, Fused>(P, x, w, b, y, st);
    break;
  default:
    launch_m<T, 4, Fused>(P, x, w, b, y, st);
    break;
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(name) +
                             ": kernel launch failed: " + cudaGetErrorString(err));
}

} // namespace
} // namespace detail

void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream) {
  detail::launch<float, true>(s, d_x, d_w, d_b, d_y, stream, "launch_fast_f32");
}

void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused) {
  if (fused)
    detail::launch<double, true>(s, d_x, d_w, d_b, d_y, stream, "launch_fast_f64");
  else
    detail::launch<double, false>(s, d_x, d_w, d_b, d_y, stream, "launch_fast_f64");
}

} // namespace convbench::fast
