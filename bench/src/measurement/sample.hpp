// One sample of one case: the probes before, the timed work, the probes after. Around every
// sample: the host's load, the foreign CPU share (over the sample and over a window long enough
// for 1% resolution) and the processes that took it, contention (PSI, steal, faults, the workers'
// own preemptions and migrations). Around host samples: each worker's CPU and delivered speed
// (SpeedProbe) and the partitions' busy time. Around device samples: NVML's state and violation
// counters, and the SM clock measured on the device.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "measurement/runner.hpp"
#include "plan/case.hpp"
#include "probes/gpu_probe.hpp"
#include "probes/neighbours.hpp"

namespace convbench::bench {

class SampleTaker {
public:
  // `gpu`: the NVML view of the run's GPU (null in a host-only run); `sm_count` > 0 measures
  // the SM clock of device samples. `pool` runs the host arms; `speed` is calibrated on it.
  SampleTaker(double min_time, bool queued, const GpuProbe *gpu, int sm_count, ThreadPool &pool,
              const SpeedProbe &speed);
  ~SampleTaker();
  SampleTaker(const SampleTaker &) = delete;
  SampleTaker &operator=(const SampleTaker &) = delete;
  Sample take(Case &c, int round, size_t position);
  // The node's other GPUs, read after each sample (null: not one of a node's runs).
  void observe_neighbours(const NeighbourProbe *probe) { neighbours_ = probe; }

private:
  ContentionSnapshot contention_now() const;

  SampleRunner runner_;
  const GpuProbe *gpu_;
  const NeighbourProbe *neighbours_ = nullptr;
  struct SmClock; // device::SmClock in CUDA builds
  std::unique_ptr<SmClock> smclock_;
  ThreadPool &pool_;
  const SpeedProbe &speed_;
  ForeignCpuWindow window_;
  ForeignProcessWindow processes_{window_.min_window_s()}; // the processes behind the share
};

} // namespace convbench::bench
