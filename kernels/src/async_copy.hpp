// Asynchronous global -> shared copies (cp.async, sm_80+), the one spelling the tile kernels
// share (the fast polyphase kernels, the DMMA kernels). Each copy is zero-filled where `ok` is
// false (src-size 0: nothing is read; `src` is then any mapped address). On the host (the
// emulation tests) a copy happens at once, and commit and wait have nothing to do.
#pragma once

#include <cstring>

#include "host_device.hpp"

namespace convbench {

// 4 bytes, through L1 (.ca).
CONVBENCH_HD void copy4_async(float *dst, const float *src, bool ok) {
#ifdef __CUDA_ARCH__
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 4 : 0)
               : "memory");
#else
  *dst = ok ? *src : 0.0f;
#endif
}
// 16 bytes, L2 only (.cg); both addresses 16-byte aligned.
CONVBENCH_HD void copy16_async(void *dst, const void *src, bool ok) {
#ifdef __CUDA_ARCH__
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(ok ? 16 : 0)
               : "memory");
#else
  if (ok)
    std::memcpy(dst, src, 16);
  else
    std::memset(dst, 0, 16);
#endif
}
// Closes this thread's group of copies issued since the last commit.
CONVBENCH_HD void async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N of this thread's committed copy groups are still in flight.
template <int N> CONVBENCH_HD void async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

} // namespace convbench
