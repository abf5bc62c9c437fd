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
// f32x3 with positions on M: each A fragment is loaded, split into its hi and lo tf32 parts and
// fed to three products, 3x a tf32 fragment's cost (2x underestimated up0 at 96 frames by 2.1x:
// the tile sweep on the H100, positions on M 149 us against rows on M 71 us).
constexpr double kX3FragmentFactor = 3.0;
// Each rank of a split beyond the first: the cluster's reduction through distributed shared
// memory and its barriers, per block (the sweep: split 8 of up0/96 1.6x its split 2).
constexpr double kWgSplitRankCycles = 2000.0;
// Compute and device-memory traffic overlap imperfectly: the shorter adds this share of itself
// (a plan bound by its weights' bytes is not free to add compute).
constexpr double kOverlapLoss = 0.25;
// Input bytes taken to stay in L2 (60 MB on the H200) between the row tiles that read them.
constexpr double kL2Bytes = 24e6;

} // namespace convbench::tc::cost_model
