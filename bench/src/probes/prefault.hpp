// Touch every page of a buffer before timing, so that no sample pays for a first-touch page fault
// (or a page the kernel reclaimed since). With a pool, each worker touches its own partition.
#pragma once

#include <cstddef>

#include "convbench/thread_pool.hpp"

namespace convbench::bench {

struct PrefaultResult {
  size_t pages = 0;
  double seconds = 0;
};

// Reads one byte of every page and writes it back unchanged: the contents stay as they were, and
// a page that was never written gets its own frame. The buffer must be writable and not in use.
PrefaultResult prefault(void *data, size_t bytes, ThreadPool *pool = nullptr);

} // namespace convbench::bench
