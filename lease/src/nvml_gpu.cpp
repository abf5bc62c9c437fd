#include "convbench/lease/nvml_gpu.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace convbench::lease {
namespace {

// Declared here because this machine has no nvml.h; layouts from the NVML API reference.
using nvmlReturn_t = int;
using nvmlDevice_t = void *;
struct ProcessInfoV2 { // nvmlProcessInfo_t as taken by the _v2/_v3 process queries
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct ViolationTime {              // nvmlViolationTime_t
  unsigned long long referenceTime; // CPU timestamp, microseconds
  unsigned long long violationTime; // nanoseconds
};
struct MemoryInfo { // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct Utilization { // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
constexpr nvmlReturn_t kSuccess = 0, kInsufficientSize = 7;
constexpr int kTemperatureGpu = 0;

struct Nvml {
  void *lib = nullptr;
  std::string why;
  nvmlReturn_t (*init)() = nullptr;
  const char *(*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, MemoryInfo *) = nullptr;
  nvmlReturn_t (*driver)(char *, unsigned) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned *) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned *) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned *) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *) = nullptr;
  nvmlReturn_t (*violation)(nvmlDevice_t, int, ViolationTime *) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, Utilization *) = nullptr;
  nvmlReturn_t (*count)(unsigned *) = nullptr;
  nvmlReturn_t (*compute)(nvmlDevice_t, unsigned *, ProcessInfoV2 *) = nullptr;
  nvmlReturn_t (*graphics)(nvmlDevice_t, unsigned *, ProcessInfoV2 *) = nullptr;

  std::string err(const std::string &call, nvmlReturn_t r) const {
    return "NVML " + call + ": " + (error_string ? error_string(r) : "error") + " (" +
           std::to_string(r) + ")";
  }
};

template <class F> void bind(void *lib, F &fn, const char *name, const char *fallback = nullptr) {
  void *p = ::dlsym(lib, name);
  if (!p && fallback)
    p = ::dlsym(lib, fallback);
  fn = reinterpret_cast<F>(p);
}

const Nvml &nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    n.lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.lib) {
      const char *e = ::dlerror();
      n.why = std::string("NVML: libnvidia-ml.so.1 not loadable: ") + (e ? e : "?");
      return;
    }
    bind(n.lib, n.init, "nvmlInit_v2", "nvmlInit");
    bind(n.lib, n.error_string, "nvmlErrorString");
    bind(n.lib, n.by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    bind(n.lib, n.by_uuid, "nvmlDeviceGetHandleByUUID");
    bind(n.lib, n.by_pci, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    bind(n.lib, n.uuid, "nvmlDeviceGetUUID");
    bind(n.lib, n.name, "nvmlDeviceGetName");
    bind(n.lib, n.memory, "nvmlDeviceGetMemoryInfo");
    bind(n.lib, n.driver, "nvmlSystemGetDriverVersion");
    bind(n.lib, n.clock, "nvmlDeviceGetClockInfo");
    bind(n.lib, n.max_clock, "nvmlDeviceGetMaxClockInfo");
    bind(n.lib, n.temperature, "nvmlDeviceGetTemperature");
    bind(n.lib, n.power, "nvmlDeviceGetPowerUsage");
    bind(n.lib, n.reasons, "nvmlDeviceGetCurrentClocksEventReasons",
         "nvmlDeviceGetCurrentClocksThrottleReasons");
    bind(n.lib, n.violation, "nvmlDeviceGetViolationStatus");
    bind(n.lib, n.utilization, "nvmlDeviceGetUtilizationRates");
    bind(n.lib, n.count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    bind(n.lib, n.compute, "nvmlDeviceGetComputeRunningProcesses_v3",
         "nvmlDeviceGetComputeRunningProcesses_v2");
    bind(n.lib, n.graphics, "nvmlDeviceGetGraphicsRunningProcesses_v3",
         "nvmlDeviceGetGraphicsRunningProcesses_v2");
    if (!n.init || !n.by_index || !n.uuid) {
      n.why = "NVML: libnvidia-ml.so.1 lacks nvmlInit/nvmlDeviceGetHandleByIndex/nvmlDeviceGetUUID";
      n.init = nullptr;
      return;
    }
    if (nvmlReturn_t r = n.init(); r != kSuccess) {
      n.why = n.err("nvmlInit", r);
      n.init = nullptr;
    }
  });
  return n;
}

