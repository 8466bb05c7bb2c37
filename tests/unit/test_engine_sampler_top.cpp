// Sampler::sample_top, sampling from a row's best logits alone (the head's selection), against
// Sampler::sample on the whole row: the same token for the same random stream, for greedy and
// for top_k with every other setting, on rows with ties, near-ties, tiny logits and NaNs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/common/error.hpp"
#include "core/engine/sampler.hpp"
#include "loom/sdk_top_k.hpp"

namespace loom {
namespace {

// Rows that stress the order: random, heavy ties, distinct logits closer than exp can tell apart
// (|l| < 1e-20), a NaN, and a near-flat row.
std::vector<std::vector<float>> rows() {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<std::vector<float>> out;
  std::vector<float> r(1000);
  for (float& x : r) x = n(rng);
  out.push_back(r);
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(static_cast<int>(r[i]));  // many ties
  out.push_back(r);
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(i % 37) * 1e-21f - 5.0f * (i % 5 == 0);
  out.push_back(r);
  for (float& x : r) x = n(rng);
  r[3] = std::numeric_limits<float>::quiet_NaN();
  r[500] = 40.0f;
  out.push_back(r);
  for (float& x : r) x = 1.0f + n(rng) * 1e-6f;
  out.push_back(r);
  return out;
}

TEST(SamplerTop, EqualsSamplingTheWholeRow) {
  Sampler whole, top;
  int checked = 0;
  for (const std::vector<float>& row : rows()) {
    for (int32_t k : {1, 2, 5, 40, 64}) {
      std::vector<int32_t> ids(static_cast<size_t>(k));
      std::vector<float> values(static_cast<size_t>(k));
      sdk::select_top_k(row.data(), static_cast<int64_t>(row.size()), k, ids.data(), values.data());
      for (float t : {0.0f, 0.05f, 0.7f, 1.0f, 2.5f}) {
        for (float top_p : {1.0f, 0.9f, 0.3f}) {
          for (float min_p : {0.0f, 0.1f}) {
            const SamplerSettings s{t, t == 0.0f ? 0 : k, top_p, min_p};
            for (uint64_t seed = 0; seed < 12; ++seed) {
              std::mt19937_64 a(seed), b(seed);
              ASSERT_EQ(top.sample_top(ids, values, s, b), whole.sample(row, s, a))
                  << "k " << k << " T " << t << " top_p " << top_p << " min_p " << min_p << " seed " << seed;
              ASSERT_EQ(a(), b()) << "the two drew different amounts of randomness";
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 5 * 5 * 3 * 2 * 12);
}

TEST(SamplerTop, GreedyIsTheBestEntry) {
  Sampler s;
  std::mt19937_64 rng(1);
  const std::vector<int32_t> ids = {7, 2, 9};
  const std::vector<float> values = {3.0f, 3.0f, 1.0f};
  EXPECT_EQ(s.sample_top(ids, values, SamplerSettings{}, rng), 7);
}

TEST(SamplerTop, RefusesFewerEntriesThanTopK) {
  Sampler s;
  std::mt19937_64 rng(1);
  const std::vector<int32_t> ids = {7, 2};
  const std::vector<float> values = {3.0f, 2.0f};
  EXPECT_THROW(s.sample_top(ids, values, SamplerSettings{1.0f, 3, 1.0f, 0.0f}, rng), Error);
  EXPECT_THROW(s.sample_top(ids, values, SamplerSettings{1.0f, 0, 1.0f, 0.0f}, rng), Error);
  EXPECT_THROW(s.sample_top({}, {}, SamplerSettings{}, rng), Error);
}

}  // namespace
}  // namespace loom
