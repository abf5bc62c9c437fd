// CUDA side of bench's own instruments (see src/device.hpp).
#include "measurement/device.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "convbench/cuda_check.hpp"
#include "core/device_gate.hpp"

namespace convbench::bench::device {

namespace {

// slot = SM id; each block's first thread records its SM's clock64 and the global timer.
__global__ void read_clocks(unsigned long long *out, int slots) {
  if (threadIdx.x != 0)
    return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  unsigned long long gt;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
  long long clk = clock64();
  if (int(smid) < slots) {
    out[2 * smid] = (unsigned long long)clk;
    out[2 * smid + 1] = gt;
  }
}
// Spins until the host writes flags[0] (mapped memory: volatile reads see the host's write) or
// `timeout_ns` of the global timer pass; then flags[1] says which.
__global__ void hold_queue(volatile int *flags, unsigned long long timeout_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (flags[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) {
      flags[1] = 1;
      return;
    }
  }
}
} // namespace

Facts facts(int dev) {
  device_gate::enter("device facts");
  cudaDeviceProp p{};
  CONVBENCH_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  Facts f;
  f.name = p.name;
  f.sm_count = p.multiProcessorCount;
  f.l2_bytes = p.l2CacheSize;
  char pci[32];
  CONVBENCH_CUDA_CHECK(cudaDeviceGetPCIBusId(pci, sizeof pci, dev));
  f.pci_bus_id = pci;
  char uuid[64];
  const unsigned char *u = reinterpret_cast<const unsigned char *>(p.uuid.bytes);
  snprintf(uuid, sizeof uuid,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
           u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
           u[15]);
  f.uuid = uuid;
  CONVBENCH_CUDA_CHECK(cudaRuntimeGetVersion(&f.runtime_version));
  CONVBENCH_CUDA_CHECK(cudaDriverGetVersion(&f.driver_version));
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) == cudaSuccess)
    f.sm_clock_max_khz = khz;
  else
    (void)cudaGetLastError();
  return f;
}

EventTimer::EventTimer() : start_(nullptr), stop_(nullptr) {
  device_gate::enter("timing events");
  cudaEvent_t a, b;
  CONVBENCH_CUDA_CHECK(cudaEventCreate(&a));
  CONVBENCH_CUDA_CHECK(cudaEventCreate(&b));
  start_ = a;
  stop_ = b;
}
EventTimer::~EventTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
void EventTimer::start(void *s) {
  CONVBENCH_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(start_), static_cast<cudaStream_t>(s)));
}
void EventTimer::stop(void *s) {
  CONVBENCH_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(stop_), static_cast<cudaStream_t>(s)));
}
double EventTimer::seconds() {
  CONVBENCH_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float ms = 0;
  CONVBENCH_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return double(ms) * 1e-3;
}

QueueHold::QueueHold(double timeout_s) : timeout_s_(timeout_s), host_(nullptr), dev_(nullptr) {
  device_gate::enter("queue hold");
  void *h = nullptr;
  CONVBENCH_CUDA_CHECK(cudaHostAlloc(&h, 2 * sizeof(int), cudaHostAllocMapped));
  host_ = static_cast<int *>(h);
  host_[0] = host_[1] = 0;
  void *d = nullptr;
  const cudaError_t e = cudaHostGetDevicePointer(&d, h, 0);
  if (e != cudaSuccess) {
    cudaFreeHost(h);
    CONVBENCH_CUDA_CHECK(e); // cudaHostGetDevicePointer
  }
  dev_ = static_cast<int *>(d);
}
QueueHold::~QueueHold() { cudaFreeHost(host_); }
void QueueHold::hold(void *s) {
  // The previous hold has finished: its stream was synchronised before the next sample.
  reinterpret_cast<volatile int *>(host_)[0] = 0;
  reinterpret_cast<volatile int *>(host_)[1] = 0;
  hold_queue<<<1, 1, 0, static_cast<cudaStream_t>(s)>>>(
      dev_, static_cast<unsigned long long>(timeout_s_ * 1e9));
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}
void QueueHold::release() { reinterpret_cast<volatile int *>(host_)[0] = 1; }
bool QueueHold::timed_out() const { return reinterpret_cast<volatile int *>(host_)[1] != 0; }

StreamLink::StreamLink() : event_(nullptr) {
  cudaEvent_t e;
  CONVBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  event_ = e;
}
StreamLink::~StreamLink() { cudaEventDestroy(static_cast<cudaEvent_t>(event_)); }
void StreamLink::link(void *signalling, void *waiting) {
  CONVBENCH_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(signalling)));
  CONVBENCH_CUDA_CHECK(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(waiting), static_cast<cudaEvent_t>(event_), 0));
}

SmClock::SmClock(int sm_count) : slots_(sm_count > 0 ? sm_count : 1), d_buf_(nullptr) {
  // %smid can exceed the SM count on parts with disabled SMs; leave headroom.
  slots_ = slots_ * 2 + 32;
  device_gate::enter("SM clock probe");
  CONVBENCH_CUDA_CHECK(cudaMalloc(&d_buf_, sizeof(unsigned long long) * 4 * size_t(slots_)));
}
SmClock::~SmClock() { cudaFree(d_buf_); }

void SmClock::begin(void *s) {
  auto st = static_cast<cudaStream_t>(s);
  CONVBENCH_CUDA_CHECK(
      cudaMemsetAsync(d_buf_, 0, sizeof(unsigned long long) * 4 * size_t(slots_), st));
  read_clocks<<<slots_, 32, 0, st>>>(d_buf_, slots_);
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}
void SmClock::end(void *s) {
  read_clocks<<<slots_, 32, 0, static_cast<cudaStream_t>(s)>>>(d_buf_ + 2 * size_t(slots_), slots_);
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}
double SmClock::mhz() {
  std::vector<unsigned long long> h(4 * size_t(slots_));
  // begin() and end() may sit on streams that do not synchronise with the legacy stream.
  CONVBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  CONVBENCH_CUDA_CHECK(
      cudaMemcpy(h.data(), d_buf_, sizeof(unsigned long long) * h.size(), cudaMemcpyDeviceToHost));
  double sum = 0;
  int n = 0;
  for (int i = 0; i < slots_; ++i) {
    unsigned long long c0 = h[2 * i], t0 = h[2 * i + 1];
    unsigned long long c1 = h[2 * (slots_ + i)], t1 = h[2 * (slots_ + i) + 1];
    if (t0 == 0 || t1 <= t0 || c1 <= c0)
      continue;
    sum += double(c1 - c0) / double(t1 - t0) * 1e3; // cycles per ns -> MHz
    ++n;
  }
  return n ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

} // namespace convbench::bench::device

namespace convbench::bench::device {
void reset() {
  device_gate::enter("device reset");
  CONVBENCH_CUDA_CHECK(cudaDeviceReset());
}

void sync_stream(void *s) {
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
}
} // namespace convbench::bench::device
