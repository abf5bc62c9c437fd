// Host state around a sample: load, runnable threads, governor and frequency, and the CPU time
// the system spent on anything but this process (from /proc/stat minus getrusage(SELF)).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace convbench::bench {

struct HostSnapshot {
  std::optional<double> loadavg_1m;
  std::optional<int> runnable; // running + runnable scheduling entities, /proc/loadavg field 4
  std::optional<std::string> governor;
  std::optional<double> cpu_mhz;    // mean over online CPUs
  std::optional<double> busy_cpu_s; // whole system, /proc/stat (user+nice+system+irq+softirq+steal)
  double self_cpu_s = 0;            // this process, all threads (getrusage)
  double wall_s = 0;                // steady clock
  nlohmann::json unavailable = nlohmann::json::object();
};

HostSnapshot probe_host();

struct ForeignCpu {
  std::optional<double> seconds; // CPU seconds of other processes between the two snapshots
  std::optional<double> share;   // seconds / (wall x online CPUs)
  std::string why_unavailable;
};
// Clamped at 0: /proc/stat ticks (1/CLK_TCK) and getrusage (microseconds) round differently.
ForeignCpu foreign_cpu(const HostSnapshot &before, const HostSnapshot &after);

int online_cpus();

} // namespace convbench::bench
