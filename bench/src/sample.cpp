#include "sample.hpp"

#include "nvtx_range.hpp"

#if CONVBENCH_HAVE_CUDA
#include "device.hpp"
#endif

namespace convbench::bench {

#if CONVBENCH_HAVE_CUDA
struct SampleTaker::SmClock : device::SmClock {
  using device::SmClock::SmClock;
};
#else
struct SampleTaker::SmClock {};
#endif

SampleTaker::SampleTaker(double min_time, bool queued, const GpuProbe *gpu, int sm_count)
    : runner_(min_time, queued), gpu_(gpu) {
#if CONVBENCH_HAVE_CUDA
  if (gpu && sm_count > 0)
    smclock_ = std::make_unique<SmClock>(sm_count);
#else
  (void)sm_count;
#endif
}

SampleTaker::~SampleTaker() = default;

Sample SampleTaker::take(Case &c, int round, size_t position) {
  Sample s;
  s.round = round;
  s.position = position;
  s.device = c.arm->device();
  const bool gpu = s.device && gpu_;
  s.gpu_probed = gpu;
  if (gpu)
    s.gpu_before = gpu_->snapshot(true);
  s.host_before = probe_host();
#if CONVBENCH_HAVE_CUDA
  if (s.device && smclock_)
    smclock_->begin(c.prepared->stream_begin());
#endif
  const std::string name = c.id + "/r" + std::to_string(round);
  {
    NvtxRange range(name);
    s.timing = runner_.run(name, *c.prepared, s.device);
  }
#if CONVBENCH_HAVE_CUDA
  if (s.device && smclock_) {
    smclock_->end(c.prepared->stream_end());
    s.sm_clock_mhz = smclock_->mhz();
  }
#endif
  s.host_after = probe_host();
  if (gpu)
    s.gpu_after = gpu_->snapshot(true);
  s.foreign = foreign_cpu(s.host_before, s.host_after);
  return s;
}

} // namespace convbench::bench
