// Tensor-core loops with a known MMA count: every warp (mma.sync) or warpgroup (wgmma) of every
// block issues `iters` rounds of independent MMAs on register or shared-memory operands, no memory
// traffic in the loop. What the peak tool (tools/tensor_peak.cpp) times and what the counter probe
// (profiles/tools/tensor_probe.cpp) counts: the multiply-adds of a launch are known exactly.
// Plain C++ (streams are void*); the kernels are sm_90a's (compute capability 9.0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convbench::tc::loops {

enum class Kind {
  dmma_m16n8k16,        // mma.sync m16n8k16 f64 (cuda-f64-dmma's kernels)
  dmma_m8n8k4,          // mma.sync m8n8k4 f64 (the WMMA f64 kernels)
  hmma_tf32_m16n8k8,    // mma.sync m16n8k8 tf32, f32 accumulate (the WMMA tf32 kernels)
  hmma_bf16_m16n8k16,   // mma.sync m16n8k16 bf16, f32 accumulate
  wgmma_tf32_m64n128k8, // wgmma m64n128k8 tf32, A and B from shared memory (cuda-tf32's kernels)
  wgmma_tf32_m64n256k8,
  wgmma_bf16_m64n256k16,
  wgmma_fp16_m64n256k16,
};

struct Info {
  std::string name;      // e.g. "wgmma_tf32_m64n256k8"
  std::string precision; // the source type: "fp64", "tf32", "bf16", "fp16"
  std::string ptx;       // the instruction
  int m, n, k;
  bool warpgroup;    // issued by a warpgroup of 4 warps (wgmma), else by one warp (mma.sync)
  int per_iteration; // MMAs one warp / warpgroup issues per loop iteration
};
Info info(Kind k);
const std::vector<Kind> &kinds();
// Kinds whose precision is p ("fp64", "tf32", "bf16", "fp16").
std::vector<Kind> kinds_of(const std::string &precision);

// What one launch issued: PTX MMA instructions (one per warp for mma.sync, one per warpgroup for
// wgmma) and the multiply-adds they perform.
struct Issued {
  int64_t mma = 0;
  int64_t macs = 0;
};
// `blocks` blocks of `units` warps (mma.sync, 1-32) or warpgroups (wgmma, 1-4), `iters` iterations
// each. Enqueued on `stream` (a cudaStream_t; null: the default stream). Throws std::runtime_error
// naming the CUDA error of the launch.
Issued launch(Kind k, int blocks, int units, int iters, void *stream = nullptr);
// The count a launch would issue, without launching.
Issued issued(Kind k, int blocks, int units, int iters);

// "" when device 0 runs these kernels (compute capability 9.0), else why not.
std::string device_reason();

} // namespace convbench::tc::loops
