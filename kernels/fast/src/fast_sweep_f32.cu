// The non-default block configurations of the f32 polyphase kernel, M == 2 only (see configs.hpp).
#include <type_traits>

#include "configs.hpp"
#include "fast_kernel.cuh"

namespace convbench::fast::detail {

void launch_sweep_f32(const FastConfig &config, const Plan &P, const float *x, const float *w,
                      const float *b, float *y, cudaStream_t st) {
  with_config(config, [&](auto cfg) {
    using C = decltype(cfg);
    if constexpr (!std::is_same_v<C, DefaultConfig>) // fast_conv.cu compiles the default
      launch_m<float, 2, true, C>(P, x, w, b, y, st);
  });
}

} // namespace convbench::fast::detail
