// The GGUF block layouts of sdk_gguf_blocks.hpp: known values quantize to known bytes, hand-built
// blocks dequantize to the values ggml's layout defines, and quantize -> dequantize stays within
// each format's step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "loom/sdk_gguf_blocks.hpp"

namespace loom {
namespace {

namespace g = sdk::gguf;

TEST(GgufBlocks, Q8_0KnownBytes) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j * 7 - 100);  // -100..117
  x[3] = -127.0f;  // max |x| = 127 -> d = 1 exactly
  g::BlockQ8_0 b{};
  g::quantize_q8_0(x, &b, 1);
  uint8_t bytes[34];
  std::memcpy(bytes, &b, 34);
  EXPECT_EQ(bytes[0], 0x00);
  EXPECT_EQ(bytes[1], 0x3C);  // f16 1.0
  for (int j = 0; j < 32; ++j) EXPECT_EQ(static_cast<int8_t>(bytes[2 + j]), static_cast<int>(x[j])) << j;
  float y[32];
  g::dequantize_q8_0(&b, y, 1);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]);
}

TEST(GgufBlocks, Q4_0KnownBytes) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>((j * 5) % 16 - 8);  // integers in [-8, 7]
  x[0] = -8.0f;  // largest magnitude, negative -> d = -8 / -8 = 1
  g::BlockQ4_0 b{};
  g::quantize_q4_0(x, &b, 1);
  uint8_t bytes[18];
  std::memcpy(bytes, &b, 18);
  EXPECT_EQ(bytes[0], 0x00);
  EXPECT_EQ(bytes[1], 0x3C);
  for (int j = 0; j < 16; ++j) {
    const int lo = static_cast<int>(x[j]) + 8, hi = static_cast<int>(x[j + 16]) + 8;
    EXPECT_EQ(bytes[2 + j], lo | (hi << 4)) << j;
  }
  float y[32];
  g::dequantize_q4_0(&b, y, 1);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]);
}

TEST(GgufBlocks, Q4_KScaleMinPackingRoundTrips) {
  uint8_t s[12] = {};
  for (int j = 0; j < 8; ++j) g::q4_k_set_scale_min(j, s, (j * 9 + 5) % 64, (j * 13 + 60) % 64);
  for (int j = 0; j < 8; ++j) {
    int sc = -1, m = -1;
    g::q4_k_scale_min(j, s, &sc, &m);
    EXPECT_EQ(sc, (j * 9 + 5) % 64) << j;
    EXPECT_EQ(m, (j * 13 + 60) % 64) << j;
  }
  // Sub-block 5: scale 42 = 0b10'1010 -> low nibble 0xA in scales[9], high bits 0b10 on top of
  // scales[1]; min 7 -> its nibble in the high half of scales[9], high bits 0 on top of scales[5].
  uint8_t t[12] = {};
  g::q4_k_set_scale_min(5, t, 42, 7);
  EXPECT_EQ(t[9], 0x7A);
  EXPECT_EQ(t[1], 0x80);
  EXPECT_EQ(t[5], 0x00);
}

TEST(GgufBlocks, Q4_KDequantizesHandBuiltBlock) {
  g::BlockQ4_K b{};
  b.d = sdk::f32_to_f16(0.5f);
  b.dmin = sdk::f32_to_f16(0.25f);
  for (int j = 0; j < 8; ++j) g::q4_k_set_scale_min(j, b.scales, j + 1, 2 * j);
  // Value 64c + l is the low nibble of qs[32c + l]; value 64c + 32 + l its high nibble.
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | (((i + 3) % 16) << 4));
  float y[256];
  g::dequantize_q4_k(&b, y, 1);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, l = e % 32, j = e / 32;
    const int q = (e % 64) < 32 ? (32 * c + l) % 16 : (32 * c + l + 3) % 16;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(j + 1) * static_cast<float>(q) - 0.25f * static_cast<float>(2 * j)) << e;
  }
}

