// The constants of the tensor-core plans' cost models (wg_plan.cpp, dm_plan.cpp), in cycles of
// one multiprocessor. What the device itself says (multiprocessors, SM clock, device-memory
// bandwidth, shared memory) comes from convbench::DeviceFacts: the current device's when one
// answers, kPlanningDevice (the H200 these numbers were fitted on) when none does.
#pragma once

#include "convbench/device_facts.hpp"

namespace convbench::tc::cost_model {

// Multiply-adds per cycle: tf32 wgmma 1024; f64 DMMA 128 (67 TFLOP/s, tensor_peak).
constexpr double kTf32MacsPerCycle = 1024.0;
constexpr double kF64MacsPerCycle = 128.0;
// L2 -> shared memory through TMA: ~48 bytes per cycle.
constexpr double kFillBytesPerCycle = 48.0;
// Each wgmma iteration's fixed cost (barriers, the descriptors).
constexpr double kWgIterOverhead = 32.0;
// A block's fixed cost: wgmma (its pipeline filling from device memory, barrier set-up) ~1500
// cycles; DMMA (its pipeline filling, the epilogue) ~2000.
constexpr double kWgBlockOverhead = 1500.0;
constexpr double kDmBlockOverhead = 2000.0;
// The wgmma epilogue's shared-memory tile and stores: ~64 bytes per cycle.
constexpr double kEpilogueBytesPerCycle = 64.0;
// Positions on M: the A fragments each consumer thread loads, rounds and addresses (~12
// instructions per k-step and group, 8 warps at 4 per cycle).
constexpr double kFragmentCycles = 12.0 * 8.0 / 4.0;
// The wgmma plan's fitted terms, a struct so that kernels/tc/tools/wg_cost_fit can search them
// against a tile sweep's records (scripts/device/steps/tune.sh); the plan uses kWgFit. Fitted on
// the H100's sweep of up0/up1 at 96 frames (f32x3) and up1/up2 at 384 and 1536 (tf32):
//   x3_fragments: f32x3 with positions on M loads each A fragment, splits it into its hi and lo
//     tf32 parts and feeds three products: 3x a tf32 fragment's cost (2x put up0 at 96 frames on
//     positions on M, 149 us, against 71 us with rows on M);
//   split_rank_cycles: each rank of a split beyond the first, per block: the cluster's reduction
//     through distributed shared memory and its barriers (split 8 of up0/96 1.6x its split 2);
//   overlap_loss: compute and device-memory traffic overlap imperfectly: the shorter adds this
//     share of itself (a plan bound by its weights' bytes is not free to add compute).
struct WgFit {
  double x3_fragments = 3.0;
  double split_rank_cycles = 2000.0;
  double overlap_loss = 0.25;
};
inline constexpr WgFit kWgFit{};
// Input bytes taken to stay in L2 (60 MB on the H200) between the row tiles that read them.
constexpr double kL2Bytes = 24e6;

} // namespace convbench::tc::cost_model
