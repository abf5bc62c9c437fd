// A fixed pool of worker threads for the host arms: created once, outside any timed region.
// Optionally pinned, one worker per CPU, so that which CPU ran which partition is known and
// does not change between samples; per-worker task statistics say how long each partition took.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace convbench {

// Parses a CPU list such as "0-7,12" (the kernel's cpulist format) into ascending, distinct CPU
// numbers. Throws std::invalid_argument with one line naming the bad part.
std::vector<int> parse_cpu_list(const std::string &list);

// The CPUs this process may run on (its affinity mask when the program started), ascending.
std::vector<int> allowed_cpus();

// Where the workers run. Pinned: worker i on cpus[i]. Unpinned: wherever the scheduler puts them
// (kept so the effect of pinning can be measured), within cpus when it is not empty.
struct Placement {
  bool pinned = false;
  std::vector<int> cpus;
};

// The placement for `threads` workers: pinned to the first `threads` CPUs of `cpu_list` (empty:
// allowed_cpus()), or unpinned within the list (empty: anywhere). Throws std::invalid_argument
// with one line when the list does not parse, names a CPU outside the affinity mask, or (pinned)
// has fewer CPUs than threads.
Placement make_placement(int threads, const std::string &cpu_list, bool pinned);

class ThreadPool {
public:
  explicit ThreadPool(int threads); // unpinned; threads >= 1; the calling thread is worker 0
  // Pinned when placement.pinned: worker i (the calling thread is worker 0) runs on cpus[i];
  // otherwise every worker runs within placement.cpus (when given). The calling thread's previous
  // affinity is restored by the destructor. Call parallel_for from the
  // thread that constructed the pool. Throws std::invalid_argument / std::runtime_error when a
  // worker cannot be pinned.
  ThreadPool(int threads, const Placement &placement);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const;
  bool pinned() const;
  int cpu_of(int worker) const; // the CPU a pinned worker runs on; -1 when unpinned

  // Splits [0, n) into at most size() contiguous chunks, runs fn(begin, end) on each, and returns
  // when all are done. The partition depends only on n and size(); chunk c runs on worker c.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)> &fn);

  // Runs fn(worker) once on every worker at the same time (for probes taken on each worker's
  // CPU); not counted in the task statistics.
  void run_on_each(const std::function<void(int worker)> &fn);

  // What each worker's chunks of parallel_for cost since the last reset_stats(). Read and reset
  // between calls, from the calling thread.
  struct WorkerStats {
    int worker = 0;
    int64_t tasks = 0;   // chunks run
    int first_cpu = -1;  // sched_getcpu at the first chunk's start
    int last_cpu = -1;   // at the last chunk's end
    int cpu_changes = 0; // chunks that started or ended on another CPU than the one before
    double busy_s = 0;   // CLOCK_THREAD_CPUTIME_ID inside the chunks
    double task_s = 0;   // steady clock inside the chunks (busy + time preempted)
  };
  std::vector<WorkerStats> stats() const;
  void reset_stats();
  // busy_s reads CLOCK_THREAD_CPUTIME_ID twice per chunk, a system call (about 0.7 us each on a
  // VM) inside the timed region, so it is off unless asked for; a worker's CPU time per sample,
  // read outside the timed region, is in the contention probe (getrusage RUSAGE_THREAD).
  void set_busy_time(bool on);

private:
  struct Impl;
  Impl *impl_;
};

// Slowest worker's task time over the mean, across workers that ran a chunk (1 = balanced);
// 0 when none ran.
double imbalance(const std::vector<ThreadPool::WorkerStats> &stats);

} // namespace convbench