bool set_why(std::string *why, const std::string &s) {
  if (why)
    *why = s;
  return false;
}

// Calls `fn` when NVML, the device and the symbol are there; else says which is missing.
template <class Fn, class... A>
bool call(void *dev, Fn fn, const char *what, std::string *why, A... a) {
  const Nvml &n = nvml();
  if (!n.init)
    return set_why(why, n.why);
  if (!dev)
    return set_why(why, "NVML: no device handle");
  if (!fn)
    return set_why(why, std::string("NVML: ") + what + " not exported by this driver");
  if (nvmlReturn_t r = fn(static_cast<nvmlDevice_t>(dev), a...); r != kSuccess)
    return set_why(why, n.err(what, r));
  return true;
}

void list(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *, ProcessInfoV2 *), nvmlDevice_t dev,
          std::vector<GpuProcess> &out, std::string *why, bool *ok) {
  if (!fn)
    return;
  std::vector<ProcessInfoV2> buf(64);
  unsigned count = static_cast<unsigned>(buf.size());
  nvmlReturn_t r = fn(dev, &count, buf.data());
  if (r == kInsufficientSize) {
    buf.resize(count + 16);
    count = static_cast<unsigned>(buf.size());
    r = fn(dev, &count, buf.data());
  }
  if (r != kSuccess) {
    *ok = set_why(why, nvml().err("running processes", r));
    return;
  }
  for (unsigned i = 0; i < count; ++i) {
    bool seen = false;
    for (auto &p : out)
      seen |= p.pid == buf[i].pid;
    if (seen)
      continue;
    GpuProcess p;
    p.pid = buf[i].pid;
    p.used_bytes = buf[i].usedGpuMemory;
    std::ifstream comm("/proc/" + std::to_string(p.pid) + "/comm");
    std::getline(comm, p.name);
    out.push_back(p);
  }
}

// Every process either query lists; *ok false when NVML or a query failed (`out` may be partial).
std::vector<GpuProcess> collect(void *dev, std::string *why, bool *ok) {
  const Nvml &n = nvml();
  std::vector<GpuProcess> out;
  if (!n.init || !dev || (!n.compute && !n.graphics)) {
    *ok = set_why(why, !n.init ? n.why
                       : !dev  ? std::string("NVML: no device handle")
                               : std::string("NVML: no running-process queries in this driver"));
    return out;
  }
  list(n.compute, static_cast<nvmlDevice_t>(dev), out, why, ok);
  list(n.graphics, static_cast<nvmlDevice_t>(dev), out, why, ok);
  return out;
}

} // namespace

std::vector<std::string> clock_event_reason_names(unsigned long long bits) {
  std::vector<std::string> names;
  unsigned long long known = 0;
  for (const auto &r : kClockEventReasons) {
    known |= r.bit;
    if (bits & r.bit)
      names.push_back(r.name);
  }
  if (bits & ~known) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "other_0x%llx", bits & ~known);
    names.push_back(buf);
  }
  return names;
}

NvmlGpu NvmlGpu::by_index(int index) {
  NvmlGpu g;
  const Nvml &n = nvml();
  if (!n.init) {
    g.why_ = n.why;
    return g;
  }
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = n.by_index(static_cast<unsigned>(index), &dev); r != kSuccess)
    g.why_ = n.err("nvmlDeviceGetHandleByIndex(" + std::to_string(index) + ")", r);
  else
    g.handle_ = dev;
  return g;
}

NvmlGpu NvmlGpu::by_uuid(const std::string &uuid) {
  NvmlGpu g;
  const Nvml &n = nvml();
  if (!n.init || !n.by_uuid) {
    g.why_ = n.init ? "NVML: no nvmlDeviceGetHandleByUUID" : n.why;
    return g;
  }
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = n.by_uuid(uuid.c_str(), &dev); r != kSuccess)
    g.why_ = n.err("nvmlDeviceGetHandleByUUID", r);
  else
    g.handle_ = dev;
  return g;
}

