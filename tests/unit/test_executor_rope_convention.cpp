// The two RoPE pairings, on a vector small enough to check by hand: interleaved (GGUF llama,
// pairs (x[2i], x[2i+1])) and NeoX (Hugging Face rotate_half, pairs (x[i], x[i + rope_dim/2])),
// and the row permutation that turns one into the other (what loom-convert applies to llama
// q/k weights), with a partial rotary dimension whose tail must stay untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/executor/kernels/cpu/rope.hpp"

namespace loom::cpu {
namespace {

// head_dim 6, rope_dim 4: pair 0 turns by pos * 1.0, pair 1 by pos * 0.25; dims 4 and 5 stay.
const std::vector<double> kInvFreq = {1.0, 0.25};
constexpr int32_t kHeadDim = 6;

std::vector<float> rotate(std::vector<float> x, bool neox, int32_t pos) {
  const RotaryEmbedding rope(kHeadDim, kInvFreq, neox, 1.0);
  rope.apply(x.data(), 1, static_cast<int64_t>(x.size()) / kHeadDim, static_cast<int64_t>(x.size()), &pos, nullptr);
  return x;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "dim " << i;
}

TEST(RopeConvention, InterleavedRotatesAdjacentPairs) {
  const double c1 = std::cos(2.0), s1 = std::sin(2.0), c2 = std::cos(0.5), s2 = std::sin(0.5);
  // position 2: pair (x0, x1) by 2 rad, pair (x2, x3) by 0.5 rad.
  expect_near(rotate({1, 2, 3, 4, 5, 6}, false, 2),
              {1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2, 5, 6});
}

TEST(RopeConvention, NeoxRotatesHalfApartPairs) {
  const double c1 = std::cos(2.0), s1 = std::sin(2.0), c2 = std::cos(0.5), s2 = std::sin(0.5);
  // position 2: pair (x0, x2) by 2 rad, pair (x1, x3) by 0.5 rad.
  expect_near(rotate({1, 2, 3, 4, 5, 6}, true, 2),
              {1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 1 * s1 + 3 * c1, 2 * s2 + 4 * c2, 5, 6});
}

TEST(RopeConvention, PositionZeroIsIdentityInBothStyles) {
  const std::vector<float> x = {0.5f, -1.5f, 2.25f, -3.0f, 7.0f, 8.0f};
  EXPECT_EQ(rotate(x, false, 0), x);
  EXPECT_EQ(rotate(x, true, 0), x);
}

TEST(RopeConvention, PermutingToInterleavedOrderGivesTheNeoxResult) {
  // NeoX order [a0 a1 | b0 b1] -> interleaved [a0 b0 a1 b1] per head (tail kept): rotating
  // either way and mapping back must agree, for two heads and several positions.
  const std::vector<float> neox_x = {1, 2, 3, 4, 5, 6, -1, 0.5f, 0.25f, -2, 9, 10};
  auto to_interleaved = [](const std::vector<float>& v) {
    std::vector<float> out(v);
    for (size_t h = 0; h < v.size(); h += kHeadDim) {
      out[h + 0] = v[h + 0];
      out[h + 1] = v[h + 2];
      out[h + 2] = v[h + 1];
      out[h + 3] = v[h + 3];
    }
    return out;
  };
  for (int32_t pos : {1, 3, 17}) {
    const std::vector<float> a = to_interleaved(rotate(neox_x, true, pos));
    const std::vector<float> b = rotate(to_interleaved(neox_x), false, pos);
    EXPECT_EQ(a, b) << "position " << pos;
  }
  EXPECT_NE(rotate(neox_x, true, 1), rotate(neox_x, false, 1));  // the styles really differ
}

}  // namespace
}  // namespace loom::cpu
