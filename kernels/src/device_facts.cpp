#include "convbench/device_facts.hpp"

#include <map>
#include <mutex>

#if CONVBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace convbench {

#if CONVBENCH_HAVE_CUDA
namespace {

DeviceFacts read_facts(int dev) {
  cudaDeviceProp prop{};
  int clock_khz = 0, mem_khz = 0;
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess ||
      prop.multiProcessorCount <= 0 || clock_khz <= 0 || mem_khz <= 0 || prop.memoryBusWidth <= 0) {
    (void)cudaGetLastError();
    return kPlanningDevice;
  }
  const double peak = 2.0 * mem_khz * 1e3 * prop.memoryBusWidth / 8.0;
  return {prop.multiProcessorCount, clock_khz * 1e3, kSustainedDramShare * peak,
          int(prop.sharedMemPerMultiprocessor)};
}

} // namespace

const DeviceFacts &device_facts() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return kPlanningDevice;
  }
  static std::mutex mu;
  static std::map<int, DeviceFacts> by_device; // nodes never move: the references stay valid
  const std::lock_guard<std::mutex> lock(mu);
  auto it = by_device.find(dev);
  if (it == by_device.end())
    it = by_device.emplace(dev, read_facts(dev)).first;
  return it->second;
}

#else

const DeviceFacts &device_facts() { return kPlanningDevice; }

#endif

} // namespace convbench
