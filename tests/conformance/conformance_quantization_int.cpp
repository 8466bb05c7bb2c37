// Conformance of the quantizing plugins int8 (w8a16, w8a8), int4 and fp8 against quantization
// none (f32) on random matrices (in 64..4096, out 1..300, n 1..37), for both kernel paths
// ("simd": "portable" and "auto"):
//   kernel:  y vs x dequant(W)^T in double, within 1e-5 * sum |x_i dequant(W)_i| (f32 rounding
//            only; w8a8: bit-exact against the integer reference);
//   format:  every dequantized weight within its format's exact error bound, and y vs none's
//            x W^T within the format's noise, relative RMS: int8 1%, w8a8 2%, int4 12%, fp8 5%;
//   batch invariance bit for bit on n = 1..37, SIMD vs portable within 1e-5 (w8a8: exact);
// and the demo model's greedy story under each plugin (int8: the first 60 tokens as in f32).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/common/half.hpp"
#include "plugins/quantization/int8/int8_calibrate.h"
#include "plugins/quantization/int8/int8_format.hpp"
#include "tests/conformance/quantization_int_support.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom::qint {
namespace {

struct Variant {
  const char* plugin;
  const char* config;  // JSON members besides "simd"
  double rms_tol;      // y vs x W^T, relative RMS
};

const Variant kVariants[] = {
    {"int8", "", 0.01},
    {"int8", R"("mode": "w8a8")", 0.02},
    {"int4", "", 0.12},
    {"int4", R"("group_size": 32, "zero_point": false)", 0.12},
    {"int4", R"("group_size": 64, "zero_point": true)", 0.12},
    {"fp8", "", 0.05},
};

std::string config_of(const Variant& v, bool simd) {
  const std::string simd_key = std::string(R"("simd": ")") + (simd ? "auto" : "portable") + "\"";
  return "{" + (std::string(v.config).empty() ? simd_key : std::string(v.config) + ", " + simd_key) + "}";
}
bool is_w8a8(const Variant& v) { return std::string(v.config).find("w8a8") != std::string::npos; }
bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

std::vector<float> random_vec(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

// The w8a8 result computed from the format code: exact integer dots, then the two scales.
std::vector<float> w8a8_reference(const std::vector<float>& w, const std::vector<float>& x, int64_t n, int64_t in,
                                  int64_t out) {
  const int64_t pad = (in + 31) / 32 * 32;
  std::vector<int8_t> wq(static_cast<size_t>(out * pad), 0), xq(static_cast<size_t>(n * pad));
  std::vector<float> ws(static_cast<size_t>(out)), xs(static_cast<size_t>(n)), y(static_cast<size_t>(n * out));
  for (int64_t o = 0; o < out; ++o)
    loom_int8::quantize_row(w.data() + o * in, nullptr, in, wq.data() + o * pad, &ws[o]);
  for (int64_t t = 0; t < n; ++t)
    xs[t] = loom_int8::quantize_activation(x.data() + t * in, nullptr, in, pad, xq.data() + t * pad);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < out; ++o) {
      int32_t acc = 0;
      for (int64_t k = 0; k < pad; ++k) acc += int32_t(xq[t * pad + k]) * int32_t(wq[o * pad + k]);
      y[t * out + o] = static_cast<float>(acc) * (xs[t] * ws[o]);
    }
  return y;
}

class QuantIntConformance : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  const Variant& variant() const { return kVariants[std::get<0>(GetParam())]; }
  bool simd() const { return std::get<1>(GetParam()); }
  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_P(QuantIntConformance, MatchesNoneWithinTheFormatsNoise) {
  const Variant& v = variant();
  Quant q(host_, v.plugin, config_of(v, simd()));
  Quant none(host_, "none", "{}");
  std::mt19937_64 rng(1234);
  std::uniform_int_distribution<int64_t> in_d(64, 4096), out_d(1, 300), n_d(1, 37);
  for (int c = 0; c < 6; ++c) {
    const int64_t in = c == 0   ? 4096
                       : c == 1 ? 67
                                : in_d(rng),
                  out = c == 0 ? 300 : out_d(rng), n = c < 2 ? 37 : n_d(rng);
    const std::vector<float> w = random_vec(rng, static_cast<size_t>(out * in));
    const std::vector<float> x = random_vec(rng, static_cast<size_t>(n * in));
    const std::string at = "in=" + std::to_string(in) + " out=" + std::to_string(out) + " n=" + std::to_string(n);
    const std::vector<float> y = q.linear(q.prepare(w.data(), LOOM_DTYPE_F32, out, in), x.data(), n, in, out);
    const std::vector<float> ref = none.linear(none.prepare(w.data(), LOOM_DTYPE_F32, out, in), x.data(), n, in, out);

    if (is_w8a8(v)) {
      const std::vector<float> exact = w8a8_reference(w, x, n, in, out);
      ASSERT_EQ(std::memcmp(y.data(), exact.data(), y.size() * sizeof(float)), 0) << at;
    } else {
      const std::vector<float> d =
          dequantized(v.plugin, v.config[0] ? std::string("{") + v.config + "}" : "{}", w, out, in);
      const std::vector<float> bound =
          error_bounds(v.plugin, v.config[0] ? std::string("{") + v.config + "}" : "{}", w, out, in);
      for (size_t i = 0; i < w.size(); ++i) ASSERT_LE(std::fabs(w[i] - d[i]), bound[i]) << at << " weight " << i;
      for (int64_t t = 0; t < n; ++t)
        for (int64_t o = 0; o < out; ++o) {
          double dot = 0, mag = 0;
          for (int64_t k = 0; k < in; ++k) {
            dot += double(x[t * in + k]) * d[o * in + k];
            mag += std::fabs(double(x[t * in + k]) * d[o * in + k]);
          }
          ASSERT_NEAR(y[t * out + o], dot, 1e-5 * mag + 1e-30) << at << " at [" << t << ", " << o << "]";
        }
    }
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      err2 += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
      ref2 += double(ref[i]) * ref[i];
    }
    EXPECT_LE(std::sqrt(err2 / ref2), v.rms_tol) << at;
  }
}

