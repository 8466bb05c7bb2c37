// Sampler::logprobs: log_softmax of the raw row at the sampled token and the top-N, with ties,
// NaNs and range errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/common/error.hpp"
#include "core/engine/sampler.hpp"

namespace loom {
namespace {

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p) + 3.0));  // shift: no effect
  return l;
}

TEST(SamplerLogprobs, SampledAndTopAreLogSoftmaxOfTheRawRow) {
  const std::vector<float> row = logits_of({0.15, 0.5, 0.05, 0.3});
  RowLogprobs out;
  Sampler::logprobs(row, 2, 3, out);
  EXPECT_EQ(out.sampled.token, 2);
  EXPECT_NEAR(out.sampled.logprob, std::log(0.05), 1e-5);
  ASSERT_EQ(out.top.size(), 3u);
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_NEAR(out.top[0].logprob, std::log(0.5), 1e-5);
  EXPECT_EQ(out.top[1].token, 3);
  EXPECT_NEAR(out.top[1].logprob, std::log(0.3), 1e-5);
  EXPECT_EQ(out.top[2].token, 0);
  EXPECT_NEAR(out.top[2].logprob, std::log(0.15), 1e-5);
}

TEST(SamplerLogprobs, ZeroTopGivesOnlyTheSampledAndTopIsClampedToTheRow) {
  const std::vector<float> row = logits_of({0.25, 0.75});
  RowLogprobs out;
  out.top.push_back(TokenLogprob{9, 1.0f});  // stale content is replaced
  Sampler::logprobs(row, 1, 0, out);
  EXPECT_TRUE(out.top.empty());
  EXPECT_NEAR(out.sampled.logprob, std::log(0.75), 1e-5);
  Sampler::logprobs(row, 0, 20, out);
  ASSERT_EQ(out.top.size(), 2u);
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_EQ(out.top[1].token, 0);
}

TEST(SamplerLogprobs, TiesRankLowerIdFirstAndNanIsImpossible) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> row = {nan, 1.0f, 2.0f, 1.0f, 2.0f, nan};
  RowLogprobs out;
  Sampler::logprobs(row, 0, 5, out);
  EXPECT_EQ(out.sampled.logprob, -std::numeric_limits<float>::infinity());
  ASSERT_EQ(out.top.size(), 5u);
  const std::vector<int32_t> order = {2, 4, 1, 3, 0};
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(out.top[i].token, order[i]) << i;
  // Two at e^2, two at e^1: log p of the best is 2 - log(2e^2 + 2e).
  const double log_z = std::log(2 * std::exp(2.0) + 2 * std::exp(1.0));
  EXPECT_NEAR(out.top[0].logprob, 2.0 - log_z, 1e-5);
  EXPECT_NEAR(out.top[2].logprob, 1.0 - log_z, 1e-5);
}

TEST(SamplerLogprobs, LargeLogitsDoNotOverflow) {
  std::vector<float> row(1000, -5.0f);
  row[7] = 1000.0f;
  row[8] = 999.0f;
  RowLogprobs out;
  Sampler::logprobs(row, 8, 1, out);
  EXPECT_TRUE(std::isfinite(out.sampled.logprob));
  EXPECT_NEAR(out.sampled.logprob, -1.0 - std::log1p(std::exp(-1.0)), 1e-4);
  ASSERT_EQ(out.top.size(), 1u);
  EXPECT_EQ(out.top[0].token, 7);
}

TEST(SamplerLogprobs, RefusesEmptyRowsAndTokensOutsideTheRow) {
  RowLogprobs out;
  EXPECT_THROW(Sampler::logprobs(std::vector<float>{}, 0, 1, out), Error);
  EXPECT_THROW(Sampler::logprobs(std::vector<float>{1.0f, 2.0f}, 2, 1, out), Error);
  EXPECT_THROW(Sampler::logprobs(std::vector<float>{1.0f, 2.0f}, -1, 1, out), Error);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(Sampler::logprobs(std::vector<float>{nan, nan}, 0, 1, out), Error);
}

}  // namespace
}  // namespace loom