NvmlGpu NvmlGpu::by_pci_bus_id(const std::string &pci_bus_id) {
  const Nvml &n = nvml();
  if (n.init && n.by_pci && !pci_bus_id.empty()) {
    nvmlDevice_t dev = nullptr;
    if (n.by_pci(pci_bus_id.c_str(), &dev) == kSuccess) {
      NvmlGpu g;
      g.handle_ = dev;
      return g;
    }
  }
  return by_index(0);
}

std::optional<std::string> NvmlGpu::uuid(std::string *why) const {
  char buf[96] = {};
  if (!call(handle_, nvml().uuid, "nvmlDeviceGetUUID", why, buf, unsigned(sizeof buf)))
    return std::nullopt;
  return std::string(buf);
}

std::optional<std::string> NvmlGpu::name(std::string *why) const {
  char buf[96] = {};
  if (!call(handle_, nvml().name, "nvmlDeviceGetName", why, buf, unsigned(sizeof buf)))
    return std::nullopt;
  return std::string(buf);
}

std::optional<NvmlGpu::Memory> NvmlGpu::memory(std::string *why) const {
  MemoryInfo m{};
  if (!call(handle_, nvml().memory, "nvmlDeviceGetMemoryInfo", why, &m))
    return std::nullopt;
  return Memory{m.total, m.free};
}

NvmlGpu NvmlGpu::cuda_device0() {
  NvmlGpu none;
  const char *env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!env)
    return by_index(0);
  const std::string list = env;
  std::string first = list.substr(0, list.find(','));
  while (!first.empty() && first.front() == ' ')
    first.erase(first.begin());
  while (!first.empty() && first.back() == ' ')
    first.pop_back();
  if (first.empty()) {
    none.why_ = "CUDA_VISIBLE_DEVICES='" + list + "' hides every GPU";
    return none;
  }
  if (first.find_first_not_of("0123456789") == std::string::npos) {
    const long index = std::strtol(first.c_str(), nullptr, 10);
    NvmlGpu g = index <= 1024 ? by_index(int(index)) : none;
    if (!g.ok() && g.why_.empty())
      g.why_ = "CUDA_VISIBLE_DEVICES names GPU " + first + ", which NVML does not list";
    return g;
  }
  if (first.rfind("GPU-", 0) != 0 && first.rfind("MIG-", 0) != 0) {
    none.why_ = "CUDA_VISIBLE_DEVICES='" + list +
                "' names no GPU CUDA would use (its first entry '" + first +
                "' is neither an index nor a GPU-/MIG- UUID)";
    return none;
  }
  NvmlGpu exact = by_uuid(first);
  if (exact.ok() || first.rfind("MIG-", 0) == 0)
    return exact;
  // CUDA takes a unique prefix of a GPU UUID; so does this.
  std::string why;
  const unsigned count = nvml_gpu_count(&why).value_or(0);
  NvmlGpu found;
  int matches = 0;
  for (unsigned i = 0; i < count; ++i) {
    NvmlGpu g = by_index(int(i));
    const std::string u = g.ok() ? g.uuid(nullptr).value_or("") : "";
    if (!u.empty() && u.rfind(first, 0) == 0) {
      found = g;
      ++matches;
    }
  }
  if (matches == 1)
    return found;
  none.why_ = "CUDA_VISIBLE_DEVICES names " + first + ", which " +
              (matches ? "more than one GPU's UUID starts with" : "no GPU NVML lists has") +
              (exact.why_.empty() ? "" : " (" + exact.why_ + ")");
  return none;
}

std::optional<unsigned> NvmlGpu::clock_mhz(Clock c, std::string *why) const {
  unsigned v = 0;
  if (!call(handle_, nvml().clock, "nvmlDeviceGetClockInfo", why, int(c), &v))
    return std::nullopt;
  return v;
}

