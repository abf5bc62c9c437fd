#include "measurement/sample.hpp"

#include <chrono>

#include "core/clock.hpp"
#include "core/nvtx_range.hpp"
#include "probes/host_sample.hpp"

#if CONVBENCH_HAVE_CUDA
#include "measurement/device.hpp"
#endif

namespace convbench::bench {

#if CONVBENCH_HAVE_CUDA
struct SampleTaker::SmClock : device::SmClock {
  using device::SmClock::SmClock;
};
#else
struct SampleTaker::SmClock {};
#endif

SampleTaker::SampleTaker(double min_time, bool queued, const GpuProbe *gpu, int sm_count,
                         ThreadPool &pool, const SpeedProbe &speed)
    : runner_(min_time, queued), gpu_(gpu), pool_(pool), speed_(speed) {
#if CONVBENCH_HAVE_CUDA
  if (gpu && sm_count > 0)
    smclock_ = std::make_unique<SmClock>(sm_count);
#else
  (void)sm_count;
#endif
  window_.add(read_system_counters());
}

SampleTaker::~SampleTaker() = default;

// The calling thread's counters (it launches a device sample's work): the workers are not woken
// around a GPU sample.
ContentionSnapshot SampleTaker::contention_now() const {
  ContentionSnapshot s;
  s.threads.push_back(read_thread_counters(0));
  s.system = read_system_counters();
  return s;
}

Sample SampleTaker::take(Case &c, int round, size_t position) {
  Sample s;
  s.round = round;
  s.position = position;
  s.device = c.arm->device();
  const bool gpu = s.device && gpu_;
  s.gpu_probed = gpu;
  const double p0 = steady_seconds();
  HostSampler host(pool_, speed_, &window_);
  ContentionSnapshot caller; // device samples: the launching thread's own counters
  if (s.device)
    caller = contention_now();
  else
    host.before();
  if (gpu)
    s.gpu_before = gpu_->snapshot(true);
  s.host_before = probe_host();
  const double p1 = steady_seconds();
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
  const double p2 = steady_seconds();
  s.host_after = probe_host();
  if (gpu)
    s.gpu_after = gpu_->snapshot(true);
  if (neighbours_)
    s.neighbours = neighbours_->read();
  if (s.device) {
    const ContentionSnapshot after = contention_now();
    s.probes.contention = contention_between(caller, after);
    window_.add(after.system);
    s.probes.foreign = window_.latest();
  } else {
    static_cast<HostSample &>(s.probes) = host.after();
  }
  s.foreign = foreign_cpu(s.host_before, s.host_after);
  s.probes.top_foreign = processes_.after_sample();
  s.probes.probe_seconds = (p1 - p0) + (steady_seconds() - p2);
  return s;
}

} // namespace convbench::bench
