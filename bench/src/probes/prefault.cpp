#include "probes/prefault.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>

#include "core/clock.hpp"

namespace convbench::bench {

PrefaultResult prefault(void *data, size_t bytes, ThreadPool *pool) {
  PrefaultResult r;
  if (!data || bytes == 0)
    return r;
  const long ps = sysconf(_SC_PAGESIZE);
  const size_t page = size_t(ps > 0 ? ps : 4096);
  volatile unsigned char *base = static_cast<volatile unsigned char *>(data);
  // Page i of the buffer starts at its first byte (i = 0) or at a page boundary.
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first_page = start / page * page;
  const size_t pages = size_t((start + bytes - 1) / page * page - first_page) / page + 1;
  auto touch = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const size_t off = i == 0 ? 0 : size_t(first_page + size_t(i) * page - start);
      base[off] = base[off];
    }
  };
  const double t0 = steady_seconds();
  if (pool)
    pool->parallel_for(int64_t(pages), touch);
  else
    touch(0, int64_t(pages));
  r.seconds = steady_seconds() - t0;
  r.pages = pages;
  return r;
}

} // namespace convbench::bench
