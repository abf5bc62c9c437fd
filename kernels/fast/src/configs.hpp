// The compiled block configurations of the polyphase tile (issue 7 sweep), as types for the
// kernels and the host emulation, and as FastConfig values for the host API. Host-only code
// (std::apply); the device sees only the Config types themselves.
#pragma once

#include <tuple>
#include <type_traits>

#include "convbench/fast_conv.hpp"
#include "polyphase_tile.hpp"

namespace convbench::fast::detail {

// Config<threads, u_groups, u per thread, channels per chunk>. The default comes first. The set
// is kept to 8: each non-default config adds 9 kernels (f32, f64, f64-fma x TR 1, 2, 4; M == 2
// only) to nvcc's time. Shared memory (f64, M == 2) stays under the 48 KiB static limit (the
// largest is t128-c16-k32-u8, 41 KiB). Why these: 64-thread blocks with 166+ registers cap an SM
// at 6 blocks (12 warps); bigger blocks trade block count at 96 frames for more warps per SM
// and, with chunk 32, half the barriers per channel; 32 cells per thread trade registers for
// fewer shared-memory reads per FMA.
// Dropped because ptxas (nvcc 13.0, sm_90) spilled them in the f64 kernels, 255 registers:
//   Config<64, 8, 4, 32> (32-60 bytes spill stores), Config<64, 8, 8, 16> (8-40 bytes),
//   Config<256, 32, 4, 16> (capped at 128 registers, 8-24 bytes).
using CompiledConfigs =
    std::tuple<DefaultConfig,          // t64-c16-k16-u8: today's kernel
               Config<128, 16, 4, 32>, // 8 oc-groups x 16 u-groups, half the barriers
               Config<128, 8, 4, 16>,  // 16 oc-groups: twice the oc per block
               Config<128, 16, 4, 16>, // 16 u-groups: twice the positions per block
               Config<128, 8, 4, 32>,  // bigger oc tile and half the barriers
               Config<256, 16, 4, 16>, // 16 x 16
               Config<256, 8, 4, 16>,  // 32 oc-groups x 8 u-groups: wide oc tiles, early stages
               Config<128, 8, 8, 16>>; // 32 cells per thread (8 positions), 16 oc-groups

template <class C> FastConfig runtime_config() {
  return FastConfig{C::kThreads, C::kCells, C::kBk, C::kUg};
}

// Calls f(C{}) for the compiled Config type equal to `c`; returns false when none is.
template <class F> bool with_config(const FastConfig &c, F &&f) {
  return std::apply(
      [&](auto... cs) {
        return ([&](auto cfg) {
          using C = decltype(cfg);
          if (!(runtime_config<C>() == c))
            return false;
          f(cfg);
          return true;
        }(cs) || ...);
      },
      CompiledConfigs{});
}

// Plan of shape `s` for block configuration `c` (u and oc tiles depend on the block shape).
// Throws std::invalid_argument when the shape is not fast_supported.
Plan make_plan(const ConvShape &s, const FastConfig &c);

} // namespace convbench::fast::detail
