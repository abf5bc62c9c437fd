// Everything taken around one host sample, in one place for the rounds loop:
//   HostSampler s(pool, speed, foreign);  s.before();  <timed work>;  json j = s.after().to_json();
// before(): delivered speed on every worker, contention snapshot, task statistics reset.
// after(): task statistics, contention snapshot, delivered speed again, the foreign share over
// the window that ends here. The speed probes stay outside the contention window, so their own
// wake-ups are not counted as the sample's.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/thread_pool.hpp"
#include "probes/contention.hpp"
#include "probes/cpu_speed.hpp"
#include "probes/foreign.hpp"

namespace convbench::bench {

struct HostSample {
  std::vector<WorkerSpeed> speed_before, speed_after;
  Contention contention;
  std::vector<ThreadPool::WorkerStats> workers; // per partition: CPUs, task time (busy time)
  double imbalance = 0;                         // slowest worker's task time / mean
  ForeignShare foreign;
  // {speed_before, speed_after, slowest_relative, contention, workers, imbalance, foreign}
  nlohmann::json to_json() const;
};

class HostSampler {
public:
  // speed must be calibrated on the same pool; foreign may be null (no foreign share then).
  HostSampler(ThreadPool &pool, const SpeedProbe &speed, ForeignCpuWindow *foreign);
  void before();
  HostSample after();

private:
  ThreadPool &pool_;
  const SpeedProbe &speed_;
  ForeignCpuWindow *foreign_;
  std::vector<WorkerSpeed> speed_before_;
  ContentionSnapshot snap_before_;
};

} // namespace convbench::bench
