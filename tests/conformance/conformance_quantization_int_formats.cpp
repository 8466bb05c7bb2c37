// Exact unit tests of the int8/int4/fp8 formats on tiny hand-computed cases (the plugins'
// format code is compiled into this test), and the dequantization reference the plugin tests
// compare kernels against.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "plugins/quantization/fp8/fp8_format.hpp"
#include "plugins/quantization/int4/int4_format.hpp"
#include "plugins/quantization/int8/int8_format.hpp"
#include "tests/conformance/quantization_int_support.hpp"

namespace loom::qint {

namespace {
struct Int4Config {
  int64_t group = 128;
  bool zero_point = true;
};
Int4Config int4_config(const std::string& config) {
  const nlohmann::json j = nlohmann::json::parse(config.empty() ? "{}" : config);
  Int4Config c;
  if (j.contains("group_size")) c.group = j["group_size"].get<int64_t>();
  if (j.contains("zero_point")) c.zero_point = j["zero_point"].get<bool>();
  return c;
}
loom_int4::Int4Weight int4_quantized(const std::string& config, const std::vector<float>& w, int64_t out, int64_t in) {
  const Int4Config c = int4_config(config);
  loom_int4::Int4Weight q;
  q.out = out;
  q.in = in;
  q.group = c.group;
  q.shift = c.group == 32 ? 5 : c.group == 64 ? 6 : 7;
  q.words_per_row = (in + 7) / 8;
  q.n_groups = (in + c.group - 1) / c.group;
  q.packed.assign(static_cast<size_t>(out * q.words_per_row), 0);
  q.scale.assign(static_cast<size_t>(out * q.n_groups), 0);
  q.zero.assign(static_cast<size_t>(out * q.n_groups), 0);
  for (int64_t o = 0; o < out; ++o) loom_int4::quantize_row(w.data() + o * in, c.zero_point, q, o);
  return q;
}
}  // namespace

std::vector<float> dequantized(const std::string& plugin, const std::string& config, const std::vector<float>& w,
                               int64_t out, int64_t in) {
  std::vector<float> d(static_cast<size_t>(out * in));
  if (plugin == "int8") {
    std::vector<int8_t> q(static_cast<size_t>(in));
    for (int64_t o = 0; o < out; ++o) {
      float s = 0;
      loom_int8::quantize_row(w.data() + o * in, nullptr, in, q.data(), &s);
      for (int64_t k = 0; k < in; ++k)
        d[static_cast<size_t>(o * in + k)] = static_cast<float>(q[static_cast<size_t>(k)]) * s;
    }
  } else if (plugin == "int4") {
    loom_int4::dequant_portable(int4_quantized(config, w, out, in), 0, out, d.data());
  } else {
    std::vector<uint8_t> q(static_cast<size_t>(in));
    for (int64_t o = 0; o < out; ++o) {
      float s = 0;
      loom_fp8::quantize_row(w.data() + o * in, in, q.data(), &s);
      for (int64_t k = 0; k < in; ++k)
        d[static_cast<size_t>(o * in + k)] = loom_fp8::e4m3_to_f32(q[static_cast<size_t>(k)]) * s;
    }
  }
  return d;
}

std::vector<float> error_bounds(const std::string& plugin, const std::string& config, const std::vector<float>& w,
                                int64_t out, int64_t in) {
  std::vector<float> b(static_cast<size_t>(out * in));
  constexpr float kSlack = 1.0f + 1e-5f;  // the f32 rounding of scale and product
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w.data() + o * in;
    float amax = 0;
    for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(row[k]));
    if (plugin == "int8") {
      for (int64_t k = 0; k < in; ++k) b[static_cast<size_t>(o * in + k)] = amax / 127.0f / 2.0f * kSlack;
    } else if (plugin == "fp8") {
      // 3 mantissa bits: half an ulp is 1/16 of the value for normals; subnormals step by 2^-9 of
      // the scaled unit, i.e. (amax / 448) * 2^-9, half of it at most.
      for (int64_t k = 0; k < in; ++k)
        b[static_cast<size_t>(o * in + k)] = (std::fabs(row[k]) / 16.0f + amax / 448.0f * 0x1p-10f) * kSlack;
    } else {
      const Int4Config c = int4_config(config);
      for (int64_t k0 = 0; k0 < in; k0 += c.group) {
        const int64_t k1 = std::min(in, k0 + c.group);
        float lo = 0, hi = 0, gmax = 0;
        for (int64_t k = k0; k < k1; ++k) {
          lo = std::min(lo, row[k]);
          hi = std::max(hi, row[k]);
          gmax = std::max(gmax, std::fabs(row[k]));
        }
        // symmetric: half of max/7; asymmetric: a whole step (the zero point's rounding can
        // push an extreme one step past the grid, where it is clamped).
        const float bound = c.zero_point ? (hi - lo) / 15.0f : gmax / 7.0f / 2.0f;
        for (int64_t k = k0; k < k1; ++k) b[static_cast<size_t>(o * in + k)] = bound * kSlack;
      }
    }
  }
  return b;
}

