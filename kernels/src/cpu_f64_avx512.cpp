// cpu-f64's tile for AVX-512 (F + VL): up to 8 rows x 16 cells (16 zmm accumulators), the last
// block of a run masked to the cells left. No FMA in this file: the reference's products and
// sums are rounded separately.
#include <immintrin.h>

#include "cpu_f64_tile.hpp"

#pragma GCC target("avx512f,avx512vl")
// GCC 12's _mm512_cvtps_pd passes an undefined vector as its unused merge source.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace convbench::cpu_f64 {
namespace {

// Cells c0 .. c0 + 15 where m0 (cells 0-7) and m1 (cells 8-15) are set; the others are neither
// read nor written (a masked-off x loads as 0, which the skip mask then leaves out too).
template <int R, bool Masked>
void block(const TapTable &t, const float *x, double *const *acc, int64_t c0, __mmask8 m0,
           __mmask8 m1) {
  __m512d a[R][2];
  for (int r = 0; r < R; ++r) {
    a[r][0] = Masked ? _mm512_maskz_loadu_pd(m0, acc[r] + c0) : _mm512_loadu_pd(acc[r] + c0);
    a[r][1] =
        Masked ? _mm512_maskz_loadu_pd(m1, acc[r] + c0 + 8) : _mm512_loadu_pd(acc[r] + c0 + 8);
  }
  const __m512d zero = _mm512_setzero_pd();
  for (int64_t k = 0; k < t.taps; ++k) {
    const float *xp = x + t.xoff[k] + c0;
    const __m512d x0 =
        _mm512_cvtps_pd(Masked ? _mm256_maskz_loadu_ps(m0, xp) : _mm256_loadu_ps(xp));
    const __m512d x1 =
        _mm512_cvtps_pd(Masked ? _mm256_maskz_loadu_ps(m1, xp + 8) : _mm256_loadu_ps(xp + 8));
    // x != +-0 (NaN counts as non-zero, as in the reference)
    const __mmask8 n0 = _mm512_cmp_pd_mask(x0, zero, _CMP_NEQ_UQ);
    const __mmask8 n1 = _mm512_cmp_pd_mask(x1, zero, _CMP_NEQ_UQ);
    const double *wk = t.w + k * R;
    for (int r = 0; r < R; ++r) {
      const __m512d w = _mm512_set1_pd(wk[r]);
      a[r][0] = _mm512_mask_add_pd(a[r][0], n0, a[r][0], _mm512_mul_pd(x0, w));
      a[r][1] = _mm512_mask_add_pd(a[r][1], n1, a[r][1], _mm512_mul_pd(x1, w));
    }
  }
  for (int r = 0; r < R; ++r) {
    if (Masked) {
      _mm512_mask_storeu_pd(acc[r] + c0, m0, a[r][0]);
      _mm512_mask_storeu_pd(acc[r] + c0 + 8, m1, a[r][1]);
    } else {
      _mm512_storeu_pd(acc[r] + c0, a[r][0]);
      _mm512_storeu_pd(acc[r] + c0 + 8, a[r][1]);
    }
  }
}

template <int R>
int64_t run(const TapTable &t, const float *x, double *const *acc, int64_t c_lo, int64_t c_hi) {
  int64_t c = c_lo;
  for (; c + 16 <= c_hi; c += 16)
    block<R, false>(t, x, acc, c, 0xff, 0xff);
  if (const int64_t n = c_hi - c; n > 0) {
    const auto lanes = [](int64_t k) { return __mmask8(k >= 8 ? 0xff : (1u << k) - 1u); };
    block<R, true>(t, x, acc, c, lanes(n), lanes(n > 8 ? n - 8 : 0));
    c = c_hi;
  }
  return c;
}

} // namespace

int64_t tile_avx512(const TapTable &t, const float *x, double *const *acc, int64_t c_lo,
                    int64_t c_hi) {
  return with_rows<kAvx512Rows>(
      t.rows, c_lo, [&](auto r) { return run<decltype(r)::value>(t, x, acc, c_lo, c_hi); });
}

} // namespace convbench::cpu_f64
