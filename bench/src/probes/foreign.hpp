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
#include <utility>
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

// The processes behind the foreign share, after each sample, over about the share's window: the
// list spans from the newest process table at least `window_s` old (else the oldest, taken when
// the probe was made) to a table read now. A table costs a /proc scan, so one is read at most
// twice per window - except while the list could miss a process: names need no tick resolution,
// so while the tables span less than the window (the run's first second) or the list is empty, a
// table is read after every sample at least `min_gap_s` after the last, and whatever took CPU
// since the oldest table is named although the share over so short a window is not given.
class ForeignProcessWindow {
public:
  explicit ForeignProcessWindow(double window_s, double min_gap_s = 0.05, size_t top = 5);
  const std::vector<ForeignProcess> &after_sample(); // the list as it stands after this sample
  const std::vector<ForeignProcess> &top() const { return top_; }

private:
  double window_s_, min_gap_s_;
  size_t top_n_;
  std::deque<std::pair<double, std::vector<ProcessCpu>>> tables_; // (steady s, process table)
  std::vector<ForeignProcess> top_;                               // over the latest tables
};

} // namespace convbench::bench
