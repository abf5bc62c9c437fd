// bench's one clock for wall time outside a timed call: steady (monotonic) seconds since an
// arbitrary epoch, for differences only. The timed calls themselves are clocked by Google
// Benchmark (host arms) and CUDA events (device arms) in measurement/.
#pragma once

#include <chrono>

namespace convbench::bench {

inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace convbench::bench
