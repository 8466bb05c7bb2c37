// Splitting a kernel's rows over the thread pool, only when there is enough work to pay for it.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// Below this many scalar operations a kernel runs on the calling thread: waking the pool costs
// more than the work.
inline constexpr int64_t kMinParallelWork = 1 << 15;

// Runs fn(begin, end) over [0, n_items) on the pool (or inline when pool is null or the work,
// n_items * work_per_item, is small). The split never changes results: items are independent.
template <class Fn>
void parallel_rows(ThreadPool* pool, int64_t n_items, int64_t work_per_item, Fn&& fn) {
  if (n_items <= 0) return;
  if (pool == nullptr || pool->num_threads() == 1 || n_items == 1 || n_items * work_per_item < kMinParallelWork) {
    fn(int64_t{0}, n_items);
    return;
  }
  pool->parallel_for(n_items, [&](int64_t begin, int64_t end, int32_t) { fn(begin, end); });
}

}  // namespace loom::cpu
