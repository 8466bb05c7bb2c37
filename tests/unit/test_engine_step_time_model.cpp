// The step-time model's fit: exact on data from a known cost, never negative (the constrained
// optimum on a smaller support), over a sliding window, and 0 before the first sample.
#include <gtest/gtest.h>

#include <vector>

#include "core/engine/step_time_model.hpp"

namespace loom {
namespace {

StepSample sample(int32_t p, int32_t d, int64_t kv, double a, double b, double c, double e) {
  return StepSample{p, d, kv, static_cast<int64_t>(a + b * p + c * d + e * static_cast<double>(kv))};
}

TEST(StepTimeModel, RecoversAKnownCostExactly) {
  // t = 500 + 10 p + 40 d + 0.5 kv, integral on these shapes.
  std::vector<StepSample> s;
  for (auto [p, d, kv] : std::vector<std::tuple<int32_t, int32_t, int64_t>>{
           {64, 0, 64}, {8, 4, 264}, {256, 0, 256}, {32, 8, 1056}, {128, 2, 640}, {0, 16, 512}, {512, 0, 512}}) {
    s.push_back(sample(p, d, kv, 500, 10, 40, 0.5));
  }
  const StepCoefficients c = fit_step_time(s);
  EXPECT_NEAR(c.base_us, 500, 1e-6);
  EXPECT_NEAR(c.per_prefill_token_us, 10, 1e-7);
  EXPECT_NEAR(c.per_decode_token_us, 40, 1e-7);
  EXPECT_NEAR(c.per_kv_token_us, 0.5, 1e-7);
  EXPECT_EQ(c.samples, 7);
  EXPECT_EQ(predict_step_us(c, 100, 3, 1000), 500 + 1000 + 120 + 500);
}

TEST(StepTimeModel, CoefficientsNeverGoNegative) {
  // Steps that got faster with more decodes (noise, a warming cache): least squares would say
  // -10 us per decode token; the constrained fit drops the term and keeps the mean.
  const std::vector<StepSample> s = {{0, 1, 0, 100}, {0, 2, 0, 90}, {0, 3, 0, 80}};
  const StepCoefficients c = fit_step_time(s);
  EXPECT_DOUBLE_EQ(c.per_decode_token_us, 0);
  EXPECT_NEAR(c.base_us, 90, 1e-9);
  EXPECT_DOUBLE_EQ(c.per_prefill_token_us, 0);
  EXPECT_DOUBLE_EQ(c.per_kv_token_us, 0);
}

TEST(StepTimeModel, FitsOverTheLastWindowOnly) {
  StepTimeModel m(/*window=*/2);
  EXPECT_EQ(m.predict_us(10, 0, 10), 0) << "nothing known before the first step";
  m.observe({10, 0, 10, 5000});  // slid out by the next two
  m.observe({0, 0, 0, 100});
  m.observe({10, 0, 10, 200});
  // Two samples, four unknowns: the least-squares fit with the fewest terms through both points
  // is 100 + 10 us per prompt token (prefill and kv move together here, so one of them carries it).
  EXPECT_EQ(m.predict_us(10, 0, 10), 200);
  EXPECT_EQ(m.predict_us(0, 0, 0), 100);
  EXPECT_EQ(m.coefficients().samples, 3);
}

TEST(StepTimeModel, EmptyFitIsZero) {
  const StepCoefficients c = fit_step_time({});
  EXPECT_EQ(c.samples, 0);
  EXPECT_EQ(predict_step_us(c, 100, 100, 100), 0);
}

}  // namespace
}  // namespace loom
