#include "core/device_gate.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>

#include "convbench/cuda_conv.hpp"
#include "convbench/lease/nvml_gpu.hpp"

namespace convbench::bench {

namespace {

VisibleGpu read_visible_gpu() {
  VisibleGpu g;
#if CONVBENCH_HAVE_CUDA
  const lease::NvmlGpu nv = lease::NvmlGpu::cuda_device0();
  if (!nv.ok()) {
    g.why_not = nv.why_not();
    return g;
  }
  std::string why;
  const auto uuid = nv.uuid(&why);
  if (!uuid) {
    g.why_not = why;
    return g;
  }
  g.present = true;
  g.uuid = *uuid;
  g.name = nv.name(nullptr).value_or("");
  if (const auto m = nv.memory(nullptr)) {
    g.total_bytes = double(m->total_bytes);
    g.free_bytes = double(m->free_bytes);
  }
#else
  g.present = cuda::device_available(&g.why_not); // no CUDA here: says so, calls nothing
#endif
  return g;
}

std::atomic<bool> g_guarded{false}, g_open{false};
std::mutex g_trace_mutex;

void trace(const std::string &line) {
  const char *path = std::getenv("CONVBENCH_TEST_DEVICE_TRACE");
  if (!path || !*path)
    return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  const std::string l = line + "\n";
  (void)!::write(fd, l.data(), l.size());
  ::close(fd);
}

} // namespace

const VisibleGpu &visible_gpu() {
  static const VisibleGpu g = read_visible_gpu();
  return g;
}

bool gpu_visible(std::string *why_not) {
  const VisibleGpu &g = visible_gpu();
  if (!g.present && why_not)
    *why_not = g.why_not;
  return g.present;
}

double visible_gpu_free_bytes() {
  const VisibleGpu &g = visible_gpu();
  if (!g.present)
    return 0;
  const auto m = lease::NvmlGpu::by_uuid(g.uuid).memory(nullptr);
  return m ? double(m->free_bytes) : 0;
}

namespace device_gate {

void guard() { g_guarded = true; }

void lease_step(const std::string &step) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  trace(step);
}

void open() { g_open = true; }

bool is_open() { return g_open || !g_guarded; }

void enter(const std::string &what) {
  if (!is_open())
    throw std::logic_error("device call (" + what +
                           ") before the lease is held and verified: a run waiting for its lease "
                           "would show on the GPU as a foreign process");
  if (!std::getenv("CONVBENCH_TEST_DEVICE_TRACE"))
    return;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  if (seen.insert(what).second)
    trace("device " + what);
}

} // namespace device_gate

} // namespace convbench::bench
