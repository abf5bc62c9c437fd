#include "gpu_probe.hpp"

#include <dlfcn.h>
#include <vector>

namespace convbench::bench {

namespace {
// The few NVML declarations used, from NVML's public API (nvml.h is not installed here).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st *;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr int NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0;
// nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3 (= nvmlProcessInfo_v2_t).
struct nvmlProcessInfo_v3 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct Nvml {
  void *lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  const char *(*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned *) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned *) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned *) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned *, nvmlProcessInfo_v3 *) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned) = nullptr;
  nvmlReturn_t (*driver)(char *, unsigned) = nullptr;
};

template <class F> void bind(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

// Clock event ("throttle") reason bits, nvml.h's nvmlClocksEventReason*.
const std::pair<unsigned long long, const char *> kReasons[] = {
    {0x1ull, "gpu_idle"},
    {0x2ull, "applications_clocks_setting"},
    {0x4ull, "sw_power_cap"},
    {0x8ull, "hw_slowdown"},
    {0x10ull, "sync_boost"},
    {0x20ull, "sw_thermal_slowdown"},
    {0x40ull, "hw_thermal_slowdown"},
    {0x80ull, "hw_power_brake_slowdown"},
    {0x100ull, "display_clock_setting"}};
} // namespace

struct GpuProbe::Impl {
  Nvml nvml;
  nvmlDevice_t dev = nullptr;
  std::string why_not;
  std::string err(const char *call, nvmlReturn_t r) const {
    std::string msg = nvml.error_string ? nvml.error_string(r) : "error";
    return std::string("NVML ") + call + ": " + msg + " (" + std::to_string(r) + ")";
  }
};

