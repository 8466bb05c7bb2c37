// quantization/none's linear_top_k (interface 1.5) through the plugin's vtable: for every
// configuration (simd "auto", which screens with the int8 copy, by AVX512-VNNI where the CPU has
// it; "avx2", the int8 screen's AVX2 kernel and portable scans; "portable", no screen; compute
// "bf16"; head_screen "bf16" (AVX512-BF16 CPUs), and "off"), f32/f16/bf16 heads of vocabulary-like odd shapes, n = 1, 3, 17, 40, 70 rows, k = 1, 2, 5, 40,
// on 1 and 2 host threads, ids and values equal select_top_k over that configuration's own linear
// output, bit for bit. The heads hold crafted near-ties among their largest outputs: exact
// duplicates of one row (the lower id must win), rows one ulp of one element away from it, a row
// of x with a NaN; and a head of all-equal rows (every output a candidate: the full fallback).
// Bad arguments are refused with LOOM_ERR_INVALID_ARGUMENT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/common/half.hpp"
#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/quantization.h"
#include "loom/sdk_top_k.hpp"
#include "quantization_int_support.hpp"

namespace loom {
namespace {

using qint::mat;

const char* name_of(loom_dtype t) { return t == LOOM_DTYPE_F32 ? "f32" : t == LOOM_DTYPE_F16 ? "f16" : "bf16"; }

// A weight [out, in] as stored bytes of its dtype.
struct Stored {
  loom_dtype dtype;
  int64_t out, in;
  std::vector<uint32_t> f32;  // bits, when dtype is F32
  std::vector<uint16_t> h16;  // bits, when F16 or BF16
  const void* data() const { return dtype == LOOM_DTYPE_F32 ? static_cast<const void*>(f32.data()) : h16.data(); }
  void copy_row(int64_t from, int64_t to) {
    for (int64_t k = 0; k < in; ++k) {
      if (dtype == LOOM_DTYPE_F32) f32[to * in + k] = f32[from * in + k];
      else h16[to * in + k] = h16[from * in + k];
    }
  }
  void bump(int64_t row, int64_t k, int delta) {  // one ulp of the stored element (away from or toward 0)
    if (dtype == LOOM_DTYPE_F32) f32[row * in + k] += static_cast<uint32_t>(delta);
    else h16[row * in + k] = static_cast<uint16_t>(h16[row * in + k] + delta);
  }
};

Stored store(const std::vector<float>& w, loom_dtype dtype, int64_t out, int64_t in) {
  Stored s{dtype, out, in, {}, {}};
  if (dtype == LOOM_DTYPE_F32) {
    s.f32.resize(w.size());
    std::memcpy(s.f32.data(), w.data(), w.size() * sizeof(float));
  } else {
    s.h16.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) s.h16[i] = dtype == LOOM_DTYPE_F16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
  }
  return s;
}

// A head whose largest outputs (for the x of make_x) are near-ties: row `hot` (0.3 x the rows'
// common direction) stored at ids 7, out / 2 and out - 1 (exact ties), with one element one ulp up
// at id 11 and one ulp down at id 12.
Stored make_head(loom_dtype dtype, int64_t out, int64_t in, const std::vector<float>& base, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (auto& e : w) e = 0.5F * u(rng);
  for (int64_t k = 0; k < in; ++k) w[static_cast<size_t>(7 * in + k)] = 0.3F * base[static_cast<size_t>(k)];
  Stored s = store(w, dtype, out, in);
  for (const int64_t to : {out / 2, out - 1, int64_t{11}, int64_t{12}}) s.copy_row(7, to);
  s.bump(11, 5, 1);
  s.bump(12, 6, -1);
  return s;
}

// x [n, in]: the common direction plus noise; row 2 (when there is one) with a NaN.
std::vector<float> make_x(const std::vector<float>& base, int64_t n, int64_t in, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  std::vector<float> x(static_cast<size_t>(n * in));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t k = 0; k < in; ++k) x[static_cast<size_t>(t * in + k)] = base[static_cast<size_t>(k)] + 0.3F * u(rng);
  if (n > 2) x[static_cast<size_t>(2 * in + in / 2)] = NAN;
  return x;
}

