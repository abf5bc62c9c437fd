// bench's own device helpers (timing events, stream links, the SM clock probe, device facts),
// implemented in cuda/device.cu and declared only in CUDA builds. Plain C++: no CUDA headers.
#pragma once

#if CONVBENCH_HAVE_CUDA

#include <cstddef>
#include <string>

namespace convbench::bench::device {

struct Facts {
  std::string name, uuid, pci_bus_id;
  int sm_count = 0;
  long long l2_bytes = 0;
  int runtime_version = 0, driver_version = 0; // CUDA's integers, e.g. 13000
  int sm_clock_max_khz = 0;                    // cudaDevAttrClockRate; 0 if not reported
};
// Context-free queries (cudaGetDeviceProperties, cudaDeviceGetPCIBusId, versions): a host-only
// run reads them too without showing on the GPU.
Facts facts(int device);
// Destroys this process's primary context (cudaDeviceReset), so that it is off the GPU before the
// lease goes to the next run; every device buffer must be freed first.
void reset();

// A start/stop pair of CUDA events; seconds() waits for stop.
class EventTimer {
public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;
  void start(void *stream);
  void stop(void *stream);
  double seconds();

private:
  void *start_;
  void *stop_;
};

// Makes `waiting` wait for the work enqueued so far on `signalling` (an event between streams).
class StreamLink {
public:
  StreamLink();
  ~StreamLink();
  StreamLink(const StreamLink &) = delete;
  StreamLink &operator=(const StreamLink &) = delete;
  void link(void *signalling, void *waiting);

private:
  void *event_;
};

// Holds a stream's queue until release(), as nvbench's blocking kernel does: a one-thread kernel
// spins on a host-mapped flag, so everything enqueued behind it (the start event, the arm's call,
// the stop event) is already queued when the GPU gets to it, and the events time the GPU's work
// only -- not the host's launch latency between them, nor the host-side work of a provider that
// launches several kernels per call (cuDNN: 3). Guard: a call that waits for the GPU while the
// queue is held would wait forever; the kernel gives up after `timeout_s` and timed_out() says so.
class QueueHold {
public:
  explicit QueueHold(double timeout_s = 2.0);
  ~QueueHold();
  QueueHold(const QueueHold &) = delete;
  QueueHold &operator=(const QueueHold &) = delete;
  void hold(void *stream); // enqueues the spinning kernel
  void release();          // lets it finish (the host writes the flag)
  bool timed_out() const;  // the last hold gave up; read it after the stream has synchronised

private:
  double timeout_s_;
  int *host_; // mapped pinned memory: [0] release flag, [1] timed-out flag
  int *dev_;
};

// The SM clock over an interval, measured on the device as nvbench does: a kernel with blocks on
// every SM reads clock64() and %globaltimer at begin() and again at end(); MHz = cycles / ns x 1e3,
// averaged over the SMs seen both times. Free of NVML, so it sees what the kernels ran at.
class SmClock {
public:
  explicit SmClock(int sm_count);
  ~SmClock();
  SmClock(const SmClock &) = delete;
  SmClock &operator=(const SmClock &) = delete;
  void begin(void *stream);
  void end(void *stream);
  double mhz(); // synchronises; NaN when no SM was seen at both ends

private:
  int slots_;
  unsigned long long *d_buf_; // [2][slots][clock, globaltimer]
};

} // namespace convbench::bench::device

#endif // CONVBENCH_HAVE_CUDA

#if CONVBENCH_HAVE_CUDA
namespace convbench::bench::device {
void sync_stream(void *stream); // cudaStreamSynchronize
}
#endif
