// One persistent pool of CPU worker threads, sized by [runtime] threads, shared by the executor's
// kernels and (through the host API's parallel_for) by every plugin. No thread is created or
// destroyed on the hot path.
//
// A forward pass makes ~100 parallel_for calls per step with microseconds of work between them,
// so a futex sleep + wake per call (tens of microseconds or more on a VM) would dominate a
// single-sequence decode. Workers and the caller therefore spin for a short while (kSpin) on
// atomics before falling back to the condition variables, which keeps an idle pool asleep.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom {

class ThreadPool {
 public:
  // fn(begin, end, thread_index) processes items [begin, end).
  using RangeFn = std::function<void(int64_t, int64_t, int32_t)>;

  explicit ThreadPool(int32_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t num_threads() const { return num_threads_; }

  // Splits [0, n) into one contiguous range per thread (the caller runs range 0) and returns when
  // all are done. A call made from inside a running parallel_for runs inline on the caller.
  void parallel_for(int64_t n, const RangeFn& fn);

 private:
  void worker_loop(int32_t index);

  int32_t num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  static constexpr std::chrono::microseconds kSpin{200};

  // job_ and job_n_ are written before generation_ is bumped (release) and read after it is
  // seen (acquire); generation_ and stop_ change under mutex_, so a sleeper never misses them.
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int32_t> pending_{0};
  bool stop_ = false;
  std::mutex submit_mutex_;  // one parallel_for at a time from outside the pool
};

}  // namespace loom
