#include "leasing/device_open.hpp"

#include <cstdio>
#include <stdexcept>

#include "convbench/cuda_conv.hpp"
#include "convbench/lease/run_lease.hpp"
#include "core/device_gate.hpp"
#include "plan/cli.hpp"
#include "plan/plan.hpp"

#if CONVBENCH_HAVE_CUDA
#include "measurement/device.hpp"
#endif

namespace convbench::bench {

#if CONVBENCH_HAVE_CUDA
namespace {
std::string gib(double bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  return buf;
}
} // namespace
#endif

void open_device(Plan &plan) {
#if CONVBENCH_HAVE_CUDA
  device_gate::enter("device facts"); // context-free queries: a host-only run makes them too
  std::string why;
  if (!cuda::device_available(&why)) {
    if (plan.any_device)
      throw std::runtime_error("CUDA cannot use the GPU NVML names (" + plan.gpu.uuid +
                               "): " + why);
    plan.gpu = GpuFacts{};
    plan.gpu.why_not = why;
    return;
  }
  const device::Facts f = device::facts(0);
  if (plan.any_device && f.uuid != plan.gpu.uuid)
    throw lease::LeaseRefused(
        "the lease covers " + plan.gpu.uuid + " but CUDA device 0 is " + f.uuid +
        " (CUDA numbers GPUs fastest first unless told): set CUDA_DEVICE_ORDER=PCI_BUS_ID, or "
        "CUDA_VISIBLE_DEVICES=" +
        f.uuid);
  GpuFacts &g = plan.gpu;
  g.present = true;
  g.why_not.clear();
  g.name = f.name;
  g.uuid = f.uuid;
  g.pci_bus_id = f.pci_bus_id;
  g.sm_count = f.sm_count;
  g.l2_bytes = f.l2_bytes;
  g.runtime_version = f.runtime_version;
  g.driver_version = f.driver_version;
  g.sm_clock_max_khz = f.sm_clock_max_khz;
  plan.floors = plan.devices.find(g.name);
  if (!plan.any_device)
    return;
  // What is free now that no other run holds the GPU (NVML: no context needed to ask).
  const double free_b = visible_gpu_free_bytes();
  const double need = device_bytes_needed(plan);
  if (free_b > 0 && need > 0.9 * free_b)
    throw UsageError("the planned device cases need " + gib(need) +
                     " of device memory, more than 90% of the " + gib(free_b) + " free: " +
                     (plan.problems.size() && plan.problems.front()->causal
                          ? "fewer causal cases (bench_conv --dry-run lists each case's need)"
                          : "fewer frames or stages") +
                     ", or --staging per-call");
#else
  (void)plan;
#endif
}

} // namespace convbench::bench
