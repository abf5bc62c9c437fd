// CPU time spent by anything but this process, and who spent it.
//
// The share comes from /proc/stat busy ticks minus this process's getrusage time, over one
// contiguous window. /proc/stat counts in ticks (1/USER_HZ, 10 ms at USER_HZ 100) per CPU, so
// each end of the window is off by up to one tick per CPU: the share (of window x CPUs) is off by
// up to tick / window. A window of at least tick / 0.01 (1 s at 10 ms ticks) keeps that under 1%;
// a sample is far shorter, so the share is taken over a rolling window of snapshots that ends
// with the sample and reaches back at least that long.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/contention.hpp"

namespace convbench::bench {

double tick_seconds(); // 1 / sysconf(_SC_CLK_TCK)

struct ForeignShare {
  std::optional<double> share; // foreign CPU s / (window x online CPUs); null: see why
  std::optional<double> cpu_s; // foreign CPU seconds in the window
  double window_s = 0;
  double resolution = 1;          // worst-case error of share from tick rounding: tick / window
  std::string unavailable;        // why share is null
  nlohmann::json to_json() const; // {share, cpu_s, window_s, resolution, unavailable}
};

// Foreign share over [before, after] (one contiguous window), whatever its length.
ForeignShare foreign_share(const SystemCounters &before, const SystemCounters &after, int cpus);

class ForeignCpuWindow {
public:
  // Keeps snapshots for `keep_s`; a share is given once the window reaches the length that brings
  // its resolution to `resolution` (1%: 1 s at 10 ms ticks).
  explicit ForeignCpuWindow(double resolution = 0.01, double keep_s = 30);
  void add(const SystemCounters &s); // a snapshot, e.g. after each sample
  // The share over the shortest window ending at the latest snapshot that is long enough;
  // null with the reason while the run is younger than that.
  ForeignShare latest() const;
  double min_window_s() const { return min_window_s_; }

private:
  double min_window_s_, keep_s_;
  int cpus_;
  std::deque<SystemCounters> snaps_;
};

// A process's CPU time at one instant, from /proc/<pid>/stat (utime + stime, in ticks).
struct ProcessCpu {
  int pid = 0;
  std::string comm;
  unsigned long long start_ticks = 0; // field 22: tells a reused pid from the same process
  unsigned long long cpu_ticks = 0;
};
// Every process but this one (its threads are its own; they are not listed as processes).
std::vector<ProcessCpu> read_processes();

struct ForeignProcess {
  int pid = 0;
  std::string comm;
  double cpu_s = 0;
  double share = 0;               // cpu_s / (window x online CPUs), like the foreign share
  nlohmann::json to_json() const; // {pid, comm, cpu_s, share}
};
// The `top` processes by CPU time between two tables taken `window_s` apart (ties by pid).
std::vector<ForeignProcess> top_foreign(const std::vector<ProcessCpu> &before,
                                        const std::vector<ProcessCpu> &after, double window_s,
                                        size_t top = 5);

} // namespace convbench::bench
