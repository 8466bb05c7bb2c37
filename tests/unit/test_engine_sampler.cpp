// Sampling on tiny logit vectors: which ids can be drawn, how often, and determinism by seed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/common/error.hpp"
#include "core/engine/sampler.hpp"

namespace loom {
namespace {

// log of the probabilities, so softmax at T = 1 gives them back.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::map<int32_t, int> draw(const std::vector<float>& logits, SamplerSettings s, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Sampler sampler;
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[sampler.sample(logits, s, rng)];
  return counts;
}

std::set<int32_t> ids_of(const std::map<int32_t, int>& counts) {
  std::set<int32_t> ids;
  for (const auto& [id, c] : counts) ids.insert(id);
  return ids;
}

const std::vector<float> kFour = logits_of({0.15, 0.5, 0.05, 0.3});  // ranks: 1, 3, 0, 2

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  std::mt19937_64 rng(1);
  Sampler s;
  EXPECT_EQ(s.sample(kFour, {}, rng), 1);
  const std::vector<float> tie = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.sample(tie, {}, rng), 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Sampler::argmax(std::vector<float>{nan, -3.0f, nan, -2.0f}), 3);
  // Greedy never touches the generator.
  std::mt19937_64 fresh(1);
  EXPECT_EQ(rng(), fresh());
}

TEST(Sampler, FullDistributionFrequencies) {
  const auto counts = draw(kFour, {1.0f, 0, 1.0f, 0.0f}, 40000, 42);
  EXPECT_EQ(ids_of(counts), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_NEAR(counts.at(0) / 40000.0, 0.15, 0.01);
  EXPECT_NEAR(counts.at(1) / 40000.0, 0.50, 0.01);
  EXPECT_NEAR(counts.at(2) / 40000.0, 0.05, 0.01);
  EXPECT_NEAR(counts.at(3) / 40000.0, 0.30, 0.01);
}

TEST(Sampler, TopK) {
  const auto counts = draw(kFour, {1.0f, 2, 1.0f, 0.0f}, 20000, 7);
  EXPECT_EQ(ids_of(counts), (std::set<int32_t>{1, 3}));
  EXPECT_NEAR(counts.at(1) / 20000.0, 0.5 / 0.8, 0.015);
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 1, 1.0f, 0.0f}, 500, 7)), (std::set<int32_t>{1}));
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 100, 1.0f, 0.0f}, 5000, 7)), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, TopP) {
  // Cumulative by rank: 0.5, 0.8, 0.95, 1.0.
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 0, 0.45f, 0.0f}, 500, 3)), (std::set<int32_t>{1}));
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 0, 0.75f, 0.0f}, 5000, 3)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 0, 0.9f, 0.0f}, 5000, 3)), (std::set<int32_t>{0, 1, 3}));
  // top_p applies to the mass left after top-k: with k = 3 (0.95), 0.8 of it is 0.76 -> {1, 3}.
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 3, 0.8f, 0.0f}, 5000, 3)), (std::set<int32_t>{1, 3}));
}

TEST(Sampler, MinP) {
  // p >= min_p * 0.5.
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 0, 1.0f, 0.5f}, 5000, 9)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 0, 1.0f, 0.25f}, 5000, 9)), (std::set<int32_t>{0, 1, 3}));
  EXPECT_EQ(ids_of(draw(kFour, {1.0f, 0, 1.0f, 1.0f}, 500, 9)), (std::set<int32_t>{1}));
}

TEST(Sampler, Temperature) {
  const std::vector<float> two = {2.0f, 1.0f};
  // T = 0.5: p0 = e^4 / (e^4 + e^2).
  const double p0 = std::exp(4.0) / (std::exp(4.0) + std::exp(2.0));
  const auto counts = draw(two, {0.5f, 0, 1.0f, 0.0f}, 40000, 11);
  EXPECT_NEAR(counts.at(0) / 40000.0, p0, 0.01);
  // A large temperature flattens towards uniform.
  const auto flat = draw(two, {100.0f, 0, 1.0f, 0.0f}, 40000, 11);
  EXPECT_NEAR(flat.at(0) / 40000.0, 0.5, 0.02);
}

TEST(Sampler, SameSeedSameSequence) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.0f, -0.3f};
  const SamplerSettings s{0.8f, 5, 0.95f, 0.05f};
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(sample_token(logits, s, rng));
    return out;
  };
  EXPECT_EQ(run(1234), run(1234));
  EXPECT_NE(run(1234), run(1235));
}

TEST(Sampler, ExtremeLogits) {
  std::mt19937_64 rng(5);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> l = {0.0f, inf, 3.0f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sample_token(l, {1.0f, 0, 1.0f, 0.0f}, rng), 1);
  const std::vector<float> masked = {-inf, 0.0f, -inf};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sample_token(masked, {1.0f, 0, 0.9f, 0.0f}, rng), 1);
}

TEST(Sampler, RejectsBadSettings) {
  std::mt19937_64 rng(1);
  EXPECT_THROW(sample_token(kFour, {-1.0f, 0, 1.0f, 0.0f}, rng), Error);
  EXPECT_THROW(sample_token(kFour, {1.0f, -1, 1.0f, 0.0f}, rng), Error);
  EXPECT_THROW(sample_token(kFour, {1.0f, 0, 0.0f, 0.0f}, rng), Error);
  EXPECT_THROW(sample_token(kFour, {1.0f, 0, 1.5f, 0.0f}, rng), Error);
  EXPECT_THROW(sample_token(kFour, {1.0f, 0, 1.0f, 2.0f}, rng), Error);
  EXPECT_THROW(sample_token({}, {}, rng), Error);
}

}  // namespace
}  // namespace loom
