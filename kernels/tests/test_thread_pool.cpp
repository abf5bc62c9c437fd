#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "convbench/thread_pool.hpp"

namespace convbench {
namespace {

TEST(ThreadPool, CoversEveryIndexOnceInAtMostSizeChunks) {
  for (int threads : {1, 2, 3, 8, 16}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 5, 16, 17, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> chunks{0};
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        ++chunks;
        for (int64_t i = b; i < e; ++i) ++hits[size_t(i)];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " i " << i;
      EXPECT_LE(chunks.load(), threads);
      EXPECT_EQ(chunks.load(), n < threads ? n : threads);
    }
  }
}

TEST(ThreadPool, PartitionDependsOnlyOnNAndSize) {
  auto partition = [](int threads) {
    ThreadPool pool(threads);
    std::mutex mu;
    std::set<std::pair<int64_t, int64_t>> parts;
    pool.parallel_for(37, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> l(mu);
      parts.insert({b, e});
    });
    return parts;
  };
  EXPECT_EQ(partition(8), partition(8));
  const auto p3 = partition(3);
  EXPECT_EQ(p3, (std::set<std::pair<int64_t, int64_t>>{{0, 12}, {12, 24}, {24, 37}}));
}

TEST(ThreadPool, RunsOnSeveralThreads) {
  ThreadPool pool(4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  pool.parallel_for(4, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> l(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_TRUE(ids.count(std::this_thread::get_id()));  // the caller is one of them
}

TEST(ThreadPool, RethrowsAWorkersException) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(3,
                                 [](int64_t b, int64_t) {
                                   if (b > 0) throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  int64_t sum = 0;  // still usable afterwards
  pool.parallel_for(1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum, 1);
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), std::invalid_argument); }

}  // namespace
}  // namespace convbench
