// The forward tile kernel's arithmetic on the host, cell by cell: its bits, which the device test
// (kernels_cuda_tests: CudaForwardTile.DeviceEqualsHostEmulation) compares with, and the host
// test (test_forward_tile_plan.cpp) holds against the reference. Each rank's f32 accumulator
// starts at 0 and takes one fmaf per reduction index of its steps, ascending (a padded index or
// an input outside x is a 0 product: skipped, which leaves the accumulator's bits as the kernel's
// fmaf with 0 does); the ranks' partials are added in rank order, then the bias. Finite weights
// (an infinite one times a staged 0 is NaN on the device).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "forward_tile_plan.hpp"

namespace convbench::testing {

// x [batch, cin, l_in], w [cout, cin, k], bias [cout] or null; y [batch, cout, l_out].
inline void forward_tile_emulate(const cuda::detail::ForwardTilePlan &p, const float *x,
                                 const float *w, const float *bias, float *y) {
  constexpr int64_t kBk = cuda::detail::kForwardTileBk;
  const int64_t per = (p.steps + p.split - 1) / p.split;
  std::vector<float> partial(size_t(p.split));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t m = 0; m < p.cout; ++m)
      for (int64_t o = 0; o < p.l_out; ++o) {
        const float *xb = x + b * p.cin * p.l_in;
        for (int rank = 0; rank < p.split; ++rank) {
          const int64_t s0 = std::min(p.steps, rank * per), s1 = std::min(p.steps, s0 + per);
          const int64_t r1 = std::min(p.reduction, s1 * kBk);
          float acc = 0.0f;
          for (int64_t r = s0 * kBk; r < r1; ++r) {
            const int64_t ic = r / p.k, kk = r % p.k;
            const int64_t pos = o * p.stride + kk * p.dilation - p.padding;
            if (pos >= 0 && pos < p.l_in)
              acc = std::fma(w[m * p.reduction + r], xb[ic * p.l_in + pos], acc);
          }
          partial[size_t(rank)] = acc;
        }
        float sum = partial[0];
        for (int q = 1; q < p.split; ++q)
          sum += partial[size_t(q)];
        y[(b * p.cout + m) * p.l_out + o] = sum + (bias ? bias[m] : 0.0f);
      }
}

} // namespace convbench::testing
