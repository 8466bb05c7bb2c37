// The measured cost of prompt-free steps by row count (core/engine/row_cost_table.hpp): nothing
// before the first sample, a count's running mean, interpolation between measured counts, the
// caller's per-row price or the table's end slope outside them (bounded below), never below a
// smaller measured count, and steps outside the table ignored.
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
  EXPECT_EQ(t.predict_us(20, -5.0), 29000.0);    // the slope 1000 a row, a negative price as none
  t.observe(20, 46000);
  EXPECT_EQ(t.predict_us(20, 2300.0), 46000.0);
  EXPECT_EQ(t.predict_us(14, 2300.0), 31500.0);  // 17000 + 29000 * 6 / 12
}

TEST(RowCostTable, TheSlopeAtAnEndPricesRowsBeyondItWhereItIsSteeper) {
  // 9 rows 20 ms, 10 rows 21.5 ms; the caller's price (a low fit) 800 us a row.
  RowCostTable t;
  t.observe(9, 20000);
  t.observe(10, 21500);
  EXPECT_NEAR(*t.predict_us(14, 800.0), 27500.0, 1e-6);   // 21500 + 4 * 1500
  EXPECT_NEAR(*t.predict_us(7, 800.0), 17000.0, 1e-6);    // 20000 - 2 * 1500
  EXPECT_NEAR(*t.predict_us(12, 3000.0), 27500.0, 1e-6);  // the caller's price where steeper
  EXPECT_NEAR(*t.predict_us(3, 800.0), 11000.0, 1e-6);          // 20000 - 6 * 1500
  EXPECT_NEAR(*t.predict_us(3, 5000.0), 20000.0 * 3 / 9, 1e-6);  // not under proportional scaling
}

TEST(RowCostTable, NeverBelowASmallerMeasuredCount) {
  // Noisy neighbours: 10 rows 45.6 ms, 11 rows 43.6 ms, 14 rows 48.5 ms.
  RowCostTable t;
  t.observe(10, 45600);
  t.observe(11, 43600);
  t.observe(14, 48500);
  EXPECT_EQ(t.predict_us(11, 0.0), 45600.0);
  EXPECT_EQ(t.predict_us(12, 0.0), 45600.0);  // interpolated 45233, floored
  EXPECT_NEAR(*t.predict_us(13, 0.0), 46866.666666666664, 1e-6);
  EXPECT_EQ(t.predict_us(10, 0.0), 45600.0);
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
