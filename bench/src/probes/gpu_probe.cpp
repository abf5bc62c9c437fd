#include "probes/gpu_probe.hpp"

namespace convbench::bench {

using Clock = lease::NvmlGpu::Clock;

GpuProbe::GpuProbe(const std::string &pci_bus_id)
    : gpu_(lease::NvmlGpu::by_pci_bus_id(pci_bus_id)) {}

namespace {
// Stores a reading, or why it is missing under the field's name.
template <class T>
void read(std::optional<T> &field, std::map<std::string, std::string> &un, const char *name,
          std::optional<T> value, const std::string &why) {
  field = value;
  if (!value)
    un[name] = why;
}
} // namespace

GpuSnapshot GpuProbe::snapshot(bool self_holds_context) const {
  GpuSnapshot s;
  auto &un = s.unavailable;
  if (!ok()) {
    for (const char *k : {"sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w",
                          "throttle_reasons", "foreign_processes", "processes", "violation_ns"})
      un[k] = gpu_.why_not();
    return s;
  }
  std::string why;
  read(s.sm_clock_mhz, un, "sm_clock_mhz", gpu_.clock_mhz(Clock::sm, &why), why);
  read(s.mem_clock_mhz, un, "mem_clock_mhz", gpu_.clock_mhz(Clock::memory, &why), why);
  read(s.temperature_c, un, "temperature_c", gpu_.temperature_c(&why), why);
  read(s.power_w, un, "power_w", gpu_.power_w(&why), why);
  if (auto bits = gpu_.clock_event_reasons(&why))
    s.throttle_reasons = lease::clock_event_reason_names(*bits);
  else
    un["throttle_reasons"] = why;
  for (const auto &p : lease::kViolationPolicies) {
    if (auto ns = gpu_.violation_ns(p.id, &why))
      s.violation_ns[p.name] = *ns;
    else
      un[std::string("violation_ns.") + p.name] = why;
  }
  if (auto procs = gpu_.processes(&why)) {
    int count = int(procs->size()), self = self_holds_context ? 1 : 0;
    s.processes = count;
    if (count < self)
      un["foreign_processes"] = "NVML lists no process on this GPU although this one holds a "
                                "context (PID namespace hides it?): foreign count unknown";
    else
      s.foreign_processes = count - self;
  } else {
    un["processes"] = un["foreign_processes"] = why;
  }
  return s;
}

GpuNvmlFacts GpuProbe::facts() const {
  GpuNvmlFacts f;
  std::string why;
  if (!ok()) {
    for (const char *k : {"driver", "sm_clock_max_mhz", "mem_clock_max_mhz"})
      f.unavailable[k] = gpu_.why_not();
    return f;
  }
  read(f.driver, f.unavailable, "driver", lease::nvml_driver_version(&why), why);
  read(f.sm_clock_max_mhz, f.unavailable, "sm_clock_max_mhz", gpu_.max_clock_mhz(Clock::sm, &why),
       why);
  read(f.mem_clock_max_mhz, f.unavailable, "mem_clock_max_mhz",
       gpu_.max_clock_mhz(Clock::memory, &why), why);
  return f;
}

int foreign_processes_of(const GpuSnapshot &s) { return s.foreign_processes.value_or(-1); }

} // namespace convbench::bench
