#include "convbench/thread_pool.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace convbench {

// Workers sleep on a generation counter; parallel_for publishes one job, every worker whose chunk
// index exists runs it, and the caller runs chunk 0 and waits for the rest.
struct ThreadPool::Impl {
  int threads = 1;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable wake;
  std::condition_variable done;
  std::mutex call_mu;  // one parallel_for at a time
  uint64_t generation = 0;
  bool stopping = false;
  int pending = 0;
  int64_t n = 0;
  int chunks = 0;
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  std::exception_ptr error;

  void run_chunk(int c) {
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    try {
      if (begin < end) (*fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  }

  void worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        wake.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping) return;
        seen = generation;
        if (index >= chunks) continue;
      }
      run_chunk(index);
      std::lock_guard<std::mutex> lock(mu);
      if (--pending == 0) done.notify_one();
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(new Impl) {
  if (threads < 1) {
    delete impl_;
    throw std::invalid_argument("ThreadPool: threads must be >= 1, got " +
                                std::to_string(threads));
  }
  impl_->threads = threads;
  for (int i = 1; i < threads; ++i) impl_->workers.emplace_back([this, i] { impl_->worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  for (auto& t : impl_->workers) t.join();
  delete impl_;
}

int ThreadPool::size() const { return impl_->threads; }

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> call(impl_->call_mu);
  const int chunks = int(n < impl_->threads ? n : impl_->threads);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->n = n;
    impl_->chunks = chunks;
    impl_->fn = &fn;
    impl_->error = nullptr;
    impl_->pending = chunks - 1;
    ++impl_->generation;
  }
  if (chunks > 1) impl_->wake.notify_all();
  impl_->run_chunk(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->done.wait(lock, [&] { return impl_->pending == 0; });
    error = impl_->error;
    impl_->fn = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace convbench