TEST_P(QuantIntConformance, TakesF16AndBf16StorageAsTheirF32Values) {
  const Variant& v = variant();
  Quant q(host_, v.plugin, config_of(v, simd()));
  std::mt19937_64 rng(7);
  constexpr int64_t kIn = 200, kOut = 37, kN = 5;
  const std::vector<float> w = random_vec(rng, kOut * kIn), x = random_vec(rng, kN * kIn);
  std::vector<uint16_t> h(w.size()), b(w.size());
  std::vector<float> wh(w.size()), wb(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    h[i] = f32_to_f16(w[i]);
    wh[i] = f16_to_f32(h[i]);
    b[i] = f32_to_bf16(w[i]);
    wb[i] = bf16_to_f32(b[i]);
  }
  EXPECT_EQ(q.linear(q.prepare(h.data(), LOOM_DTYPE_F16, kOut, kIn), x.data(), kN, kIn, kOut),
            q.linear(q.prepare(wh.data(), LOOM_DTYPE_F32, kOut, kIn), x.data(), kN, kIn, kOut));
  EXPECT_EQ(q.linear(q.prepare(b.data(), LOOM_DTYPE_BF16, kOut, kIn), x.data(), kN, kIn, kOut),
            q.linear(q.prepare(wb.data(), LOOM_DTYPE_F32, kOut, kIn), x.data(), kN, kIn, kOut));
}

// n = 1..37 crosses every register block and the switch from in-register dequantization to
// dequantized tiles; in = 67 leaves a tail and a short int4 group.
TEST_P(QuantIntConformance, IsBatchInvariantBitForBit) {
  const Variant& v = variant();
  Quant q(host_, v.plugin, config_of(v, simd()));
  constexpr int64_t kMaxN = 37, kIn = 67, kOut = 101;
  std::mt19937_64 rng(11);
  const std::vector<float> w = random_vec(rng, kOut * kIn), x = random_vec(rng, kMaxN * kIn);
  void* h = q.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn);
  std::vector<float> alone;
  for (int64_t t = 0; t < kMaxN; ++t) {
    const std::vector<float> y1 = q.linear(h, x.data() + t * kIn, 1, kIn, kOut);
    alone.insert(alone.end(), y1.begin(), y1.end());
  }
  for (int64_t n = 1; n <= kMaxN; ++n) {
    const std::vector<float> y = q.linear(h, x.data(), n, kIn, kOut);
    ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, QuantIntConformance,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kVariants))),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           const int i = std::get<0>(info.param);
                           return std::string(kVariants[i].plugin) + "_" + std::to_string(i) + "_" +
                                  (std::get<1>(info.param) ? "simd" : "portable");
                         });

