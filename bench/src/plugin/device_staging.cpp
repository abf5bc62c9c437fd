#include "device_staging.hpp"

#if CONVBENCH_HAVE_CUDA

#include <cuda_runtime.h>

#include "convbench/cuda_conv.hpp"
#include "core/device_gate.hpp"

namespace convbench::bench::plugin {

namespace {
void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw cuda::CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}
std::string message(cudaError_t e) {
  return e == cudaSuccess ? "" : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}
} // namespace

DeviceBuffer::DeviceBuffer(size_t floats) {
  device_gate::enter("plugin device buffers");
  check(cudaMalloc(reinterpret_cast<void **>(&ptr_), (floats ? floats : 1) * sizeof(float)),
        "cudaMalloc (plugin case buffer)");
}
DeviceBuffer::~DeviceBuffer() { cudaFree(ptr_); }
void DeviceBuffer::upload(const float *host, size_t floats) {
  check(cudaMemcpy(ptr_, host, floats * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy (plugin case upload)");
}

DeviceStream::DeviceStream() {
  device_gate::enter("plugin device stream");
  cudaStream_t s = nullptr;
  check(cudaStreamCreate(&s), "cudaStreamCreate (plugin case)");
  stream_ = s;
}
DeviceStream::~DeviceStream() { cudaStreamDestroy(static_cast<cudaStream_t>(stream_)); }

std::string sync_stream_status(void *stream) {
  return message(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}
std::string pending_error() { return message(cudaPeekAtLastError()); }

bool context_lost(const std::string &error) {
  // The sticky errors: after one of these every later CUDA call in the process fails.
  for (const char *name :
       {"cudaErrorIllegalAddress", "cudaErrorLaunchFailure", "cudaErrorIllegalInstruction",
        "cudaErrorMisalignedAddress", "cudaErrorInvalidAddressSpace", "cudaErrorInvalidPc",
        "cudaErrorHardwareStackError", "cudaErrorAssert", "cudaErrorLaunchTimeout"})
    if (error.rfind(name, 0) == 0)
      return true;
  return false;
}

} // namespace convbench::bench::plugin

#endif // CONVBENCH_HAVE_CUDA
