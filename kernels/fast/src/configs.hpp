// The compiled block configurations of the polyphase tile, as types for the kernels and the host
// emulation, and as FastConfig values for the host API. Host-only code (std::apply); the device
// sees only the Config types themselves. Which one runs for a shape is the sweep's choice
// (tuned_configs.inc, choose_fast_config()); every one is an arm of its own for the sweep
// (cuda-f32@<name>), and its measurements live in the sweep's records, not here.
#pragma once

#include <tuple>
#include <type_traits>

#include "convbench/fast_conv.hpp"
#include "polyphase_tile.hpp"

namespace convbench::fast::detail {

// Config<threads, u_groups, u per thread, channels per chunk, rows per thread, min blocks per SM,
// row-major, cp.async buffers>. The default comes first. Each non-default config adds 9 kernels
// (f32, f64, f64-fma x TR 1, 2, 4; M == 2 only) to nvcc's time, so the set is kept to the shapes
// a sweep has found fastest somewhere, plus controls. Shared memory (f64, M == 2) stays under
// the 48 KiB static limit.
// - 4 x 4 cells (the default's 16): the general tile.
// - 8 x 4 and 8 x 8 cells read shared memory half as often per multiply-add and, in f32, split
//   the input channels over a cluster (fast_f32_configs()), which gives the small early stages
//   enough blocks; ptxas caps (-b2, -b4) trade registers for a second or fourth block per SM.
// - 96-position tiles (u_groups 24) fit the 96 x 2^k positions of every vocoder stage exactly,
//   where the 64/128-position tiles issue multiply-adds that land outside the tensor; 24
//   channels a chunk halve the per-chunk staging and barrier cost of 12.
// - 24-row tiles (96 threads, 6 oc-groups) fit cout = 24 and 48 (the last stages of the 44 kHz
//   models), where the 32-row tiles issue work for rows that do not exist.
// - 4 x 2 cells (2 consecutive u per thread, 32-position tiles) for the f64 cases the 16-cell
//   tiles leave short of warps: the byte-identity contract forbids splitting a cell's sum, so a
//   stage's cells / cells-per-thread are all the threads it has. Capped at 5 blocks per SM
//   (-b5): ptxas then keeps it within the registers of a fifth block without spilling, which the
//   16-cell tiles cannot do at any cap that adds a block.
// - Controls: the large stages' tiles with threads row-major instead of in warp tiles ("-rm"),
//   so every sweep measures what the warp-tile layout changes.
// Shapes that ptxas (nvcc 13.0, sm_90) spills in the f64 kernels are left out:
// Config<64, 8, 4, 32>, Config<64, 8, 8, 16>, Config<256, 32, 4, 16>.
using CompiledConfigs =
    std::tuple<DefaultConfig,                // t64-c16-k16-u8: the first kernel
               Config<128, 16, 4, 16>,       // t128-c16-k16-u16
               Config<128, 8, 4, 16>,        // t128-c16-k16-u8
               Config<128, 16, 4, 16, 8>,    // 64 rows x 64 positions, 8 x 4 cells
               Config<128, 16, 4, 16, 8, 4>, // the same capped at 128 registers (4 blocks/SM)
               Config<256, 16, 4, 16, 8, 2>, // 128 rows x 64 positions, 8 x 4, 2 blocks/SM
               Config<256, 16, 8, 8, 8, 2>,  // 128 rows x 128 positions, 8 x 8, 2 blocks/SM
               Config<256, 16, 8, 8, 8>,     // the same with ptxas free (1 block/SM)
               Config<192, 24, 4, 12, 8>,    // 64 rows x 96 positions, 8 x 4
               Config<192, 24, 4, 12>,       // 32 rows x 96 positions, 4 x 4
               Config<96, 24, 4, 12>,        // 16 rows x 96 positions, 4 x 4
               Config<96, 16, 4, 16>,        // 24 rows x 64 positions, 4 x 4
               Config<192, 24, 4, 24, 4, 2>, // 32 x 96, 24 a chunk, 2 blocks/SM
               Config<128, 16, 2, 16>,       // 32 rows x 32 positions, 4 x 2 cells
               Config<96, 16, 2, 16>,        // 24 rows x 32 positions, 4 x 2 (cout 24, 48)
               Config<128, 16, 2, 16, 8>,    // 64 rows x 32 positions, 8 x 2
               Config<128, 16, 2, 16, 4, 5>, // t128-c8-k16-u16-b5: the 4 x 2 tile, 5 blocks/SM
               // Controls: the f32 and f64 tiles of the large stages, threads row-major.
               Config<128, 16, 4, 16, 8, 1, true>,  // t128-c32-k16-u16-r8-rm
               Config<128, 16, 4, 16, 4, 1, true>>; // t128-c16-k16-u16-rm

// f32 only: cp.async staging (polyphase_tile.hpp, Config::kBuffers), 3 buffers, two chunks in
// flight. The f64 kernels convert to double on the way into shared memory, which cp.async cannot.
// The register staging (load, select, store per element) costs issue slots the FMA pipe needs;
// copies that hold no registers and run ahead remove that cost and hide the load latency, and 16
// channels a chunk halve the per-chunk cost again (the register path cannot: twice the staging
// registers at the 128-register cap). Each adds 3 kernels (f32, TR 1, 2, 4; M == 2). A fourth
// buffer was tried and made no difference, so the pipeline depth stays at 3.
using F32OnlyConfigs =
    std::tuple<Config<256, 16, 8, 16, 8, 2, false, 3>, // 128 x 128, 8 x 8, 16 a chunk
               Config<256, 16, 8, 8, 8, 2, false, 3>,  // its register-staged twin's block: A/B
               Config<128, 16, 4, 16, 8, 1, false, 3>, // 64 x 64, 8 x 4, 16 a chunk
               Config<192, 24, 4, 24, 4, 1, false, 3>, // 32 x 96, 4 x 4, 24 a chunk
               // 8 x 8 cells in 128-thread blocks, for the stages whose grids the 128 x 128 tile
               // leaves under a wave and whose reductions are short. (128 x 64 in 128 threads
               // cannot take cp.async: one weight row per element step is not affine in the
               // element index for M = 2.)
               Config<128, 16, 8, 16, 8, 4, false, 3>>; // 64 x 128, 8 x 8, 4 blocks/SM
using AllConfigs = decltype(std::tuple_cat(CompiledConfigs{}, F32OnlyConfigs{}));

template <class C> FastConfig runtime_config() {
  return FastConfig{C::kThreads,   C::kCells, C::kBk,       C::kUg,     C::kRows,
                    C::kMinBlocks, 1,         C::kRowMajor, C::kBuffers};
}

// Calls f(C{}) for the compiled Config type of `c`'s block shape (AllConfigs); returns false
// when none is.
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
      AllConfigs{});
}

// Plan of shape `s` for block configuration `c` (u and oc tiles depend on the block shape).
// Throws std::invalid_argument when the shape is not fast_supported.
Plan make_plan(const ConvShape &s, const FastConfig &c);

} // namespace convbench::fast::detail
