// Which taps reach one destination cell, as the device kernels walk them. Plain C++ so that the
// host tests can check the walk against the reference without a GPU; the kernels include it too.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace convbench::detail {

struct TapGeometry {
  int64_t cin, cout, k, stride, dilation, padding, l_in, l_out;
};

// Forward (gather): output o reads input i = base + k*dilation for k in [k_lo, k_hi).
struct ForwardTaps {
  int64_t base, k_lo, k_hi;
};

CONVBENCH_HD ForwardTaps forward_taps(const TapGeometry &g, int64_t o) {
  const int64_t base = o * g.stride - g.padding;
  int64_t k_lo = base >= 0 ? 0 : (-base + g.dilation - 1) / g.dilation;
  const int64_t top = g.l_in - 1 - base;
  int64_t k_hi = top < 0 ? 0 : top / g.dilation + 1;
  if (k_hi > g.k)
    k_hi = g.k;
  if (k_lo > k_hi)
    k_lo = k_hi;
  return {base, k_lo, k_hi};
}

CONVBENCH_HD int64_t gcd64(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// Transposed: destination q receives t*stride + k*dilation == q + padding. The solutions form an
// arithmetic progression; tap j (0 <= j < n) is t = t_first + j*dt, k = k_first - j*dk, so j
// ascending is t ascending (the reference's order), one k per t.
struct TransposedTaps {
  int64_t t_first, k_first, n, dt, dk;
};

CONVBENCH_HD TransposedTaps transposed_taps(const TapGeometry &g, int64_t q) {
  const int64_t gg = gcd64(g.stride, g.dilation);
  const int64_t dk = g.stride / gg, dt = g.dilation / gg;
  const int64_t q0 = q + g.padding;
  // Largest k with t >= 0 (k*dilation <= q0); among the next dk candidates below it, the first
  // with (q0 - k*dilation) divisible by stride gives the smallest t.
  int64_t k_top = q0 / g.dilation;
  if (k_top > g.k - 1)
    k_top = g.k - 1;
  for (int64_t kk = k_top; kk >= 0 && kk > k_top - dk; --kk) {
    if ((q0 - kk * g.dilation) % g.stride != 0)
      continue;
    const int64_t t_first = (q0 - kk * g.dilation) / g.stride;
    if (t_first >= g.l_in)
      break;
    const int64_t by_k = kk / dk + 1;                     // k stays >= 0
    const int64_t by_t = (g.l_in - 1 - t_first) / dt + 1; // t stays < l_in
    return {t_first, kk, by_k < by_t ? by_k : by_t, dt, dk};
  }
  return {0, 0, 0, dt, dk}; // no tap reaches q: only the bias lands here
}

} // namespace convbench::detail
