// GPU state around a device sample, read through NVML loaded at run time from the driver's
// libnvidia-ml.so.1 (no nvml.h needed at build time; the binary runs without the library).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace convbench::bench {

class GpuProbe {
public:
  // `pci_bus_id` as CUDA reports it ("0000:19:00.0"); empty = NVML index 0.
  explicit GpuProbe(const std::string &pci_bus_id);
  ~GpuProbe();
  GpuProbe(const GpuProbe &) = delete;
  GpuProbe &operator=(const GpuProbe &) = delete;

  bool ok() const; // NVML loaded and the device found
  const std::string &why_not() const;
  // {sm_clock_mhz, mem_clock_mhz, temperature_c, power_w, throttle_reasons [string],
  //  foreign_processes, processes, unavailable}. foreign_processes = processes holding a context
  // on this GPU minus this one (PIDs are host PIDs inside containers, so they are counted, not
  // compared); null when NVML cannot list processes or does not list this process.
  nlohmann::json snapshot(bool self_holds_context) const;
  // Static facts for the result's gpus[] entry: uuid, driver, sm/mem max clocks.
  nlohmann::json facts() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// -1 when unknown (as the lease's observe_sample wants it).
int foreign_processes_of(const nlohmann::json &snapshot);

} // namespace convbench::bench
