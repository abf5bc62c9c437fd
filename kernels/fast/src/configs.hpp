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
// How the set was chosen (H200 sweeps under results/examples/sweeps/): the first sweep of 4x4
// thread tiles (fast-sweep-4row.json, geomean over 48 cases vs the default; f32 / f64 /
// f64-fma) kept t128-c16-k16-u16 (1.09 / 1.09 / 0.99) and t128-c16-k16-u8 (0.92 / 0.95 / 0.91)
// and dropped t128-c16-k32-u16, t128-c16-k32-u8, t256-c16-k16-u8, t128-c32-k16-u8 (0.60-0.88).
// ncu on up0 at 1536 frames (ncu-up0-f32-configs.txt, before the staging cursor) said what
// limits these tiles: issue slots 55-68% busy, FMA pipe 44-57%, IPC 2.4-2.8 of 4, occupancy
// 12-25% (128-182 registers); the multiply-add loop itself is 1.07-1.16 instructions per FFMA
// (SASS), the rest (25-45% of issued) was the global->shared staging's index math, which the
// staging cursor now computes once per block. The 8-row tiles (8 x 4 and 8 x 8 cells) read
// shared memory half as often per multiply-add and, in f32, split the input channels over a
// cluster (fast_f32_configs()), which gives the small early stages enough blocks; ptxas caps
// (-b2, -b4) trade registers for a second or fourth block per SM. Which config runs for a
// shape is the fastest of the last sweep (tuned_configs.inc; choose_fast_config()).
// The 96-position tiles fit the 96 x 2^k positions of every vocoder stage exactly (the 64/128-
// position tiles issue 25-33% wasted multiply-adds on 96 positions: up0 at 96 frames, 2.42e9
// FFMA for 1.80e9 valid). The 8 x 4 one, t192-c32-k12-u24-r8, was swept in session 3's first
// call: it won only 256x up0 at 96 frames in f32 (s4, 89.8 us vs 102.8 us), and was 1.2-2.5x
// slower in f64 (200-218 registers: one 6-warp block per SM). The 4 x 4 ones below (the f64
// winners' 16 cells, 192 or 96 threads) were added after it and won 9 of 144 cases of the
// second sweep (up to 12%, up4 f64). t96-c16-k16-u16 (6 oc-groups: 24 rows) fits cout = 24 and
// 48 (up5 and up4 of the 44 kHz models), where the 32-row tiles issue 1.35x the valid work; in
// session 4's first sweep it won 38 of 144 cases (geomean 1.04 / 1.03 / 1.14x the default, the
// best single f64-fma config). t192-c16-k24-u24-b2 (6 wins there): the second sweep's
// 96-position tiles (12 channels a chunk) spent 247-266 us per 1e9 issued f64 multiply-adds on
// 512x up0/96 against 178 for t128-c16-k16-u16 (16 a chunk),
// which is why they lost there despite issuing 25% less; 24 channels a chunk halves the per-chunk
// staging and barrier cost again. Capped at 2 blocks per SM: uncapped, ptxas gave its f64
// kernel 184 registers, one 6-warp block per SM (what sank t192-c32-k12-u24-r8 in f64).
// Session 4: threads in warp tiles (polyphase_tile.hpp, Config); the two -rm configs keep the
// old row-major layout as controls, so each sweep measures the layout (session 4: warp / row-major
// time 0.976-0.987 in f32, 0.99-1.00 in f64, 0.92-1.00 in f64-fma, geomean over 48 cases).
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
               Config<256, 16, 8, 8, 8>,     // the same with ptxas free (1 block/SM)
               Config<192, 24, 4, 12, 8>,    // 64 rows x 96 positions, 8 x 4
               Config<192, 24, 4, 12>,       // 32 rows x 96 positions, 4 x 4
               Config<96, 24, 4, 12>,        // 16 rows x 96 positions, 4 x 4
               Config<96, 16, 4, 16>,        // 24 rows x 64 positions, 4 x 4
               Config<192, 24, 4, 24, 4, 2>, // 32 x 96, 24 a chunk, 2 blocks/SM
               // Session 7: 2 consecutive u per thread (32-position tiles, which fit the 96 x 2^k
               // positions of every stage exactly) for the f64 cases the 16-cell tiles leave
               // short of warps: the byte-identity contract forbids splitting a cell's sum, so
               // a stage's cells / 16 are all the threads it has (256x up0 at 96 frames: 295k
               // cells, 18.4k threads, 1.1 warps per scheduler; 2.44x the no-FMA floor).
               Config<128, 16, 2, 16>,    // 32 rows x 32 positions, 4 x 2 cells
               Config<96, 16, 2, 16>,     // 24 rows x 32 positions, 4 x 2 (cout 24, 48)
               Config<128, 16, 2, 16, 8>, // 64 rows x 32 positions, 8 x 2
               // Session 8: the 4 x 2 tile capped at 5 blocks per SM. ncu of its f64 kernel on
               // 512x up0/96 (ncu/ncu-f64-tuned-blocks.txt): 120 registers, so 4 blocks/SM,
               // and 576 blocks are 1.09 waves (achieved occupancy 19.4% of 25%, fp64 pipe
               // 66%). ptxas at the cap (nvcc 13.0, sm_90): 96 registers and no spill in f64,
               // 4 bytes in f64-fma (146 uncapped). The 16-cell tiles spill at any cap that
               // adds a block (20-708 bytes), so they get none. Session 8's sweep: 0.971x the
               // uncapped tile's time in f64, 0.941x in f64-fma (geomean of 48); the fastest
               // on 19 f64 / f64-fma cases, by 1-5%.
               Config<128, 16, 2, 16, 4, 5>, // t128-c8-k16-u16-b5
               // Controls: the f32 and f64 winners of the large stages, threads row-major.
               Config<128, 16, 4, 16, 8, 1, true>, // t128-c32-k16-u16-r8-rm
               Config<128, 16, 4, 16, 4, 1, true>>; // t128-c16-k16-u16-rm

