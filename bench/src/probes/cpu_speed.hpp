// Delivered CPU speed per worker: a fixed chain of dependent integer adds (one add per cycle at
// best, so its rate follows the clock the CPU actually delivers and any time the thread lost),
// run on each worker's CPU and timed with the steady clock. The host analogue of a GPU's
// measured SM clock: a slow vCPU or a preempted worker shows as a low rate.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/thread_pool.hpp"

namespace convbench::bench {

// Runs `adds` dependent adds (rounded down to a multiple of 8) and returns the elapsed seconds.
double time_add_chain(int64_t adds);

struct WorkerSpeed {
  int worker = 0;
  int cpu = -1; // sched_getcpu when the chain ended
  double adds_per_s = 0;
  std::optional<double> relative; // adds_per_s / the calibrated best; null before calibration
  nlohmann::json to_json() const; // {worker, cpu, adds_per_s, relative}
};

class SpeedProbe {
public:
  // 2^17 adds: about 50-90 µs at 1.5-2.7 G adds/s, so a probe before and one after a 50 ms
  // sample cost well under 1% of it (docs/probes.md has the measured cost).
  static constexpr int64_t kDefaultAdds = int64_t(1) << 17;

  explicit SpeedProbe(int64_t adds = kDefaultAdds);
  // Best of `runs` chains on every worker at once; the machine's best is the highest of them
  // (each worker's CPU at its best), the reference every later rate is relative to.
  void calibrate(ThreadPool &pool, int runs = 9);
  // One chain on every worker at once.
  std::vector<WorkerSpeed> measure(ThreadPool &pool) const;

  int64_t adds() const { return adds_; }
  std::optional<double> best_adds_per_s() const { return best_; }
  const std::map<int, double> &best_per_cpu() const { return best_per_cpu_; }
  nlohmann::json to_json() const; // {adds, runs, best_adds_per_s, best_per_cpu: {"cpu": rate}}

private:
  int64_t adds_;
  int runs_ = 0;
  std::optional<double> best_;
  std::map<int, double> best_per_cpu_;
};

// The slowest worker's rate relative to the calibrated best (what sets a threaded arm's time).
std::optional<double> slowest_relative(const std::vector<WorkerSpeed> &speeds);

} // namespace convbench::bench