std::optional<unsigned> NvmlGpu::max_clock_mhz(Clock c, std::string *why) const {
  unsigned v = 0;
  if (!call(handle_, nvml().max_clock, "nvmlDeviceGetMaxClockInfo", why, int(c), &v))
    return std::nullopt;
  return v;
}

std::optional<unsigned> NvmlGpu::temperature_c(std::string *why) const {
  unsigned v = 0;
  if (!call(handle_, nvml().temperature, "nvmlDeviceGetTemperature", why, kTemperatureGpu, &v))
    return std::nullopt;
  return v;
}

std::optional<double> NvmlGpu::power_w(std::string *why) const {
  unsigned mw = 0;
  if (!call(handle_, nvml().power, "nvmlDeviceGetPowerUsage", why, &mw))
    return std::nullopt;
  return mw / 1000.0;
}

std::optional<unsigned long long> NvmlGpu::clock_event_reasons(std::string *why) const {
  unsigned long long bits = 0;
  if (!call(handle_, nvml().reasons, "nvmlDeviceGetCurrentClocksEventReasons", why, &bits))
    return std::nullopt;
  return bits;
}

std::optional<unsigned long long> NvmlGpu::violation_ns(int policy_id, std::string *why) const {
  ViolationTime t{};
  if (!call(handle_, nvml().violation, "nvmlDeviceGetViolationStatus", why, policy_id, &t))
    return std::nullopt;
  return t.violationTime;
}

std::optional<unsigned> NvmlGpu::utilization_pct(std::string *why) const {
  Utilization u{};
  if (!call(handle_, nvml().utilization, "nvmlDeviceGetUtilizationRates", why, &u))
    return std::nullopt;
  return u.gpu;
}

std::optional<std::vector<GpuProcess>> NvmlGpu::processes(std::string *why) const {
  bool ok = true;
  auto out = collect(handle_, why, &ok);
  if (!ok) // a partial list would undercount foreign processes
    return std::nullopt;
  return out;
}

std::optional<std::string> nvml_driver_version(std::string *why) {
  const Nvml &n = nvml();
  if (!n.init)
    return set_why(why, n.why), std::nullopt;
  char buf[96] = {};
  if (!n.driver)
    return set_why(why, "NVML: nvmlSystemGetDriverVersion not exported"), std::nullopt;
  if (nvmlReturn_t r = n.driver(buf, sizeof buf); r != kSuccess)
    return set_why(why, n.err("nvmlSystemGetDriverVersion", r)), std::nullopt;
  return std::string(buf);
}

std::optional<unsigned> nvml_gpu_count(std::string *why) {
  const Nvml &n = nvml();
  if (!n.init)
    return set_why(why, n.why), std::nullopt;
  if (!n.count)
    return set_why(why, "NVML: nvmlDeviceGetCount not exported"), std::nullopt;
  unsigned c = 0;
  if (nvmlReturn_t r = n.count(&c); r != kSuccess)
    return set_why(why, n.err("nvmlDeviceGetCount", r)), std::nullopt;
  return c;
}

std::string nvml_gpu_uuid(int index, std::string *why) {
  NvmlGpu g = NvmlGpu::by_index(index);
  if (!g.ok())
    return set_why(why, g.why_not()), "";
  return g.uuid(why).value_or("");
}

std::vector<GpuProcess> nvml_gpu_processes(const std::string &uuid, std::string *why) {
  NvmlGpu g = NvmlGpu::by_uuid(uuid);
  if (!g.ok())
    return set_why(why, g.why_not()), std::vector<GpuProcess>{};
  bool ok = true; // the lease names what it can see, even from one query of two
  return collect(g.handle_, why, &ok);
}

std::string resolve_gpu_uuid(int index, std::string *why) {
  std::string nvml_why;
  std::string u = nvml_gpu_uuid(index, &nvml_why);
  if (!u.empty())
    return u;
  if (const char *e = std::getenv("CONVBENCH_GPU_UUID"); e && *e)
    return e;
  if (why)
    *why = "cannot map --gpu " + std::to_string(index) + " to a GPU UUID: " + nvml_why +
           "; pass --gpu-uuid GPU-... or set CONVBENCH_GPU_UUID";
  return "";
}

} // namespace convbench::lease
