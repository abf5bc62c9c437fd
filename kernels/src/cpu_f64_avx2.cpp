// cpu-f64's tile for AVX2: up to 4 rows x 8 cells (8 ymm accumulators). No FMA in this file:
// the reference's products and sums are rounded separately.
#include <immintrin.h>

#include "cpu_f64_tile.hpp"

#pragma GCC target("avx2")

namespace convbench::cpu_f64 {
namespace {

template <int R> void block(const TapTable &t, const float *x, double *const *acc, int64_t c0) {
  __m256d a[R][2];
  for (int r = 0; r < R; ++r) {
    a[r][0] = _mm256_loadu_pd(acc[r] + c0);
    a[r][1] = _mm256_loadu_pd(acc[r] + c0 + 4);
  }
  const __m256d zero = _mm256_setzero_pd();
  for (int64_t k = 0; k < t.taps; ++k) {
    const float *xp = x + t.xoff[k] + c0;
    const __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(xp));
    const __m256d x1 = _mm256_cvtps_pd(_mm_loadu_ps(xp + 4));
    // all-ones where x != +-0 (NaN counts as non-zero, as in the reference)
    const __m256d n0 = _mm256_cmp_pd(x0, zero, _CMP_NEQ_UQ);
    const __m256d n1 = _mm256_cmp_pd(x1, zero, _CMP_NEQ_UQ);
    const double *wk = t.w + k * R;
    for (int r = 0; r < R; ++r) {
      const __m256d w = _mm256_set1_pd(wk[r]);
      // acc + (x != 0 ? x * w : -0.0): adding -0.0 leaves every value bitwise unchanged
      const __m256d m0 = _mm256_blendv_pd(_mm256_set1_pd(-0.0), _mm256_mul_pd(x0, w), n0);
      const __m256d m1 = _mm256_blendv_pd(_mm256_set1_pd(-0.0), _mm256_mul_pd(x1, w), n1);
      a[r][0] = _mm256_add_pd(a[r][0], m0);
      a[r][1] = _mm256_add_pd(a[r][1], m1);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_pd(acc[r] + c0, a[r][0]);
    _mm256_storeu_pd(acc[r] + c0 + 4, a[r][1]);
  }
}

template <int R>
int64_t run(const TapTable &t, const float *x, double *const *acc, int64_t c_lo, int64_t c_hi) {
  int64_t c = c_lo;
  for (; c + 8 <= c_hi; c += 8)
    block<R>(t, x, acc, c);
  return c;
}

} // namespace

int64_t tile_avx2(const TapTable &t, const float *x, double *const *acc, int64_t c_lo,
                  int64_t c_hi) {
  return with_rows<kAvx2Rows>(
      t.rows, c_lo, [&](auto r) { return run<decltype(r)::value>(t, x, acc, c_lo, c_hi); });
}

} // namespace convbench::cpu_f64
