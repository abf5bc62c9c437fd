// dmma_peak: the fp64 tensor-core (DMMA) rate of this device, measured: every multiprocessor
// runs warps that issue mma.sync m16n8k16 f64 on register operands (eight independent
// accumulators per warp, no memory traffic in the loop), timed with events; the best of the
// repetitions. Prints one JSON object, {"device", "fp64_dmma_flops", "warps_per_sm", ...}, the
// figure bench/data/devices.json's fp64_dmma_flops holds. Exit 1 without a compute capability 9.0
// device (the instruction is sm_90's; this is built for sm_90a like the kernels).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kChains = 8;   // independent accumulators per warp
constexpr int kIters = 4096; // k-steps per warp per launch

__global__ void dmma_loop(double *out, double seed) {
  double a[8], b[4], d[kChains][4];
#pragma unroll
  for (int v = 0; v < 8; ++v)
    a[v] = seed * (threadIdx.x + v);
#pragma unroll
  for (int v = 0; v < 4; ++v)
    b[v] = seed * (v + 1);
#pragma unroll
  for (int c = 0; c < kChains; ++c)
#pragma unroll
    for (int v = 0; v < 4; ++v)
      d[c][v] = 0.0;
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                   "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
                   : "+d"(d[c][0]), "+d"(d[c][1]), "+d"(d[c][2]), "+d"(d[c][3])
                   : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]),
                     "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
  }
  double s = 0.0;
#pragma unroll
  for (int c = 0; c < kChains; ++c)
    s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (s == 1.2345) // never, but the compiler cannot know: the loop is kept
    out[0] = s;
}

bool ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return true;
  std::fprintf(stderr, "dmma_peak: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

} // namespace

int main() {
  cudaDeviceProp prop{};
  if (!ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"))
    return 1;
  if (prop.major != 9 || prop.minor != 0) {
    std::fprintf(stderr, "dmma_peak: needs a compute capability 9.0 device (this one is %d.%d)\n",
                 prop.major, prop.minor);
    return 1;
  }
  double *out = nullptr;
  if (!ok(cudaMalloc(&out, sizeof(double)), "cudaMalloc"))
    return 1;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  double best_rate = 0.0;
  int best_warps = 0;
  for (int warps : {4, 8, 16}) { // warps per multiprocessor
    const int blocks = prop.multiProcessorCount * (warps / 4);
    dmma_loop<<<blocks, 128>>>(out, 1e-3); // warm-up
    if (!ok(cudaDeviceSynchronize(), "warm-up"))
      return 1;
    for (int rep = 0; rep < 5; ++rep) {
      cudaEventRecord(e0);
      dmma_loop<<<blocks, 128>>>(out, 1e-3);
      cudaEventRecord(e1);
      if (!ok(cudaEventSynchronize(e1), "dmma_loop"))
        return 1;
      float ms = 0.0f;
      cudaEventElapsedTime(&ms, e0, e1);
      const double flops = 2.0 * 16 * 8 * 16 * double(kChains) * kIters * blocks * 4;
      const double rate = flops / (double(ms) * 1e-3);
      if (rate > best_rate) {
        best_rate = rate;
        best_warps = warps;
      }
    }
  }
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"fp64_dmma_flops\": %.4g, \"warps_per_sm\": %d, "
              "\"instruction\": \"mma.sync.aligned.m16n8k16.row.col.f64\"}\n",
              prop.name, prop.multiProcessorCount, best_rate, best_warps);
  cudaFree(out);
  return 0;
}
