// Contention around a sample, from counters read before and after it: CPU pressure (PSI), steal,
// runnable tasks, the process's page faults, and for each worker its own context switches,
// migrations and run-queue wait. Each figure is null, with a reason in `unavailable`, where this
// machine's kernel does not expose it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/thread_pool.hpp"

namespace convbench::bench {

// Whole-system and whole-process counters at one instant.
struct SystemCounters {
  double wall_s = 0;                          // steady clock
  std::optional<uint64_t> psi_some_us;        // /proc/pressure/cpu "some" total
  std::optional<uint64_t> psi_full_us;        // "full" total (kernels >= 5.13)
  std::optional<uint64_t> busy_ticks;         // /proc/stat cpu: user+nice+system+irq+softirq+steal
  std::optional<uint64_t> steal_ticks;        // /proc/stat cpu: steal
  std::optional<uint64_t> total_ticks;        // busy + idle + iowait
  std::optional<int> procs_running;           // /proc/stat procs_running (includes our workers)
  int64_t minor_faults = 0, major_faults = 0; // getrusage(RUSAGE_SELF)
  double self_cpu_s = 0;                      // getrusage(RUSAGE_SELF) user + system, all threads
  nlohmann::json unavailable = nlohmann::json::object();
};
SystemCounters read_system_counters();

// One worker thread's own counters, read on that thread.
struct ThreadCounters {
  int worker = 0;
  int tid = 0;
  int cpu = -1;                                 // sched_getcpu
  int64_t voluntary_cs = 0, involuntary_cs = 0; // getrusage(RUSAGE_THREAD)
  double cpu_s = 0;                             // getrusage(RUSAGE_THREAD) user + system
  std::optional<uint64_t> run_ns;               // /proc/thread-self/schedstat: time on a CPU
  std::optional<uint64_t> wait_ns;              //   time runnable but waiting for a CPU
  std::optional<uint64_t> timeslices;           //   times it was given a CPU
  std::optional<uint64_t> migrations;           // /proc/thread-self/sched se.nr_migrations
  nlohmann::json unavailable = nlohmann::json::object();
};
ThreadCounters read_thread_counters(int worker); // on the calling thread

struct ContentionSnapshot {
  SystemCounters system;
  std::vector<ThreadCounters> threads; // one per worker, read on the worker
};
// Reads every worker's counters on that worker, then the system's. pool may be null.
ContentionSnapshot snapshot_contention(ThreadPool *pool);

struct ThreadContention {
  int worker = 0, tid = 0, cpu_before = -1, cpu_after = -1;
  int64_t voluntary_cs = 0, involuntary_cs = 0;
  double cpu_s = 0;
  std::optional<double> run_delay_s; // waited runnable for a CPU (schedstat)
  std::optional<int64_t> migrations; // se.nr_migrations
  nlohmann::json to_json() const;
};

// The difference between two snapshots of one sample.
struct Contention {
  double wall_s = 0;
  std::optional<double> psi_some_us, psi_full_us;
  std::optional<double> psi_some_share; // psi_some_us / wall: some task waited for a CPU
  std::optional<double> steal_share;    // steal ticks / all ticks (10 ms resolution)
  std::optional<int> procs_running;     // after the sample
  int64_t minor_faults = 0, major_faults = 0;
  std::vector<ThreadContention> threads;
  nlohmann::json unavailable = nlohmann::json::object();
  nlohmann::json to_json() const;
};
Contention contention_between(const ContentionSnapshot &before, const ContentionSnapshot &after);

} // namespace convbench::bench
