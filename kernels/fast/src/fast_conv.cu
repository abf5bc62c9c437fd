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

template <typename T, bool Fused>
void launch(const ConvShape &s, const float *x, const float *w, const float *b, float *y,
            void *stream, const FastConfig &config, const char *name) {
  const std::string why = fast_config_unsupported_reason(s, config, sizeof(T) == sizeof(double));
  if (!why.empty())
    throw std::invalid_argument(std::string(name) + ": " + why);
  const Plan P = make_plan(s, config);
  if (P.groups * P.u_tiles > 2147483647LL || P.oc_tiles > 65535 || P.batch > 65535)
    throw std::invalid_argument(std::string(name) + ": grid too large for this shape");
  if (P.bias && b == nullptr)
    throw std::invalid_argument(std::string(name) + ": bias is null");
  auto st = static_cast<cudaStream_t>(stream);
  if (config.block() == default_fast_config())
    launch_all_m<T, Fused, DefaultConfig>(P, x, w, b, y, st);
  else if constexpr (sizeof(T) == sizeof(float))
    launch_sweep_f32(config, P, x, w, b, y, st);
  else
    launch_sweep_f64(config, Fused, P, x, w, b, y, st);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(name) +
                             ": kernel launch failed: " + cudaGetErrorString(err));
}

} // namespace
} // namespace detail

void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream) {
  launch_fast_f32(s, d_x, d_w, d_b, d_y, stream, choose_fast_config(s, false, true));
}

void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, const FastConfig &config) {
  detail::launch<float, true>(s, d_x, d_w, d_b, d_y, stream, config, "launch_fast_f32");
}

void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused) {
  launch_fast_f64(s, d_x, d_w, d_b, d_y, stream, fused, choose_fast_config(s, true, fused));
}

void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused, const FastConfig &config) {
  if (fused)
    detail::launch<double, true>(s, d_x, d_w, d_b, d_y, stream, config, "launch_fast_f64");
  else
    detail::launch<double, false>(s, d_x, d_w, d_b, d_y, stream, config, "launch_fast_f64");
}

} // namespace convbench::fast
