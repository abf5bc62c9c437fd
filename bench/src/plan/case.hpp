// The typed facts of a run, filled step by step (plan, gate, rounds, counter pass) and read by
// the record builder and the console table: one producer of facts, two views.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/thread_pool.hpp"
#include "core/types.hpp"
#include "plan/arm.hpp"
#include "plan/problem.hpp"
#include "probes/contention.hpp"
#include "probes/cpu_speed.hpp"
#include "probes/foreign.hpp"
#include "probes/gpu_probe.hpp"
#include "probes/host_probe.hpp"
#include "probes/host_sample.hpp"
#include "probes/neighbours.hpp"

namespace convbench::bench {

// The host around one sample (probes/host_sample.hpp): for host samples each worker's CPU and
// delivered speed before and after, its partitions' task time and the imbalance; for every sample
// the contention counters (workers', or the calling thread's for a device sample) and the foreign
// CPU share over a window long enough for 1% resolution; plus the processes that took it.
struct HostProbes : HostSample {
  std::vector<ForeignProcess> top_foreign; // over about the same window
  double probe_seconds = 0;                // wall time of these probes (outside the timing)
};

// One timed sample of one case, with the probes read just before and just after it.
struct Sample {
  int round = 0;
  size_t position = 0; // in the round's order
  SampleTiming timing;
  HostSnapshot host_before, host_after;
  ForeignCpu foreign;
  bool device = false;
  bool gpu_probed = false; // NVML was read around it (device samples on a GPU)
  GpuSnapshot gpu_before, gpu_after;
  double sm_clock_mhz = NAN; // measured on the device over the sample; NaN: not seen
  HostProbes probes;
  // The node's other GPUs after the sample (a run of bench_conv --gpus); unset otherwise.
  std::optional<std::vector<NeighbourReading>> neighbours;
};

// One (problem, arm, staging): what is gated, timed and recorded.
struct Case {
  std::string id; // stage/frames/arm/staging
  Problem *problem = nullptr;
  const Arm *arm = nullptr;
  std::string staging;
  std::string twin_of; // an A/A twin: the id of the case it repeats; "" for every other case
  std::unique_ptr<PreparedArm> prepared; // released when the gate fails
  nlohmann::json chosen;                 // prepared->chosen(), kept after `prepared` is released
  GateResult gate;
  std::vector<Sample> samples;
  nlohmann::json counters; // the counter pass's block for this case
  StoppingRule rule;       // when it has enough rounds
  StopDecision stop;       // the last decision (its interval); reason keep_going while running
  bool cut_short = false;  // still converging when the run was interrupted or killed

  std::vector<double> seconds() const { // per-call seconds of every sample, in order
    std::vector<double> v;
    for (const auto &s : samples)
      v.push_back(s.timing.seconds);
    return v;
  }
};

} // namespace convbench::bench
