// quantization/int4 reading pre-quantized weights (plugins/quantization/int4/int4_format.hpp,
// "Pre-quantized storage"): the I32 words N with N.scale and N.zero built in memory by the
// format code's quantize_row (what loom-convert --quantize int4 writes) and found through a fake
// find_tensor give bit for bit the output of the same weights quantized at load; missing or
// malformed companions are refused naming the tensor; the output head stays float unless
// "quantize_output" is set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "plugins/quantization/int4/int4_format.hpp"
#include "tests/conformance/quantization_int_support.hpp"

namespace loom::qint {
namespace {

constexpr const char* kName = "blk.0.attn_q.weight";

// The model file's other tensors, by name: what the host's find_tensor looks up.
using Tensors = std::map<std::string, loom_tensor_view>;

int32_t find_in(void* ctx, const char* name, loom_tensor_view* out) {
  const Tensors& t = *static_cast<const Tensors*>(ctx);
  const auto it = t.find(name);
  if (it == t.end()) return 0;
  *out = it->second;
  return 1;
}

loom_weight_info info_of(int64_t out, int64_t in, Tensors* tensors, int32_t role = LOOM_WEIGHT_ATTN_Q) {
  loom_weight_info info{};
  info.struct_size = sizeof(info);
  info.name = kName;
  info.role = role;
  info.layer = 0;
  info.out_features = out;
  info.in_features = in;
  if (tensors != nullptr) {
    info.find_tensor = &find_in;
    info.find_ctx = tensors;
  }
  return info;
}

// The three tensors of one weight, as loom-convert writes them.
struct Stored {
  std::vector<uint32_t> words;  // [out, ceil(in / 8)]
  std::vector<float> scale;     // [out, n_groups]
  std::vector<int8_t> zero;     // [out, n_groups]
  Tensors companions;
};

Stored store(const std::vector<float>& w, int64_t out, int64_t in, const loom_int4::RowQuant& rq) {
  Stored s;
  const int64_t wpr = (in + 7) / 8, ng = (in + rq.group - 1) / rq.group;
  s.words.resize(static_cast<size_t>(out * wpr));
  s.scale.resize(static_cast<size_t>(out * ng));
  std::vector<uint8_t> z(static_cast<size_t>(out * ng));
  for (int64_t o = 0; o < out; ++o)
    loom_int4::quantize_row(w.data() + o * in, in, rq, s.words.data() + o * wpr, s.scale.data() + o * ng,
                            z.data() + o * ng);
  s.zero.assign(z.begin(), z.end());
  s.companions[std::string(kName) + ".scale"] = mat(s.scale.data(), LOOM_DTYPE_F32, out, ng);
  if (rq.zero_point) s.companions[std::string(kName) + ".zero"] = mat(s.zero.data(), LOOM_DTYPE_I8, out, ng);
  return s;
}

class Int4Prequantized : public ::testing::Test {
 protected:
  std::unique_ptr<LoadedPlugin> create(const std::string& config) {
    loom_quantization_create_args a{};
    a.struct_size = sizeof(a);
    a.device = loom_device{LOOM_DEVICE_CPU, 0};
    return host_.create(PluginSpec{LOOM_KIND_QUANTIZATION, "int4", "", config}, &a);
  }
  // Prepares `weight` with `info`; returns the status and the plugin's message in *message.
  static loom_status prepare(const LoadedPlugin& p, const loom_tensor_view& weight, const loom_weight_info& info,
                             void** handle, std::string* message) {
    return p.try_call(message, &loom_quantization_vtable::prepare_weight_info, &weight, &info, handle);
  }
  static std::vector<float> linear(const LoadedPlugin& p, void* h, const std::vector<float>& x, int64_t n, int64_t in,
                                   int64_t out) {
    std::vector<float> y(static_cast<size_t>(n * out), -1.0f);
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, in);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, out);
    p.call("linear", &loom_quantization_vtable::linear, h, &xv, &yv);
    return y;
  }
  static std::vector<float> random(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& e : v) e = u(rng);
    return v;
  }

  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

// in = 200: 7 groups of 32, 4 of 64, 2 of 128, each with a short last group.
TEST_F(Int4Prequantized, GivesTheOutputOfQuantizingAtLoadBitForBit) {
  constexpr int64_t out = 37, in = 200;
  const std::vector<float> w = random(out * in, 1);
  for (const int64_t group : {32, 64, 128}) {
    for (const bool zero_point : {true, false}) {
      for (const char* simd : {"auto", "portable"}) {
        const std::string at = "group " + std::to_string(group) + (zero_point ? " zero points " : " symmetric ") + simd;
        auto p = create(R"({"group_size": )" + std::to_string(group) + R"(, "zero_point": )" +
                        (zero_point ? "true" : "false") + R"(, "simd": ")" + simd + "\"}");
        const Stored s = store(w, out, in, loom_int4::RowQuant{group, zero_point, true});
        Tensors tensors = s.companions;
        const loom_weight_info info = info_of(out, in, &tensors);
        const loom_tensor_view words = mat(s.words.data(), LOOM_DTYPE_I32, out, (in + 7) / 8);
        const loom_tensor_view floats = mat(w.data(), LOOM_DTYPE_F32, out, in);
        void* pre = nullptr;
        void* at_load = nullptr;
        std::string message;
        ASSERT_EQ(prepare(*p, words, info, &pre, &message), LOOM_OK) << at << ": " << message;
        ASSERT_EQ(prepare(*p, floats, info, &at_load, &message), LOOM_OK) << at << ": " << message;
        for (const int64_t n : {1, 5, 12}) {
          const std::vector<float> x = random(static_cast<size_t>(n * in), 2 + static_cast<uint64_t>(n));
          const std::vector<float> y_pre = linear(*p, pre, x, n, in, out);
          const std::vector<float> y_load = linear(*p, at_load, x, n, in, out);
          ASSERT_EQ(std::memcmp(y_pre.data(), y_load.data(), y_pre.size() * sizeof(float)), 0) << at << " n " << n;
        }
        p->vtable<loom_quantization_vtable>().release_weight(p->self(), pre);
        p->vtable<loom_quantization_vtable>().release_weight(p->self(), at_load);
      }
    }
  }
}

