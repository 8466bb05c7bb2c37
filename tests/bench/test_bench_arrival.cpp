// Arrival offsets: all at once for an infinite rate; gamma gaps whose mean is 1/rate and whose
// coefficient of variation is 1/sqrt(burstiness); the same seed gives the same schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/common/error.hpp"
#include "tools/bench/arrival_process.hpp"

namespace loom::bench {
namespace {

struct GapStats {
  double mean = 0, cv = 0;
};

GapStats gap_stats(const std::vector<double>& offsets) {
  std::vector<double> gaps;
  for (size_t i = 1; i < offsets.size(); ++i) gaps.push_back(offsets[i] - offsets[i - 1]);
  GapStats s;
  for (const double g : gaps) s.mean += g;
  s.mean /= static_cast<double>(gaps.size());
  double var = 0;
  for (const double g : gaps) var += (g - s.mean) * (g - s.mean);
  s.cv = std::sqrt(var / static_cast<double>(gaps.size())) / s.mean;
  return s;
}

TEST(ArrivalProcess, InfiniteRateSendsEverythingAtOnce) {
  EXPECT_EQ(arrival_offsets(3, {0.0, 1.0, 7}), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(arrival_offsets(2, {std::numeric_limits<double>::infinity(), 1.0, 7}),
            (std::vector<double>{0, 0}));
}

TEST(ArrivalProcess, GammaGapsHaveTheRateAndTheBurstiness) {
  for (const double burstiness : {0.25, 1.0, 4.0}) {
    const std::vector<double> offsets = arrival_offsets(20001, {8.0, burstiness, 3});
    EXPECT_EQ(offsets[0], 0.0);
    for (size_t i = 1; i < offsets.size(); ++i) ASSERT_GE(offsets[i], offsets[i - 1]);
    const GapStats s = gap_stats(offsets);
    EXPECT_NEAR(s.mean, 1.0 / 8.0, 0.125 * 0.05) << burstiness;
    EXPECT_NEAR(s.cv, 1.0 / std::sqrt(burstiness), 0.1 / std::sqrt(burstiness)) << burstiness;
  }
}

TEST(ArrivalProcess, SeededAndChecked) {
  EXPECT_EQ(arrival_offsets(50, {2.0, 1.0, 11}), arrival_offsets(50, {2.0, 1.0, 11}));
  EXPECT_NE(arrival_offsets(50, {2.0, 1.0, 11}), arrival_offsets(50, {2.0, 1.0, 12}));
  EXPECT_THROW(arrival_offsets(5, {2.0, 0.0, 1}), Error);
}

}  // namespace
}  // namespace loom::bench