TEST(QuantInt, SimdAgreesWithPortable) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  ThreadPool threads(2);
  PluginHost host(threads, {});
  std::mt19937_64 rng(3);
  constexpr int64_t kIn = 1000, kOut = 77, kN = 13;
  const std::vector<float> w = random_vec(rng, kOut * kIn), x = random_vec(rng, kN * kIn);
  for (const Variant& v : kVariants) {
    Quant simd(host, v.plugin, config_of(v, true)), portable(host, v.plugin, config_of(v, false));
    for (const int64_t n : {int64_t{1}, kN}) {
      const std::vector<float> a =
          simd.linear(simd.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn), x.data(), n, kIn, kOut);
      const std::vector<float> b =
          portable.linear(portable.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn), x.data(), n, kIn, kOut);
      if (is_w8a8(v)) {
        EXPECT_EQ(a, b) << "integer dot products are exact on both paths";
        continue;
      }
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-5 * kIn) << v.plugin << " " << v.config << " " << i;
    }
  }
}

// Every finite E4M3 code through the plugin: a row holding each value once has scale exactly 1,
// and unit vectors read the weights back, so both conversions (table, bit moves) must be exact.
TEST(QuantInt, Fp8KernelsConvertEveryCodeExactly) {
  ThreadPool threads(2);
  PluginHost host(threads, {});
  std::vector<float> row;  // the value of every code but the two NaNs, computed from the definition
  for (int c = 0; c < 256; ++c) {
    const int e = (c >> 3) & 0xf, m = c & 7;
    if (e == 15 && m == 7) continue;
    const float mag = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(float(8 + m), e - 10);
    row.push_back((c & 0x80) ? -mag : mag);
  }
  const auto in = static_cast<int64_t>(row.size());
  std::vector<float> eye(static_cast<size_t>(in * in), 0.0f);
  for (int64_t k = 0; k < in; ++k) eye[static_cast<size_t>(k * in + k)] = 1.0f;
  for (const bool simd : {false, true}) {
    Quant q(host, "fp8", simd ? R"({"simd": "auto"})" : R"({"simd": "portable"})");
    void* h = q.prepare(row.data(), LOOM_DTYPE_F32, 1, in);
    const std::vector<float> batched = q.linear(h, eye.data(), in, in, 1);  // dequantized tile
    for (int64_t k = 0; k < in; ++k) {
      EXPECT_EQ(batched[static_cast<size_t>(k)], row[static_cast<size_t>(k)]) << "code #" << k;
      EXPECT_EQ(q.linear(h, eye.data() + k * in, 1, in, 1)[0], row[static_cast<size_t>(k)]) << "code #" << k;
    }
  }
}

TEST(QuantInt, W8a8HandComputed) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  // W row: max 3 -> scale 3/127, q = round(127/3 * (1, -2, 3, 0)) = (42, -85, 127, 0).
  // x: max 127 -> scale 1, q = (127, 0, -127, 64) (63.5 -> 64).
  const float w[] = {1.0f, -2.0f, 3.0f, 0.0f}, x[] = {127.0f, 0.0f, -127.0f, 63.5f};
  const float expected = static_cast<float>(127 * 42 - 127 * 127) * (1.0f * (3.0f / 127.0f));
  for (const bool simd : {false, true}) {
    Quant q(host, "int8", simd ? R"({"mode": "w8a8"})" : R"({"mode": "w8a8", "simd": "portable"})");
    EXPECT_EQ(q.linear(q.prepare(w, LOOM_DTYPE_F32, 1, 4), x, 1, 4, 1)[0], expected);
  }
}

