// The one NVML shim of the project, loaded at run time from the driver's libnvidia-ml.so.1
// (there is no nvml.h at build time; the binaries run without the library). The lease uses it for
// the UUID of GPU N (convlease --gpu N) and the processes holding a context on a GPU; bench_conv
// for the GPU's state around each device sample (clocks, temperature, power, clock event reasons,
// the cumulative violation time under each performance policy).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace convbench::lease {

struct GpuProcess {
  unsigned pid = 0;
  unsigned long long used_bytes = 0;
  std::string name; // /proc/<pid>/comm when visible from here ("" otherwise)
};

// nvmlPerfPolicyType_t: the policies nvmlDeviceGetViolationStatus reports time under.
struct ViolationPolicy {
  int id;
  const char *name; // the record's key
};
inline constexpr ViolationPolicy kViolationPolicies[] = {
    {0, "power"},       {1, "thermal"},         {2, "sync_boost"},
    {3, "board_limit"}, {4, "low_utilization"}, {5, "reliability"}};

// Clock event ("throttle") reason bits, nvml.h's nvmlClocksEventReason*, with the record's names.
struct ClockEventReason {
  unsigned long long bit;
  const char *name;
};
inline constexpr ClockEventReason kClockEventReasons[] = {{0x1ull, "gpu_idle"},
                                                          {0x2ull, "applications_clocks_setting"},
                                                          {0x4ull, "sw_power_cap"},
                                                          {0x8ull, "hw_slowdown"},
                                                          {0x10ull, "sync_boost"},
                                                          {0x20ull, "sw_thermal_slowdown"},
                                                          {0x40ull, "hw_thermal_slowdown"},
                                                          {0x80ull, "hw_power_brake_slowdown"},
                                                          {0x100ull, "display_clock_setting"}};
// Names of the set bits; an unknown remainder as "other_0x<hex>".
std::vector<std::string> clock_event_reason_names(unsigned long long bits);

// One GPU as NVML sees it. Every query returns nullopt (or false) with *why set when NVML, the
// call, or the device is not there; nothing throws.
// Processes with a compute or graphics context on the GPU with this UUID; *why set on failure
// (what one of the two queries listed is still returned).
std::vector<GpuProcess> nvml_gpu_processes(const std::string &uuid, std::string *why);

class NvmlGpu {
public:
  static NvmlGpu by_index(int index);
  static NvmlGpu by_uuid(const std::string &uuid);
  // `pci_bus_id` as CUDA reports it ("0000:19:00.0"), so CUDA_VISIBLE_DEVICES reordering cannot
  // make us read another GPU; empty or not found: index 0.
  static NvmlGpu by_pci_bus_id(const std::string &pci_bus_id);

  // The GPU the CUDA runtime will number 0 in this process, found without CUDA (no context, so a
  // run waiting for its lease stays invisible on the GPU): the first entry of
  // CUDA_VISIBLE_DEVICES (an index in PCI order, or a GPU-/MIG- UUID or its prefix), else NVML's
  // index 0. Not ok(), with why_not(), when CUDA_VISIBLE_DEVICES hides every GPU or NVML cannot
  // name it. CUDA's own numbering can differ (CUDA_DEVICE_ORDER=FASTEST_FIRST on a mixed node):
  // the caller checks the UUID once it may use CUDA.
  static NvmlGpu cuda_device0();

  bool ok() const { return handle_ != nullptr; }
  const std::string &why_not() const { return why_; }

  std::optional<std::string> uuid(std::string *why) const;
  std::optional<std::string> name(std::string *why) const; // "NVIDIA H200"
  struct Memory {
    unsigned long long total_bytes = 0, free_bytes = 0;
  };
  std::optional<Memory> memory(std::string *why) const; // nvmlDeviceGetMemoryInfo
  enum class Clock { sm = 1, memory = 2 };              // nvmlClockType_t values
  std::optional<unsigned> clock_mhz(Clock c, std::string *why) const;
  std::optional<unsigned> max_clock_mhz(Clock c, std::string *why) const;
  std::optional<unsigned> temperature_c(std::string *why) const;
  std::optional<double> power_w(std::string *why) const;
  std::optional<unsigned long long> clock_event_reasons(std::string *why) const;
  // Cumulative nanoseconds the clocks were held down under `policy_id` (kViolationPolicies).
  std::optional<unsigned long long> violation_ns(int policy_id, std::string *why) const;
  // Percent of the last sample period the GPU ran a kernel (nvmlDeviceGetUtilizationRates).
  std::optional<unsigned> utilization_pct(std::string *why) const;
  // Processes with a compute or graphics context, each pid once.
  std::optional<std::vector<GpuProcess>> processes(std::string *why) const;

private:
  friend std::vector<GpuProcess> nvml_gpu_processes(const std::string &, std::string *);
  void *handle_ = nullptr;
  std::string why_;
};

std::optional<std::string> nvml_driver_version(std::string *why);

// How many GPUs NVML lists on this node; nullopt with *why set when NVML is absent.
std::optional<unsigned> nvml_gpu_count(std::string *why);

// UUID of GPU `index` ("GPU-..."); "" with *why set when NVML is absent or the index is bad.
std::string nvml_gpu_uuid(int index, std::string *why);
// "GPU-..." for --gpu N: NVML, else $CONVBENCH_GPU_UUID; "" with *why set when neither works.
std::string resolve_gpu_uuid(int index, std::string *why);

} // namespace convbench::lease
