// Direct device kernels: one thread per destination cell (batch, oc, p), owning one accumulator.
// The f64 variant performs exactly the additions of cpu-f64, in the same order, with __dmul_rn /
// __dadd_rn (never contracted into FMA), so its f32 output is byte-identical to the reference.
#include <cstdint>
#include <stdexcept>

#include "convbench/cuda_check.hpp"
#include "convbench/device_facts.hpp"
#include "convbench/fast_conv.hpp"
#include "launch.cuh"
#include "tap_walk.hpp"

namespace convbench::cuda::detail {

namespace {

struct Params {
  ::convbench::detail::TapGeometry g;
  int64_t batch;
  int64_t cells; // batch * cout * l_out
};

// cuda-f64: the reference's arithmetic. The product of two f32 values is exact in f64, so only
// the order of the additions matters; an input of 0.0 contributes nothing (the reference skips it).
struct AccumF64 {
  using type = double;
  __device__ static double init(float v) { return double(v); }
  __device__ static double tap(double acc, float xv, float wv) {
    if (xv == 0.0f)
      return acc;
    return __dadd_rn(acc, __dmul_rn(double(xv), double(wv)));
  }
  __device__ static double add_bias(double acc, float bv) { return __dadd_rn(acc, double(bv)); }
  __device__ static float store(double acc) { return __double2float_rn(acc); }
};

// cuda-f64-fma: the same additions with one __fma_rn per tap. x * w is exact in f64, so
// fma(x, w, acc) rounds the same sum as __dadd_rn(acc, __dmul_rn(x, w)): byte-identical too.
struct AccumF64Fma : AccumF64 {
  __device__ static double tap(double acc, float xv, float wv) {
    if (xv == 0.0f)
      return acc;
    return __fma_rn(double(xv), double(wv), acc);
  }
};

// cuda-f32: an f32 accumulator; FMA contraction allowed (the arm promises a tolerance only).
struct AccumF32 {
  using type = float;
  __device__ static float init(float v) { return v; }
  __device__ static float tap(float acc, float xv, float wv) { return fmaf(xv, wv, acc); }
  __device__ static float add_bias(float acc, float bv) { return acc + bv; }
  __device__ static float store(float acc) { return acc; }
};

// Forward (Conv1d): gather, bias FIRST, then ic ascending, k ascending.
template <class A>
__global__ void conv1d_kernel(Params p, const float *__restrict__ x, const float *__restrict__ w,
                              const float *__restrict__ b, float *__restrict__ y) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t cell = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; cell < p.cells;
       cell += step) {
    const int64_t o = cell % p.g.l_out;
    const int64_t row = cell / p.g.l_out;
    const int64_t oc = row % p.g.cout;
    const int64_t bi = row / p.g.cout;
    const auto taps = ::convbench::detail::forward_taps(p.g, o);
    typename A::type acc = A::init(b ? b[oc] : 0.0f);
    const float *xb = x + bi * p.g.cin * p.g.l_in;
    const float *wr = w + oc * p.g.cin * p.g.k;
    for (int64_t ic = 0; ic < p.g.cin; ++ic) {
      const float *xr = xb + ic * p.g.l_in;
      const float *wk = wr + ic * p.g.k;
      for (int64_t kk = taps.k_lo; kk < taps.k_hi; ++kk)
        acc = A::tap(acc, xr[taps.base + kk * p.g.dilation], wk[kk]);
    }
    y[cell] = A::store(acc);
  }
}

// Transposed (ConvTranspose1d): the owner of destination q sweeps ic ascending, then t ascending,
// taking the single k with t*stride + k*dilation == q + padding; bias LAST.
template <class A>
__global__ void conv_transpose1d_kernel(Params p, const float *__restrict__ x,
                                        const float *__restrict__ w, const float *__restrict__ b,
                                        float *__restrict__ y) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t cell = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; cell < p.cells;
       cell += step) {
    const int64_t q = cell % p.g.l_out;
    const int64_t row = cell / p.g.l_out;
    const int64_t oc = row % p.g.cout;
    const int64_t bi = row / p.g.cout;
    const auto taps = ::convbench::detail::transposed_taps(p.g, q);
    typename A::type acc = A::init(0.0f);
    const float *xb = x + bi * p.g.cin * p.g.l_in + taps.t_first;
    const float *wb = w + oc * p.g.k + taps.k_first;
    const int64_t w_ic = p.g.cout * p.g.k;
    for (int64_t ic = 0; ic < p.g.cin; ++ic) {
      const float *xr = xb + ic * p.g.l_in;
      const float *wr = wb + ic * w_ic;
      for (int64_t j = 0; j < taps.n; ++j)
        acc = A::tap(acc, xr[j * taps.dt], wr[-j * taps.dk]);
    }
    if (b)
      acc = A::add_bias(acc, b[oc]);
    y[cell] = A::store(acc);
  }
}