TEST(QuantInt, SmoothQuantCalibrationMovesOutliersIntoTheWeights) {
  ThreadPool threads(2);
  PluginHost host(threads, {});
  Quant plain(host, "int8", R"({"mode": "w8a8"})"),
      smooth(host, "int8", R"({"mode": "w8a8", "smoothquant_alpha": 0.5})");
  Quant none(host, "none", "{}"), w8a16(host, "int8", "{}");
  void* lib =
      dlopen((std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libloom-quantization-int8.so").c_str(),
             RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto factors = reinterpret_cast<loom_int8_smoothing_factors_fn>(dlsym(lib, LOOM_INT8_SMOOTHING_FACTORS_SYMBOL));
  const auto calibrate = reinterpret_cast<loom_int8_calibrate_fn>(dlsym(lib, LOOM_INT8_CALIBRATE_SYMBOL));
  ASSERT_NE(factors, nullptr);
  ASSERT_NE(calibrate, nullptr);
  const float act[] = {4.0f, 1.0f}, wmax[] = {1.0f, 4.0f};
  float s[2];
  factors(act, wmax, 2, 0.5f, s);
  EXPECT_EQ(s[0], 2.0f);
  EXPECT_EQ(s[1], 0.5f);

  // Activations with two outlier channels (x50), as LLM activations have.
  constexpr int64_t kIn = 256, kOut = 64, kN = 16;
  std::mt19937_64 rng(5);
  const std::vector<float> w = random_vec(rng, kOut * kIn);
  std::vector<float> x = random_vec(rng, kN * kIn), absmax(kIn, 0.0f);
  for (int64_t t = 0; t < kN; ++t) {
    x[t * kIn + 3] *= 50.0f;
    x[t * kIn + 100] *= 50.0f;
    for (int64_t k = 0; k < kIn; ++k) absmax[k] = std::max(absmax[k], std::fabs(x[t * kIn + k]));
  }
  const std::vector<float> ref =
      none.linear(none.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn), x.data(), kN, kIn, kOut);
  void* hs = smooth.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn);
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  ASSERT_EQ(calibrate(smooth.self(), hs, absmax.data(), kIn, &eb), LOOM_OK) << err.str();
  auto rel_rms = [&](const std::vector<float>& y) {
    double e = 0, r = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      e += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
      r += double(ref[i]) * ref[i];
    }
    return std::sqrt(e / r);
  };
  const double plain_err =
      rel_rms(plain.linear(plain.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn), x.data(), kN, kIn, kOut));
  const double smooth_err = rel_rms(smooth.linear(hs, x.data(), kN, kIn, kOut));
  EXPECT_LT(smooth_err, 0.5 * plain_err) << "plain " << plain_err << ", smoothed " << smooth_err;
  EXPECT_LT(smooth_err, 0.02);

  // Refusals: the wrong number of maxima; a weight-only instance.
  EXPECT_EQ(calibrate(smooth.self(), hs, absmax.data(), kIn - 1, &eb), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(err.str().find("expects 256 activation maxima"), std::string::npos) << err.str();
  void* h16 = w8a16.prepare(w.data(), LOOM_DTYPE_F32, kOut, kIn);
  EXPECT_EQ(calibrate(w8a16.self(), h16, absmax.data(), kIn, &eb), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(err.str().find("w8a8"), std::string::npos) << err.str();
  dlclose(lib);
}

TEST(QuantInt, ConfigErrorsNameTheKeyAndValue) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  const std::pair<const char*, const char*> cases[][2] = {
      {{"int8", R"({"mode": "w4a4"})"}, {"\"mode\" must be \"w8a16\" or \"w8a8\", got \"w4a4\"", ""}},
      {{"int8", R"({"mode": "w8a8", "smoothquant_alpha": 1.5})"},
       {"\"smoothquant_alpha\" must be a number in [0, 1]", ""}},
      {{"int8", R"({"smoothquant_alpha": 0.5})"}, {"applies to \"mode\": \"w8a8\" only", ""}},
      {{"int4", R"({"group_size": 48})"}, {"\"group_size\" must be 32, 64 or 128, got 48", ""}},
      {{"int4", R"({"zero_point": "yes"})"}, {"\"zero_point\" must be true or false", ""}},
      {{"fp8", R"({"scale": "tensor"})"}, {"unknown key \"scale\" (valid keys: simd)", ""}},
      {{"fp8", R"({"simd": "avx512"})"}, {"\"simd\" must be \"auto\", \"avx2\" or \"portable\"", ""}},
  };
  for (const auto& c : cases) {
    try {
      Quant q(host, c[0].first, c[0].second);
      ADD_FAILURE() << c[0].first << " accepted " << c[0].second;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c[1].first), std::string::npos) << e.what();
    }
  }
}