// One plugin instance on `threads` host threads.
class Instance {
 public:
  Instance(int32_t threads, const std::string& config) : pool_(threads), host_(pool_, {}) {
    loom_quantization_create_args a{};
    a.struct_size = sizeof(a);
    a.device = loom_device{LOOM_DEVICE_CPU, 0};
    p_ = host_.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", config}, &a);
  }
  ~Instance() {
    for (void* h : handles_) p_->vtable<loom_quantization_vtable>().release_weight(p_->self(), h);
  }
  const LoadedPlugin& plugin() const { return *p_; }

  // Prepared as the classifier head (norms at load), or without info (norms on first use).
  void* prepare(const Stored& w, bool as_head) {
    const loom_tensor_view wv = mat(w.data(), w.dtype, w.out, w.in);
    void* h = nullptr;
    if (as_head) {
      loom_weight_info info{};
      info.struct_size = sizeof(info);
      info.name = "output.weight";
      info.role = LOOM_WEIGHT_OUTPUT;
      info.layer = -1;
      info.out_features = w.out;
      info.in_features = w.in;
      info.expert = -1;
      p_->call("prepare_weight_info", &loom_quantization_vtable::prepare_weight_info, &wv, &info, &h);
    } else {
      p_->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &h);
    }
    handles_.push_back(h);
    return h;
  }
  std::vector<float> linear(void* h, const std::vector<float>& x, int64_t n, int64_t in, int64_t out) const {
    std::vector<float> y(static_cast<size_t>(n * out), -12345.0F);
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, in);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, out);
    p_->call("linear", &loom_quantization_vtable::linear, h, &xv, &yv);
    return y;
  }
  loom_status top_k(void* h, const std::vector<float>& x, int64_t n, int64_t in, int32_t k, int32_t* ids,
                    float* values, std::string* message) const {
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, in);
    return p_->try_call(message, &loom_quantization_vtable::linear_top_k, h, &xv, k, ids, values);
  }

 private:
  ThreadPool pool_;
  PluginHost host_;
  std::unique_ptr<LoadedPlugin> p_;
  std::vector<void*> handles_;
};

// linear_top_k against select_top_k on linear's rows for every n and k.
void expect_selects_from_linear(Instance& q, void* h, int64_t out, int64_t in, const std::vector<float>& base,
                                std::mt19937_64& rng, const std::string& what) {
  for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{40}, int64_t{70}}) {  // 70: two chunks
    const std::vector<float> x = make_x(base, n, in, rng);
    const std::vector<float> y = q.linear(h, x, n, in, out);
    for (const int32_t k : {1, 2, 5, 40}) {
      std::vector<int32_t> ids(static_cast<size_t>(n * k), -1), want_ids(ids.size());
      std::vector<float> values(ids.size(), -1.0F), want_values(ids.size());
      for (int64_t t = 0; t < n; ++t)
        loom::sdk::select_top_k(y.data() + t * out, out, k, want_ids.data() + t * k, want_values.data() + t * k);
      std::string message;
      ASSERT_EQ(q.top_k(h, x, n, in, k, ids.data(), values.data(), &message), LOOM_OK) << what << ": " << message;
      ASSERT_EQ(ids, want_ids) << what << ", n " << n << ", k " << k;
      ASSERT_EQ(std::memcmp(values.data(), want_values.data(), values.size() * sizeof(float)), 0)
          << what << ", n " << n << ", k " << k;
    }
  }
}

