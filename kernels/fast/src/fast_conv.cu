// The fast polyphase kernels (see polyphase_tile.hpp for the index mapping and the f64 order,
// fast_kernel.cuh for the kernel, configs.hpp for the block configurations).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "configs.hpp"
#include "convbench/fast_conv.hpp"
#include "fast_kernel.cuh"
#include "plan.hpp"

namespace convbench::fast {
namespace detail {
namespace {

const char *call_name(bool f64) { return f64 ? "launch_fast_f64" : "launch_fast_f32"; }

template <typename T, bool Fused>
void enqueue(const FastConfig &config, const Plan &P, const float *x, const float *w,
             const float *b, float *y, cudaStream_t st) {
  if (config.block() == default_fast_config())
    launch_all_m<T, Fused, DefaultConfig>(P, x, w, b, y, st);
  else if constexpr (sizeof(T) == sizeof(float))
    launch_sweep_f32(config, P, x, w, b, y, st);
  else
    launch_sweep_f64(config, Fused, P, x, w, b, y, st);
}

} // namespace
} // namespace detail

FastLaunch::FastLaunch(const ConvShape &s, bool f64, bool fused)
    : FastLaunch(s, f64, fused, choose_fast_config(s, f64, fused)) {}

FastLaunch::FastLaunch(const ConvShape &s, bool f64, bool fused, const FastConfig &config)
    : f64_(f64), fused_(fused), config_(config) {
  const char *name = detail::call_name(f64);
  const std::string why = fast_config_unsupported_reason(s, config, f64);
  if (!why.empty())
    throw std::invalid_argument(std::string(name) + ": " + why);
  plan_ = std::make_unique<detail::Plan>(detail::make_plan(s, config));
  const detail::Plan &P = *plan_;
  if (P.groups * P.u_tiles > 2147483647LL || P.oc_tiles > 65535 || P.batch * P.split > 65535)
    throw std::invalid_argument(std::string(name) + ": grid too large for this shape");
}

FastLaunch::~FastLaunch() = default;
FastLaunch::FastLaunch(FastLaunch &&) noexcept = default;
FastLaunch &FastLaunch::operator=(FastLaunch &&) noexcept = default;

void FastLaunch::launch(const float *d_x, const float *d_w, const float *d_b, float *d_y,
                        void *stream) const {
  const detail::Plan &P = *plan_;
  const char *name = detail::call_name(f64_);
  if (P.bias && d_b == nullptr)
    throw std::invalid_argument(std::string(name) + ": bias is null");
  auto st = static_cast<cudaStream_t>(stream);
  if (!f64_)
    detail::enqueue<float, true>(config_, P, d_x, d_w, d_b, d_y, st);
  else if (fused_)
    detail::enqueue<double, true>(config_, P, d_x, d_w, d_b, d_y, st);
  else
    detail::enqueue<double, false>(config_, P, d_x, d_w, d_b, d_y, st);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(name) +
                             ": kernel launch failed: " + cudaGetErrorString(err));
}

void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream) {
  FastLaunch(s, false, true).launch(d_x, d_w, d_b, d_y, stream);
}

void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, const FastConfig &config) {
  FastLaunch(s, false, true, config).launch(d_x, d_w, d_b, d_y, stream);
}

void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused) {
  FastLaunch(s, true, fused).launch(d_x, d_w, d_b, d_y, stream);
}

void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused, const FastConfig &config) {
  FastLaunch(s, true, fused, config).launch(d_x, d_w, d_b, d_y, stream);
}

} // namespace convbench::fast