GpuProbe::GpuProbe(const std::string &pci_bus_id) : impl_(std::make_unique<Impl>()) {
  Nvml &n = impl_->nvml;
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) {
    const char *e = dlerror();
    impl_->why_not = std::string("NVML: libnvidia-ml.so.1 not loadable: ") + (e ? e : "?");
    return;
  }
  bind(n.lib, n.init, "nvmlInit_v2");
  bind(n.lib, n.error_string, "nvmlErrorString");
  bind(n.lib, n.by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(n.lib, n.by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(n.lib, n.clock, "nvmlDeviceGetClockInfo");
  bind(n.lib, n.max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(n.lib, n.temperature, "nvmlDeviceGetTemperature");
  bind(n.lib, n.power, "nvmlDeviceGetPowerUsage");
  bind(n.lib, n.reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!n.reasons)
    bind(n.lib, n.reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(n.lib, n.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  bind(n.lib, n.uuid, "nvmlDeviceGetUUID");
  bind(n.lib, n.driver, "nvmlSystemGetDriverVersion");
  if (!n.init || (!n.by_pci && !n.by_index)) {
    impl_->why_not = "NVML: libnvidia-ml.so.1 lacks nvmlInit_v2 or the device handle calls";
    return;
  }
  if (nvmlReturn_t r = n.init(); r != NVML_SUCCESS) {
    impl_->why_not = impl_->err("nvmlInit_v2", r);
    return;
  }
  // By PCI bus id, so CUDA_VISIBLE_DEVICES reordering cannot make us probe another GPU.
  nvmlReturn_t r = -1;
  if (n.by_pci && !pci_bus_id.empty())
    r = n.by_pci(pci_bus_id.c_str(), &impl_->dev);
  if (r != NVML_SUCCESS && n.by_index)
    r = n.by_index(0, &impl_->dev);
  if (r != NVML_SUCCESS) {
    impl_->why_not = impl_->err("device handle", r);
    impl_->dev = nullptr;
  }
}

GpuProbe::~GpuProbe() = default; // NVML stays loaded for the process: shutdown buys nothing here

bool GpuProbe::ok() const { return impl_->dev != nullptr; }
const std::string &GpuProbe::why_not() const { return impl_->why_not; }

nlohmann::json GpuProbe::snapshot(bool self_holds_context) const {
  using nlohmann::json;
  json j = {{"sm_clock_mhz", nullptr},     {"mem_clock_mhz", nullptr},
            {"temperature_c", nullptr},    {"power_w", nullptr},
            {"throttle_reasons", nullptr}, {"foreign_processes", nullptr},
            {"processes", nullptr}};
  json un = json::object();
  if (!ok()) {
    for (auto &[k, v] : j.items())
      un[k] = impl_->why_not;
    j["unavailable"] = un;
    return j;
  }
  const Nvml &n = impl_->nvml;
  auto missing = [&](const char *key, const char *fn) {
    un[key] = std::string("NVML: ") + fn + " not exported by this driver";
  };
  unsigned v = 0;
  if (!n.clock)
    missing("sm_clock_mhz", "nvmlDeviceGetClockInfo"),
        missing("mem_clock_mhz", "nvmlDeviceGetClockInfo");
  else {
    if (auto r = n.clock(impl_->dev, NVML_CLOCK_SM, &v); r == NVML_SUCCESS)
      j["sm_clock_mhz"] = v;
    else
      un["sm_clock_mhz"] = impl_->err("nvmlDeviceGetClockInfo(SM)", r);
    if (auto r = n.clock(impl_->dev, NVML_CLOCK_MEM, &v); r == NVML_SUCCESS)
      j["mem_clock_mhz"] = v;
    else
      un["mem_clock_mhz"] = impl_->err("nvmlDeviceGetClockInfo(MEM)", r);
  }
  if (!n.temperature)
    missing("temperature_c", "nvmlDeviceGetTemperature");
  else if (auto r = n.temperature(impl_->dev, NVML_TEMPERATURE_GPU, &v); r == NVML_SUCCESS)
    j["temperature_c"] = v;
  else
    un["temperature_c"] = impl_->err("nvmlDeviceGetTemperature", r);
  if (!n.power)
    missing("power_w", "nvmlDeviceGetPowerUsage");
  else if (auto r = n.power(impl_->dev, &v); r == NVML_SUCCESS)
    j["power_w"] = v / 1000.0;
  else
    un["power_w"] = impl_->err("nvmlDeviceGetPowerUsage", r);
  unsigned long long bits = 0;
  if (!n.reasons)
    missing("throttle_reasons", "nvmlDeviceGetCurrentClocksEventReasons");
  else if (auto r = n.reasons(impl_->dev, &bits); r == NVML_SUCCESS) {
    json names = json::array();
    unsigned long long known = 0;
    for (auto &[bit, name] : kReasons) {
      known |= bit;
      if (bits & bit)
        names.push_back(name);
    }
    if (bits & ~known)
      names.push_back("other_0x" + [&] {
        char buf[32];
        snprintf(buf, sizeof buf, "%llx", bits & ~known);
        return std::string(buf);
      }());
    j["throttle_reasons"] = names;
  } else
    un["throttle_reasons"] = impl_->err("nvmlDeviceGetCurrentClocksEventReasons", r);
  if (!n.processes) {
    missing("processes", "nvmlDeviceGetComputeRunningProcesses_v3");
    un["foreign_processes"] = un["processes"];
  } else {
    std::vector<nvmlProcessInfo_v3> procs(64);
    unsigned count = unsigned(procs.size());
    auto r = n.processes(impl_->dev, &count, procs.data());
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      procs.resize(count + 16);
      count = unsigned(procs.size());
      r = n.processes(impl_->dev, &count, procs.data());
    }
    if (r != NVML_SUCCESS) {
      un["processes"] = impl_->err("nvmlDeviceGetComputeRunningProcesses_v3", r);
      un["foreign_processes"] = un["processes"];
    } else {
      j["processes"] = count;
      int self = self_holds_context ? 1 : 0;
      if (int(count) < self)
        un["foreign_processes"] = "NVML lists no process on this GPU although this one holds a "
                                  "context (PID namespace hides it?): foreign count unknown";
      else
        j["foreign_processes"] = int(count) - self;
    }
  }
  j["unavailable"] = un;
  return j;
}

nlohmann::json GpuProbe::facts() const {
  nlohmann::json j = {{"uuid", nullptr},
                      {"driver", nullptr},
                      {"sm_clock_max_mhz", nullptr},
                      {"mem_clock_max_mhz", nullptr}};
  nlohmann::json un = nlohmann::json::object();
  if (!ok()) {
    for (auto &[k, v] : j.items())
      un[k] = impl_->why_not;
    j["unavailable"] = un;
    return j;
  }
  const Nvml &n = impl_->nvml;
  char buf[96] = {0};
  if (n.uuid && n.uuid(impl_->dev, buf, sizeof buf) == NVML_SUCCESS)
    j["uuid"] = std::string(buf);
  else
    un["uuid"] = "NVML: nvmlDeviceGetUUID failed";
  char drv[96] = {0};
  if (n.driver && n.driver(drv, sizeof drv) == NVML_SUCCESS)
    j["driver"] = std::string(drv);
  else
    un["driver"] = "NVML: nvmlSystemGetDriverVersion failed";
  unsigned v = 0;
  if (n.max_clock && n.max_clock(impl_->dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
    j["sm_clock_max_mhz"] = v;
  else
    un["sm_clock_max_mhz"] = "NVML: nvmlDeviceGetMaxClockInfo(SM) failed";
  if (n.max_clock && n.max_clock(impl_->dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
    j["mem_clock_max_mhz"] = v;
  else
    un["mem_clock_max_mhz"] = "NVML: nvmlDeviceGetMaxClockInfo(MEM) failed";
  j["unavailable"] = un;
  return j;
}

int foreign_processes_of(const nlohmann::json &snapshot) {
  if (!snapshot.is_object())
    return -1;
  auto it = snapshot.find("foreign_processes");
  if (it == snapshot.end() || !it->is_number_integer())
    return -1;
  return it->get<int>();
}

} // namespace convbench::bench
