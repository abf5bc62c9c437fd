// Resident and per-call staging of the tensor-core arms (host code over the CUDA runtime).
#include <cuda_runtime.h>

#include <string>

#include "convbench/cuda_check.hpp"
#include "convbench/tc_conv.hpp"

namespace convbench::tc {
namespace {

// One device buffer of floats; at least one element, so a bias-less shape still has a pointer.
struct Buffer {
  float *p = nullptr;
  size_t n = 0;
  explicit Buffer(int64_t count) : n(size_t(count > 0 ? count : 1)) {
    CONVBENCH_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
  }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void upload(const float *h, int64_t count) {
    CONVBENCH_CUDA_CHECK(cudaMemcpy(p, h, size_t(count) * sizeof(float), cudaMemcpyHostToDevice));
  }
};

void launch_on(const ConvShape &s, Precision p, const float *x, const float *w, const float *b,
               float *y, cudaStream_t st, Buffer &ws) {
  switch (p) {
  case Precision::tf32:
    return launch_tc_tf32(s, x, w, b, y, st, ws.p, ws.n * sizeof(float));
  case Precision::f32x3:
    return launch_tc_f32x3(s, x, w, b, y, st, ws.p, ws.n * sizeof(float));
  case Precision::f64:
    return launch_tc_f64(s, x, w, b, y, st, ws.p, ws.n * sizeof(float));
  }
}
int64_t workspace_floats(const ConvShape &s, Precision p) {
  return int64_t((tc_workspace_bytes(s, p) + sizeof(float) - 1) / sizeof(float));
}

} // namespace

struct ResidentTc::Impl {
  ConvShape s;
  Precision p;
  Buffer x, w, b, y, ws;
  cudaStream_t st = nullptr;
  Impl(const ConvShape &shape, Precision prec)
      : s(shape), p(prec), x(shape.input_elems()), w(shape.weight_elems()), b(shape.cout),
        y(shape.output_elems()), ws(workspace_floats(shape, prec)) {}
};

ResidentTc::ResidentTc(const ConvShape &s, Precision p, const float *w, const float *bias) {
  std::string why;
  if (!tc_supported(s, &why))
    throw std::invalid_argument("tensor-core conv: " + why);
  impl_ = new Impl(s, p);
  try {
    impl_->w.upload(w, s.weight_elems());
    if (s.bias)
      impl_->b.upload(bias, s.cout);
    CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->st, cudaStreamNonBlocking));
  } catch (...) {
    delete impl_;
    throw;
  }
}
ResidentTc::~ResidentTc() {
  if (impl_->st)
    cudaStreamDestroy(impl_->st);
  delete impl_;
}
void ResidentTc::upload_input(const float *x) { impl_->x.upload(x, impl_->s.input_elems()); }
void ResidentTc::launch() { launch(impl_->x.p, impl_->y.p); }
void ResidentTc::launch(const float *d_x, float *d_y) {
  launch_on(impl_->s, impl_->p, d_x, impl_->w.p, impl_->b.p, d_y, impl_->st, impl_->ws);
}
void ResidentTc::download_output(float *y) {
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(impl_->st));
  CONVBENCH_CUDA_CHECK(cudaMemcpy(y, impl_->y.p, size_t(impl_->s.output_elems()) * sizeof(float),
                                  cudaMemcpyDeviceToHost));
}
void *ResidentTc::stream() const { return impl_->st; }
float *ResidentTc::d_output() { return impl_->y.p; }

void per_call_tc(const ConvShape &s, Precision p, const float *x, const float *w, const float *bias,
                 float *y) {
  Buffer dx(s.input_elems()), dw(s.weight_elems()), db(s.cout), dy(s.output_elems()),
      ws(workspace_floats(s, p));
  dx.upload(x, s.input_elems());
  dw.upload(w, s.weight_elems());
  if (s.bias)
    db.upload(bias, s.cout);
  cudaStream_t st = nullptr;
  CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  try {
    launch_on(s, p, dx.p, dw.p, db.p, dy.p, st, ws);
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(st));
  } catch (...) {
    cudaStreamDestroy(st);
    throw;
  }
  cudaStreamDestroy(st);
  CONVBENCH_CUDA_CHECK(
      cudaMemcpy(y, dy.p, size_t(s.output_elems()) * sizeof(float), cudaMemcpyDeviceToHost));
}

} // namespace convbench::tc