TEST(GgufBlocks, Q6_KDequantizesHandBuiltBlock) {
  g::BlockQ6_K b{};
  b.d = sdk::f32_to_f16(0.125f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s - 8);
  // Value 128 + 64 + 5 (half 1, group k = 2, l = 5): low nibble = high nibble of ql[64 + 5],
  // high 2 bits = bits 4..5 of qh[32 + 5]. Code 0b10'0111 = 39 -> q = 7.
  b.ql[69] = 0x70;
  b.qh[37] = 0x20;
  // Value 37 (half 0, k = 1, l = 5): low nibble of ql[32 + 5], bits 2..3 of qh[5]. Code 63 -> 31.
  b.ql[37] = 0x0F;
  b.qh[5] = 0x0C;
  float y[256];
  g::dequantize_q6_k(&b, y, 1);
  EXPECT_EQ(y[197], 0.125f * static_cast<float>(197 / 16 - 8) * 7.0f);
  EXPECT_EQ(y[37], 0.125f * static_cast<float>(37 / 16 - 8) * 31.0f);
  EXPECT_EQ(y[0], 0.125f * -8.0f * -32.0f);  // all-zero code is q = -32
  EXPECT_EQ(g::q6_k_code(b, 197), 39);
  EXPECT_EQ(g::q6_k_code(b, 37), 63);
  EXPECT_EQ(g::q6_k_code(b, 5), 0);
}

TEST(GgufBlocks, Q8_KBlockSums) {
  std::vector<float> x(256);
  for (int j = 0; j < 256; ++j) x[static_cast<size_t>(j)] = static_cast<float>((j * 37) % 255 - 127);
  g::BlockQ8_K b{};
  g::quantize_q8_k(x.data(), &b, 1);
  EXPECT_EQ(b.d, 1.0f);
  for (int s = 0; s < 16; ++s) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) {
      EXPECT_EQ(b.qs[16 * s + l], static_cast<int>(x[static_cast<size_t>(16 * s + l)]));
      sum += b.qs[16 * s + l];
    }
    EXPECT_EQ(b.bsums[s], sum) << s;
  }
}

// quantize -> dequantize: every value within the format's step of its original. Steps are
// bounded by the block's range over the number of levels (plus the coded scale's rounding).
TEST(GgufBlocks, RoundTripErrorWithinStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(512), y(512);
  for (auto& v : x) v = nd(rng);
  x[7] = 5.0f;  // an outlier
  const struct {
    int dtype;
    int block;
    float levels;  // error bound = range / levels (range = max - min over the block)
  } formats[] = {{8, 32, 254.0f / 1.01f}, {2, 32, 15.0f / 1.01f}, {12, 32, 15.0f / 1.6f}, {14, 16, 63.0f / 1.3f}};
  for (const auto& f : formats) {
    const g::BlockGeometry geo = g::block_geometry(f.dtype);
    std::vector<uint8_t> q(static_cast<size_t>(512 / geo.values * geo.bytes));
    ASSERT_TRUE(g::quantize_row(f.dtype, x.data(), q.data(), 512));
    ASSERT_TRUE(g::dequantize_row(f.dtype, q.data(), y.data(), 512));
    for (int b0 = 0; b0 < 512; b0 += f.block) {
      float lo = 0, hi = 0;
      for (int i = b0; i < b0 + f.block; ++i) {
        lo = std::min(lo, x[static_cast<size_t>(i)]);
        hi = std::max(hi, x[static_cast<size_t>(i)]);
      }
      const float bound = 2.0f * std::max(hi, -lo) / f.levels;
      for (int i = b0; i < b0 + f.block; ++i)
        ASSERT_LE(std::abs(y[static_cast<size_t>(i)] - x[static_cast<size_t>(i)]), bound)
            << "dtype " << f.dtype << " value " << i;
    }
  }
  EXPECT_FALSE(g::quantize_row(30, x.data(), y.data(), 32));  // bf16 is not a block format
}

}  // namespace
}  // namespace loom
