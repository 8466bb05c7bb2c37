// Quantization conformance: every quantization plugin's linear (y = x W^T) against a
// double-precision GEMM on the stored weights, for f32/f16/bf16 storage and awkward shapes; and
// each row's result independent of the other rows in the batch (bit for bit); for quantization
// none, every kernel the CPU runs ("simd": "portable" and "auto") batch-invariant on n = 1..37.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "core/common/half.hpp"
#include "core/common/thread_pool.hpp"
#include "loom/quantization.h"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

// Allowed error relative to sum_i |x_i w_i|. Plugins that quantize at load time add an entry.
double tolerance(const std::string& plugin) {
  static const std::map<std::string, double> kTol = {{"none", 1e-6}};
  auto it = kTol.find(plugin);
  return it == kTol.end() ? 1e-6 : it->second;
}

struct Case {
  int64_t n, in, out;
};

const char* dtype_str(loom_dtype t) { return t == LOOM_DTYPE_F32 ? "f32" : t == LOOM_DTYPE_F16 ? "f16" : "bf16"; }

class QuantizationConformance : public ::testing::TestWithParam<std::tuple<std::string, loom_dtype>> {
 protected:
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

loom_tensor_view mat(void* data, loom_dtype dtype, int64_t rows, int64_t cols) {
  loom_tensor_view v{};
  v.data = data;
  v.dtype = dtype;
  v.ndim = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.shape[2] = v.shape[3] = 1;
  v.strides[0] = cols;
  v.strides[1] = v.strides[2] = v.strides[3] = 1;
  return v;
}

TEST_P(QuantizationConformance, LinearMatchesDoubleGemm) {
  const auto& [name, dtype] = GetParam();
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  std::string skip;
  const auto plugin = conformance::create_or_skip(host_, LOOM_KIND_QUANTIZATION, name, &a, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  int32_t ok = 0;
  plugin->call("supports", &loom_quantization_vtable::supports, dtype, &ok);
  if (!ok) GTEST_SKIP() << name << " does not take " << dtype_str(dtype) << " weights";

  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Case& c : {Case{1, 64, 48}, Case{3, 67, 129}, Case{4, 256, 40}, Case{9, 33, 17}, Case{5, 1, 1},
                        Case{2, 512, 300}}) {
    // Stored weights, and their exact f32 values.
    std::vector<float> w(static_cast<size_t>(c.out * c.in));
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const float x = u(rng);
      if (dtype == LOOM_DTYPE_F16) {
        w16[i] = f32_to_f16(x);
        w[i] = f16_to_f32(w16[i]);
      } else if (dtype == LOOM_DTYPE_BF16) {
        w16[i] = f32_to_bf16(x);
        w[i] = bf16_to_f32(w16[i]);
      } else {
        w[i] = x;
      }
    }
    std::vector<float> x(static_cast<size_t>(c.n * c.in));
    for (auto& e : x) e = u(rng);
    const loom_tensor_view wv = mat(dtype == LOOM_DTYPE_F32 ? static_cast<void*>(w.data()) : w16.data(), dtype, c.out, c.in);
    void* handle = nullptr;
    plugin->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handle);

    std::vector<float> y(static_cast<size_t>(c.n * c.out), NAN);
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, c.n, c.in);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, c.n, c.out);
    plugin->call("linear", &loom_quantization_vtable::linear, handle, &xv, &yv);
    for (int64_t t = 0; t < c.n; ++t) {
      for (int64_t o = 0; o < c.out; ++o) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < c.in; ++i) {
          ref += double(x[t * c.in + i]) * w[o * c.in + i];
          mag += std::abs(double(x[t * c.in + i]) * w[o * c.in + i]);
        }
        ASSERT_NEAR(y[t * c.out + o], ref, tolerance(name) * mag + 1e-30)
            << "n=" << c.n << " in=" << c.in << " out=" << c.out << " at [" << t << ", " << o << "]";
      }
    }
    // Each row alone gives the bits it had in the batch.
    for (int64_t t = 0; t < c.n; ++t) {
      std::vector<float> y1(static_cast<size_t>(c.out));
      const loom_tensor_view x1 = mat(x.data() + t * c.in, LOOM_DTYPE_F32, 1, c.in);
      loom_tensor_view y1v = mat(y1.data(), LOOM_DTYPE_F32, 1, c.out);
      plugin->call("linear", &loom_quantization_vtable::linear, handle, &x1, &y1v);
      ASSERT_EQ(std::memcmp(y1.data(), y.data() + t * c.out, sizeof(float) * static_cast<size_t>(c.out)), 0)
          << "row " << t << " of n=" << c.n << " in=" << c.in << " out=" << c.out;
    }
    plugin->vtable<loom_quantization_vtable>().release_weight(plugin->self(), handle);
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, QuantizationConformance,
                         ::testing::Combine(::testing::ValuesIn(conformance::plugin_names()),
                                            ::testing::Values(LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + dtype_str(std::get<1>(info.param));
                         });

