// Quantization conformance: every quantization plugin's linear (y = x W^T) against a
// double-precision GEMM on the stored weights, for f32/f16/bf16 storage and awkward shapes; and
// each row's result independent of the other rows in the batch (bit for bit); for quantization
// none, every kernel the CPU runs ("simd": "portable" and "auto") batch-invariant on n = 1..37.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <cstring>
#include <map>
#include <random>

#include "core/common/half.hpp"
#include "core/common/thread_pool.hpp"
#include "loom/quantization.h"
#include "loom/sdk_gguf_blocks.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

// Allowed error relative to sum_i |x_i w_i|. Plugins that quantize at load time add an entry.
double tolerance(const std::string& plugin) {
  // int8/int4/fp8 quantize f32/f16/bf16 at load: their bound is the format's per-weight error
  // (fp8: 1/16 of each weight; int8: half a step of max/127; int4: a step of (max - min)/15);
  // conformance_quantization_int checks them tightly against their own dequantized weights.
  static const std::map<std::string, double> kTol = {{"none", 1e-6}, {"int8", 0.01}, {"fp8", 0.07}, {"int4", 0.25}};
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
// a short last one here) never change an element's reduction order. in = 91 = 2 x 32 + 3 x 8 + 3
// exercises the decode kernel's unrolled steps, its single 8-lane steps and the tail.
// Every n in `ns` gives, row for row, the bits of the rows computed one at a time: for f32, f16
// and bf16 weights [out, in], portable and AVX2 kernels and compute = "bf16" (the AVX512-BF16
// kernels where the CPU has them, else the exact ones), on n_threads host threads (one thread:
// each linear is one share; more: a prefill takes the shared-x path).
void expect_batch_invariant(int64_t in, int64_t out, const std::vector<int64_t>& ns, uint64_t seed,
                            int32_t n_threads) {
  ThreadPool threads(n_threads);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  const int64_t max_n = *std::max_element(ns.begin(), ns.end());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(max_n * in)), w(static_cast<size_t>(out * in));
  for (auto& e : x) e = u(rng);
  for (auto& e : w) e = u(rng);
  std::vector<uint16_t> w16(w.size()), wb16(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w16[i] = f32_to_f16(w[i]);
    wb16[i] = f32_to_bf16(w[i]);
  }
  for (const char* config :
       {R"({"simd": "portable"})", R"({"simd": "auto"})", R"({"simd": "avx2"})", R"({"compute": "bf16"})"}) {
    const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", config}, &a);
    const auto& vt = p->vtable<loom_quantization_vtable>();
    for (const auto& [dtype, data] : {std::pair<loom_dtype, void*>{LOOM_DTYPE_F32, w.data()},
                                      {LOOM_DTYPE_F16, w16.data()}, {LOOM_DTYPE_BF16, wb16.data()}}) {
      const loom_tensor_view wv = mat(data, dtype, out, in);
      void* handle = nullptr;
      p->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handle);
      // Each row alone, once.
      std::vector<float> alone(static_cast<size_t>(max_n * out));
      for (int64_t t = 0; t < max_n; ++t) {
        const loom_tensor_view x1 = mat(x.data() + t * in, LOOM_DTYPE_F32, 1, in);
        loom_tensor_view y1 = mat(alone.data() + t * out, LOOM_DTYPE_F32, 1, out);
        p->call("linear", &loom_quantization_vtable::linear, handle, &x1, &y1);
      }
      for (const int64_t n : ns) {
        std::vector<float> y(static_cast<size_t>(n * out), NAN);
        const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, in);
        loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, out);
        p->call("linear", &loom_quantization_vtable::linear, handle, &xv, &yv);
        ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0)
            << config << " " << dtype_str(dtype) << ": n=" << n << " differs from row by row";
      }
      vt.release_weight(p->self(), handle);
    }
  }
}

