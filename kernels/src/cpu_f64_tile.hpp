// cpu-f64's register tile: up to kMaxRows output rows (same batch, consecutive oc) over a run of
// consecutive cells, all of whose taps are in range. For each tap t in the table's order, every
// cell c gets acc[row][c] += double(x[xoff[t] + c]) * w[t * rows + row], skipped where that x is
// +-0 (the contract's skip), so each cell receives exactly the reference's additions in the
// reference's order: the result is bitwise the per-tap sweep's. The tile keeps the accumulators
// in registers across the whole table and loads each x once for all rows.
// Multiplies and adds are separate instructions: these files are built without FMA (no
// contraction), and the skip is a masked add, not a blend of a product.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "convbench/shape.hpp"
#include "convbench/thread_pool.hpp"
#include "cpu_f32_plan.hpp" // cpu_f32::Isa, the instruction sets the host arms dispatch on

namespace convbench::cpu_f64 {

using Isa = cpu_f32::Isa;

// conv_cpu_f64 with a chosen instruction set for the tile (generic: the per-tap sweep alone), for
// the tests: every variant this CPU runs must be bitwise the contract's. conv_cpu_f64 calls it
// with cpu_f32::best_isa().
void conv(Isa isa, const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
          ThreadPool &pool);

constexpr int kAvx512Rows = 8; // 16 zmm accumulators (2 per row)
constexpr int kAvx2Rows = 4;   // 8 ymm accumulators (2 per row)
constexpr int kMaxTileRows = kAvx512Rows;

// f(std::integral_constant<int, R>{}) for R = rows in 1 .. Max: the tile's row count as a
// compile-time constant; `fallback` for any other count.
template <int Max, class F> int64_t with_rows(int rows, int64_t fallback, F &&f) {
  int64_t out = fallback;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    (void)((rows == R + 1 && (out = f(std::integral_constant<int, R + 1>{}), true)) || ...);
  }
  (std::make_integer_sequence<int, Max>{});
  return out;
}

struct TapTable {
  const int64_t *xoff; // per tap: offset into x of cell 0's input
  const double *w;     // per tap: the rows' weights, w[t * rows + row]
  int64_t taps;
  int rows; // 1 .. max_rows(isa)
};

// Rows one tile holds for `isa` (0: no tile, the per-tap sweep does everything).
int max_rows(Isa isa);

// Runs the tile over cells [c_lo, c_hi); returns the end of the cells it did (AVX-512: c_hi, its
// last block masked; AVX2: c_lo + a multiple of its block), the caller sweeping the rest.
int64_t tile(Isa isa, const TapTable &t, const float *x, double *const *acc, int64_t c_lo,
             int64_t c_hi);
int64_t tile_avx2(const TapTable &t, const float *x, double *const *acc, int64_t c_lo,
                  int64_t c_hi);
int64_t tile_avx512(const TapTable &t, const float *x, double *const *acc, int64_t c_lo,
                    int64_t c_hi);

} // namespace convbench::cpu_f64