template <class A>
void launch_typed(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                  float *d_y, cudaStream_t stream) {
  Params p{{s.cin, s.cout, s.k, s.stride, s.dilation, s.padding, s.l_in, s.l_out()}, s.batch, 0};
  p.cells = s.batch * s.cout * p.g.l_out;
  constexpr int kThreads = 256;
  // A grid-stride loop covers any cell count; the grid is capped well inside gridDim.x's limit.
  const int64_t wanted = (p.cells + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(wanted < (int64_t(1) << 20) ? wanted : (int64_t(1) << 20));
  const float *bias = s.bias ? d_b : nullptr;
  if (s.op == ConvOp::forward)
    conv1d_kernel<A><<<blocks, kThreads, 0, stream>>>(p, d_x, d_w, bias, d_y);
  else
    conv_transpose1d_kernel<A><<<blocks, kThreads, 0, stream>>>(p, d_x, d_w, bias, d_y);
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}

} // namespace

std::optional<ForwardTilePlan> forward_tile_for(const ConvShape &s, Accum acc, Kernel k,
                                                const Block &block) {
  if (block.forward) { // exactly the forced plan, or a refusal: never another kernel or plan
    if (acc != Accum::f32 || k != Kernel::best)
      throw std::invalid_argument("a forced forward tile runs cuda-f32's tile kernel only");
    return forward_tile_forced_plan(s, *block.forward);
  }
  if (acc != Accum::f32 || k == Kernel::simple || block.fast || !forward_tile_supported(s))
    return std::nullopt;
  // The tile plan's split aims at two blocks on each of the device's multiprocessors.
  return forward_tile_plan(s, device_facts().sms);
}

ConvLaunch::ConvLaunch(const ConvShape &s, Accum acc, Kernel k, const Block &block)
    : shape_(s), acc_(acc), fused_(k == Kernel::fused), tile_(forward_tile_for(s, acc, k, block)) {
  const bool f64 = acc == Accum::f64;
  if (tile_)
    prepare_forward_tile(*tile_);
  else if (k != Kernel::simple && block.fast)
    fast_.emplace(s, f64, k == Kernel::fused, *block.fast); // throws where it cannot run s
  else if (k != Kernel::simple && fast::fast_supported(s, f64))
    fast_.emplace(s, f64, k == Kernel::fused);
}

void ConvLaunch::operator()(const float *d_x, const float *d_w, const float *d_b, float *d_y,
                            cudaStream_t stream) const {
  if (fast_) {
    try {
      fast_->launch(d_x, d_w, d_b, d_y, stream);
    } catch (const std::runtime_error &e) {
      (void)cudaGetLastError();
      throw CudaError(e.what());
    }
    return;
  }
  if (tile_) {
    launch_forward_tile(*tile_, d_x, d_w, shape_.bias ? d_b : nullptr, d_y, stream);
    return;
  }
  if (acc_ == Accum::f64 && fused_)
    launch_typed<AccumF64Fma>(shape_, d_x, d_w, d_b, d_y, stream);
  else if (acc_ == Accum::f64)
    launch_typed<AccumF64>(shape_, d_x, d_w, d_b, d_y, stream);
  else
    launch_typed<AccumF32>(shape_, d_x, d_w, d_b, d_y, stream);
}

void launch_conv(const ConvShape &s, Accum acc, Kernel k, const Block &block, const float *d_x,
                 const float *d_w, const float *d_b, float *d_y, cudaStream_t stream) {
  ConvLaunch(s, acc, k, block)(d_x, d_w, d_b, d_y, stream);
}

} // namespace convbench::cuda::detail

namespace convbench::cuda {

namespace {
// The block the fast kernel runs for (s, acc, k, block), or nullopt for the simple kernel.
std::optional<fast::FastConfig> fast_block(const ConvShape &s, Accum acc, Kernel k,
                                           const Block &block) {
  const bool f64 = acc == Accum::f64;
  if (k == Kernel::simple)
    return std::nullopt;
  if (block.fast)
    return block.fast;
  if (fast::fast_supported(s, f64))
    return fast::choose_fast_config(s, f64, k == Kernel::fused);
  return std::nullopt;
}
} // namespace

std::string kernel_name(const ConvShape &s, Accum acc, Kernel k, const Block &block) {
  const bool f64 = acc == Accum::f64;
  if (const auto tile = detail::forward_tile_for(s, acc, k, block))
    return detail::forward_tile_name(*tile);
  if (const auto b = fast_block(s, acc, k, block))
    return std::string("polyphase-tile ") +
           (f64 ? (k == Kernel::fused ? "f64 fma" : "f64 dmul+dadd") : "f32 fma") + " " + b->name();
  return std::string("simple one-thread-per-cell ") +
         (f64 ? (k == Kernel::fused ? "f64 fma" : "f64 dmul+dadd") : "f32");
}

int64_t issued_macs(const ConvShape &s, Accum acc, Kernel k, const Block &block) {
  if (const auto tile = detail::forward_tile_for(s, acc, k, block))
    return detail::forward_tile_issued_macs(*tile);
  if (const auto b = fast_block(s, acc, k, block))
    return fast::fast_issued_macs(s, *b);
  return s.valid_macs();
}

} // namespace convbench::cuda
