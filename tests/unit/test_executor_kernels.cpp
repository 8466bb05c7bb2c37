// CPU kernels against straightforward double-precision references, and the property the
// executor relies on: a row's result never depends on the other rows or on threading.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/common/thread_pool.hpp"
#include "core/executor/kernels/cpu/add.hpp"
#include "core/executor/kernels/cpu/add_rmsnorm.hpp"
#include "core/executor/kernels/cpu/embedding.hpp"
#include "core/executor/kernels/cpu/rmsnorm.hpp"
#include "core/executor/kernels/cpu/rope.hpp"
#include "core/executor/kernels/cpu/silu_mul.hpp"

namespace loom {
namespace {

std::vector<float> random_vec(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(RmsNorm, MatchesReference) {
  ThreadPool pool(2);
  const int64_t rows = 37, dim = 1000;  // big enough to go parallel
  const auto x = random_vec(static_cast<size_t>(rows * dim), 1, 3.0f);
  const auto w = random_vec(static_cast<size_t>(dim), 2);
  std::vector<float> y(x.size());
  cpu::rmsnorm(x.data(), dim, w.data(), y.data(), dim, rows, dim, 1e-5f, &pool);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double scale = 1.0 / std::sqrt(ss / dim + 1e-5);
    for (int64_t i = 0; i < dim; ++i) {
      const double ref = double(x[r * dim + i]) * scale * w[i];
      ASSERT_NEAR(y[r * dim + i], ref, 1e-6 * (1 + std::abs(ref))) << r << "," << i;
    }
  }
  // One row alone, without threads, is bit-identical to the same row in the batch.
  std::vector<float> one(static_cast<size_t>(dim));
  cpu::rmsnorm(x.data() + 5 * dim, dim, w.data(), one.data(), dim, 1, dim, 1e-5f, nullptr);
  EXPECT_EQ(std::memcmp(one.data(), y.data() + 5 * dim, sizeof(float) * dim), 0);
}

TEST(RmsNorm, InPlaceAndStrided) {
  const int64_t dim = 4;
  std::vector<float> x = {1, 2, 3, 4, 99, 99, -1, -2, -3, -4};  // rows at stride 6
  const std::vector<float> w = {1, 1, 1, 1};
  cpu::rmsnorm(x.data(), 6, w.data(), x.data(), 6, 2, dim, 0.0f, nullptr);
  const float s = static_cast<float>(1.0 / std::sqrt(30.0 / 4));
  EXPECT_FLOAT_EQ(x[0], 1 * s);
  EXPECT_FLOAT_EQ(x[3], 4 * s);
  EXPECT_EQ(x[4], 99.0f);  // the gap is untouched
  EXPECT_FLOAT_EQ(x[6], -1 * s);
}

TEST(Rope, MatchesReference) {
  ThreadPool pool(2);
  const int32_t head_dim = 16, rope_dim = 12, heads = 3;
  const int64_t tokens = 5;
  const std::vector<int32_t> pos = {0, 1, 7, 300, 4095};
  const auto x0 = random_vec(static_cast<size_t>(tokens * heads * head_dim), 3);
  std::vector<float> x = x0;
  cpu::RotaryEmbedding rope(head_dim, rope_dim, 10000.0f);
  rope.apply(x.data(), tokens, heads, heads * head_dim, pos.data(), &pool);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* a = x0.data() + (t * heads + h) * head_dim;
      const float* b = x.data() + (t * heads + h) * head_dim;
      for (int32_t i = 0; i < head_dim / 2; ++i) {
        if (2 * i >= rope_dim) {  // beyond rope_dim: unchanged
          EXPECT_EQ(b[2 * i], a[2 * i]);
          EXPECT_EQ(b[2 * i + 1], a[2 * i + 1]);
          continue;
        }
        const double theta = pos[t] * std::pow(10000.0, -2.0 * i / rope_dim);
        const double r0 = a[2 * i] * std::cos(theta) - a[2 * i + 1] * std::sin(theta);
        const double r1 = a[2 * i] * std::sin(theta) + a[2 * i + 1] * std::cos(theta);
        EXPECT_NEAR(b[2 * i], r0, 2e-6) << t << "," << h << "," << i;
        EXPECT_NEAR(b[2 * i + 1], r1, 2e-6) << t << "," << h << "," << i;
      }
    }
  }
  // Position 0 is the identity.
  for (int32_t i = 0; i < heads * head_dim; ++i) EXPECT_EQ(x[i], x0[i]);
}

TEST(Rope, RejectsBadDims) {
  EXPECT_THROW(cpu::RotaryEmbedding(8, 10, 10000.0f), Error);
  EXPECT_THROW(cpu::RotaryEmbedding(8, 7, 10000.0f), Error);
  EXPECT_THROW(cpu::RotaryEmbedding(8, 8, 0.0f), Error);
}

