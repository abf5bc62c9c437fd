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
// Input bytes taken to stay in L2 (60 MB on the H200) between the row tiles that read them.
constexpr double kL2Bytes = 24e6;

} // namespace convbench::tc::cost_model
