// cpu-f32's tile for AVX-512 (F + VL, FMA): 12 oc rows x 32 cells = 24 zmm
// accumulators. Only the dispatcher (cpu_f32_conv.cpp) calls in here, after
// checking the CPU supports it.
#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "cpu_f32_plan.hpp"

#pragma GCC target("avx512f,avx512vl,fma")

namespace convbench::cpu_f32 {
namespace {

struct V {
  using R = __m512;
  static constexpr int VL = 16;
  static R zero() { return _mm512_setzero_ps(); }
  static R load(const float *p) { return _mm512_loadu_ps(p); }
  static R bcast(const float *p) { return _mm512_set1_ps(*p); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static void store(float *p, R v) { _mm512_storeu_ps(p, v); }
};
constexpr int kMR = 12;
constexpr int kNV = 2;

#define CONVBENCH_CPU_F32_TILE_BODY
#include "cpu_f32_tile.hpp"

} // namespace

Block block_avx512() { return {kMR, kNR}; }

void run_items_avx512(const Plan &p, int64_t begin, int64_t end, float *scratch) {
  for (int64_t item = begin; item < end; ++item)
    run_item(p, item, scratch);
}

} // namespace convbench::cpu_f32
