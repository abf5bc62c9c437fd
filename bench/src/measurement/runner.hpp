// One timed sample through Google Benchmark: it calibrates the iteration count to --min-time
// (at least one iteration) and accumulates the time; we register one benchmark per sample so the
// interleaving is ours and recorded. Host arms: Google Benchmark's real-time clock (steady
// clock). Device arms: manual time from CUDA events around each call; with `queued`, an arm
// whose call only enqueues (resident staging) is enqueued behind a held stream (device::QueueHold),
// so the events time the GPU's work without the host's launch gaps.
#pragma once

#include "core/types.hpp"

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/arm.hpp"

namespace convbench::bench {

class SampleRunner {
public:
  explicit SampleRunner(double min_time, bool queued = false);
  ~SampleRunner();
  SampleRunner(const SampleRunner &) = delete;
  SampleRunner &operator=(const SampleRunner &) = delete;
  // Throws what the arm threw (e.g. a CudaError), after Google Benchmark has unwound.
  SampleTiming run(const std::string &name, PreparedArm &arm, bool device);

private:
  double min_time_;
  bool queued_;
  struct Hold; // device::QueueHold in CUDA builds, made on the first queued sample
  std::unique_ptr<Hold> hold_;
};

} // namespace convbench::bench
