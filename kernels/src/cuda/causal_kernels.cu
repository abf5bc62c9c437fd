// The causal depthwise conv1d's CUDA kernels: thin __global__ wrappers around the per-thread
// bodies of causal_tile.hpp (the code the host emulation runs), their launch, and the two
// stagings. The final state always goes to its own buffer; the in-place variant exists only for
// the race test (causal_testing.hpp).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "causal_testing.hpp"
#include "causal_tile.hpp"
#include "convbench/causal_conv.hpp"
#include "convbench/cuda_check.hpp"

namespace convbench::cuda {

namespace detail {
using namespace causal_detail;

// The vector path in at most 40 registers (it needs no more): 12 blocks, 48 warps per SM, to keep
// the issue slots busy through the cells' long dependency chains. The element path (short or odd
// rows) would spill under that cap.
template <int K, bool kBf16, bool kVec, Fault F>
__global__ void __launch_bounds__(kRegThreads, kVec ? 12 : 1)
    causal_register_kernel(CausalParams p, RegisterPlan g) {
  register_thread<K, kBf16, kVec, F>(p, g, int64_t(blockIdx.y),
                                     blockIdx.x * kRegThreads + threadIdx.x);
}

template <int K, bool kBf16, bool kVec, Fault F, class G>
__global__ void __launch_bounds__(kTiledThreads) causal_tiled_kernel(CausalParams p) {
  __shared__ TiledSmem<K, G> sm;
  const TiledBlock blk{int64_t(blockIdx.x), int64_t(blockIdx.y), int64_t(blockIdx.z)};
  tiled_stage<K, kVec, G>(p, blk, int(threadIdx.x), sm);
  __syncthreads();
  tiled_compute<K, kBf16, kVec, F, G>(p, blk, int(threadIdx.x), sm);
}

template <int K, bool kBf16, bool kVec, Fault F, class G>
void launch_tiled(const CausalParams &p, cudaStream_t stream) {
  const dim3 grid(unsigned(tiled_chunks<G>(p)), unsigned(tiled_tiles<G>(p)), unsigned(p.batch));
  causal_tiled_kernel<K, kBf16, kVec, F, G><<<grid, kTiledThreads, 0, stream>>>(p);
}

template <int K, bool kBf16, bool kVec, Fault F>
void launch_kv(const CausalParams &p, CausalKernel k, cudaStream_t stream) {
  if (k == CausalKernel::reg) {
    if (!register_plan_fits(p))
      throw CudaError("causal register kernel: channels x length / 4 must stay below 2^31");
    const RegisterPlan g = register_plan(p);
    const dim3 grid(g.blocks, unsigned(p.batch));
    causal_register_kernel<K, kBf16, kVec, F><<<grid, kRegThreads, 0, stream>>>(p, g);
  } else {
    switch (tile_shape(p.length)) {
    case TileKind::decode:
      launch_tiled<K, kBf16, kVec, F, DecodeTile>(p, stream);
      break;
    case TileKind::short_rows:
      launch_tiled<K, kBf16, kVec, F, ShortTile>(p, stream);
      break;
    case TileKind::mid_rows:
      launch_tiled<K, kBf16, kVec, F, MidTile>(p, stream);
      break;
    case TileKind::long_rows:
      launch_tiled<K, kBf16, kVec, F, LongTile>(p, stream);
      break;
    }
  }
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}

// The vector path wherever rows and buffers allow it (causal_vec), else element by element.
template <int K, bool kBf16, Fault F>
void launch_k(const CausalParams &p, CausalKernel k, cudaStream_t stream) {
  if (causal_vec(p, kBf16))
    launch_kv<K, kBf16, true, F>(p, k, stream);
  else
    launch_kv<K, kBf16, false, F>(p, k, stream);
}

template <Fault F>
void launch_f(const CausalParams &p, int k_taps, CausalKernel k, CausalOut out, cudaStream_t st) {
  const bool bf = out == CausalOut::bf16;
  switch (k_taps) {
  case 2:
    return bf ? launch_k<2, true, F>(p, k, st) : launch_k<2, false, F>(p, k, st);
  case 3:
    return bf ? launch_k<3, true, F>(p, k, st) : launch_k<3, false, F>(p, k, st);
  case 4:
    return bf ? launch_k<4, true, F>(p, k, st) : launch_k<4, false, F>(p, k, st);
  default:
    throw CudaError("causal kernels: k must be 2, 3 or 4");
  }
}

void launch_causal(const CausalParams &p, int k_taps, CausalKernel k, CausalOut out,
                   cudaStream_t stream, bool planted_in_place_state) {
  if (planted_in_place_state)
    launch_f<Fault::in_place_state>(p, k_taps, k, out, stream);
  else
    launch_f<Fault::none>(p, k_taps, k, out, stream);
}

} // namespace detail

namespace {

void *device_alloc(size_t bytes) {
  void *p = nullptr;
  if (bytes)
    CONVBENCH_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}
void device_free(void *p) {
  if (!p)
    return;
  const cudaError_t e = cudaFree(p);
  if (e != cudaSuccess)
    std::fprintf(stderr, "convbench: cudaFree failed: %s\n", detail::cuda_message(e).c_str());
}

} // namespace

struct ResidentCausal::Impl {
  CausalConvShape s;
  CausalKernel kernel;
  CausalOut out;
  cudaStream_t stream = nullptr;
  std::vector<void *> owned;
  detail::CausalParams p{};

