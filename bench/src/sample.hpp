// One sample of one case: the probes before, the timed work, the probes after. The host's state
// (load, foreign CPU time) is read around every sample; the GPU's (NVML, and the SM clock measured
// on the device) around every device sample.
#pragma once

#include <memory>
#include <string>

#include "case.hpp"
#include "gpu_probe.hpp"
#include "runner.hpp"

namespace convbench::bench {

class SampleTaker {
public:
  // `gpu`: the NVML view of the run's GPU (null in a host-only run); `sm_count` > 0 measures
  // the SM clock of device samples.
  SampleTaker(double min_time, bool queued, const GpuProbe *gpu, int sm_count);
  ~SampleTaker();
  SampleTaker(const SampleTaker &) = delete;
  SampleTaker &operator=(const SampleTaker &) = delete;
  Sample take(Case &c, int round, size_t position);

private:
  SampleRunner runner_;
  const GpuProbe *gpu_;
  struct SmClock; // device::SmClock in CUDA builds
  std::unique_ptr<SmClock> smclock_;
};

} // namespace convbench::bench
