// Histogram: le-inclusive buckets, cumulative snapshot, exact sum and count, bad bounds refused,
// and concurrent observers losing nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/histogram.hpp"

namespace loom {
namespace {

TEST(Histogram, CountsEachObservationInTheFirstBucketItFits) {
  Histogram h({1.0, 2.0, 5.0});
  for (double v : {0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, -1.0}) h.observe(v);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.upper_bounds, (std::vector<double>{1.0, 2.0, 5.0}));
  // <=1: 0.5, 1.0, -1.0; <=2: +1.5, 2.0; <=5: +3.0, 5.0; +Inf: +7.0.
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{3, 5, 7}));
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.sum, 0.5 + 1.0 + 1.5 + 2.0 + 3.0 + 5.0 + 7.0 - 1.0);
}

TEST(Histogram, EmptyHistogramIsAllZero) {
  const HistogramSnapshot s = Histogram({0.1, 0.2}).snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.sum, 0.0);
}

TEST(Histogram, NoBoundsMeansOnlyTheInfBucket) {
  Histogram h({});
  h.observe(4.0);
  h.observe(6.0);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_TRUE(s.cumulative.empty());
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.sum, 10.0);
}

TEST(Histogram, NanIsIgnored) {
  Histogram h({1.0});
  h.observe(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(h.snapshot().count, 0u);
  EXPECT_EQ(h.snapshot().sum, 0.0);
}

TEST(Histogram, RefusesBoundsThatAreNotStrictlyIncreasingAndFinite) {
  EXPECT_THROW(Histogram({1.0, 1.0}), Error);
  EXPECT_THROW(Histogram({2.0, 1.0}), Error);
  EXPECT_THROW(Histogram({1.0, std::numeric_limits<double>::infinity()}), Error);
}

TEST(Histogram, ConcurrentObserversLoseNothing) {
  Histogram h({10.0, 100.0});
  constexpr int kThreads = 4, kEach = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kEach; ++i) h.observe(t == 0 ? 1.0 : 50.0);
    });
  for (auto& th : threads) th.join();
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{kEach, kThreads * kEach}));
  EXPECT_EQ(s.sum, 1.0 * kEach + 50.0 * (kThreads - 1) * kEach);  // exact: integers in a double
}

}  // namespace
}  // namespace loom
