// cpu-f32's tile for AVX2 + FMA: 6 oc rows x 16 cells = 12 ymm accumulators.
// Only the dispatcher (cpu_f32_conv.cpp) calls in here, after checking the CPU
// supports it.
#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "cpu_f32_plan.hpp"

#pragma GCC target("avx2,fma")

namespace convbench::cpu_f32 {
namespace {

struct V {
  using R = __m256;
  static constexpr int VL = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R load(const float *p) { return _mm256_loadu_ps(p); }
  static R bcast(const float *p) { return _mm256_broadcast_ss(p); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static void store(float *p, R v) { _mm256_storeu_ps(p, v); }
};
constexpr int kMR = 6;
constexpr int kNV = 2;

#define CONVBENCH_CPU_F32_TILE_BODY
#include "cpu_f32_tile.hpp"

} // namespace

Block block_avx2() { return {kMR, kNR}; }

void run_items_avx2(const Plan &p, int64_t begin, int64_t end, float *scratch) {
  for (int64_t item = begin; item < end; ++item)
    run_item(p, item, scratch);
}

} // namespace convbench::cpu_f32
