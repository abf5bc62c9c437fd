// The facts about a GPU that the kernels' plans and launches depend on: read from the current
// device once per device, and, for planning without a GPU, one table (kPlanningDevice).
#pragma once

namespace convbench {

struct DeviceFacts {
  int sms = 0;                 // multiprocessors
  double sm_clock_hz = 0.0;    // the SM clock the cost models count cycles of (its maximum)
  double dram_bytes_per_s = 0; // device-memory bandwidth a kernel sustains
  int smem_per_sm = 0;         // shared memory of one multiprocessor, bytes
  // Device-memory bytes the whole device moves per SM cycle (what the cost models divide by).
  double dram_bytes_per_cycle() const { return dram_bytes_per_s / sm_clock_hz; }
};

// The share of the peak device-memory bandwidth (memory clock x bus width x 2) a kernel sustains:
// the H200's 3.465 TB/s of its 4.917 TB/s peak, the bandwidth the cost models were fitted with.
inline constexpr double kSustainedDramShare = 0.7047;

// Planning without a GPU (a kernel name asked for on the host, the emulation tests, a device
// that does not answer): the H200 the plans were tuned on, 132 multiprocessors at 1.98 GHz,
// 3.465 TB/s sustained (1750 bytes per SM cycle), 228 KiB of shared memory per multiprocessor.
inline constexpr DeviceFacts kPlanningDevice{132, 1.98e9, 3.465e12, 228 * 1024};

// The current device's facts (cudaGetDeviceProperties and its clock attributes), read once per
// device; kPlanningDevice in a build without CUDA or when no device answers.
const DeviceFacts &device_facts();

} // namespace convbench
