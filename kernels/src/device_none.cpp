// device_available() for a build without CUDA: there is never a device to use.
#include "convbench/cuda_conv.hpp"

namespace convbench::cuda {

bool device_available(std::string *why_not) {
  if (why_not)
    *why_not = "this build has no CUDA (CONVBENCH_HAVE_CUDA=0: no nvcc at configure time)";
  return false;
}

} // namespace convbench::cuda
