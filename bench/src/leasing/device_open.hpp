// The run's first touch of the GPU, once its lease is held and verified: CUDA device 0's facts,
// the check that it is the GPU the lease covers, the floors, and the device memory free now.
#pragma once

namespace convbench::bench {

struct Plan;

// Throws lease::LeaseRefused when CUDA device 0 is not the leased GPU, UsageError when the planned
// device cases do not fit in what is free, std::runtime_error when CUDA cannot use the GPU that
// NVML named.
void open_device(Plan &plan);

} // namespace convbench::bench
