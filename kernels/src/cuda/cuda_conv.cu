// Staging modes of the CUDA arms (resident, per-call) and device discovery. The kernels themselves
// are chosen in launch_conv (conv_kernels.cu).
#include <cstdio>
#include <utility>

#include "convbench/cuda_check.hpp"
#include "convbench/cuda_conv.hpp"
#include "launch.cuh"

namespace convbench::cuda {

using detail::ConvLaunch;
using detail::launch_conv;

bool device_available(std::string *why_not) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why_not)
      *why_not = "cudaGetDeviceCount failed: " + detail::cuda_message(e);
    cudaGetLastError(); // clear the sticky-free error so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why_not)
      *why_not = "no CUDA device visible (cudaGetDeviceCount returned 0)";
    return false;
  }
  return true;
}

namespace {

// Owns one device allocation. release() is the checked path; the destructor only runs on an
// exception path and reports (cannot throw) a failing cudaFree.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(int64_t floats) {
    if (floats <= 0)
      return; // e.g. no bias: keep a null pointer rather than a 0-byte allocation
    CONVBENCH_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void **>(&p_), size_t(floats) * sizeof(float)));
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (p_) {
      const cudaError_t e = cudaFree(p_);
      if (e != cudaSuccess)
        std::fprintf(stderr, "convbench: cudaFree failed in cleanup: %s\n",
                     detail::cuda_message(e).c_str());
    }
  }
  void release() {
    if (p_) {
      float *p = std::exchange(p_, nullptr);
      CONVBENCH_CUDA_CHECK(cudaFree(p));
    }
  }
  float *get() const { return p_; }

private:
  float *p_ = nullptr;
};

class Stream {
public:
  Stream() { CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() {
    if (s_) {
      const cudaError_t e = cudaStreamDestroy(s_);
      if (e != cudaSuccess)
        std::fprintf(stderr, "convbench: cudaStreamDestroy failed in cleanup: %s\n",
                     detail::cuda_message(e).c_str());
    }
  }
  void release() {
    if (s_) {
      cudaStream_t s = std::exchange(s_, nullptr);
      CONVBENCH_CUDA_CHECK(cudaStreamDestroy(s));
    }
  }
  cudaStream_t get() const { return s_; }

private:
  cudaStream_t s_ = nullptr;
};

void upload(float *d, const float *h, int64_t floats, cudaStream_t stream) {
  CONVBENCH_CUDA_CHECK(
      cudaMemcpyAsync(d, h, size_t(floats) * sizeof(float), cudaMemcpyHostToDevice, stream));
}

void check_host_pointers(const ConvShape &s, const float *w, const float *bias) {
  if (!w)
    throw std::invalid_argument("convbench::cuda: weight pointer is null");
  if (s.bias && !bias)
    throw std::invalid_argument("convbench::cuda: shape has bias but bias is null");
}

} // namespace

struct ResidentConv::Impl {
  ConvShape shape;
  ConvLaunch conv; // resolved once: the timed launches only enqueue
  Stream stream;
  DeviceBuffer w, b, x, y;

  Impl(const ConvShape &s, Accum a, Kernel k, const Block &block)
      : shape(s), conv(s, a, k, block), w(s.weight_elems()), b(s.bias ? s.cout : 0),
        x(s.input_elems()), y(s.output_elems()) {}
};

ResidentConv::ResidentConv(const ConvShape &s, Accum acc, const float *w, const float *bias,
                           Kernel kernel, const Block &block)
    : impl_(nullptr) {
  s.validate();
  check_host_pointers(s, w, bias);
  impl_ = new Impl(s, acc, kernel, block);
  try {
    cudaStream_t st = impl_->stream.get();
    upload(impl_->w.get(), w, s.weight_elems(), st);
    if (s.bias)
      upload(impl_->b.get(), bias, s.cout, st);
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(st));
  } catch (...) {
    delete impl_;
    throw;
  }
}

ResidentConv::~ResidentConv() {
  // Destructors cannot throw: synchronise, then report (not ignore) any failing release.
  try {
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(impl_->stream.get()));
    impl_->y.release();
    impl_->x.release();
    impl_->b.release();
    impl_->w.release();
    impl_->stream.release();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "convbench: ~ResidentConv: %s\n", e.what());
  }
  delete impl_;
}

void ResidentConv::upload_input(const float *x) {
  if (!x)
    throw std::invalid_argument("convbench::cuda: input pointer is null");
  cudaStream_t st = impl_->stream.get();
  upload(impl_->x.get(), x, impl_->shape.input_elems(), st);
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(st));
}

void ResidentConv::launch() { launch(impl_->x.get(), impl_->y.get()); }

void ResidentConv::launch(const float *d_x, float *d_y) {
  impl_->conv(d_x, impl_->w.get(), impl_->b.get(), d_y, impl_->stream.get());
}

void ResidentConv::download_output(float *y) {
  if (!y)
    throw std::invalid_argument("convbench::cuda: output pointer is null");
  cudaStream_t st = impl_->stream.get();
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(y, impl_->y.get(),
                                       size_t(impl_->shape.output_elems()) * sizeof(float),
                                       cudaMemcpyDeviceToHost, st));
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(st));
}

void *ResidentConv::stream() const { return impl_->stream.get(); }
const ConvShape &ResidentConv::shape() const { return impl_->shape; }
float *ResidentConv::d_input() { return impl_->x.get(); }
float *ResidentConv::d_output() { return impl_->y.get(); }

void per_call_conv(const ConvShape &s, Accum acc, const float *x, const float *w, const float *bias,
                   float *y, Kernel kernel, const Block &block) {
  s.validate();
  check_host_pointers(s, w, bias);
  if (!x || !y)
    throw std::invalid_argument("convbench::cuda: input or output pointer is null");
  // Everything a naive provider does on every call: allocate, stream, upload, launch, download,
  // destroy, free.
  DeviceBuffer d_w(s.weight_elems()), d_b(s.bias ? s.cout : 0), d_x(s.input_elems()),
      d_y(s.output_elems());
  Stream stream;
  upload(d_w.get(), w, s.weight_elems(), stream.get());
  if (s.bias)
    upload(d_b.get(), bias, s.cout, stream.get());
  upload(d_x.get(), x, s.input_elems(), stream.get());
  launch_conv(s, acc, kernel, block, d_x.get(), d_w.get(), d_b.get(), d_y.get(), stream.get());
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(y, d_y.get(), size_t(s.output_elems()) * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream.get()));
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  stream.release();
  d_y.release();
  d_x.release();
  d_b.release();
  d_w.release();
}

} // namespace convbench::cuda