// f32 only (session 5): cp.async staging (polyphase_tile.hpp, Config::kStages), 3 buffers. The
// f64 kernels convert to double on the way into shared memory, which cp.async cannot. Why: ncu
// of t256-c64-k8-u16-r8-b2 (the f32 winner on 512x up0 at 1536 frames) counts 1323 issued
// instructions per warp per 8-channel chunk, 1024 of them FFMA; the SASS (ptxas, local) puts
// about 130 of the rest in the register staging (load, select, store per element), and the FMA
// pipe is 59.6% busy with no eligible warp in 27% of cycles. Copies that hold no registers and
// run two chunks ahead cut the first and should shrink the second; 16 channels a chunk halve
// the per-chunk cost again (the register path could not: twice the staging registers at the
// 128-register cap). Each adds 3 kernels (f32, TR 1, 2, 4; M == 2). Session 5's sweep: the same
// block with cp.async against its register twin (t256-c64-k8-u16-r8-b2, every split) 1.20x
// faster, geomean over 192 cases; these four are the fastest f32 config on 45 of 48 cases
// (1.10x geomean over the best register-staged one); ncu on 512x up0 at 1536 frames: 1.06e9
// issued instructions (was 1.17e9), FFMA 85% of them, FMA pipe 63.6% (was 59.6%), 1.47 ms.
// Four buffers instead of three (3 chunks ahead) were compiled for the first and third shape
// and swept once on up0/up1 of the three families at 384 and 1536 frames (sweeps/
// fast-sweep-depth4.json, 108 rows, 0 wrong): 1.02x the time of 3 buffers, geomean over 48
// pairs (0.84-1.23x), so the pipeline depth is not what leaves 28% of cycles without an
// eligible warp; they were dropped again.
using F32OnlyConfigs =
    std::tuple<Config<256, 16, 8, 16, 8, 2, false, 3>,  // 128 x 128, 8 x 8, 16 a chunk
               Config<256, 16, 8, 8, 8, 2, false, 3>,   // the f32 winner's block, cp.async: A/B
               Config<128, 16, 4, 16, 8, 1, false, 3>,  // 64 x 64, 8 x 4, 16 a chunk
               Config<192, 24, 4, 24, 4, 1, false, 3>,  // 32 x 96, 4 x 4, 24 a chunk
               // Session 6: 8 x 8 cells in 128-thread blocks, for the stages whose grids the 128 x
               // 128 tile leaves under a wave and whose reductions are short (base up1 at 384
               // frames: cin x M = 512; the 64 x 64 tile's 8 x 4 cells issued 33% non-FFMA
               // instructions there, ncu: FMA pipe 43%, occupancy 4 blocks of 4 warps).
               // (128 x 64 in 128 threads cannot take cp.async: one weight row per element step
               // is not affine in the element index for M = 2.)
               Config<128, 16, 8, 16, 8, 4, false, 3>>; // 64 x 128, 8 x 8, 4 blocks/SM
using AllConfigs = decltype(std::tuple_cat(CompiledConfigs{}, F32OnlyConfigs{}));

template <class C> FastConfig runtime_config() {
  return FastConfig{C::kThreads,    C::kCells, C::kBk,       C::kUg,    C::kRows,
                    C::kMinBlocks, 1,          C::kRowMajor, C::kStages};
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
