// A fixed pool of worker threads for the host arms: created once, outside any timed region.
#pragma once

#include <cstdint>
#include <functional>

namespace convbench {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; the calling thread is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // Splits [0, n) into at most size() contiguous chunks, runs fn(begin, end) on each, and returns
  // when all are done. The partition depends only on n and size().
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace convbench