TEST(QuantizationNone, EveryKernelIsBatchInvariant) {
  // Small: every n up to 37 (the decode path for small n, the panel GEMM's row remainders) and
  // a partial last 16-feature panel (101 = 6 x 16 + 5).
  std::vector<int64_t> ns(37);
  for (int64_t n = 1; n <= 37; ++n) ns[static_cast<size_t>(n - 1)] = n;
  for (const int32_t t : {1, 2}) expect_batch_invariant(91, 101, ns, 11, t);
}

TEST(QuantizationNone, BlockedGemmIsBatchInvariant) {
  // Large enough for the GEMM's k blocks (256 f32 / 512 f16 values: in = 1100 makes three, the
  // last partial) and its 144-row activation blocks (n = 150 and 300 cross them).
  for (const int32_t t : {1, 2}) expect_batch_invariant(1100, 37, {150, 300}, 12, t);
  // 13 panels, the last partial: several chunks of the shared-x prefill per row block.
  expect_batch_invariant(1100, 200, {150, 300}, 13, 2);
}

// y [n, out] = linear of x [n, in] on W [out, in] (stored as `dtype`) by quantization none under
// `config`, on two host threads.
std::vector<float> none_linear(const char* config, const void* w, loom_dtype dtype, int64_t out, int64_t in,
                               const std::vector<float>& x, int64_t n) {
  ThreadPool threads(2);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", config}, &a);
  const loom_tensor_view wv = mat(const_cast<void*>(w), dtype, out, in);
  void* handle = nullptr;
  p->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handle);
  std::vector<float> y(static_cast<size_t>(n * out), NAN);
  const loom_tensor_view xv = mat(const_cast<float*>(x.data()), LOOM_DTYPE_F32, n, in);
  loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, n, out);
  p->call("linear", &loom_quantization_vtable::linear, handle, &xv, &yv);
  p->vtable<loom_quantization_vtable>().release_weight(p->self(), handle);
  return y;
}

// compute = "bf16" through the plugin: each y within bf16's rounding of the double product
// (x and W each rounded to 8 significant bits: |error| <= 2^-7 x sum |x_k w_k|, with room for
// the f32 adds), and on a CPU with AVX512-BF16 not the exact path's bits (the mode took effect);
// on one without, exactly the exact path's bits (the mode falls back, saying so at start-up).
TEST(QuantizationNone, ComputeBf16StaysWithinBf16Rounding) {
  const int64_t in = 1100, out = 70;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (auto& e : w) e = u(rng);
  std::vector<uint16_t> w16(w.size());
  for (size_t i = 0; i < w.size(); ++i) w16[i] = f32_to_f16(w[i]);
  const bool has_bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512bf16");
  for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{40}}) {
    std::vector<float> x(static_cast<size_t>(n * in));
    for (auto& e : x) e = u(rng);
    const std::vector<float> exact = none_linear(R"({"compute": "exact"})", w16.data(), LOOM_DTYPE_F16, out, in, x, n);
    const std::vector<float> bf16 = none_linear(R"({"compute": "bf16"})", w16.data(), LOOM_DTYPE_F16, out, in, x, n);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < out; ++o) {
        double dot = 0, mag = 0;
        for (int64_t k = 0; k < in; ++k) {
          const double p = static_cast<double>(x[static_cast<size_t>(t * in + k)]) *
                           f16_to_f32(w16[static_cast<size_t>(o * in + k)]);
          dot += p;
          mag += std::fabs(p);
        }
        const size_t i = static_cast<size_t>(t * out + o);
        ASSERT_LE(std::fabs(bf16[i] - dot), std::ldexp(1.0, -7) * mag) << "n " << n << ", row " << t << ", feature " << o;
      }
    if (has_bf16)
      EXPECT_NE(std::memcmp(bf16.data(), exact.data(), exact.size() * sizeof(float)), 0) << "n " << n;
    else
      EXPECT_EQ(std::memcmp(bf16.data(), exact.data(), exact.size() * sizeof(float)), 0) << "n " << n;
  }
}