TEST_F(Int4Prequantized, AcceptsI32WordsAndRefusesOtherIntegerStorage) {
  auto p = create("{}");
  int32_t ok = 0;
  std::string message;
  ASSERT_EQ(p->try_call(&message, &loom_quantization_vtable::supports, LOOM_DTYPE_I32, &ok), LOOM_OK);
  EXPECT_EQ(ok, 1);
  ASSERT_EQ(p->try_call(&message, &loom_quantization_vtable::supports, LOOM_DTYPE_Q4_0, &ok), LOOM_OK);
  EXPECT_EQ(ok, 0);
}

// Each broken file names the tensor at fault.
TEST_F(Int4Prequantized, RefusesMissingOrMalformedCompanionsNamingTheTensor) {
  constexpr int64_t out = 4, in = 200;
  const std::vector<float> w = random(out * in, 3);
  auto p = create("{}");
  Stored s = store(w, out, in, loom_int4::RowQuant{32, true, true});
  const loom_tensor_view words = mat(s.words.data(), LOOM_DTYPE_I32, out, (in + 7) / 8);
  const std::string scale_name = std::string(kName) + ".scale", zero_name = std::string(kName) + ".zero";
  auto refusal = [&](Tensors tensors, bool with_lookup, const loom_tensor_view& weight) {
    const loom_weight_info info = info_of(out, in, with_lookup ? &tensors : nullptr);
    void* h = nullptr;
    std::string message;
    EXPECT_EQ(prepare(*p, weight, info, &h, &message), LOOM_ERR_INVALID_ARGUMENT);
    return message;
  };
  EXPECT_NE(refusal(s.companions, false, words).find("cannot look up " + scale_name), std::string::npos);
  Tensors no_scale = s.companions;
  no_scale.erase(scale_name);
  EXPECT_NE(refusal(no_scale, true, words).find("its scales " + scale_name + " are missing"), std::string::npos);
  Tensors three_groups = s.companions;  // 200 / 3 -> groups of 128, which make 2
  three_groups[scale_name] = mat(s.scale.data(), LOOM_DTYPE_F32, out, 3);
  EXPECT_NE(refusal(three_groups, true, words).find(scale_name + ": 3 groups do not cut 200"), std::string::npos);
  Tensors f16_scale = s.companions;
  f16_scale[scale_name].dtype = LOOM_DTYPE_F16;
  EXPECT_NE(refusal(f16_scale, true, words).find(scale_name + " must be f32, got f16"), std::string::npos);
  Tensors short_zero = s.companions;
  short_zero[zero_name] = mat(s.zero.data(), LOOM_DTYPE_I8, out - 1, 7);
  EXPECT_NE(refusal(short_zero, true, words).find(zero_name + " must have shape [4, 7], got [3, 7]"),
            std::string::npos);
  s.zero[9] = 16;  // row 1, group 2
  EXPECT_NE(refusal(s.companions, true, words).find(zero_name + " holds 16 at [1, 2]"), std::string::npos);
  const loom_tensor_view narrow = mat(s.words.data(), LOOM_DTYPE_I32, out, 24);
  EXPECT_NE(refusal(s.companions, true, narrow).find(std::string(kName) + " must have shape [4, 25], got [4, 24]"),
            std::string::npos);
}

// The classifier head is kept in its stored float form (f32 here: the exact dot products up to
// the kernel's f32 rounding); "quantize_output": true puts it in INT4 like every other weight.
TEST_F(Int4Prequantized, KeepsTheOutputHeadInFloatUnlessAskedToQuantizeIt) {
  constexpr int64_t out = 50, in = 64, n = 3;
  const std::vector<float> w = random(out * in, 4), x = random(n * in, 5);
  const loom_tensor_view floats = mat(w.data(), LOOM_DTYPE_F32, out, in);
  const loom_weight_info head = info_of(out, in, nullptr, LOOM_WEIGHT_OUTPUT);
  double max_float = 0, max_int4 = 0;
  for (const bool quantize_output : {false, true}) {
    auto p = create(std::string(R"({"group_size": 32, "quantize_output": )") + (quantize_output ? "true}" : "false}"));
    void* h = nullptr;
    std::string message;
    ASSERT_EQ(prepare(*p, floats, head, &h, &message), LOOM_OK) << message;
    const std::vector<float> y = linear(*p, h, x, n, in, out);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < out; ++o) {
        double dot = 0, mag = 0;
        for (int64_t k = 0; k < in; ++k) {
          dot += double(x[t * in + k]) * w[o * in + k];
          mag += std::fabs(double(x[t * in + k]) * w[o * in + k]);
        }
        double& worst = quantize_output ? max_int4 : max_float;
        worst = std::max(worst, std::fabs(y[t * out + o] - dot) / mag);
      }
    p->vtable<loom_quantization_vtable>().release_weight(p->self(), h);
  }
  EXPECT_LE(max_float, 1e-6);
  EXPECT_GT(max_int4, 1e-3);
}

}  // namespace
}  // namespace loom::qint
