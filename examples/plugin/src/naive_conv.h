/* One output cell of a Conv1d or ConvTranspose1d, the naive way: an f32 sum over every input
 * channel and tap that reaches the cell. Shared by the host arm and the CUDA kernel, so both
 * compute the same thing. */
#ifndef EXAMPLE_NAIVE_CONV_H
#define EXAMPLE_NAIVE_CONV_H

#include <convbench/arm_plugin.h>

#ifdef __CUDACC__
#define EXAMPLE_HD __host__ __device__
#else
#define EXAMPLE_HD
#endif

EXAMPLE_HD static inline float naive_cell(convbench_shape s, const float *x, const float *w,
                                          const float *b, int64_t n, int64_t oc, int64_t p) {
  float acc = s.has_bias ? b[oc] : 0.0f;
  for (int64_t ic = 0; ic < s.cin; ++ic) {
    const float *xr = x + (n * s.cin + ic) * s.l_in;
    for (int64_t j = 0; j < s.k; ++j) {
      int64_t t;
      float wv;
      if (s.op == CONVBENCH_OP_CONV1D) { /* y[p] += w[oc][ic][j] * x[p*stride - pad + j*dil] */
        t = p * s.stride - s.padding + j * s.dilation;
        wv = w[(oc * s.cin + ic) * s.k + j];
      } else { /* transposed: x[t] reaches y[t*stride - pad + j*dil] through w[ic][oc][j] */
        const int64_t num = p + s.padding - j * s.dilation;
        if (num < 0 || num % s.stride != 0)
          continue;
        t = num / s.stride;
        wv = w[(ic * s.cout + oc) * s.k + j];
      }
      if (t >= 0 && t < s.l_in)
        acc += wv * xr[t];
    }
  }
  return acc;
}

#endif