// compute = "bf16" with simd = "portable" has no AVX512-BF16 kernels to run: the plugin computes
// with the portable kernel, exactly (the fallback every CPU without the instructions takes).
TEST(QuantizationNone, ComputeBf16WithPortableKernelsComputesExactly) {
  const int64_t in = 70, out = 40, n = 12;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(out * in)), x(static_cast<size_t>(n * in));
  for (auto& e : w) e = u(rng);
  for (auto& e : x) e = u(rng);
  EXPECT_EQ(none_linear(R"({"simd": "portable"})", w.data(), LOOM_DTYPE_F32, out, in, x, n),
            none_linear(R"({"simd": "portable", "compute": "bf16"})", w.data(), LOOM_DTYPE_F32, out, in, x, n));
}

// simd = "avx2" keeps the AVX-512 kernels out, which promise the AVX2 kernels' bits: the two give
// the same y at every row count (decode rows, the 18-20-row joined tiles, prefill blocks) and for
// every stored type.
TEST(QuantizationNone, Avx2AndAutoGiveTheSameBits) {
  constexpr int64_t kIn = 300, kOut = 77;
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(kOut * kIn)), x(static_cast<size_t>(160 * kIn));
  for (auto& e : w) e = u(rng);
  for (auto& e : x) e = u(rng);
  std::vector<uint16_t> w16(w.size()), wb16(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w16[i] = f32_to_f16(w[i]);
    wb16[i] = f32_to_bf16(w[i]);
  }
  for (const auto& [dtype, data] : {std::pair<loom_dtype, const void*>{LOOM_DTYPE_F32, w.data()},
                                    {LOOM_DTYPE_F16, w16.data()}, {LOOM_DTYPE_BF16, wb16.data()}})
    for (const int64_t n : {1, 2, 5, 8, 9, 19, 20, 37, 160}) {
      const std::vector<float> auto_y = none_linear(R"({"simd": "auto"})", data, dtype, kOut, kIn, x, n);
      const std::vector<float> avx2_y = none_linear(R"({"simd": "avx2"})", data, dtype, kOut, kIn, x, n);
      ASSERT_EQ(std::memcmp(auto_y.data(), avx2_y.data(), auto_y.size() * sizeof(float)), 0)
          << dtype_str(dtype) << " n=" << n;
    }
}

