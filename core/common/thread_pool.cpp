#include "core/common/thread_pool.hpp"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace loom {
namespace {
thread_local bool tls_in_pool = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until done() or `limit` has passed; true when done() turned true while spinning.
// Each round ends in a yield: free when the core has nothing else to run, and when threads
// outnumber cores (other processes, the HTTP threads) the spinner steps aside for them.
template <class Done>
bool spin_until(Done done, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::yield();
  }
}

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
    pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  tls_in_pool = true;
  run_range(fn, n, num_threads_, 0);
  tls_in_pool = false;
  const auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(all_done, kSpin)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, all_done);
  }
}

void ThreadPool::worker_loop(int32_t index) {
  tls_in_pool = true;
  uint64_t seen = 0;
  for (;;) {
    const auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(started, kSpin)) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || started(); });
      if (stop_) return;
    }
    seen = generation_.load(std::memory_order_acquire);
    run_range(*job_, job_n_, num_threads_, index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may have stopped spinning: wake it under the mutex so the wake is not lost.
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace loom
