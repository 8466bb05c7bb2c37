// ThreadPool: every item runs exactly once, on the thread index it was given, whether the workers
// catch the job while spinning or have to be woken from sleep; nested calls run inline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/common/thread_pool.hpp"

namespace loom {
namespace {

// Runs parallel_for over n items and checks each item was visited once by a valid thread.
void expect_each_item_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::atomic<int> bad_thread{0};
  pool.parallel_for(n, [&](int64_t begin, int64_t end, int32_t thread) {
    if (thread < 0 || thread >= pool.num_threads()) ++bad_thread;
    for (int64_t i = begin; i < end; ++i) ++visits[static_cast<size_t>(i)];
  });
  EXPECT_EQ(bad_thread.load(), 0);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << "item " << i << " of " << n;
}

TEST(ThreadPool, EveryItemOnceForManySizes) {
  for (int32_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {1, 2, 3, 7, 8, 9, 100, 1001}) expect_each_item_once(pool, n);
  }
}

TEST(ThreadPool, BackToBackCallsWhileWorkersSpin) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int call = 0; call < 20000; ++call) {
    pool.parallel_for(6, [&](int64_t begin, int64_t end, int32_t) { sum += end - begin; });
  }
  EXPECT_EQ(sum.load(), 6 * 20000);
}

TEST(ThreadPool, CallsAfterTheWorkersFellAsleep) {
  ThreadPool pool(2);
  for (int call = 0; call < 20; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // longer than the spin
    expect_each_item_once(pool, 17);
  }
}

TEST(ThreadPool, NestedCallRunsInlineOnTheCallingThread) {
  ThreadPool pool(2);
  std::atomic<int> inner_items{0};
  std::atomic<int> inner_ranges{0};
  pool.parallel_for(2, [&](int64_t, int64_t, int32_t) {
    pool.parallel_for(5, [&](int64_t begin, int64_t end, int32_t thread) {
      EXPECT_EQ(thread, 0);  // inline: one range, index 0
      ++inner_ranges;
      inner_items += static_cast<int>(end - begin);
    });
  });
  EXPECT_EQ(inner_items.load(), 10);
  EXPECT_EQ(inner_ranges.load(), 2);
}

TEST(ThreadPool, CallersFromSeveralThreadsTakeTurns) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int call = 0; call < 2000; ++call)
        pool.parallel_for(4, [&](int64_t begin, int64_t end, int32_t) { sum += end - begin; });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), 3 * 2000 * 4);
}

}  // namespace
}  // namespace loom