// A value outside a choice key's list is refused, naming the key and the valid values.
TEST(QuantizationNone, RejectsAnUnknownChoiceValue) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  for (const auto& [config, message] :
       {std::pair<const char*, const char*>{R"({"simd": "avx512"})", R"("simd" must be "auto", "avx2" or "portable", got "avx512")"},
        {R"({"compute": "fp16"})", R"("compute" must be "exact" or "bf16")"}}) {
    try {
      host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", config}, &a);
      ADD_FAILURE() << config << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}


// ---- GGUF block formats ----------------------------------------------------------------------
// Every plugin that takes a block format, on random weights quantized by the SDK reference
// quantizer: y against a double GEMM on the dequantized weights (only the plugin's activation
// quantization separates them: checks the kernel and the layout), against the f32 weights
// (within the format's quantization noise), and each row's bits alone == in the batch.

struct BlockFormat {
  loom_dtype dtype;
  const char* name;
  double kernel_tol;  // |y - x dequant(W)^T| / sum |x_i dequant(w)_i|
  double format_tol;  // |y - x W^T| / sum |x_i w_i|
};

constexpr BlockFormat kBlockFormats[] = {{LOOM_DTYPE_Q8_0, "q8_0", 3e-3, 1e-2},
                                         {LOOM_DTYPE_Q4_0, "q4_0", 3e-3, 6e-2},
                                         {LOOM_DTYPE_Q4_K, "q4_K", 4e-3, 5e-2},
                                         {LOOM_DTYPE_Q6_K, "q6_K", 4e-3, 1.5e-2},
                                         {LOOM_DTYPE_Q2_K, "q2_K", 4e-3, 0.12},
                                         {LOOM_DTYPE_Q3_K, "q3_K", 4e-3, 6e-2},
                                         {LOOM_DTYPE_Q5_K, "q5_K", 4e-3, 1.5e-2},
                                         {LOOM_DTYPE_IQ4_XS, "iq4_xs", 4e-3, 4e-2},
                                         {LOOM_DTYPE_Q4_1, "q4_1", 3e-3, 6e-2},
                                         {LOOM_DTYPE_Q5_0, "q5_0", 3e-3, 3e-2},
                                         {LOOM_DTYPE_Q5_1, "q5_1", 3e-3, 3e-2},
                                         {LOOM_DTYPE_IQ4_NL, "iq4_nl", 3e-3, 6e-2}};
constexpr int kNumBlockFormats = static_cast<int>(sizeof(kBlockFormats) / sizeof(kBlockFormats[0]));

// W [out, in] uniform in [-1, 1], its blocks, and the blocks' f32 values.
struct QuantizedMatrix {
  std::vector<float> w, deq;
  std::vector<uint8_t> blocks;
};

QuantizedMatrix make_quantized(loom_dtype dtype, int64_t out, int64_t in, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  QuantizedMatrix m;
  m.w.resize(static_cast<size_t>(out * in));
  for (auto& e : m.w) e = u(rng);
  const sdk::gguf::BlockGeometry geo = sdk::gguf::block_geometry(dtype);
  const int64_t row_bytes = in / geo.values * geo.bytes;
  m.blocks.resize(static_cast<size_t>(out * row_bytes));
  m.deq.resize(m.w.size());
  for (int64_t o = 0; o < out; ++o) {
    sdk::gguf::quantize_row(dtype, m.w.data() + o * in, m.blocks.data() + o * row_bytes, in);
    sdk::gguf::dequantize_row(dtype, m.blocks.data() + o * row_bytes, m.deq.data() + o * in, in);
  }
  return m;
}

class BlockFormatConformance : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(BlockFormatConformance, LinearMatchesDequantizedGemm) {
  const auto& [name, index] = GetParam();
  const BlockFormat& f = kBlockFormats[index];
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  std::string skip;
  const auto plugin = conformance::create_or_skip(host_, LOOM_KIND_QUANTIZATION, name, &a, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  int32_t ok = 0;
  plugin->call("supports", &loom_quantization_vtable::supports, f.dtype, &ok);
  if (!ok) GTEST_SKIP() << name << " does not take " << f.name << " weights";

  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Case& c : {Case{1, 256, 40}, Case{5, 512, 67}, Case{37, 256, 33}, Case{3, 4096, 24}, Case{8, 1024, 9}}) {
    const QuantizedMatrix m = make_quantized(f.dtype, c.out, c.in, rng);
    std::vector<float> x(static_cast<size_t>(c.n * c.in));
    for (auto& e : x) e = u(rng);
    const loom_tensor_view wv = mat(const_cast<uint8_t*>(m.blocks.data()), f.dtype, c.out, c.in);
    void* handle = nullptr;
    plugin->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handle);
    std::vector<float> y(static_cast<size_t>(c.n * c.out), NAN);
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, c.n, c.in);
    loom_tensor_view yv = mat(y.data(), LOOM_DTYPE_F32, c.n, c.out);
    plugin->call("linear", &loom_quantization_vtable::linear, handle, &xv, &yv);
    for (int64_t t = 0; t < c.n; ++t) {
      for (int64_t o = 0; o < c.out; ++o) {
        double ref_deq = 0, mag_deq = 0, ref = 0, mag = 0;
        for (int64_t i = 0; i < c.in; ++i) {
          const double xi = x[static_cast<size_t>(t * c.in + i)];
          ref_deq += xi * m.deq[static_cast<size_t>(o * c.in + i)];
          mag_deq += std::abs(xi * m.deq[static_cast<size_t>(o * c.in + i)]);
          ref += xi * m.w[static_cast<size_t>(o * c.in + i)];
          mag += std::abs(xi * m.w[static_cast<size_t>(o * c.in + i)]);
        }
        const double got = y[static_cast<size_t>(t * c.out + o)];
        ASSERT_NEAR(got, ref_deq, f.kernel_tol * mag_deq)
            << f.name << " vs dequantized, n=" << c.n << " in=" << c.in << " at [" << t << ", " << o << "]";
        ASSERT_NEAR(got, ref, f.format_tol * mag)
            << f.name << " vs f32, n=" << c.n << " in=" << c.in << " at [" << t << ", " << o << "]";
      }
    }
    for (int64_t t = 0; t < c.n; ++t) {
      std::vector<float> y1(static_cast<size_t>(c.out));
      const loom_tensor_view x1 = mat(x.data() + t * c.in, LOOM_DTYPE_F32, 1, c.in);
      loom_tensor_view y1v = mat(y1.data(), LOOM_DTYPE_F32, 1, c.out);
      plugin->call("linear", &loom_quantization_vtable::linear, handle, &x1, &y1v);
      ASSERT_EQ(std::memcmp(y1.data(), y.data() + t * c.out, sizeof(float) * static_cast<size_t>(c.out)), 0)
          << f.name << ": row " << t << " of n=" << c.n << " in=" << c.in;
    }
    plugin->vtable<loom_quantization_vtable>().release_weight(plugin->self(), handle);
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, BlockFormatConformance,
                         ::testing::Combine(::testing::ValuesIn(conformance::plugin_names()),
                                            ::testing::Range(0, kNumBlockFormats)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + kBlockFormats[std::get<1>(info.param)].name;
                         });