TEST(QuantInt, RefusesStoredFormatsItCannotQuantize) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  for (const char* name : {"int8", "int4", "fp8"}) {
    loom_quantization_create_args a{};
    a.struct_size = sizeof(a);
    a.device = loom_device{LOOM_DEVICE_CPU, 0};
    const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, name, "", "{}"}, &a);
    ErrorBuffer err;
    loom_error_buf eb = err.buf();
    int32_t ok = 1;
    const auto& vt = p->vtable<loom_quantization_vtable>();
    ASSERT_EQ(vt.supports(p->self(), LOOM_DTYPE_Q4_K, &ok, &eb), LOOM_OK);
    EXPECT_EQ(ok, 0);
    EXPECT_NE(err.str().find("q4_K"), std::string::npos) << err.str();
    for (const loom_dtype t : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      ASSERT_EQ(vt.supports(p->self(), t, &ok, &eb), LOOM_OK);
      EXPECT_EQ(ok, 1);
    }
    std::vector<uint8_t> blocks(18 * 4);
    const loom_tensor_view w = mat(blocks.data(), LOOM_DTYPE_Q4_0, 4, 32);
    void* h = nullptr;
    EXPECT_EQ(vt.prepare_weight(p->self(), &w, &h, &eb), LOOM_ERR_UNSUPPORTED);
  }
}

// Greedy decoding of the demo model from BOS with every linear layer through `plugin`.
std::vector<int32_t> greedy(const std::string& plugin, const std::string& config, int32_t n_tokens) {
  const GgufFile file = GgufFile::open(test::data_path("stories260K.gguf"));
  const LlamaWeights weights = load_llama_weights(file);
  constexpr int32_t kBlock = 16, kBlocks = 16;
  ThreadPool threads(2);
  test::ModelPlugins plugins(threads, weights.hparams, kBlock);  // attention (naive)
  loom_quantization_create_args a{};
  a.struct_size = sizeof(a);
  a.device = loom_device{LOOM_DEVICE_CPU, 0};
  const std::unique_ptr<LoadedPlugin> q =
      plugins.host.create(PluginSpec{LOOM_KIND_QUANTIZATION, plugin, "", config}, &a);
  const QuantOps ops{q->self(), &q->vtable<loom_quantization_vtable>()};
  KvPool pool(KvPoolShape{weights.hparams.n_layers, kBlocks, kBlock, weights.hparams.n_kv_heads,
                          weights.hparams.head_dim, LOOM_DTYPE_F32});
  ModelExecutor executor(weights, plugins.attention_ops(), ops, pool, threads);
  BatchBuilder builder(kBlock);
  BuiltBatch batch;
  std::vector<int32_t> tokens{1}, out, table(kBlocks);
  for (int32_t i = 0; i < kBlocks; ++i) table[static_cast<size_t>(i)] = i;
  int32_t computed = 0;
  for (int32_t i = 0; i < n_tokens; ++i) {
    const SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
    builder.build(std::span<const SeqSchedule>(&s, 1), batch);
    std::vector<float> logits;
    executor.execute(batch, logits);
    computed = static_cast<int32_t>(tokens.size());
    tokens.push_back(loom::test::argmax(logits));
    out.push_back(tokens.back());
  }
  return out;
}

size_t matching_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// The f32 story (llama2.c's, tests/data/greedy_from_bos_256.ids): int8 keeps its first 60 tokens;
// the others' match lengths are reported (RecordProperty) and must at least start it.
TEST(QuantInt, DemoModelTellsTheSameStory) {
  constexpr int32_t kTokens = 60;
  std::vector<int32_t> expected = test::read_ids(test::data_path("greedy_from_bos_256.ids"));
  expected.resize(kTokens);
  ASSERT_EQ(greedy("none", "{}", kTokens), expected);
  EXPECT_EQ(greedy("int8", "{}", kTokens), expected);
  for (const auto& [plugin, config] : {std::pair<const char*, const char*>{"int8", R"({"mode": "w8a8"})"},
                                       {"int4", "{}"},
                                       {"int4", R"({"group_size": 32})"},
                                       {"fp8", "{}"}}) {
    const size_t match = matching_prefix(greedy(plugin, config, kTokens), expected);
    std::printf("[ match    ] %s %s: first %zu of %d greedy tokens as f32\n", plugin, config, match, kTokens);
    ::testing::Test::RecordProperty(std::string(plugin) + config, static_cast<int>(match));
    EXPECT_GE(match, 1u) << plugin << " " << config;
  }
}

}  // namespace
}  // namespace loom::qint
