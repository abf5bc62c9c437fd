// One stage's tensor-core convolution (TcConv) and the arms' two stagings over it (host code over
// the CUDA runtime).
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "convbench/cuda_check.hpp"
#include "convbench/tc_conv.hpp"
#include "dm_launch.hpp"
#include "hopper_plans.hpp"
#include "wg_launch.hpp"
#include "wg_plan.hpp"

namespace convbench::tc {
namespace {

// One device array of T; at least one element, so a bias-less shape still has a pointer.
template <class T> struct DeviceArray {
  T *p = nullptr;
  size_t n = 0;
  explicit DeviceArray(int64_t count) : n(size_t(count > 0 ? count : 1)) {
    CONVBENCH_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  void upload(const T *h, int64_t count) {
    CONVBENCH_CUDA_CHECK(cudaMemcpy(p, h, size_t(count) * sizeof(T), cudaMemcpyHostToDevice));
  }
};
using Buffer = DeviceArray<float>;
using Doubles = DeviceArray<double>; // the DMMA kernels' packed weights and workspace

int64_t floats_of(size_t bytes) { return int64_t((bytes + sizeof(float) - 1) / sizeof(float)); }

} // namespace

struct TcConv::Impl {
  ConvShape s;
  Precision p;
  cudaStream_t st;
  const float *w, *b;
  int planted = 0;
  // The wgmma kernels: the plan, the packed weights and the transposed input (hi, lo planes).
  bool wgmma = false;
  wg::Plan plan{};
  std::unique_ptr<Buffer> a_hi, a_lo, x_hi, x_lo;
  wg::Maps maps{};
  const float *x_now = nullptr; // the input the maps were made for (positions on M)
  // The DMMA kernels (f64): the plan, the packed weights and the split-K workspace.
  bool dmma = false;
  dm::Plan dplan{};
  std::unique_ptr<Doubles> a64, ws64;
  // The WMMA kernels: the split-K workspace.
  std::unique_ptr<Buffer> ws;
};

TcConv::TcConv(const ConvShape &s, Precision p, const float *d_w, const float *d_b, void *stream,
               const TcOptions &o) {
  auto im = std::make_unique<Impl>();
  im->s = s;
  im->p = p;
  im->st = static_cast<cudaStream_t>(stream);
  im->w = d_w;
  im->b = d_b;
  im->planted = o.planted;
  const bool x3 = p == Precision::f32x3;
  const bool hopper =
      !o.wmma && wg::device_reason().empty() &&
      (p == Precision::f64 ? dm::unsupported_reason(s) : wg::unsupported_reason(s)).empty();
  im->wgmma = hopper && p != Precision::f64;
  im->dmma = hopper && p == Precision::f64;
  if (!hopper && o.forced())
    throw std::invalid_argument("tensor-core conv: a wgmma or DMMA variant was forced but those "
                                "kernels do not run this shape here");
  if (im->dmma) {
    im->dplan = dm_plan(s, o);
    im->a64 = std::make_unique<Doubles>(dm::packed_weight_doubles(im->dplan));
    im->ws64 = std::make_unique<Doubles>(dm::workspace_doubles(im->dplan));
    dm::launch_pack(im->dplan, d_w, im->a64->p, im->st);
  } else if (im->wgmma) {
    im->plan = wg_plan(s, p, o);
    const wg::Plan &P = im->plan;
    im->a_hi = std::make_unique<Buffer>(wg::packed_weight_floats(P));
    if (x3)
      im->a_lo = std::make_unique<Buffer>(wg::packed_weight_floats(P));
    if (P.along == wg::Along::rows) { // the transposed input, each call
      im->x_hi = std::make_unique<Buffer>(wg::transposed_input_floats(P));
      if (x3)
        im->x_lo = std::make_unique<Buffer>(wg::transposed_input_floats(P));
    }
    wg::launch_pack(P, d_w, im->a_hi->p, x3 ? im->a_lo->p : nullptr, im->st);
    if (P.along == wg::Along::rows)
      im->maps = wg::make_maps(P, im->a_hi->p, x3 ? im->a_lo->p : nullptr, im->x_hi->p,
                               x3 ? im->x_lo->p : nullptr);
  } else {
    std::string why;
    if (!wmma_supported(s, &why))
      throw std::invalid_argument("tensor-core conv: " + why);
    if (o.workspace)
      im->ws = std::make_unique<Buffer>(floats_of(wmma_workspace_bytes(s, p)));
  }
  impl_ = im.release();
}

TcConv::~TcConv() { delete impl_; }

void TcConv::launch(const float *d_x, float *d_y) {
  Impl &m = *impl_;
  if (m.dmma)
    return dm::launch(m.dplan, m.a64->p, d_x, m.b, d_y, m.ws64->p, m.st, m.planted);
  if (m.wgmma) {
    const bool x3 = m.p == Precision::f32x3;
    if (m.plan.along == wg::Along::rows) {
      wg::launch_transpose(m.plan, d_x, m.x_hi->p, x3 ? m.x_lo->p : nullptr, m.st);
    } else if (d_x != m.x_now) { // positions on M read the input itself: its map follows d_x
      m.maps = wg::make_maps(m.plan, m.a_hi->p, x3 ? m.a_lo->p : nullptr, d_x, nullptr);
      m.x_now = d_x;
    }
    if (x3)
      wg::launch_f32x3(m.plan, m.maps, m.b, d_y, m.st, m.planted);
    else
      wg::launch_tf32(m.plan, m.maps, m.b, d_y, m.st, m.planted);
    return;
  }
  void *ws = m.ws ? m.ws->p : nullptr;
  const size_t ws_bytes = m.ws ? m.ws->n * sizeof(float) : 0;
  switch (m.p) {
  case Precision::tf32:
    return launch_wmma_tf32(m.s, d_x, m.w, m.b, d_y, m.st, ws, ws_bytes);
  case Precision::f32x3:
    return launch_wmma_f32x3(m.s, d_x, m.w, m.b, d_y, m.st, ws, ws_bytes);
  case Precision::f64:
    return launch_wmma_f64(m.s, d_x, m.w, m.b, d_y, m.st, ws, ws_bytes);
  }
}

std::string TcConv::kernel_name() const {
  return impl_->dmma    ? dm::kernel_name(impl_->dplan)
         : impl_->wgmma ? wg::kernel_name(impl_->plan)
                        : wmma_kernel_name(impl_->s, impl_->p);
}
int64_t TcConv::issued_macs() const {
  return impl_->dmma    ? dm::issued_macs(impl_->dplan)
         : impl_->wgmma ? wg::issued_macs(impl_->plan)
                        : wmma_issued_macs(impl_->s, impl_->p);
}
bool TcConv::wgmma() const { return impl_->wgmma; }
bool TcConv::dmma() const { return impl_->dmma; }

struct ResidentTc::Impl {
  ConvShape s;
  Buffer x, w, b, y;
  cudaStream_t st = nullptr;
  std::unique_ptr<TcConv> conv;
  explicit Impl(const ConvShape &shape)
      : s(shape), x(shape.input_elems()), w(shape.weight_elems()), b(shape.cout),
        y(shape.output_elems()) {}
  ~Impl() {
    conv.reset();
    if (st)
      cudaStreamDestroy(st);
  }
};

ResidentTc::ResidentTc(const ConvShape &s, Precision p, const float *w, const float *bias,
                       const TcOptions &o) {
  std::string why;
  if (!tc_supported(s, p, &why, o))
    throw std::invalid_argument("tensor-core conv: " + why);
  auto im = std::make_unique<Impl>(s);
  im->w.upload(w, s.weight_elems());
  if (s.bias)
    im->b.upload(bias, s.cout);
  CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&im->st, cudaStreamNonBlocking));
  im->conv = std::make_unique<TcConv>(s, p, im->w.p, im->b.p, im->st, o);
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(im->st)); // the packing is done before any timing
  impl_ = im.release();
}
ResidentTc::~ResidentTc() { delete impl_; }
void ResidentTc::upload_input(const float *x) { impl_->x.upload(x, impl_->s.input_elems()); }
void ResidentTc::launch() { launch(impl_->x.p, impl_->y.p); }
void ResidentTc::launch(const float *d_x, float *d_y) { impl_->conv->launch(d_x, d_y); }
void ResidentTc::download_output(float *y) {
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(impl_->st));
  CONVBENCH_CUDA_CHECK(cudaMemcpy(y, impl_->y.p, size_t(impl_->s.output_elems()) * sizeof(float),
                                  cudaMemcpyDeviceToHost));
}
void *ResidentTc::stream() const { return impl_->st; }
float *ResidentTc::d_output() { return impl_->y.p; }

void per_call_tc(const ConvShape &s, Precision p, const float *x, const float *w, const float *bias,
                 float *y, const TcOptions &o) {
  Buffer dx(s.input_elems()), dw(s.weight_elems()), db(s.cout), dy(s.output_elems());
  dx.upload(x, s.input_elems());
  dw.upload(w, s.weight_elems());
  if (s.bias)
    db.upload(bias, s.cout);
  cudaStream_t st = nullptr;
  CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  try {
    TcConv conv(s, p, dw.p, db.p, st, o);
    conv.launch(dx.p, dy.p);
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
