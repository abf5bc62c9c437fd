// The polyphase view of a ConvTranspose1d, the one planner of cpu-f32, the fast CUDA kernels and
// the tensor-core kernels (the device kernels and their host emulation include it too).
//
//   y[b, oc, p] = bias[oc] + sum_ic sum_{t,k : t*s + k*d == p + pad} x[b, ic, t] * w[ic, oc, k]
//
// Write p + pad = q*s + r, phase r in [0, s). Phase r's cells are indexed by u = q - c_r from
// c_r = ceil((pad - r) / s) (>= 0, since r < s), so output index p = (u + c_r)*s + r - pad is
// never negative. With dilation 1 and K = M*s the taps of phase r are k = j*s + r, j in [0, M),
// reading t = q - j: every phase is an ordinary M-tap convolution over q, and all phases together
// are one GEMM [s*cout] x [cin*M] over the positions.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace convbench::polyphase {

// c_r: the first q of phase r whose output index is >= 0.
CONVBENCH_HD int64_t phase_first(int64_t pad, int64_t s, int64_t r) {
  return (pad - r + s - 1) / s;
}

// Cells of phase r: u in [0, phase_cells) maps to an output index < l_out.
CONVBENCH_HD int64_t phase_cells(int64_t l_out, int64_t pad, int64_t s, int64_t r) {
  const int64_t n = (l_out + pad - r + s - 1) / s - phase_first(pad, s, r);
  return n > 0 ? n : 0;
}

// Output index of cell u of phase r.
CONVBENCH_HD int64_t phase_output(int64_t u, int64_t pad, int64_t s, int64_t r) {
  return (u + phase_first(pad, s, r)) * s + r - pad;
}

// The geometry every polyphase plan starts from.
struct Geometry {
  int64_t batch, cin, cout, l_in, l_out, k, s, pad;
  int m; // taps per phase, K / s
  bool bias;
};

} // namespace convbench::polyphase
