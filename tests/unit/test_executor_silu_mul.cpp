// silu_mul computed in blocks: writing over its input (out == gate, as the executor calls it, or
// out == up) gives the same bits as a separate output; every element is within a few ulp of the
// formula g / (1 + exp(-g)) * u in double and depends only on its own g and u (not on where it
// lies: the SIMD body and the ragged end agree); the far ends of exp give the formula's limits.
// gelu_tanh_mul (GeGLU) likewise against 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) u.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/executor/kernels/cpu/silu_mul.hpp"

namespace loom {
namespace {

std::vector<float> random_vec(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

TEST(SiluMulBlocks, InPlaceAndOutOfPlaceGiveTheSameBitsCloseToTheFormula) {
  ThreadPool pool(2);
  const size_t n = 9000 + 37;  // two work items, full blocks and a ragged end
  const std::vector<float> g = random_vec(n, 7, 8.0f), u = random_vec(n, 8, 2.0f);

  std::vector<float> out(n);
  cpu::silu_mul(g.data(), u.data(), out.data(), static_cast<int64_t>(n), &pool);
  for (size_t i = 0; i < n; ++i) {
    const double ref = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    // exp about 1 ulp, then a divide and a multiply: 4 ulp of the result is ample.
    ASSERT_NEAR(out[i], ref, 4 * std::numeric_limits<float>::epsilon() * std::abs(ref) + 1e-30) << i;
  }

  std::vector<float> over_gate = g;
  cpu::silu_mul(over_gate.data(), u.data(), over_gate.data(), static_cast<int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(over_gate.data(), out.data(), n * sizeof(float)), 0);

  std::vector<float> over_up = u;
  cpu::silu_mul(g.data(), over_up.data(), over_up.data(), static_cast<int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(over_up.data(), out.data(), n * sizeof(float)), 0);
}

TEST(SiluMulBlocks, AnElementsBitsDoNotDependOnItsPlace) {
  const size_t n = 301;
  const std::vector<float> g = random_vec(n, 9, 12.0f), u = random_vec(n, 10, 2.0f);
  std::vector<float> all(n);
  cpu::silu_mul(g.data(), u.data(), all.data(), static_cast<int64_t>(n), nullptr);
  // Each element alone (the ragged-end path), and every suffix (each element at every lane).
  for (size_t i = 0; i < n; ++i) {
    float one = 0.0f;
    cpu::silu_mul(g.data() + i, u.data() + i, &one, 1, nullptr);
    ASSERT_EQ(std::memcmp(&one, &all[i], sizeof(float)), 0) << i;
  }
  for (size_t s = 1; s < 9; ++s) {
    std::vector<float> tail(n - s);
    cpu::silu_mul(g.data() + s, u.data() + s, tail.data(), static_cast<int64_t>(n - s), nullptr);
    ASSERT_EQ(std::memcmp(tail.data(), all.data() + s, tail.size() * sizeof(float)), 0) << "offset " << s;
  }
}

TEST(SiluMulBlocks, FarEndsGiveTheLimits) {
  const std::vector<float> g = {-200.0f, -90.0f, 0.0f, 90.0f, 200.0f, -1e30f, 1e30f};
  const std::vector<float> u(g.size(), 2.0f);
  std::vector<float> out(g.size());
  cpu::silu_mul(g.data(), u.data(), out.data(), static_cast<int64_t>(g.size()), nullptr);
  EXPECT_EQ(out[0], 0.0f);  // exp(200) = inf: -200 / inf = -0
  EXPECT_TRUE(std::signbit(out[0]));
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 180.0f);  // exp(-90) underflows to 0: g * u exactly
  EXPECT_EQ(out[4], 400.0f);
  EXPECT_EQ(out[5], 0.0f);
  EXPECT_EQ(out[6], 2e30f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float g_nan = nan, u_one = 1.0f, o = 0.0f;
  cpu::silu_mul(&g_nan, &u_one, &o, 1, nullptr);
  EXPECT_TRUE(std::isnan(o));
}

TEST(GeluTanhMul, MatchesTheTanhFormulaWhereverAnElementLies) {
  ThreadPool pool(2);
  const size_t n = 9000 + 37;
  const std::vector<float> g = random_vec(n, 11, 6.0f), u = random_vec(n, 12, 2.0f);
  std::vector<float> out(n);
  cpu::gelu_tanh_mul(g.data(), u.data(), out.data(), static_cast<int64_t>(n), &pool);
  for (size_t i = 0; i < n; ++i) {
    const double x = g[i];
    const double ref = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x))) * u[i];
    // z = g (c0 + c1 g^2) is rounded a few times in float before the exp: 1e-6 relative is ample.
    ASSERT_NEAR(out[i], ref, 1e-6 * std::abs(x * u[i]) + 1e-30) << i << " g " << g[i];
  }
  std::vector<float> over_gate = g;
  cpu::gelu_tanh_mul(over_gate.data(), u.data(), over_gate.data(), static_cast<int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(over_gate.data(), out.data(), n * sizeof(float)), 0);
  for (size_t i = 0; i < 64; ++i) {  // each element alone: the ragged-end path, same bits
    float one = 0.0f;
    cpu::gelu_tanh_mul(g.data() + i, u.data() + i, &one, 1, nullptr);
    ASSERT_EQ(std::memcmp(&one, &out[i], sizeof(float)), 0) << i;
  }
  const std::vector<float> far = {-200.0f, 0.0f, 200.0f, -1e30f, 1e30f}, two(far.size(), 2.0f);
  std::vector<float> lim(far.size());
  cpu::gelu_tanh_mul(far.data(), two.data(), lim.data(), static_cast<int64_t>(far.size()), nullptr);
  EXPECT_EQ(lim[0], 0.0f);
  EXPECT_EQ(lim[1], 0.0f);
  EXPECT_EQ(lim[2], 400.0f);
  EXPECT_EQ(lim[3], 0.0f);
  EXPECT_EQ(lim[4], 2e30f);
}

}  // namespace
}  // namespace loom