  // Enqueued on the case's stream (a plain cudaMemcpy from pageable memory may return before
  // the copy lands, and the non-blocking stream would not wait for it); the constructor syncs.
  template <class T> T *upload(const T *host, int64_t n) {
    if (!host || n <= 0)
      return nullptr;
    void *d = device_alloc(size_t(n) * sizeof(T));
    owned.push_back(d);
    CONVBENCH_CUDA_CHECK(
        cudaMemcpyAsync(d, host, size_t(n) * sizeof(T), cudaMemcpyHostToDevice, stream));
    return static_cast<T *>(d);
  }
  void *alloc(size_t bytes) {
    void *d = device_alloc(bytes);
    owned.push_back(d);
    return d;
  }
  ~Impl() {
    for (void *d : owned)
      device_free(d);
    if (stream)
      cudaStreamDestroy(stream);
  }
};

ResidentCausal::ResidentCausal(const CausalConvShape &s, CausalKernel k, CausalOut out,
                               const CausalTensors &t)
    : impl_(new Impl{s, k, out}) {
  try {
    std::string why;
    if (!causal_supported(s, &why))
      throw CudaError("causal kernels: " + why);
    Impl &m = *impl_;
    CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    m.p.batch = s.batch;
    m.p.channels = s.channels;
    m.p.length = s.length;
    m.p.silu = s.activation == Activation::silu;
    m.p.x = m.upload(t.x, s.input_elems());
    m.p.w = m.upload(t.w, s.weight_elems());
    m.p.bias = s.bias ? m.upload(t.bias, s.channels) : nullptr;
    if (s.initial_state) {
      m.p.initial_state = m.upload(t.initial_state, s.state_elems());
      m.p.has_initial_state = m.upload(t.has_initial_state, s.batch);
    }
    m.p.y = m.alloc(size_t(s.output_elems()) * (out == CausalOut::bf16 ? 2 : 4));
    m.p.final_state = static_cast<float *>(m.alloc(size_t(s.state_elems()) * 4));
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  } catch (...) {
    delete impl_;
    throw;
  }
}

ResidentCausal::~ResidentCausal() { delete impl_; }

void ResidentCausal::launch() {
  detail::launch_causal(impl_->p, int(impl_->s.k), impl_->kernel, impl_->out, impl_->stream, false);
}

void ResidentCausal::download(float *y, float *final_state) {
  const Impl &m = *impl_;
  const size_t n = size_t(m.s.output_elems());
  std::vector<uint16_t> h(m.out == CausalOut::bf16 ? n : 0);
  void *dst = m.out == CausalOut::bf16 ? static_cast<void *>(h.data()) : static_cast<void *>(y);
  const size_t bytes = n * (m.out == CausalOut::bf16 ? 2 : 4);
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, m.p.y, bytes, cudaMemcpyDeviceToHost, m.stream));
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(final_state, m.p.final_state, size_t(m.s.state_elems()) * 4,
                                       cudaMemcpyDeviceToHost, m.stream));
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  for (size_t i = 0; i < h.size(); ++i)
    y[i] = causal_detail::from_bf16(h[i]);
}

void *ResidentCausal::stream() const { return impl_->stream; }

void per_call_causal(const CausalConvShape &s, CausalKernel k, CausalOut out,
                     const CausalTensors &t) {
  ResidentCausal r(s, k, out, t);
  r.launch();
  r.download(t.y, t.final_state);
}

namespace testing {

// Launches the planted in-place variant on the caller's device buffers and waits for it.
void launch_planted_in_place(const CausalConvShape &s, CausalKernel k, const DeviceCausal &d) {
  detail::CausalParams p{};
  p.batch = s.batch;
  p.channels = s.channels;
  p.length = s.length;
  p.silu = s.activation == Activation::silu;
  p.x = d.x;
  p.w = d.w;
  p.bias = d.bias;
  p.initial_state = d.initial_state;
  p.has_initial_state = d.has_initial_state;
  p.y = d.y;
  p.final_state = d.final_state;
  detail::launch_causal(p, int(s.k), k, CausalOut::f32, nullptr, true);
  CONVBENCH_CUDA_CHECK(cudaDeviceSynchronize());
}

} // namespace testing
} // namespace convbench::cuda