namespace {

TEST(Int8Format, QuantizesARowSymmetricallyHalfToEven) {
  const float v[] = {127.0f, -50.0f, 2.5f, -3.5f, 0.0f, 0.49f};
  int8_t q[6];
  float s = 0;
  loom_int8::quantize_row(v, nullptr, 6, q, &s);
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(std::vector<int>(q, q + 6), (std::vector<int>{127, -50, 2, -4, 0, 0}));
  const float zeros[] = {0.0f, -0.0f};
  loom_int8::quantize_row(zeros, nullptr, 2, q, &s);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(q[1], 0);
  // smoothing multiplies first: (1 * 2, 127 * 1) -> scale 1, q (2, 127)
  const float v2[] = {1.0f, 127.0f}, smooth[] = {2.0f, 1.0f};
  loom_int8::quantize_row(v2, smooth, 2, q, &s);
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(q[0], 2);
  EXPECT_EQ(q[1], 127);
}

TEST(Int8Format, QuantizesActivationsPerTokenAndPadsWithZeros) {
  const float x[] = {-254.0f, 1.0f, 3.0f}, inv_smooth[] = {1.0f, 1.0f, 0.5f};
  int8_t xq[8];
  EXPECT_EQ(loom_int8::quantize_activation(x, nullptr, 3, 8, xq), 2.0f);
  EXPECT_EQ(std::vector<int>(xq, xq + 8), (std::vector<int>{-127, 0, 2, 0, 0, 0, 0, 0}));  // 0.5 -> 0, 1.5 -> 2
  EXPECT_EQ(loom_int8::quantize_activation(x, inv_smooth, 3, 4, xq), 2.0f);
  EXPECT_EQ(std::vector<int>(xq, xq + 4), (std::vector<int>{-127, 0, 1, 0}));  // 3 * 0.5 / 2 = 0.75 -> 1
}

TEST(Int8Format, SmoothingFactorsFollowSmoothQuant) {
  const float act[] = {4.0f, 1.0f, 0.0f, 9.0f}, w[] = {1.0f, 4.0f, 2.0f, 0.0f};
  float s[4];
  loom_int8::smoothing_factors(act, w, 4, 0.5f, s);
  EXPECT_EQ(std::vector<float>(s, s + 4), (std::vector<float>{2.0f, 0.5f, 1.0f, 1.0f}));
  loom_int8::smoothing_factors(act, w, 4, 1.0f, s);  // alpha 1: all of the range moves to W
  EXPECT_EQ(std::vector<float>(s, s + 2), (std::vector<float>{4.0f, 1.0f}));
  loom_int8::smoothing_factors(act, w, 4, 0.0f, s);  // alpha 0: s = 1 / max|W|
  EXPECT_EQ(std::vector<float>(s, s + 2), (std::vector<float>{1.0f, 0.25f}));
}

TEST(Int4Format, PacksEightNibblesPerWordInGptqOrder) {
  const uint8_t q[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0xA};
  uint32_t words[2] = {0xdeadbeef, 0xdeadbeef};
  loom_int4::pack_row(q, 10, words);
  EXPECT_EQ(words[0], 0x87654321u);  // channel 8p + i at bits [4i, 4i + 4) of word p
  EXPECT_EQ(words[1], 0x000000A9u);  // nibbles past `in` are zero
  for (int64_t k = 0; k < 10; ++k) EXPECT_EQ(loom_int4::nibble(words, k), q[k]) << k;
}

TEST(Int4Format, SymmetricGroupUsesMaxOverSevenAndZeroPointEight) {
  const float v[] = {7.0f, -7.0f, 3.5f, -2.5f, 0.0f};
  uint8_t q[5], z = 0;
  float s = 0;
  loom_int4::quantize_group(v, 5, false, q, &s, &z);
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(z, 8);
  EXPECT_EQ(std::vector<int>(q, q + 5), (std::vector<int>{15, 1, 12, 6, 8}));  // 3.5 -> 4, -2.5 -> -2
}

TEST(Int4Format, AsymmetricGroupMapsItsRangeWithAZeroPoint) {
  const float v[] = {-1.0f, 2.0f, 0.5f, 14.0f};
  uint8_t q[4], z = 0;
  float s = 0;
  loom_int4::quantize_group(v, 4, true, q, &s, &z);
  EXPECT_EQ(s, 1.0f);  // (14 - (-1)) / 15
  EXPECT_EQ(z, 1);
  EXPECT_EQ(std::vector<int>(q, q + 4), (std::vector<int>{0, 3, 1, 15}));  // 0.5 -> 0, + 1
  // All positive: the range still holds 0, so zero stays exact: [0, 30] -> scale 2, z 0.
  const float p[] = {30.0f, 4.0f, 5.0f};
  loom_int4::quantize_group(p, 3, true, q, &s, &z);
  EXPECT_EQ(s, 2.0f);
  EXPECT_EQ(z, 0);
  EXPECT_EQ(std::vector<int>(q, q + 3), (std::vector<int>{15, 2, 2}));  // 2.5 -> 2
}

TEST(Int4Format, DequantizesPerGroupWithAShortLastGroup) {
  // One row of 40 = a group of 32 and one of 8, symmetric: group 0 spans +-7, group 1 +-14.
  std::vector<float> w(40, 0.0f);
  w[0] = 7.0f;
  w[1] = -3.0f;
  w[32] = -14.0f;
  w[33] = 4.0f;
  const std::vector<float> d = dequantized("int4", R"({"group_size": 32, "zero_point": false})", w, 1, 40);
  EXPECT_EQ(d[0], 7.0f);
  EXPECT_EQ(d[1], -3.0f);
  EXPECT_EQ(d[32], -14.0f);
  EXPECT_EQ(d[33], 4.0f);  // 4 / 2 = 2 steps of 2
  EXPECT_EQ(d[39], 0.0f);
}

TEST(Fp8Format, RoundsToNearestEvenAndSaturates) {
  using loom_fp8::f32_to_e4m3;
  EXPECT_EQ(f32_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);  // halfway between 1 and 1.125: even (1)
  EXPECT_EQ(f32_to_e4m3(1.1875f), 0x3A);  // halfway between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(f32_to_e4m3(240.0f), 0x77);   // 1.875 * 2^7
  EXPECT_EQ(f32_to_e4m3(448.0f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(464.0f), 0x7E);  // would round to 480 (the NaN code): saturates
  EXPECT_EQ(f32_to_e4m3(1e9f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-1e9f), 0xFE);
  EXPECT_EQ(f32_to_e4m3(0x1p-9f), 0x01);   // smallest subnormal
  EXPECT_EQ(f32_to_e4m3(0x1p-10f), 0x00);  // halfway to it: even (0)
  EXPECT_EQ(f32_to_e4m3(3 * 0x1p-10f), 0x02);
  EXPECT_EQ(f32_to_e4m3(7.5f * 0x1p-9f), 0x08);  // rounds up into the smallest normal
  EXPECT_EQ(f32_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(f32_to_e4m3(NAN), 0x7F);
}

TEST(Fp8Format, EveryFiniteCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    const float v = loom_fp8::e4m3_to_f32(static_cast<uint8_t>(c));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << c;
      continue;
    }
    EXPECT_EQ(loom_fp8::f32_to_e4m3(v), c) << c << " = " << v;
  }
  EXPECT_EQ(loom_fp8::e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(loom_fp8::e4m3_to_f32(0x08), 0x1p-6f);
  EXPECT_EQ(loom_fp8::e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(loom_fp8::e4m3_to_f32(0xB8), -1.0f);
}

TEST(Fp8Format, ScalesEachRowSoItsExtremeIs448) {
  const float v[] = {-2.0f, 1.0f, 0.5f, 0.0f};
  uint8_t q[4];
  float s = 0;
  loom_fp8::quantize_row(v, 4, q, &s);
  EXPECT_EQ(s, 2.0f / 448.0f);
  EXPECT_EQ(q[0], 0xFE);                             // -448
  EXPECT_EQ(q[1], loom_fp8::f32_to_e4m3(1.0f / s));  // 224 = 1.75 * 2^7
  EXPECT_EQ(q[1], 0x76);
  EXPECT_EQ(q[3], 0x00);
}

}  // namespace
}  // namespace loom::qint