// Quantization interface 1.2: linear_group on one x gives each weight exactly linear's bits,
// for groups whose weights share the plugin's activation form and for groups that mix forms,
// in decode and prefill batch sizes; weights of another in_features are refused.
class LinearGroupConformance : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(LinearGroupConformance, EachOutputHasLinearsBits) {
  const std::string name = GetParam();
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  std::string skip;
  const auto plugin = conformance::create_or_skip(host_, LOOM_KIND_QUANTIZATION, name, &a, &skip);
  if (!plugin) GTEST_SKIP() << skip;
  const auto& vt = plugin->vtable<loom_quantization_vtable>();
  if (vt.struct_size < offsetof(loom_quantization_vtable, linear_group) + sizeof(vt.linear_group) ||
      vt.linear_group == nullptr)
    GTEST_SKIP() << name << " does not offer linear_group (the host calls linear for each weight)";

  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  constexpr int64_t kIn = 256;
  const std::vector<std::vector<loom_dtype>> groups = {
      {LOOM_DTYPE_F16, LOOM_DTYPE_F16, LOOM_DTYPE_F16},   {LOOM_DTYPE_F32, LOOM_DTYPE_BF16},
      {LOOM_DTYPE_Q8_0, LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q8_0}, {LOOM_DTYPE_Q4_K, LOOM_DTYPE_Q6_K},
      {LOOM_DTYPE_Q4_K, LOOM_DTYPE_Q8_0, LOOM_DTYPE_F16},  {LOOM_DTYPE_Q5_K, LOOM_DTYPE_Q2_K, LOOM_DTYPE_IQ4_XS},
      {LOOM_DTYPE_Q3_K, LOOM_DTYPE_Q6_K, LOOM_DTYPE_Q4_0},
      // Q8_0 activations for the x8 Q4_0 and the legacy x8 Q5_0/IQ4_NL in one pass; Q8_1 for
      // Q4_1/Q5_1; and a mix of the two that goes weight by weight.
      {LOOM_DTYPE_Q5_0, LOOM_DTYPE_Q4_0, LOOM_DTYPE_IQ4_NL}, {LOOM_DTYPE_Q4_1, LOOM_DTYPE_Q5_1},
      {LOOM_DTYPE_Q5_1, LOOM_DTYPE_Q5_0, LOOM_DTYPE_Q4_1}};
  const int64_t outs[] = {37, 16, 70};
  int tested = 0;
  for (const auto& dtypes : groups) {
    bool all = true;
    for (const loom_dtype t : dtypes) {
      int32_t ok = 0;
      plugin->call("supports", &loom_quantization_vtable::supports, t, &ok);
      all = all && ok;
    }
    if (!all) continue;
    ++tested;
    std::vector<std::vector<uint8_t>> stored(dtypes.size());
    std::vector<void*> handles(dtypes.size());
    for (size_t i = 0; i < dtypes.size(); ++i) {
      const loom_dtype t = dtypes[i];
      const int64_t out = outs[i];
      if (t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16) {
        stored[i].resize(static_cast<size_t>(out * kIn * (t == LOOM_DTYPE_F32 ? 4 : 2)));
        for (int64_t e = 0; e < out * kIn; ++e) {
          const float v = u(rng);
          if (t == LOOM_DTYPE_F32) {
            std::memcpy(stored[i].data() + e * 4, &v, 4);
          } else {
            const uint16_t h = t == LOOM_DTYPE_F16 ? f32_to_f16(v) : f32_to_bf16(v);
            std::memcpy(stored[i].data() + e * 2, &h, 2);
          }
        }
      } else {
        stored[i] = make_quantized(t, out, kIn, rng).blocks;
      }
      const loom_tensor_view wv = mat(stored[i].data(), t, out, kIn);
      plugin->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handles[i]);
    }
    for (const int64_t n : {1, 3, 7, 150}) {
      std::vector<float> x(static_cast<size_t>(n * kIn));
      for (auto& e : x) e = u(rng);
      const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, n, kIn);
      std::vector<std::vector<float>> y(dtypes.size()), expected(dtypes.size());
      std::vector<loom_tensor_view> yv(dtypes.size());
      for (size_t i = 0; i < dtypes.size(); ++i) {
        expected[i].assign(static_cast<size_t>(n * outs[i]), NAN);
        loom_tensor_view ev = mat(expected[i].data(), LOOM_DTYPE_F32, n, outs[i]);
        plugin->call("linear", &loom_quantization_vtable::linear, handles[i], &xv, &ev);
        y[i].assign(expected[i].size(), NAN);
        yv[i] = mat(y[i].data(), LOOM_DTYPE_F32, n, outs[i]);
      }
      plugin->call("linear_group", &loom_quantization_vtable::linear_group, handles.data(),
                   static_cast<int32_t>(handles.size()), &xv, yv.data());
      for (size_t i = 0; i < dtypes.size(); ++i)
        EXPECT_EQ(std::memcmp(y[i].data(), expected[i].data(), expected[i].size() * sizeof(float)), 0)
            << name << ": weight " << i << " (dtype " << dtypes[i] << ") of a group of " << dtypes.size()
            << ", n = " << n;
    }
    // A weight of another in_features in the group: refused, with the shapes in the message.
    std::vector<float> x(static_cast<size_t>(kIn + 32)), y0(static_cast<size_t>(outs[0]));
    const loom_tensor_view bad_x = mat(x.data(), LOOM_DTYPE_F32, 1, kIn + 32);
    std::vector<loom_tensor_view> bad_y(dtypes.size());
    for (size_t i = 0; i < dtypes.size(); ++i) bad_y[i] = mat(y0.data(), LOOM_DTYPE_F32, 1, outs[i]);
    loom_error_buf err{};
    char text[256] = {};
    err.data = text;
    err.capacity = sizeof(text);
    EXPECT_NE(vt.linear_group(plugin->self(), handles.data(), static_cast<int32_t>(handles.size()), &bad_x,
                              bad_y.data(), &err),
              LOOM_OK);
    EXPECT_NE(std::string(text).find("linear expects x [n, 256]"), std::string::npos) << text;
    for (void* h : handles) vt.release_weight(plugin->self(), h);
  }
  if (tested == 0) GTEST_SKIP() << name << " supports none of the groups' weight types";
}

