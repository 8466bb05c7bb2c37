#include "tools/bench/model/stream_bandwidth.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

namespace loom::bench {

double read_bandwidth(ThreadPool& threads, int64_t bytes, int32_t passes) {
  const int64_t n = bytes / static_cast<int64_t>(sizeof(uint64_t));
  std::vector<uint64_t> buf(static_cast<size_t>(n));
  // First touch from the pool so pages are spread as the pool will read them.
  threads.parallel_for(n, [&](int64_t b, int64_t e, int32_t) {
    for (int64_t i = b; i < e; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
  });
  std::atomic<uint64_t> sink{0};
  double best = 0.0;
  for (int32_t p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    threads.parallel_for(n, [&](int64_t b, int64_t e, int32_t) {
      // Four independent integer sums: vectorised, and never limited by an add latency chain.
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      const uint64_t* d = buf.data();
      int64_t i = b;
      for (; i + 4 <= e; i += 4) {
        s0 += d[i];
        s1 += d[i + 1];
        s2 += d[i + 2];
        s3 += d[i + 3];
      }
      for (; i < e; ++i) s0 += d[i];
      sink.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n) * sizeof(uint64_t) / s);
  }
  if (sink.load() == 1) best += 0.0;  // keeps the sums observable
  return best;
}

}  // namespace loom::bench
