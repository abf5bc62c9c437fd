#include "convbench/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace convbench {

namespace {

int parse_cpu_number(const std::string &s, const std::string &list) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("CPU list '" + list + "': '" + s +
                                "' is not a CPU number (expected e.g. 0-7,12)");
  return std::stoi(s);
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Pinned: worker i on cpus[i] alone. Unpinned with a CPU list: every worker may run on any CPU of
// the list (the same CPUs as pinned, so the two modes can be compared). Returns an error or "".
std::string place_self(const Placement &p, int worker) {
  if (!p.pinned && p.cpus.empty())
    return "";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (p.pinned)
    CPU_SET(p.cpus[size_t(worker)], &set);
  else
    for (int c : p.cpus)
      CPU_SET(c, &set);
  const int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (!err)
    return "";
  return "cannot place worker " + std::to_string(worker) + " on CPU" +
         (p.pinned ? " " + std::to_string(p.cpus[size_t(worker)]) : "s of the list") + ": " +
         std::strerror(err);
}

} // namespace

std::vector<int> parse_cpu_list(const std::string &list) {
  if (list.empty())
    throw std::invalid_argument("CPU list is empty (expected e.g. 0-7,12)");
  std::set<int> cpus;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos)
      comma = list.size();
    const std::string part = list.substr(start, comma - start);
    const size_t dash = part.find('-');
    int lo, hi;
    if (dash == std::string::npos) {
      lo = hi = parse_cpu_number(part, list);
    } else {
      lo = parse_cpu_number(part.substr(0, dash), list);
      hi = parse_cpu_number(part.substr(dash + 1), list);
      if (hi < lo)
        throw std::invalid_argument("CPU list '" + list + "': range '" + part + "' runs backwards");
    }
    if (hi >= CPU_SETSIZE)
      throw std::invalid_argument("CPU list '" + list + "': CPU " + std::to_string(hi) +
                                  " is beyond " + std::to_string(CPU_SETSIZE - 1));
    for (int c = lo; c <= hi; ++c)
      if (!cpus.insert(c).second)
        throw std::invalid_argument("CPU list '" + list + "': CPU " + std::to_string(c) +
                                    " is listed twice");
    start = comma + 1;
  }
  return {cpus.begin(), cpus.end()};
}

namespace {
std::vector<int> read_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set))
      cpus.push_back(c);
  return cpus;
}
const std::vector<int> &process_cpus() {
  static const std::vector<int> cpus = read_affinity();
  return cpus;
}
// Read at load time: a pinned pool narrows its calling thread's mask, and sched_getaffinity
// answers for the calling thread, not the process.
[[maybe_unused]] const bool g_process_cpus_read = !process_cpus().empty();
} // namespace

std::vector<int> allowed_cpus() { return process_cpus(); }

Placement make_placement(int threads, const std::string &cpu_list, bool pinned) {
  Placement p;
  p.pinned = pinned;
  if (!pinned && cpu_list.empty())
    return p;
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> cpus = cpu_list.empty() ? allowed : parse_cpu_list(cpu_list);
  for (int c : cpus)
    if (!std::binary_search(allowed.begin(), allowed.end(), c))
      throw std::invalid_argument("CPU list '" + cpu_list + "': CPU " + std::to_string(c) +
                                  " is not online or not in this process's affinity mask");
  if (!pinned) {
    p.cpus = cpus;
    return p;
  }
  if (threads < 1 || size_t(threads) > cpus.size())
    throw std::invalid_argument(std::to_string(threads) + " threads need as many CPUs; the list '" +
                                (cpu_list.empty() ? std::string("(allowed CPUs)") : cpu_list) +
                                "' has " + std::to_string(cpus.size()));
  cpus.resize(size_t(threads));
  p.cpus = cpus;
  return p;
}

// Workers sleep on a generation counter; parallel_for publishes one job, every worker whose chunk
// index exists runs it, and the caller runs chunk 0 and waits for the rest.
struct ThreadPool::Impl {
  // One cache line per worker: each worker writes only its own slot while a job runs.
  struct alignas(64) Slot {
    WorkerStats s;
  };
  int threads = 1;
  Placement placement;
  cpu_set_t caller_mask{};
  bool caller_mask_saved = false;
  std::vector<std::thread> workers;
  std::vector<Slot> slots;
  std::mutex mu;
  std::condition_variable wake;
  std::condition_variable done;
  std::mutex call_mu; // one parallel_for at a time
  uint64_t generation = 0;
  bool stopping = false;
  int pending = 0;
  int started = 0; // workers that have pinned themselves (or failed to)
  std::string start_error;
  int64_t n = 0;
  int chunks = 0;
  bool record = true;
  bool busy_time = false;
  const std::function<void(int64_t, int64_t)> *fn = nullptr;
  std::exception_ptr error;

  void run_chunk(int c) {
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    const bool rec = record;
    int cpu0 = 0;
    double busy0 = 0;
    std::chrono::steady_clock::time_point t0;
    if (rec) {
      cpu0 = sched_getcpu();
      if (busy_time)
        busy0 = thread_cpu_s();
      t0 = std::chrono::steady_clock::now();
    }
    try {
      if (begin < end)
        (*fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error)
        error = std::current_exception();
    }
    if (!rec)
      return;
    const auto t1 = std::chrono::steady_clock::now();
    const double busy1 = busy_time ? thread_cpu_s() : 0;
    const int cpu1 = sched_getcpu();
    WorkerStats &s = slots[size_t(c)].s;
    if (s.tasks == 0)
      s.first_cpu = cpu0;
    else if (cpu0 != s.last_cpu)
      ++s.cpu_changes;
    if (cpu1 != cpu0)
      ++s.cpu_changes;
    s.last_cpu = cpu1;
    ++s.tasks;
    s.busy_s += busy1 - busy0;
    s.task_s += std::chrono::duration<double>(t1 - t0).count();
  }