INSTANTIATE_TEST_SUITE_P(Plugins, LinearGroupConformance, ::testing::ValuesIn(conformance::plugin_names()),
                         [](const auto& info) { return info.param; });

// quantization gguf: every kernel set batch-invariant over n = 1..37; "auto" and "avx2" (the same
// exact block sums, AVX-512 or AVX2 instructions) give the same bits, and the portable set is
// close to them (it sums the same exact block products in a different float order).
TEST(QuantizationGguf, EveryKernelIsBatchInvariant) {
  ThreadPool threads(2);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  constexpr int64_t kMaxN = 37, kIn = 512, kOut = 75;
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kMaxN * kIn));
  for (auto& e : x) e = u(rng);
  for (const BlockFormat& f : kBlockFormats) {
    const QuantizedMatrix m = make_quantized(f.dtype, kOut, kIn, rng);
    std::vector<float> by_config[3];
    int which = 0;
    for (const char* config : {R"({"simd": "portable"})", R"({"simd": "auto"})", R"({"simd": "avx2"})"}) {
      const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "gguf", "", config}, &a);
      const loom_tensor_view wv = mat(const_cast<uint8_t*>(m.blocks.data()), f.dtype, kOut, kIn);
      void* handle = nullptr;
      p->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &handle);
      std::vector<float>& alone = by_config[which++];
      alone.resize(static_cast<size_t>(kMaxN * kOut));
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
            << config << " " << f.name << ": n=" << n << " differs from row by row";
      }
      p->vtable<loom_quantization_vtable>().release_weight(p->self(), handle);
    }
    for (size_t i = 0; i < by_config[0].size(); ++i)
      ASSERT_NEAR(by_config[0][i], by_config[1][i], 1e-4 * (1.0 + std::abs(by_config[0][i]))) << f.name << " at " << i;
    ASSERT_EQ(std::memcmp(by_config[1].data(), by_config[2].data(), by_config[1].size() * sizeof(float)), 0)
        << f.name << ": simd = \"avx2\" differs from \"auto\"";
  }
}

