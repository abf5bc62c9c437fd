// NVTX ranges in the "convbench" domain, so `ncu --nvtx --nvtx-include "convbench@up0/"` selects
// the kernels of one stage. Compiled out in builds without the CUDA toolkit (header only: NVTX3
// finds a tool's injection library at run time and costs nothing without one).
#pragma once

#include <string>

#if CONVBENCH_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace convbench::bench {

class NvtxRange {
public:
  explicit NvtxRange(const std::string &name) {
#if CONVBENCH_HAVE_CUDA
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name.c_str();
    nvtxDomainRangePushEx(domain(), &a);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#if CONVBENCH_HAVE_CUDA
    nvtxDomainRangePop(domain());
#endif
  }
  NvtxRange(const NvtxRange &) = delete;
  NvtxRange &operator=(const NvtxRange &) = delete;

private:
#if CONVBENCH_HAVE_CUDA
  static nvtxDomainHandle_t domain() {
    static nvtxDomainHandle_t d = nvtxDomainCreateA("convbench");
    return d;
  }
#endif
};

} // namespace convbench::bench
