// The few NVML calls the lease needs, through dlopen("libnvidia-ml.so.1") so that the library
// builds and runs on machines without a driver: the UUID of GPU N (convlease --gpu N) and the
// processes holding a context on a GPU (to name foreign processes in a void verdict).
#pragma once

#include <string>
#include <vector>

namespace convbench::lease {

struct GpuProcess {
  unsigned pid = 0;
  unsigned long long used_bytes = 0;
  std::string name; // /proc/<pid>/comm when visible from here ("" otherwise)
};

// UUID of GPU `index` ("GPU-..."); "" with *why set when NVML is absent or the index is bad.
std::string nvml_gpu_uuid(int index, std::string *why);
// Processes with a compute or graphics context on the GPU with this UUID; *why set on failure.
std::vector<GpuProcess> nvml_gpu_processes(const std::string &uuid, std::string *why);
// "GPU-..." for --gpu N: NVML, else $CONVBENCH_GPU_UUID; "" with *why set when neither works.
std::string resolve_gpu_uuid(int index, std::string *why);

} // namespace convbench::lease
