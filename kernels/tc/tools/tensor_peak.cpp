// tensor_peak: the tensor-core rates of this device by precision: every multiprocessor runs warps
// (mma.sync) or warpgroups (wgmma) that issue MMAs on register or shared-memory operands with no
// memory traffic in the loop (tensor_loops.hpp), each launch timed by bench's device timer
// (measurement/device.hpp, the events bench_conv times device arms with), the best over a few
// occupancies and repetitions. Prints one JSON object whose *_flops keys are
// bench/data/devices.json's: tf32_tensor_flops, bf16_tensor_flops and fp16_tensor_flops (wgmma
// m64n256, the kernels' instruction), fp64_dmma_flops (mma.sync m16n8k16 f64, 4 to 16 warps per
// SM), and the mma.sync rates of tf32 and bf16 beside them. Exit 1 without a compute capability
// 9.0 device.
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "convbench/tensor_loops.hpp"
#include "measurement/device.hpp"

namespace loops = convbench::tc::loops;
using loops::Kind;

namespace {

struct Best {
  double flops = 0;
  int blocks_per_sm = 0, units = 0;
};

// The best FLOP/s of kind k over the occupancies tried, 5 timed launches each after a warm-up.
Best measure(Kind k, int sms, int iters) {
  const loops::Info info = loops::info(k);
  std::vector<std::pair<int, int>> shapes; // (blocks per SM, units per block)
  if (info.warpgroup)
    shapes = {{1, 1}, {1, 2}, {2, 1}, {2, 2}};
  else
    shapes = {{1, 4}, {2, 4}, {4, 4}}; // 4, 8, 16 warps per SM
  convbench::bench::device::EventTimer timer;
  Best best;
  for (auto [per_sm, units] : shapes) {
    const int blocks = sms * per_sm;
    loops::launch(k, blocks, units, iters); // warm-up
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw std::runtime_error(info.name + ": " + cudaGetErrorString(e));
    for (int rep = 0; rep < 5; ++rep) {
      timer.start(nullptr);
      const loops::Issued n = loops::launch(k, blocks, units, iters);
      timer.stop(nullptr);
      const double rate = 2.0 * double(n.macs) / timer.seconds(); // throws on a CUDA error
      if (rate > best.flops)
        best = {rate, per_sm, units};
    }
  }
  return best;
}

} // namespace

int main() {
  if (const std::string why = loops::device_reason(); !why.empty()) {
    std::fprintf(stderr, "tensor_peak: %s\n", why.c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  try {
    struct Row {
      const char *key;
      Kind kind;
      int iters;
    };
    const Row rows[] = {{"tf32_tensor_flops", Kind::wgmma_tf32_m64n256k8, 2048},
                        {"bf16_tensor_flops", Kind::wgmma_bf16_m64n256k16, 2048},
                        {"fp16_tensor_flops", Kind::wgmma_fp16_m64n256k16, 2048},
                        {"fp64_dmma_flops", Kind::dmma_m16n8k16, 4096},
                        {"mma_sync_tf32_flops", Kind::hmma_tf32_m16n8k8, 4096},
                        {"mma_sync_bf16_flops", Kind::hmma_bf16_m16n8k16, 4096}};
    std::printf("{\"device\": \"%s\", \"sms\": %d", prop.name, prop.multiProcessorCount);
    std::string how;
    for (const Row &r : rows) {
      const Best b = measure(r.kind, prop.multiProcessorCount, r.iters);
      std::printf(", \"%s\": %.4g", r.key, b.flops);
      how += std::string(how.empty() ? "" : ", ") + "\"" + r.key + "\": \"" +
             loops::info(r.kind).ptx + ", " + std::to_string(b.blocks_per_sm) +
             " block(s) per SM of " + std::to_string(b.units) +
             (loops::info(r.kind).warpgroup ? " warpgroup(s)\"" : " warps\"");
    }
    std::printf(", \"how\": {%s}}\n", how.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tensor_peak: %s\n", e.what());
    return 1;
  }
  return 0;
}
