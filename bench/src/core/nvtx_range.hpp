// NVTX ranges in the "convbench" domain, so `ncu --nvtx --nvtx-include "convbench@up0/"` selects
// the kernels of one stage. ncu reads '/' in an include expression as nesting of push/pop ranges,
// so a case id "up0/96/cuda-f32/resident/r0" is pushed as five nested ranges (up0 > 96 >
// cuda-f32 > resident > r0): "convbench@up0/96/cuda-f32/" selects one arm of one stage (a single
// range named with slashes matches nothing in ncu). Compiled out in builds without the CUDA
// toolkit (header only: NVTX3 finds a tool's injection library at run time and costs nothing
// without one).
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
    size_t begin = 0;
    while (begin <= name.size()) {
      size_t end = name.find('/', begin);
      if (end == std::string::npos)
        end = name.size();
      const std::string part = name.substr(begin, end - begin);
      nvtxEventAttributes_t a{};
      a.version = NVTX_VERSION;
      a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      a.messageType = NVTX_MESSAGE_TYPE_ASCII;
      a.message.ascii = part.c_str();
      nvtxDomainRangePushEx(domain(), &a);
      ++depth_;
      begin = end + 1;
    }
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#if CONVBENCH_HAVE_CUDA
    for (int i = 0; i < depth_; ++i)
      nvtxDomainRangePop(domain());
#endif
  }
  NvtxRange(const NvtxRange &) = delete;
  NvtxRange &operator=(const NvtxRange &) = delete;

private:
  int depth_ = 0;
#if CONVBENCH_HAVE_CUDA
  static nvtxDomainHandle_t domain() {
    static nvtxDomainHandle_t d = nvtxDomainCreateA("convbench");
    return d;
  }
#endif
};

} // namespace convbench::bench
