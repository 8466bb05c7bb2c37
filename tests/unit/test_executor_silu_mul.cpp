// silu_mul computed in blocks (exp pass, then divide/multiply pass): writing over its input
// (out == gate, as the executor calls it, or out == up) gives the same bits as a separate
// output, and every element equals the one-pass formula g / (1 + exp(-g)) * u exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

TEST(SiluMulBlocks, InPlaceAndOutOfPlaceGiveTheFormulasBits) {
  ThreadPool pool(2);
  const size_t n = 9000 + 37;  // two work items, full blocks and a ragged end
  const std::vector<float> g = random_vec(n, 7, 8.0f), u = random_vec(n, 8, 2.0f);
  std::vector<float> expect(n);
  for (size_t i = 0; i < n; ++i) expect[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];

  std::vector<float> out(n);
  cpu::silu_mul(g.data(), u.data(), out.data(), static_cast<int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(out.data(), expect.data(), n * sizeof(float)), 0);

  std::vector<float> over_gate = g;
  cpu::silu_mul(over_gate.data(), u.data(), over_gate.data(), static_cast<int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(over_gate.data(), expect.data(), n * sizeof(float)), 0);

  std::vector<float> over_up = u;
  cpu::silu_mul(g.data(), over_up.data(), over_up.data(), static_cast<int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(over_up.data(), expect.data(), n * sizeof(float)), 0);
}

}  // namespace
}  // namespace loom
