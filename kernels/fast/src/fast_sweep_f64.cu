// The non-default block configurations of the f64 polyphase kernels (dmul+dadd and fma), M == 2
// only (see configs.hpp).
#include <type_traits>

#include "configs.hpp"
#include "fast_kernel.cuh"

namespace convbench::fast::detail {

void launch_sweep_f64(const FastConfig &config, bool fused, const Plan &P, const float *x,
                      const float *w, const float *b, float *y, cudaStream_t st) {
  with_config(config, [&](auto cfg) {
    using C = decltype(cfg);
    // fast_conv.cu compiles the default; the cp.async configs are f32 only (refused for f64 by
    // fast_config_unsupported_reason before a launch gets here).
    if constexpr (!std::is_same_v<C, DefaultConfig> && C::kBuffers == 0) {
      if (fused)
        launch_m<double, 2, true, C>(P, x, w, b, y, st);
      else
        launch_m<double, 2, false, C>(P, x, w, b, y, st);
    }
  });
}

} // namespace convbench::fast::detail