TEST(QuantizationNone, SaysWhyItRefusesADtype) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", "{}"}, &a);
  const auto& vt = p->vtable<loom_quantization_vtable>();
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  int32_t ok = 1;
  ASSERT_EQ(vt.supports(p->self(), LOOM_DTYPE_Q4_K, &ok, &eb), LOOM_OK);
  EXPECT_EQ(ok, 0);
  EXPECT_NE(err.str().find("q4_K"), std::string::npos) << err.str();
  std::vector<uint8_t> q(18 * 4);
  const loom_tensor_view w = mat(q.data(), LOOM_DTYPE_Q4_0, 4, 32);
  void* h = nullptr;
  EXPECT_EQ(vt.prepare_weight(p->self(), &w, &h, &eb), LOOM_ERR_UNSUPPORTED);
}

// For every kernel path this machine has, linear over n = 1..37 rows gives each row exactly the
// bits it gets alone: the register blocks (4 rows, then 3, 2 or 1) and the tiles (48 features,
// a short last one here) never change an element's reduction order. in = 67 exercises the tail.
TEST(QuantizationNone, EveryKernelIsBatchInvariant) {
  ThreadPool threads(2);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  constexpr int64_t kMaxN = 37, kIn = 67, kOut = 101;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kMaxN * kIn)), w(static_cast<size_t>(kOut * kIn));
  for (auto& e : x) e = u(rng);
  for (auto& e : w) e = u(rng);
  std::vector<uint16_t> w16(w.size()), wb16(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w16[i] = f32_to_f16(w[i]);
    wb16[i] = f32_to_bf16(w[i]);
  }
  for (const char* config : {R"({"simd": "portable"})", R"({"simd": "auto"})"}) {
    const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", config}, &a);
    const auto& vt = p->vtable<loom_quantization_vtable>();
    for (const auto& [dtype, data] : {std::pair<loom_dtype, void*>{LOOM_DTYPE_F32, w.data()},
                                      {LOOM_DTYPE_F16, w16.data()}, {LOOM_DTYPE_BF16, wb16.data()}}) {
      const loom_tensor_view wv = mat(data, dtype, kOut, kIn);
      void* handle = nullptr;
      p->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handle);
      // Each row alone, once.
      std::vector<float> alone(static_cast<size_t>(kMaxN * kOut));
      for (int64_t t = 0; t < kMaxN; ++t) {
        const loom_tensor_view x1 = mat(x.data() + t * kIn, LOOM_DTYPE_F32, 1, kIn);
        loom_tensor_view y1 = mat(alone.data() + t * kOut, LOOM_DTYPE_F32, 1, kOut);
        p->call("linear", &loom_quantization_vtable::linear, handle, &x1, &y1);
      }
      for (int64_t n = 1; n <= kMaxN; ++n) {
        std::vector<float> y(static_cast<size_t>(n * kOut), NAN);
        const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, kIn);
        loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, kOut);
        p->call("linear", &loom_quantization_vtable::linear, handle, &xv, &yv);
        ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0)
            << config << " " << dtype_str(dtype) << ": n=" << n << " differs from row by row";
      }
      vt.release_weight(p->self(), handle);
    }
  }
}

TEST(QuantizationNone, RejectsAnUnknownSimdValue) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  try {
    host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", R"({"simd": "avx512"})"}, &a);
    FAIL() << "a bad simd value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"simd\" must be \"auto\" or \"portable\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