TEST(SiluMul, MatchesReference) {
  ThreadPool pool(2);
  const size_t n = 50000;
  const auto g = random_vec(n, 4, 8.0f), u = random_vec(n, 5, 2.0f);
  std::vector<float> out(n);
  cpu::silu_mul(g.data(), u.data(), out.data(), static_cast<int64_t>(n), &pool);
  for (size_t i = 0; i < n; ++i) {
    const double ref = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    ASSERT_NEAR(out[i], ref, 1e-6 * (1 + std::abs(ref))) << i;
  }
  EXPECT_EQ(out.size(), n);
  std::vector<float> exact = {0.0f};
  std::vector<float> one = {3.0f};
  cpu::silu_mul(exact.data(), one.data(), exact.data(), 1, nullptr);
  EXPECT_EQ(exact[0], 0.0f);
}

TEST(Add, AddsInPlace) {
  ThreadPool pool(2);
  const size_t n = 40000;
  auto x = random_vec(n, 6);
  const auto y = random_vec(n, 7);
  const auto x0 = x;
  cpu::add_inplace(x.data(), y.data(), static_cast<int64_t>(n), &pool);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], x0[i] + y[i]);
}

TEST(AddRmsNorm, GivesTheBitsOfAddThenRmsNorm) {
  ThreadPool pool(2);
  const int64_t rows = 29, dim = 2048;  // parallel
  const auto x0 = random_vec(static_cast<size_t>(rows * dim), 8, 4.0f);
  const auto delta = random_vec(x0.size(), 9, 2.0f);
  const auto w = random_vec(static_cast<size_t>(dim), 10);
  std::vector<float> x_ref = x0, y_ref(x0.size()), x = x0, y(x0.size());
  cpu::add_inplace(x_ref.data(), delta.data(), rows * dim, &pool);
  cpu::rmsnorm(x_ref.data(), dim, w.data(), y_ref.data(), dim, rows, dim, 1e-5f, &pool);
  cpu::add_rmsnorm(x.data(), delta.data(), w.data(), y.data(), rows, dim, 1e-5f, &pool);
  EXPECT_EQ(std::memcmp(x.data(), x_ref.data(), sizeof(float) * x.size()), 0);
  EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), sizeof(float) * y.size()), 0);
  // A hand case: x = [1, 2] + [2, 2] = [3, 4], rms = sqrt(12.5), weight [1, 2].
  std::vector<float> hx = {1, 2}, hy(2);
  const std::vector<float> hd = {2, 2}, hw = {1, 2};
  cpu::add_rmsnorm(hx.data(), hd.data(), hw.data(), hy.data(), 1, 2, 0.0f, nullptr);
  EXPECT_EQ(hx, (std::vector<float>{3, 4}));
  const float s = static_cast<float>(1.0 / std::sqrt(12.5));
  EXPECT_EQ(hy[0], 1 * (s * 3));
  EXPECT_EQ(hy[1], 2 * (s * 4));
}

loom_tensor_view table_view(void* data, loom_dtype dtype, int64_t vocab, int64_t dim) {
  loom_tensor_view v{};
  v.data = data;
  v.dtype = dtype;
  v.ndim = 2;
  v.shape[0] = vocab;
  v.shape[1] = dim;
  v.strides[0] = dim;
  v.strides[1] = 1;
  return v;
}

TEST(Embedding, RowsOfEveryDtype) {
  const int64_t vocab = 6, dim = 3;
  std::vector<float> f32(static_cast<size_t>(vocab * dim));
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = 0.5f * static_cast<float>(i) - 2.0f;
  std::vector<uint16_t> f16(f32.size()), bf16(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    f16[i] = f32_to_f16(f32[i]);
    bf16[i] = f32_to_bf16(f32[i]);
  }
  const std::vector<int32_t> ids = {5, 0, 5, 2};
  for (auto [data, dtype] : {std::pair<void*, loom_dtype>{f32.data(), LOOM_DTYPE_F32},
                             {f16.data(), LOOM_DTYPE_F16}, {bf16.data(), LOOM_DTYPE_BF16}}) {
    std::vector<float> out(ids.size() * dim);
    cpu::embedding(table_view(data, dtype, vocab, dim), ids, out.data(), nullptr);
    for (size_t t = 0; t < ids.size(); ++t)
      for (int64_t i = 0; i < dim; ++i) EXPECT_EQ(out[t * dim + i], f32[ids[t] * dim + i]) << dtype;
  }
  std::vector<float> out(3);
  const std::vector<int32_t> bad = {6};
  try {
    cpu::embedding(table_view(f32.data(), LOOM_DTYPE_F32, vocab, dim), bad, out.data(), nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 6"), std::string::npos);
  }
  EXPECT_THROW(cpu::embedding(table_view(f32.data(), LOOM_DTYPE_Q8_0, vocab, dim), ids, out.data(), nullptr), Error);
}

}  // namespace
}  // namespace loom
