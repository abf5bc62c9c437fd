// Direct device kernels: one thread per destination cell (batch, oc, p), owning one accumulator.
// The f64 variant performs exactly the additions of cpu-f64, in the same order, with __dmul_rn /
// __dadd_rn (never contracted into FMA), so its f32 output is byte-identical to the reference.
#include <cstdint>

#include "check.cuh"
#include "launch.cuh"

namespace convbench::cuda::detail {

namespace {

struct Params {
  int64_t batch, cin, cout, k, stride, dilation, padding, l_in, l_out;
  int64_t cells;  // batch * cout * l_out
};

// cuda-f64: the reference's arithmetic. The product of two f32 values is exact in f64, so only
// the order of the additions matters; an input of 0.0 contributes nothing (the reference skips it).
struct AccumF64 {
  using type = double;
  __device__ static double init(float v) { return double(v); }
  __device__ static double tap(double acc, float xv, float wv) {
    if (xv == 0.0f) return acc;
    return __dadd_rn(acc, __dmul_rn(double(xv), double(wv)));
  }
  __device__ static double add_bias(double acc, float bv) { return __dadd_rn(acc, double(bv)); }
  __device__ static float store(double acc) { return __double2float_rn(acc); }
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
__global__ void conv1d_kernel(Params p, const float* __restrict__ x, const float* __restrict__ w,
                              const float* __restrict__ b, float* __restrict__ y) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t cell = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; cell < p.cells;
       cell += step) {
    const int64_t o = cell % p.l_out;
    const int64_t row = cell / p.l_out;
    const int64_t oc = row % p.cout;
    const int64_t bi = row / p.cout;
    // Taps whose input index i = o*stride - padding + k*dilation lies in [0, l_in).
    const int64_t base = o * p.stride - p.padding;
    int64_t k_lo = base >= 0 ? 0 : (-base + p.dilation - 1) / p.dilation;
    const int64_t top = p.l_in - 1 - base;
    int64_t k_hi = top < 0 ? 0 : top / p.dilation + 1;
    if (k_hi > p.k) k_hi = p.k;
    typename A::type acc = A::init(b ? b[oc] : 0.0f);
    const float* xb = x + bi * p.cin * p.l_in;
    const float* wr = w + oc * p.cin * p.k;
    for (int64_t ic = 0; ic < p.cin; ++ic) {
      const float* xr = xb + ic * p.l_in;
      const float* wk = wr + ic * p.k;
      for (int64_t kk = k_lo; kk < k_hi; ++kk)
        acc = A::tap(acc, xr[base + kk * p.dilation], wk[kk]);
    }
    y[cell] = A::store(acc);
  }
}

__host__ __device__ inline int64_t gcd64(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// Transposed (ConvTranspose1d): the owner of destination q sweeps ic ascending, then t ascending,
// taking the single k with t*stride + k*dilation == q + padding; bias LAST.
template <class A>
__global__ void conv_transpose1d_kernel(Params p, const float* __restrict__ x,
                                        const float* __restrict__ w, const float* __restrict__ b,
                                        float* __restrict__ y) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  // Valid k form an arithmetic progression: consecutive ones differ by stride/g in k and by
  // dilation/g in t (g = gcd(stride, dilation)); larger k means smaller t.
  const int64_t g = gcd64(p.stride, p.dilation);
  const int64_t dk = p.stride / g, dt = p.dilation / g;
  for (int64_t cell = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; cell < p.cells;
       cell += step) {
    const int64_t q = cell % p.l_out;
    const int64_t row = cell / p.l_out;
    const int64_t oc = row % p.cout;
    const int64_t bi = row / p.cout;
    const int64_t q0 = q + p.padding;  // t*stride + k*dilation == q0
    // Largest k with t >= 0 (k*dilation <= q0) and t*stride exact; that k gives the smallest t.
    int64_t k_first = q0 / p.dilation;
    if (k_first > p.k - 1) k_first = p.k - 1;
    int64_t found = -1;
    for (int64_t kk = k_first; kk >= 0 && kk > k_first - dk; --kk) {
      if ((q0 - kk * p.dilation) % p.stride == 0) {
        found = kk;
        break;
      }
    }
    int64_t n_taps = 0, t_first = 0;
    if (found < 0) {
      found = 0;  // no tap reaches q: only the bias lands here
    } else {
      t_first = (q0 - found * p.dilation) / p.stride;
      if (t_first < p.l_in) {
        const int64_t by_k = found / dk + 1;                       // k stays >= 0
        const int64_t by_t = (p.l_in - 1 - t_first) / dt + 1;      // t stays < l_in
        n_taps = by_k < by_t ? by_k : by_t;
      }
    }
    typename A::type acc = A::init(0.0f);
    const float* xb = x + bi * p.cin * p.l_in + t_first;
    const float* wb = w + oc * p.k + found;
    const int64_t w_ic = p.cout * p.k;
    for (int64_t ic = 0; ic < p.cin; ++ic) {
      const float* xr = xb + ic * p.l_in;
      const float* wr = wb + ic * w_ic;
      for (int64_t j = 0; j < n_taps; ++j) acc = A::tap(acc, xr[j * dt], wr[-j * dk]);
    }
    if (b) acc = A::add_bias(acc, b[oc]);
    y[cell] = A::store(acc);
  }
}

template <class A>
void launch_typed(const ConvShape& s, const float* d_x, const float* d_w, const float* d_b,
                  float* d_y, cudaStream_t stream) {
  Params p{s.batch, s.cin, s.cout, s.k, s.stride, s.dilation, s.padding, s.l_in, s.l_out(), 0};
  p.cells = s.batch * s.cout * p.l_out;
  constexpr int kThreads = 256;
  // A grid-stride loop covers any cell count; the grid is capped well inside gridDim.x's limit.
  const int64_t wanted = (p.cells + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(wanted < (int64_t(1) << 20) ? wanted : (int64_t(1) << 20));
  const float* bias = s.bias ? d_b : nullptr;
  if (s.op == ConvOp::forward)
    conv1d_kernel<A><<<blocks, kThreads, 0, stream>>>(p, d_x, d_w, bias, d_y);
  else
    conv_transpose1d_kernel<A><<<blocks, kThreads, 0, stream>>>(p, d_x, d_w, bias, d_y);
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_conv(const ConvShape& s, Accum acc, const float* d_x, const float* d_w,
                 const float* d_b, float* d_y, cudaStream_t stream) {
  if (acc == Accum::f64)
    launch_typed<AccumF64>(s, d_x, d_w, d_b, d_y, stream);
  else
    launch_typed<AccumF32>(s, d_x, d_w, d_b, d_y, stream);
}

}  // namespace convbench::cuda::detail
