// The one way a CUDA runtime call is checked, in the kernels, the cuDNN peer, the tests and the
// bench: CONVBENCH_CUDA_CHECK(call) throws cuda::CudaError naming the call, where it was made, and
// CUDA's own message. Needs the CUDA runtime headers (CUDA builds only).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "convbench/cuda_conv.hpp"

namespace convbench::cuda::detail {

inline std::string cuda_message(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

inline void check(cudaError_t e, const char *call, const char *file, int line) {
  if (e != cudaSuccess) {
    // A non-sticky error (a failed cudaMalloc) also stays as the thread's "last error"; clear it,
    // or the next launch check would report this failure again.
    (void)cudaGetLastError();
    throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cuda_message(e));
  }
}

} // namespace convbench::cuda::detail

#define CONVBENCH_CUDA_CHECK(call)                                                                 \
  ::convbench::cuda::detail::check((call), #call, __FILE__, __LINE__)
