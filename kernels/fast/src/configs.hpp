// The compiled block configurations of the polyphase tile (issue 7 sweep), as types for the
// kernels and the host emulation, and as FastConfig values for the host API. Host-only code
// (std::apply); the device sees only the Config types themselves.
#pragma once

#include <tuple>
#include <type_traits>

#include "convbench/fast_conv.hpp"
#include "polyphase_tile.hpp"

namespace convbench::fast::detail {

// Config<threads, u_groups, u per thread, channels per chunk, rows per thread>. The default
// comes first. Each non-default config adds 9 kernels (f32, f64, f64-fma x TR 1, 2, 4; M == 2
// only) to nvcc's time, so the set is kept small. Shared memory (f64, M == 2) stays under the
// 48 KiB static limit.
// Kept from the first H200 sweep (results/examples/sweep-4row.json, geomean over 48 cases vs
// the default; f32 / f64 / f64-fma): t128-c16-k16-u16 1.09 / 1.09 / 0.99, t256-c16-k16-u16
// 0.93 / 0.92 / 0.83 (best on the 1536-frame f64 cases), t128-c16-k16-u8 0.92 / 0.95 / 0.91
// (best f64-fma at 384 and 1536 frames). Dropped there: t128-c16-k32-u16 (0.86 / 1.00 / 0.84),
// t128-c16-k32-u8 (0.69 / 0.82 / 0.77), t256-c16-k16-u8 (0.77 / 0.60 / 0.63), t128-c32-k16-u8
// (0.88 / 0.75 / 0.60). The counters of those runs said why 4x4 thread tiles stall: per 16 (f32)
// multiply-adds a thread reads 2 x 16 bytes of shared memory, so shared-memory bandwidth, not
// the FMA pipe, is the limit (fp32 at 23-29% of peak). The 8-row configs (8 x 8 or 8 x 4 cells
// per thread) halve the shared-memory reads per multiply-add; with f32 they also split the input
// channels over a cluster (fast_f32_configs()), which is what gives small stages enough blocks.
// Dropped earlier because ptxas (nvcc 13.0, sm_90) spilled them in the f64 kernels, 255
// registers: Config<64, 8, 4, 32> (32-60 bytes spill stores), Config<64, 8, 8, 16> (8-40 bytes),
// Config<256, 32, 4, 16> (capped at 128 registers, 8-24 bytes).
using CompiledConfigs =
    std::tuple<DefaultConfig,                // t64-c16-k16-u8: the first kernel
               Config<128, 16, 4, 16>,       // t128-c16-k16-u16
               Config<128, 8, 4, 16>,        // t128-c16-k16-u8
               Config<128, 16, 4, 16, 8>,    // 64 rows x 64 positions, 8 x 4 cells
               Config<128, 16, 4, 16, 8, 4>, // the same capped at 128 registers (4 blocks/SM)
               Config<256, 16, 4, 16, 8, 2>, // 128 rows x 64 positions, 8 x 4, 2 blocks/SM
               Config<256, 16, 8, 8, 8, 2>,  // 128 rows x 128 positions, 8 x 8, 2 blocks/SM
               Config<256, 16, 8, 8, 8>>;    // the same with ptxas free (1 block/SM)

template <class C> FastConfig runtime_config() {
  return FastConfig{C::kThreads, C::kCells, C::kBk, C::kUg, C::kRows, C::kMinBlocks, 1};
}

// Calls f(C{}) for the compiled Config type of `c`'s block shape; returns false when none is.
template <class F> bool with_config(const FastConfig &c, F &&f) {
  return std::apply(
      [&](auto... cs) {
        return ([&](auto cfg) {
          using C = decltype(cfg);
          if (!(runtime_config<C>() == c.block()))
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
