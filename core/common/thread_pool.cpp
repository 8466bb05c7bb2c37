#include "core/common/thread_pool.hpp"

#include <algorithm>

namespace loom {
namespace {
thread_local bool tls_in_pool = false;

void run_range(const ThreadPool::RangeFn& fn, int64_t n, int32_t threads, int32_t index) {
  const int64_t chunk = (n + threads - 1) / threads;
  const int64_t begin = std::min<int64_t>(n, chunk * index);
  const int64_t end = std::min<int64_t>(n, begin + chunk);
  if (begin < end) fn(begin, end, index);
}
}  // namespace

ThreadPool::ThreadPool(int32_t num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int32_t i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const RangeFn& fn) {
  if (n <= 0) return;
  if (tls_in_pool || num_threads_ == 1 || n == 1) {
    fn(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> submit(submit_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_ = num_threads_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  tls_in_pool = true;
  run_range(fn, n, num_threads_, 0);
  tls_in_pool = false;
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int32_t index) {
  tls_in_pool = true;
  uint64_t seen = 0;
  for (;;) {
    const RangeFn* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    run_range(*job, n, num_threads_, index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace loom
