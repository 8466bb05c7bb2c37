// The measured cost of prompt-free steps by row count (core/engine/row_cost_table.hpp): nothing
// before the first sample, a count's running mean, interpolation between measured counts, the
// caller's per-row price outside them (bounded below), and steps outside the table ignored.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/engine/row_cost_table.hpp"

namespace loom {
namespace {

TEST(RowCostTable, NothingBeforeTheFirstSample) {
  RowCostTable t;
  EXPECT_FALSE(t.predict_us(1, 2000.0).has_value());
  EXPECT_FALSE(t.measured(4));
  t.observe(4, 12000);
  EXPECT_TRUE(t.measured(4));
  EXPECT_FALSE(t.measured(3));
  EXPECT_EQ(t.predict_us(4, 2000.0), 12000.0);
  EXPECT_FALSE(t.predict_us(0, 2000.0).has_value());
  EXPECT_EQ(t.samples(), 1);
}

TEST(RowCostTable, BelowTheSmallestMeasuredCountEachRowFewerTakesItsPriceOff) {
  // Drafting on for every request: only 15-row verifications measured, 39 ms.
  RowCostTable t;
  t.observe(15, 39000);
  EXPECT_EQ(t.predict_us(3, 1800.0), 17400.0);  // 39000 - 12 * 1800
  EXPECT_EQ(t.predict_us(3, 3000.0), 7800.0);   // not under 39000 * 3 / 15
  EXPECT_EQ(t.predict_us(14, 0.0), 39000.0);
}

TEST(RowCostTable, ARowCountKeepsARunningMeanStartingAtItsFirstSample) {
  RowCostTable t;
  t.observe(5, 13000);
  t.observe(5, 21000);  // 13000 + (21000 - 13000) / 8
  EXPECT_EQ(t.predict_us(5, 0.0), 14000.0);
  t.observe(5, 6000);  // 14000 + (6000 - 14000) / 8
  EXPECT_EQ(t.predict_us(5, 0.0), 13000.0);
}

TEST(RowCostTable, InterpolatesBetweenMeasuredCountsAndPricesRowsAboveTheLargest) {
  // A decode step bending where its GEMMs turn compute-bound: 1 row 10 ms, 8 rows 17 ms, then
  // the caller's 2.3 ms a row (a prompt token's cost).
  RowCostTable t;
  t.observe(8, 17000);
  t.observe(1, 10000);
  EXPECT_EQ(t.predict_us(1, 2300.0), 10000.0);
  EXPECT_EQ(t.predict_us(5, 2300.0), 14000.0);   // 10000 + 7000 * 4 / 7
  EXPECT_EQ(t.predict_us(8, 2300.0), 17000.0);
  EXPECT_EQ(t.predict_us(20, 2300.0), 44600.0);  // 17000 + 12 * 2300
  EXPECT_EQ(t.predict_us(20, -5.0), 17000.0);    // a negative price counts as none
  t.observe(20, 46000);
  EXPECT_EQ(t.predict_us(20, 2300.0), 46000.0);
  EXPECT_EQ(t.predict_us(14, 2300.0), 31500.0);  // 17000 + 29000 * 6 / 12
}

TEST(RowCostTable, IgnoresStepsOutsideTheTable) {
  RowCostTable t;
  t.observe(0, 5000);
  t.observe(RowCostTable::kMaxRows + 1, 5000);
  t.observe(3, -1);
  EXPECT_EQ(t.samples(), 0);
  EXPECT_FALSE(t.predict_us(3, 1.0).has_value());
}

}  // namespace
}  // namespace loom
