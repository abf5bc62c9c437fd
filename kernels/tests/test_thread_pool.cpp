#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
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
        for (int64_t i = b; i < e; ++i)
          ++hits[size_t(i)];
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " i " << i;
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
  EXPECT_TRUE(ids.count(std::this_thread::get_id())); // the caller is one of them
}

TEST(ThreadPool, RethrowsAWorkersException) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(3,
                                 [](int64_t b, int64_t) {
                                   if (b > 0)
                                     throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  int64_t sum = 0; // still usable afterwards
  pool.parallel_for(1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum, 1);
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), std::invalid_argument); }

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(parse_cpu_list("0-3,7,9-10"), (std::vector<int>{0, 1, 2, 3, 7, 9, 10}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpu_list("12,0-1"), (std::vector<int>{0, 1, 12})); // sorted
}

// Planted fault seen caught: dropping the duplicate check let "0-3,2" through.
TEST(CpuList, RejectsBadListsWithOneLine) {
  for (const char *bad : {"", "a", "1-", "-2", "3-1", "0,,1", "0-3,2", "1,", "99999999", " 1"}) {
    try {
      parse_cpu_list(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument &e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos);
      EXPECT_NE(what.find("CPU list"), std::string::npos) << what;
    }
  }
}

TEST(Placement, DefaultsToTheAllowedCpusAndValidates) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const Placement p = make_placement(1, "", true);
  EXPECT_TRUE(p.pinned);
  EXPECT_EQ(p.cpus, std::vector<int>{allowed[0]});
  EXPECT_FALSE(make_placement(4, "", false).pinned);
  EXPECT_THROW(make_placement(int(allowed.size()) + 1, "", true), std::invalid_argument);
  EXPECT_THROW(make_placement(1, std::to_string(CPU_SETSIZE - 1), true), std::invalid_argument);
  EXPECT_THROW(make_placement(1, "x", true), std::invalid_argument);
}

// Planted fault seen caught: a worker that skipped pin_self ran on another CPU (with 2 CPUs busy).
TEST(ThreadPool, PinnedWorkersRunOnTheirCpusAndTheCallerIsRestored) {
  const std::vector<int> allowed = allowed_cpus();
  const int threads = int(allowed.size());
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  {
    // Reversed, so worker 0 (the caller) is moved off its usual first CPU.
    std::vector<int> cpus(allowed.rbegin(), allowed.rend());
    ThreadPool pool(threads, Placement{true, cpus});
    EXPECT_TRUE(pool.pinned());
    std::vector<int> seen(size_t(threads), -2);
    for (int rep = 0; rep < 20; ++rep) {
      pool.run_on_each([&](int w) { seen[size_t(w)] = sched_getcpu(); });
      for (int w = 0; w < threads; ++w) {
        EXPECT_EQ(pool.cpu_of(w), cpus[size_t(w)]);
        ASSERT_EQ(seen[size_t(w)], cpus[size_t(w)]) << "worker " << w << " rep " << rep;
      }
    }
  }
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

// Planted fault seen caught: allowed_cpus() read from the calling thread's mask at each call (a
// pinned pool's caller then saw one CPU).
TEST(ThreadPool, AllowedCpusStayTheProcesssWhileAPoolIsPinned) {
  const std::vector<int> allowed = allowed_cpus();
  ThreadPool pool(1, make_placement(1, "", true));
  EXPECT_EQ(allowed_cpus(), allowed);
  EXPECT_NO_THROW(make_placement(int(allowed.size()), "", true));
}

// Planted fault seen caught: the unpinned placement ignoring its list (workers left on every CPU).
TEST(ThreadPool, UnpinnedRunsAnywhereOrWithinItsList) {
  ThreadPool pool(2);
  EXPECT_FALSE(pool.pinned());
  EXPECT_EQ(pool.cpu_of(0), -1);
  const std::vector<int> allowed = allowed_cpus();
  const Placement within = make_placement(3, std::to_string(allowed.back()), false);
  EXPECT_FALSE(within.pinned);
  EXPECT_EQ(within.cpus, std::vector<int>{allowed.back()}); // 3 threads may share one CPU
  ThreadPool confined(3, within);
  std::vector<cpu_set_t> masks(3);
  confined.run_on_each([&](int w) { sched_getaffinity(0, sizeof(cpu_set_t), &masks[size_t(w)]); });
  for (const auto &m : masks) {
    EXPECT_EQ(CPU_COUNT(&m), 1);
    EXPECT_TRUE(CPU_ISSET(allowed.back(), &m));
  }
  EXPECT_THROW(make_placement(1, "x", false), std::invalid_argument);
}

TEST(ThreadPool, RunOnEachRunsEveryWorkerOnceAndIsNotCounted) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  pool.run_on_each([&](int w) {
    ++hits[size_t(w)];
    std::lock_guard<std::mutex> l(mu);
    ids.insert(std::this_thread::get_id());
  });
  for (auto &h : hits)
    EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(ids.size(), 3u);
  for (const auto &s : pool.stats())
    EXPECT_EQ(s.tasks, 0);
}

// Planted faults seen caught: busy time taken from the steady clock (busy_s == task_s under a
// sleeping chunk), and the slots swapped (the sleeper's time reported as worker 0's).
TEST(ThreadPool, StatsCountChunksBusyAndTaskTimePerWorker) {
  ThreadPool pool(2);
  pool.set_busy_time(true);
  pool.reset_stats();
  for (int rep = 0; rep < 3; ++rep)
    pool.parallel_for(2, [&](int64_t b, int64_t) {
      if (b == 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(40)); // not busy
      else {
        const auto t0 = std::chrono::steady_clock::now();
        volatile double x = 0;
        while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(2))
          x = x + 1;
      }
    });
  const auto st = pool.stats();
  ASSERT_EQ(st.size(), 2u);
  for (const auto &s : st) {
    EXPECT_EQ(s.tasks, 3);
    EXPECT_GE(s.first_cpu, 0);
    EXPECT_GE(s.last_cpu, 0);
    EXPECT_GE(s.task_s, s.busy_s * 0.99);
  }
  EXPECT_GE(st[1].task_s, 0.119);
  EXPECT_LT(st[1].busy_s, 0.5 * st[1].task_s); // sleeping is not busy
  EXPECT_GT(st[0].busy_s, 0.0);
  EXPECT_GT(imbalance(st), 1.2); // the sleeper is slowest
  pool.reset_stats();
  for (const auto &s : pool.stats())
    EXPECT_EQ(s.tasks, 0);
  pool.set_busy_time(false); // off: no clock read, busy_s stays 0
  pool.parallel_for(2, [](int64_t, int64_t) {});
  for (const auto &s : pool.stats())
    EXPECT_EQ(s.busy_s, 0.0);
}

TEST(ThreadPool, ImbalanceIsSlowestOverMean) {
  std::vector<ThreadPool::WorkerStats> st(3);
  st[0].tasks = st[1].tasks = 1;
  st[0].task_s = 1.0;
  st[1].task_s = 3.0; // st[2] ran nothing and is left out
  EXPECT_DOUBLE_EQ(imbalance(st), 1.5);
  EXPECT_EQ(imbalance({}), 0.0);
}

} // namespace
} // namespace convbench
