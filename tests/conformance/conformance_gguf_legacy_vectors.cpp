// The SDK's Q4_1, Q5_0, Q5_1 and IQ4_NL blocks (loom/sdk_gguf_legacy.hpp) against llama.cpp's
// own formats, exactly: tests/data/gguf_legacy_vectors.txt holds blocks quantized and
// dequantized by the `gguf` package's ports of llama.cpp's code (tools/convert/
// gguf_quant_vectors.py; versions in tests/data/SOURCES.md), and IQ4_NL blocks quantized by
// llama.cpp's own C quantize_iq4_nl (gguf.quants has no IQ4_NL quantizer). Loom's dequantize
// must give the same f32 bits, and its quantize the same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom {
namespace {

namespace g = sdk::gguf;

struct VectorCase {
  std::string type, op;
  std::vector<float> values;     // 32
  std::vector<uint8_t> block;  // the type's block bytes
};

std::vector<uint8_t> parse_bytes(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<VectorCase> load_cases() {
  std::ifstream in(std::string(LOOM_TEST_DATA) + "/gguf_legacy_vectors.txt");
  std::vector<VectorCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    VectorCase c;
    s >> c.type >> c.op;
    std::string word;
    std::vector<std::string> words;
    while (s >> word) words.push_back(word);
    // quantize: 32 floats then the block; dequantize: the block then 32 floats.
    const size_t block_at = c.op == "quantize" ? 32 : 0, floats_at = c.op == "quantize" ? 0 : 1;
    if (words.size() != 33) throw std::runtime_error("bad vector line: " + line);
    c.block = parse_bytes(words[block_at]);
    for (size_t i = 0; i < 32; ++i) {
      const uint32_t bits = static_cast<uint32_t>(std::stoul(words[floats_at + i], nullptr, 16));
      float f;
      std::memcpy(&f, &bits, 4);
      c.values.push_back(f);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

const std::map<std::string, loom_dtype> kTypes = {
    {"q4_1", LOOM_DTYPE_Q4_1}, {"q5_0", LOOM_DTYPE_Q5_0}, {"q5_1", LOOM_DTYPE_Q5_1}, {"iq4_nl", LOOM_DTYPE_IQ4_NL}};

std::string hex(const std::vector<uint8_t>& b) {
  std::ostringstream s;
  for (const uint8_t v : b) s << std::hex << (v < 16 ? "0" : "") << static_cast<int>(v);
  return s.str();
}

TEST(GgufLegacyVectors, DequantizeAndQuantizeMatchLlamaCpp) {
  const std::vector<VectorCase> cases = load_cases();
  std::map<std::string, int> dequantized, quantized;
  for (const VectorCase& c : cases) {
    const loom_dtype t = kTypes.at(c.type);
    const g::BlockGeometry geo = g::block_geometry(t);
    ASSERT_EQ(geo.values, 32);
    ASSERT_EQ(static_cast<size_t>(geo.bytes), c.block.size()) << c.type;
    ASSERT_EQ(geo.bytes, sdk::dtype_info(t).block_bytes) << c.type;
    if (c.op == "dequantize") {
      std::vector<float> y(32, NAN);
      ASSERT_TRUE(g::dequantize_row(t, c.block.data(), y.data(), 32));
      EXPECT_EQ(std::memcmp(y.data(), c.values.data(), 32 * sizeof(float)), 0) << c.type << " block " << hex(c.block);
      ++dequantized[c.type];
    } else {
      std::vector<uint8_t> b(c.block.size(), 0xAA);
      ASSERT_TRUE(g::quantize_row(t, c.values.data(), b.data(), 32));
      EXPECT_EQ(hex(b), hex(c.block)) << c.type << " quantize case " << quantized[c.type];
      ++quantized[c.type];
    }
  }
  for (const auto& [name, t] : kTypes) EXPECT_GE(dequantized[name], 8) << name;
  for (const auto& [name, t] : kTypes) EXPECT_GE(quantized[name], 8) << name;
}

// IQ4_NL's quantizer: the scale search ends at least as close to x (weighted by x^2, the
// search's own measure) as its own middle candidate, nearest levels under d = max / -127 (5%
// slack for the f16 rounding of the d it picks); a block of zeros gives d = 0 and zeros.
TEST(GgufLegacyVectors, Iq4NlQuantizerPicksTheBestScaleItTries) {
  std::mt19937_64 rng(4);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    float x[32];
    for (float& v : x) v = n(rng) * (trial % 3 == 0 ? 0.02f : 1.0f);
    g::BlockIQ4_NL b{};
    g::quantize_iq4_nl(x, &b, 1);
    float y[32];
    g::dequantize_iq4_nl(&b, y, 1);
    float amax = 0, max = 0;
    for (const float v : x) {
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        max = v;
      }
    }
    // The reference scale and its nearest-level codes.
    const float d0 = max / -127.0f;
    double err = 0, err0 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q0 = d0 * g::kIq4nlValues[g::iq4_nl_nearest(x[j] / d0)];
      err += double(x[j]) * x[j] * (double(y[j]) - x[j]) * (double(y[j]) - x[j]);
      err0 += double(x[j]) * x[j] * (double(q0) - x[j]) * (double(q0) - x[j]);
    }
    EXPECT_LE(err, err0 * 1.05 + 1e-12) << "trial " << trial;
  }
  float zeros[32] = {};
  g::BlockIQ4_NL z{};
  g::quantize_iq4_nl(zeros, &z, 1);
  EXPECT_EQ(z.d, 0);
  float y[32];
  g::dequantize_iq4_nl(&z, y, 1);
  for (const float v : y) EXPECT_EQ(v, 0.0f);
}

// Q8_1 activations: d and qs are Q8_0's, s is d * sum(qs) rounded to f16 once.
TEST(GgufLegacyVectors, Q8_1IsQ8_0WithItsSum) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(96);
  for (float& v : x) v = u(rng);
  g::BlockQ8_0 a[3];
  g::BlockQ8_1 b[3];
  g::quantize_q8_0(x.data(), a, 3);
  g::quantize_q8_1(x.data(), b, 3);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(a[k].d, b[k].d);
    EXPECT_EQ(std::memcmp(a[k].qs, b[k].qs, 32), 0);
    int sum = 0;
    for (const int8_t q : b[k].qs) sum += q;
    EXPECT_EQ(b[k].s, sdk::f32_to_f16(sdk::f16_to_f32(b[k].d) * static_cast<float>(sum)));
  }
}

}  // namespace
}  // namespace loom
