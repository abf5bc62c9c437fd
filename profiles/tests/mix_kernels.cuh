// Kernels with a known instruction mix, for the counter instrument's own tests. Plain C++ API so
// the test itself compiles with the host compiler.
#pragma once

#include <cuda_runtime_api.h>

namespace convbench::profiles::mix {

// n threads (any n: the tail block's idle threads exit before the loop), m dependent steps each.
struct Buffers {
  int n = 0;
  double *in64 = nullptr;
  double *out64 = nullptr;
  float *in32 = nullptr;
  float *out32 = nullptr;
};

cudaError_t alloc(Buffers &b, int n); // device buffers, inputs filled
void release(Buffers &b);
// x = __dadd_rn(__dmul_rn(x, a), b), m times: exactly n*m DMUL and n*m DADD, no DFMA.
cudaError_t dmul_dadd(const Buffers &b, int m);
// THE PLANTED MUTATION: the same chain written as fma(x, a, b): n*m DFMA, no DMUL, no DADD.
cudaError_t dfma_mutant(const Buffers &b, int m);
// x = __fmaf_rn(x, a, b), m times: exactly n*m FFMA and no fp64 work.
cudaError_t ffma(const Buffers &b, int m);

} // namespace convbench::profiles::mix