  void worker_loop(int index) {
    if (places()) {
      const std::string err = place_self(placement, index);
      std::lock_guard<std::mutex> lock(mu);
      if (!err.empty() && start_error.empty())
        start_error = err;
      ++started;
      done.notify_all();
    }
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        wake.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping)
          return;
        seen = generation;
        if (index >= chunks)
          continue;
      }
      run_chunk(index);
      std::lock_guard<std::mutex> lock(mu);
      if (--pending == 0)
        done.notify_one();
    }
  }

  bool places() const { return placement.pinned || !placement.cpus.empty(); }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    wake.notify_all();
    for (auto &t : workers)
      t.join();
    workers.clear();
    if (caller_mask_saved)
      pthread_setaffinity_np(pthread_self(), sizeof(caller_mask), &caller_mask);
  }

  void run(int64_t n_, int chunks_, bool record_, const std::function<void(int64_t, int64_t)> &f);
};

ThreadPool::ThreadPool(int threads) : ThreadPool(threads, Placement{}) {}

ThreadPool::ThreadPool(int threads, const Placement &placement) : impl_(new Impl) {
  if (threads < 1) {
    delete impl_;
    throw std::invalid_argument("ThreadPool: threads must be >= 1, got " + std::to_string(threads));
  }
  if (placement.pinned && placement.cpus.size() < size_t(threads)) {
    delete impl_;
    throw std::invalid_argument("ThreadPool: " + std::to_string(threads) +
                                " pinned threads need as many CPUs, got " +
                                std::to_string(placement.cpus.size()));
  }
  impl_->threads = threads;
  impl_->placement = placement;
  impl_->slots.resize(size_t(threads));
  reset_stats();
  if (impl_->places()) {
    impl_->caller_mask_saved = pthread_getaffinity_np(pthread_self(), sizeof(impl_->caller_mask),
                                                      &impl_->caller_mask) == 0;
    impl_->start_error = place_self(placement, 0);
  }
  for (int i = 1; i < threads; ++i)
    impl_->workers.emplace_back([this, i] { impl_->worker_loop(i); });
  if (impl_->places()) {
    std::string err;
    {
      std::unique_lock<std::mutex> lock(impl_->mu);
      impl_->done.wait(lock, [&] { return impl_->started == threads - 1; });
      err = impl_->start_error;
    }
    if (!err.empty()) {
      impl_->stop_workers();
      delete impl_;
      throw std::runtime_error("ThreadPool: " + err);
    }
  }
}

ThreadPool::~ThreadPool() {
  impl_->stop_workers();
  delete impl_;
}

int ThreadPool::size() const { return impl_->threads; }
bool ThreadPool::pinned() const { return impl_->placement.pinned; }
int ThreadPool::cpu_of(int worker) const {
  if (!impl_->placement.pinned || worker < 0 || worker >= impl_->threads)
    return -1;
  return impl_->placement.cpus[size_t(worker)];
}

void ThreadPool::Impl::run(int64_t n_, int chunks_, bool record_,
                           const std::function<void(int64_t, int64_t)> &f) {
  std::lock_guard<std::mutex> call(call_mu);
  {
    std::lock_guard<std::mutex> lock(mu);
    n = n_;
    chunks = chunks_;
    record = record_;
    fn = &f;
    error = nullptr;
    pending = chunks_ - 1;
    ++generation;
  }
  if (chunks_ > 1)
    wake.notify_all();
  run_chunk(0);
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(mu);
    done.wait(lock, [&] { return pending == 0; });
    err = error;
    fn = nullptr;
  }
  if (err)
    std::rethrow_exception(err);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  impl_->run(n, int(n < impl_->threads ? n : impl_->threads), true, fn);
}

void ThreadPool::run_on_each(const std::function<void(int worker)> &fn) {
  const std::function<void(int64_t, int64_t)> each = [&](int64_t b, int64_t) { fn(int(b)); };
  impl_->run(impl_->threads, impl_->threads, false, each);
}

std::vector<ThreadPool::WorkerStats> ThreadPool::stats() const {
  std::vector<WorkerStats> out;
  out.reserve(impl_->slots.size());
  for (const auto &slot : impl_->slots)
    out.push_back(slot.s);
  return out;
}

void ThreadPool::set_busy_time(bool on) { impl_->busy_time = on; }

void ThreadPool::reset_stats() {
  for (size_t i = 0; i < impl_->slots.size(); ++i) {
    impl_->slots[i].s = WorkerStats{};
    impl_->slots[i].s.worker = int(i);
  }
}

double imbalance(const std::vector<ThreadPool::WorkerStats> &stats) {
  double sum = 0, slowest = 0;
  int ran = 0;
  for (const auto &s : stats)
    if (s.tasks > 0) {
      sum += s.task_s;
      slowest = std::max(slowest, s.task_s);
      ++ran;
    }
  if (ran == 0 || sum <= 0)
    return 0;
  return slowest / (sum / ran);
}

} // namespace convbench