// Resident bytes of the mapping that starts at p (/proc/self/smaps), or -1 when not found.
int64_t mapping_rss(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_it = false;
  while (std::getline(smaps, line)) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2) {
      in_it = start == reinterpret_cast<uintptr_t>(p);
      continue;
    }
    long long kb = 0;
    if (in_it && std::sscanf(line.c_str(), "Rss: %lld kB", &kb) == 1) return kb * 1024;
  }
  return -1;
}

// quantization gguf under AVX2 repacks the 32-value formats at load and gives back the pages of a
// read-only file mapping (not read again), but never touches memory it cannot re-read: the
// source vector keeps its bytes. Same results from the file and from the vector either way.
TEST(QuantizationGguf, RepackedWeightsLeaveTheFileMapping) {
  const bool repacks = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  ThreadPool threads(2);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "gguf", "", "{}"}, &a);
  const auto& vt = p->vtable<loom_quantization_vtable>();
  constexpr int64_t kOut = 61, kIn = 2048, kN = 5, kAt = 4096 + 100;  // unaligned start in the file
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kN * kIn));
  for (auto& e : x) e = u(rng);
  for (const loom_dtype dtype : {LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q8_0, LOOM_DTYPE_Q4_1, LOOM_DTYPE_Q5_0, LOOM_DTYPE_Q5_1,
                                LOOM_DTYPE_IQ4_NL}) {
    const QuantizedMatrix m = make_quantized(dtype, kOut, kIn, rng);
    const std::string path = ::testing::TempDir() + "gguf_repack_" + std::to_string(getpid()) + ".bin";
    {
      std::ofstream f(path, std::ios::binary);
      const std::vector<char> pad(kAt, 0);
      f.write(pad.data(), kAt);
      f.write(reinterpret_cast<const char*>(m.blocks.data()), static_cast<std::streamsize>(m.blocks.size()));
    }
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0) << path;
    const size_t map_bytes = static_cast<size_t>(kAt) + m.blocks.size();
    void* map = ::mmap(nullptr, map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    std::remove(path.c_str());
    ASSERT_NE(map, MAP_FAILED);
    const auto* file_blocks = static_cast<const uint8_t*>(map) + kAt;
    ASSERT_EQ(std::memcmp(file_blocks, m.blocks.data(), m.blocks.size()), 0);  // now resident
    const int64_t rss_before = mapping_rss(map);
    ASSERT_GE(rss_before, static_cast<int64_t>(m.blocks.size()));

    std::vector<uint8_t> copy = m.blocks;
    void* from_file = nullptr;
    void* from_vector = nullptr;
    const loom_tensor_view wf = mat(const_cast<uint8_t*>(file_blocks), dtype, kOut, kIn);
    const loom_tensor_view wv = mat(copy.data(), dtype, kOut, kIn);
    p->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wf, &from_file);
    p->call("prepare_weight", &loom_quantization_vtable::prepare_weight, &wv, &from_vector);
    const int64_t rss_after = mapping_rss(map);
    if (repacks) {
      // Only pages outside the tensor's page-aligned interior stay: the padding page and the two
      // partial ones at the ends.
      EXPECT_LE(rss_after, 3 * sysconf(_SC_PAGESIZE));
    } else {
      EXPECT_EQ(rss_after, rss_before);
    }
    EXPECT_EQ(copy, m.blocks) << "anonymous memory must keep its bytes";

    std::vector<float> yf(static_cast<size_t>(kN * kOut)), yv(yf.size());
    const loom_tensor_view xv = mat(x.data(), LOOM_DTYPE_F32, kN, kIn);
    loom_tensor_view yfv = mat(yf.data(), LOOM_DTYPE_F32, kN, kOut), yvv = mat(yv.data(), LOOM_DTYPE_F32, kN, kOut);
    p->call("linear", &loom_quantization_vtable::linear, from_file, &xv, &yfv);
    p->call("linear", &loom_quantization_vtable::linear, from_vector, &xv, &yvv);
    EXPECT_EQ(std::memcmp(yf.data(), yv.data(), yf.size() * sizeof(float)), 0);
    vt.release_weight(p->self(), from_file);
    vt.release_weight(p->self(), from_vector);
    ::munmap(map, map_bytes);
  }
}

