// One persistent pool of CPU worker threads, sized by [runtime] threads, shared by the executor's
// kernels and (through the host API's parallel_for) by every plugin. No thread is created or
// destroyed on the hot path.
#pragma once

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
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
  uint64_t generation_ = 0;
  int32_t pending_ = 0;
  bool stop_ = false;
  std::mutex submit_mutex_;  // one parallel_for at a time from outside the pool
};

}  // namespace loom