TEST(QuantizationNoneTopK, SelectsFromLinearBitForBit) {
  std::mt19937_64 rng(101);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  for (const char* config :
       {R"({"simd": "auto"})", R"({"simd": "avx2"})", R"({"simd": "portable"})", R"({"compute": "bf16"})",
        R"({"head_screen": "bf16"})", R"({"head_screen": "off"})", R"({"simd": "avx2", "head_screen": "bf16"})"})
    for (const int32_t threads : {1, 2}) {
      Instance q(threads, config);
      ASSERT_TRUE(q.plugin().has(&loom_quantization_vtable::linear_top_k));
      for (const auto& [out, in] : {std::pair<int64_t, int64_t>{1000, 64}, {5003, 257}, {2047, 131}}) {
        std::vector<float> base(static_cast<size_t>(in));
        for (auto& e : base) e = u(rng);
        for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
          const std::string what = std::string(config) + ", " + std::to_string(threads) + " threads, " +
                                   name_of(dtype) + " [" + std::to_string(out) + ", " + std::to_string(in) + "]";
          const Stored w = make_head(dtype, out, in, base, rng);
          expect_selects_from_linear(q, q.prepare(w, in != 131), out, in, base, rng, what);
        }
      }
    }
}

// Every row equal: every output ties, no screen can narrow them, and the lowest ids win.
TEST(QuantizationNoneTopK, AllEqualRowsGiveTheLowestIds) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  const int64_t out = 1200, in = 97;
  std::vector<float> base(static_cast<size_t>(in)), w(static_cast<size_t>(out * in));
  for (auto& e : base) e = u(rng);
  for (int64_t o = 0; o < out; ++o) std::copy(base.begin(), base.end(), w.begin() + o * in);
  for (const char* config : {R"({"simd": "auto"})", R"({"compute": "bf16"})", R"({"head_screen": "bf16"})",
                             R"({"simd": "avx2"})"})
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      Instance q(2, config);
      void* h = q.prepare(store(w, dtype, out, in), true);
      const std::vector<float> x = make_x(base, 4, in, rng);
      const std::vector<float> y = q.linear(h, x, 4, in, out);
      std::vector<int32_t> ids(4 * 5);
      std::vector<float> values(ids.size());
      std::string message;
      ASSERT_EQ(q.top_k(h, x, 4, in, 5, ids.data(), values.data(), &message), LOOM_OK) << message;
      for (int64_t t = 0; t < 4; ++t)
        for (int32_t i = 0; i < 5; ++i) {
          EXPECT_EQ(ids[static_cast<size_t>(t * 5 + i)], i) << config << " " << name_of(dtype) << " row " << t;
          const float v = values[static_cast<size_t>(t * 5 + i)], want = y[static_cast<size_t>(t * out + i)];
          EXPECT_EQ(std::memcmp(&v, &want, sizeof v), 0) << config << " " << name_of(dtype) << " row " << t;
        }
    }
}

TEST(QuantizationNoneTopK, RefusesBadArguments) {
  const int64_t out = 40, in = 8;
  const std::vector<float> w(static_cast<size_t>(out * in), 0.25F), x(static_cast<size_t>(2 * in), 1.0F);
  Instance q(1, "{}");
  void* h = q.prepare(store(w, LOOM_DTYPE_F32, out, in), true);
  std::vector<int32_t> ids(2 * (out + 1));
  std::vector<float> values(ids.size());
  std::string message;
  for (const int32_t k : {0, -1, static_cast<int32_t>(out + 1)}) {
    EXPECT_EQ(q.top_k(h, x, 2, in, k, ids.data(), values.data(), &message), LOOM_ERR_INVALID_ARGUMENT) << "k " << k;
    EXPECT_NE(message.find("1 <= k <= 40"), std::string::npos) << message;
  }
  EXPECT_EQ(q.top_k(nullptr, x, 2, in, 1, ids.data(), values.data(), &message), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(q.top_k(h, x, 1, 2 * in, 1, ids.data(), values.data(), &message), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(q.top_k(h, x, 2, in, 1, nullptr, values.data(), &message), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(q.top_k(h, x, 2, in, static_cast<int32_t>(out), ids.data(), values.data(), &message), LOOM_OK)
      << message;
}

}  // namespace
}  // namespace loom