TEST(QuantizationGguf, RefusesRowsThatAreNotWholeBlocks) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "gguf", "", "{}"}, &a);
  const auto& vt = p->vtable<loom_quantization_vtable>();
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  std::vector<uint8_t> q(144 * 4);
  const loom_tensor_view w = mat(q.data(), LOOM_DTYPE_Q4_K, 4, 128);
  void* h = nullptr;
  EXPECT_EQ(vt.prepare_weight(p->self(), &w, &h, &eb), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(err.str().find("in_features 128"), std::string::npos) << err.str();
  // A type without kernels (ggml type 16, iq2_xxs) is refused by name, never by number.
  int32_t ok = 1;
  ASSERT_EQ(vt.supports(p->self(), static_cast<loom_dtype>(16), &ok, &eb), LOOM_OK);
  EXPECT_EQ(ok, 0);
  EXPECT_NE(err.str().find("iq2_xxs"), std::string::npos) << err.str();
}

// Types the plugin refuses are named as ggml names them, never by number.
TEST(QuantizationGguf, NamesTheTypesItRefuses) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "gguf", "", "{}"}, &a);
  const auto& vt = p->vtable<loom_quantization_vtable>();
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  std::vector<uint8_t> q(66 * 4);
  const loom_tensor_view w = mat(q.data(), static_cast<loom_dtype>(16), 4, 256);  // ggml IQ2_XXS
  void* h = nullptr;
  EXPECT_EQ(vt.prepare_weight(p->self(), &w, &h, &eb), LOOM_ERR_UNSUPPORTED);
  EXPECT_NE(err.str().find("weights of type iq2_xxs are not supported"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("q4_1, q5_0, q5_1, iq4_nl"), std::string::npos) << err.str();
  EXPECT_EQ(err.str().find("type 16"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace loom
