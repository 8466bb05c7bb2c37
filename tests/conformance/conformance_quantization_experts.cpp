// Quantization interface 1.4: linear_experts gives each routed row exactly the bits linear(W_e)
// writes for it, for every plugin that offers the call and every weight type it takes, in decode
// shapes (a row or two over a few of the experts) and prefill shapes, with experts that get no
// rows in between; a set of experts stored in mixed types (the per-expert fallback); and offsets
// that do not describe x are refused with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/common/half.hpp"
#include "core/common/thread_pool.hpp"
#include "loom/quantization.h"
#include "loom/sdk_gguf_blocks.hpp"
#include "tests/conformance/conformance_support.hpp"
#include "tests/conformance/quantization_int_support.hpp"

namespace loom {
namespace {

using qint::mat;

bool is_float(loom_dtype t) { return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16; }

// W [out, in] uniform in [-1, 1], stored as `dtype` (the SDK's reference quantizer for blocks).
std::vector<uint8_t> stored_weight(loom_dtype dtype, int64_t out, int64_t in, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (auto& e : w) e = u(rng);
  std::vector<uint8_t> bytes;
  if (is_float(dtype)) {
    bytes.resize(w.size() * (dtype == LOOM_DTYPE_F32 ? 4 : 2));
    for (size_t e = 0; e < w.size(); ++e) {
      if (dtype == LOOM_DTYPE_F32) {
        std::memcpy(bytes.data() + e * 4, &w[e], 4);
      } else {
        const uint16_t h = dtype == LOOM_DTYPE_F16 ? f32_to_f16(w[e]) : f32_to_bf16(w[e]);
        std::memcpy(bytes.data() + e * 2, &h, 2);
      }
    }
    return bytes;
  }
  const sdk::gguf::BlockGeometry geo = sdk::gguf::block_geometry(dtype);
  const int64_t row_bytes = in / geo.values * geo.bytes;
  bytes.resize(static_cast<size_t>(out * row_bytes));
  for (int64_t o = 0; o < out; ++o) sdk::gguf::quantize_row(dtype, w.data() + o * in, bytes.data() + o * row_bytes, in);
  return bytes;
}

constexpr loom_dtype kTypes[] = {LOOM_DTYPE_F32,  LOOM_DTYPE_F16,  LOOM_DTYPE_BF16, LOOM_DTYPE_Q8_0,
                                 LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q4_1, LOOM_DTYPE_Q5_0, LOOM_DTYPE_Q5_1,
                                 LOOM_DTYPE_IQ4_NL, LOOM_DTYPE_Q2_K, LOOM_DTYPE_Q3_K, LOOM_DTYPE_Q4_K,
                                 LOOM_DTYPE_Q5_K, LOOM_DTYPE_Q6_K, LOOM_DTYPE_IQ4_XS};

class LinearExpertsConformance : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(LinearExpertsConformance, EachRowHasItsExpertsLinearBits) {
  const std::string name = GetParam();
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  std::string skip;
  const auto plugin = conformance::create_or_skip(host_, LOOM_KIND_QUANTIZATION, name, &a, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const auto& vt = plugin->vtable<loom_quantization_vtable>();
  if (vt.struct_size < offsetof(loom_quantization_vtable, linear_experts) + sizeof(vt.linear_experts) ||
      vt.linear_experts == nullptr)
    GTEST_SKIP() << name << " does not offer linear_experts (the host calls linear for each expert)";

  constexpr int64_t kIn = 256, kOut = 70;
  constexpr int32_t kExperts = 6;
  // Row offsets per expert: decode (experts 1 and 3 of one token; one token's two experts and
  // another's), an even split, and a prefill with empty experts first, between and last.
  const std::vector<std::vector<int32_t>> offset_sets = {{0, 0, 1, 1, 2, 2, 2},
                                                         {0, 1, 1, 2, 3, 3, 4},
                                                         {0, 3, 6, 9, 12, 15, 18},
                                                         {0, 0, 40, 41, 41, 150, 150}};
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::vector<loom_dtype>> expert_types;
  for (const loom_dtype t : kTypes) expert_types.push_back(std::vector<loom_dtype>(kExperts, t));
  // Mixed types (not from a file, where one tensor holds every expert): each goes its own way.
  expert_types.push_back({LOOM_DTYPE_Q4_K, LOOM_DTYPE_Q8_0, LOOM_DTYPE_F16, LOOM_DTYPE_Q6_K, LOOM_DTYPE_Q4_0,
                          LOOM_DTYPE_F32});
  int tested = 0;
  for (const auto& types : expert_types) {
    bool all = true;
    for (const loom_dtype t : types) {
      int32_t ok = 0;
      plugin->call("supports", &loom_quantization_vtable::supports, t, &ok);
      all = all && ok;
    }
    if (!all) continue;
    ++tested;
    std::vector<std::vector<uint8_t>> stored;
    std::vector<void*> handles(kExperts);
    for (int32_t e = 0; e < kExperts; ++e) {
      const auto i = static_cast<size_t>(e);
      stored.push_back(stored_weight(types[i], kOut, kIn, rng));
      const loom_tensor_view wv = mat(stored.back().data(), types[i], kOut, kIn);
      plugin->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handles[i]);
    }
    for (const auto& offsets : offset_sets) {
      const int64_t rows = offsets.back();
      std::vector<float> x(static_cast<size_t>(rows * kIn));
      for (auto& e : x) e = u(rng);
      std::vector<float> y(static_cast<size_t>(rows * kOut), NAN);
      const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, rows, kIn);
      loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, rows, kOut);
      plugin->call("linear_experts", &loom_quantization_vtable::linear_experts, handles.data(), kExperts,
                   offsets.data(), &xv, &yv);
      for (int32_t e = 0; e < kExperts; ++e) {
        const int64_t lo = offsets[static_cast<size_t>(e)], n = offsets[static_cast<size_t>(e) + 1] - lo;
        if (n == 0) continue;
        std::vector<float> expected(static_cast<size_t>(n * kOut), NAN);
        const loom_tensor_view xe = mat(x.data() + lo * kIn, LOOM_DTYPE_F32, n, kIn);
        loom_tensor_view ev = mat(expected.data(), LOOM_DTYPE_F32, n, kOut);
        plugin->call("linear", &loom_quantization_vtable::linear, handles[static_cast<size_t>(e)], &xe, &ev);
        EXPECT_EQ(std::memcmp(expected.data(), y.data() + lo * kOut, expected.size() * sizeof(float)), 0)
            << name << ": expert " << e << " (dtype " << types[static_cast<size_t>(e)] << "), rows [" << lo << ", "
            << lo + n << ") of " << rows;
      }
    }
    // Offsets that do not describe x: refused, saying so.
    std::vector<float> x(static_cast<size_t>(4 * kIn)), y(static_cast<size_t>(4 * kOut));
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, 4, kIn);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, 4, kOut);
    for (const std::vector<int32_t>& bad : {std::vector<int32_t>{0, 1, 1, 2, 2, 3, 3},   // ends at 3, x has 4
                                            std::vector<int32_t>{0, 3, 1, 2, 4, 4, 4},   // decreases
                                            std::vector<int32_t>{1, 1, 2, 2, 3, 3, 4}}) {  // starts at 1
      char text[256] = {};
      loom_error_buf err{text, sizeof(text)};
      EXPECT_NE(vt.linear_experts(plugin->self(), handles.data(), kExperts, bad.data(), &xv, &yv, &err), LOOM_OK);
      EXPECT_NE(std::string(text).find("offsets"), std::string::npos) << text;
    }
    for (void* h : handles) vt.release_weight(plugin->self(), h);
  }
  if (tested == 0) GTEST_SKIP() << name << " supports none of the expert types";
}

INSTANTIATE_TEST_SUITE_P(Plugins, LinearExpertsConformance, ::testing::ValuesIn(conformance::plugin_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
