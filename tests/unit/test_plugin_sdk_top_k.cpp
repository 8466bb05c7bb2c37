// loom/sdk_top_k.hpp, the one order of a head's selection: larger value first, the lower index on
// ties, NaN after every number; select_top_k over a row and select_top_k_of over candidates.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "loom/sdk_top_k.hpp"

namespace loom::sdk {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SdkTopK, RanksByValueThenLowerIndexWithNaNLast) {
  EXPECT_TRUE(ranks_before(2.0f, 9, 1.0f, 0));
  EXPECT_TRUE(ranks_before(1.0f, 3, 1.0f, 4));
  EXPECT_FALSE(ranks_before(1.0f, 4, 1.0f, 3));
  EXPECT_TRUE(ranks_before(-kInf, 9, kNaN, 0));
  EXPECT_TRUE(ranks_before(kNaN, 1, kNaN, 2));
  EXPECT_FALSE(ranks_before(kNaN, 0, -1e30f, 5));
  EXPECT_TRUE(ranks_before(0.0f, 1, -0.0f, 2));  // equal values: the lower index
  EXPECT_FALSE(ranks_before(-0.0f, 2, 0.0f, 1));
}

TEST(SdkTopK, SelectsTheBestOfARowInRankOrder) {
  const std::vector<float> row = {1.0f, kNaN, 3.0f, 3.0f, -kInf, 7.0f, 3.0f, kInf, 0.5f};
  std::vector<int32_t> ids(5);
  std::vector<float> values(5);
  select_top_k(row.data(), static_cast<int64_t>(row.size()), 5, ids.data(), values.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{7, 5, 2, 3, 6}));
  EXPECT_EQ(values, (std::vector<float>{kInf, 7.0f, 3.0f, 3.0f, 3.0f}));
  // Every entry: NaN after -inf.
  std::vector<int32_t> all(row.size());
  std::vector<float> all_values(row.size());
  select_top_k(row.data(), static_cast<int64_t>(row.size()), static_cast<int32_t>(row.size()), all.data(),
               all_values.data());
  EXPECT_EQ(all, (std::vector<int32_t>{7, 5, 2, 3, 6, 0, 8, 4, 1}));
  int32_t one = -1;
  float best = 0.0f;
  select_top_k(row.data(), static_cast<int64_t>(row.size()), 1, &one, &best);
  EXPECT_EQ(one, 7);
}

TEST(SdkTopK, SelectsAmongCandidatesInPlace) {
  // Candidates in any order, as a screen finds them: ids with their values.
  std::vector<int32_t> ids = {40, 3, 17, 8, 25, 2};
  std::vector<float> values = {0.5f, 2.0f, 2.0f, kNaN, 9.0f, 2.0f};
  select_top_k_of(ids.data(), values.data(), static_cast<int64_t>(ids.size()), 4);
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + 4), (std::vector<int32_t>{25, 2, 3, 17}));
  EXPECT_EQ(std::vector<float>(values.begin(), values.begin() + 4), (std::vector<float>{9.0f, 2.0f, 2.0f, 2.0f}));
}

}  // namespace
}  // namespace loom::sdk
