#include "convbench/lease/nvml_gpu.hpp"

#include <dlfcn.h>

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
constexpr nvmlReturn_t kSuccess = 0, kInsufficientSize = 7;

struct Nvml {
  void *lib = nullptr;
  std::string why;
  nvmlReturn_t (*init)() = nullptr;
  const char *(*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned) = nullptr;
  nvmlReturn_t (*compute)(nvmlDevice_t, unsigned *, ProcessInfoV2 *) = nullptr;
  nvmlReturn_t (*graphics)(nvmlDevice_t, unsigned *, ProcessInfoV2 *) = nullptr;

  std::string err(const char *call, nvmlReturn_t r) const {
    return std::string("NVML ") + call + ": " + (error_string ? error_string(r) : "error") + " (" +
           std::to_string(r) + ")";
  }
};

const Nvml &nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    n.lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.lib) {
      n.why = "NVML: libnvidia-ml.so.1 not found";
      return;
    }
    auto sym = [](const char *a, const char *b = nullptr) {
      void *p = ::dlsym(n.lib, a);
      return p || !b ? p : ::dlsym(n.lib, b);
    };
    n.init = reinterpret_cast<decltype(n.init)>(sym("nvmlInit_v2", "nvmlInit"));
    n.error_string = reinterpret_cast<decltype(n.error_string)>(sym("nvmlErrorString"));
    n.by_index = reinterpret_cast<decltype(n.by_index)>(
        sym("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"));
    n.by_uuid = reinterpret_cast<decltype(n.by_uuid)>(sym("nvmlDeviceGetHandleByUUID"));
    n.uuid = reinterpret_cast<decltype(n.uuid)>(sym("nvmlDeviceGetUUID"));
    n.compute = reinterpret_cast<decltype(n.compute)>(
        sym("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"));
    n.graphics = reinterpret_cast<decltype(n.graphics)>(sym(
        "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"));
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

void list(const Nvml &n, nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *, ProcessInfoV2 *),
          nvmlDevice_t dev, std::vector<GpuProcess> &out, std::string *why) {
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
    if (why)
      *why = n.err("running processes", r);
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

} // namespace

std::string nvml_gpu_uuid(int index, std::string *why) {
  const Nvml &n = nvml();
  if (!n.init) {
    if (why)
      *why = n.why;
    return "";
  }
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = n.by_index(static_cast<unsigned>(index), &dev); r != kSuccess) {
    if (why)
      *why = n.err(("nvmlDeviceGetHandleByIndex(" + std::to_string(index) + ")").c_str(), r);
    return "";
  }
  char buf[96] = {};
  if (nvmlReturn_t r = n.uuid(dev, buf, sizeof buf); r != kSuccess) {
    if (why)
      *why = n.err("nvmlDeviceGetUUID", r);
    return "";
  }
  return buf;
}

std::vector<GpuProcess> nvml_gpu_processes(const std::string &uuid, std::string *why) {
  std::vector<GpuProcess> out;
  const Nvml &n = nvml();
  if (!n.init || !n.by_uuid) {
    if (why)
      *why = n.init ? "NVML: no nvmlDeviceGetHandleByUUID" : n.why;
    return out;
  }
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = n.by_uuid(uuid.c_str(), &dev); r != kSuccess) {
    if (why)
      *why = n.err("nvmlDeviceGetHandleByUUID", r);
    return out;
  }
  list(n, n.compute, dev, out, why);
  list(n, n.graphics, dev, out, why);
  return out;
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
