// GPU state around a device sample, read through the lease module's NVML shim (loaded at run
// time; the binary runs without a driver). Typed: the record builder writes it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "convbench/lease/nvml_gpu.hpp"

namespace convbench::bench {

struct GpuSnapshot {
  std::optional<unsigned> sm_clock_mhz, mem_clock_mhz, temperature_c;
  std::optional<double> power_w;
  std::optional<std::vector<std::string>> throttle_reasons; // clock event reasons now
  // Processes holding a context on this GPU, and those minus this one (PIDs are host PIDs
  // inside containers, so they are counted, not compared). No process is excused by name: a run of
  // ours waiting for the lease holds no context (nothing touches the GPU before its lease), so it
  // is not counted, and one that holds a context is as foreign as any other.
  std::optional<int> processes, foreign_processes;
  // Cumulative nanoseconds under each performance policy (lease::kViolationPolicies names).
  std::map<std::string, unsigned long long> violation_ns;
  std::map<std::string, std::string> unavailable; // field -> why
};

// What NVML says of the GPU once per run, for the record's gpus[] entry.
struct GpuNvmlFacts {
  std::optional<std::string> driver;
  std::optional<unsigned> sm_clock_max_mhz, mem_clock_max_mhz;
  std::map<std::string, std::string> unavailable;
};

class GpuProbe {
public:
  // `pci_bus_id` as CUDA reports it ("0000:19:00.0"); empty = NVML index 0.
  explicit GpuProbe(const std::string &pci_bus_id);
  bool ok() const { return gpu_.ok(); }
  GpuSnapshot snapshot(bool self_holds_context) const;
  GpuNvmlFacts facts() const;

private:
  lease::NvmlGpu gpu_;
};

// -1 when unknown (as the lease's observe_sample wants it).
int foreign_processes_of(const GpuSnapshot &s);

} // namespace convbench::bench
