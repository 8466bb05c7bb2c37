// loom-convert --quantize int8 --smoothquant (smoothquant_calibration.hpp, loom_quantized.hpp):
// the calibration pass's activation maxima, the smoothed matrices read by the int8 plugin giving
// bit for bit what the plugin's own w8a8 calibration computes from the float weights with the
// same maxima, the smoothed demo model telling the float model's story, and the command line.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>

#include "core/executor/llama_model.hpp"
#include "plugins/quantization/int8/int8_calibrate.h"
#include "tests/unit/test_executor_support.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/loom_quantized.hpp"
#include "tools/convert/smoothquant_calibration.hpp"

namespace loom {
namespace {

using convert::ActivationMaxima;

// The first 3000 bytes of the held-out stories: a few hundred tokens, quick to run.
std::vector<int32_t> calibration(const GgufFile& file) {
  std::ifstream in(test::data_path("heldout_stories.txt"), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.resize(std::min<size_t>(text.size(), 3000));
  return convert::calibration_tokens(file, text);
}

TEST(ConvertSmoothQuant, CollectsEveryMatrixInputsMaxima) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const std::vector<int32_t> tokens = calibration(src);
  ASSERT_GT(tokens.size(), 300u);
  EXPECT_EQ(tokens[0], 1);  // BOS
  const ActivationMaxima m = convert::collect_activation_maxima(src, tokens, 128);
  ASSERT_EQ(m.size(), 35u);  // 5 layers x 7 matrices; the head is not smoothed
  for (const auto& [name, v] : m) {
    ASSERT_EQ(v.size(), name.find("ffn_down") != std::string::npos ? 172u : 64u) << name;
    for (const float a : v) ASSERT_TRUE(std::isfinite(a) && a > 0) << name;
  }
  // q, k and v (and gate, up) read the same normalized input.
  EXPECT_EQ(m.at("blk.2.attn_q.weight"), m.at("blk.2.attn_v.weight"));
  EXPECT_EQ(m.at("blk.2.ffn_gate.weight"), m.at("blk.2.ffn_up.weight"));
  EXPECT_NE(m.at("blk.2.attn_q.weight"), m.at("blk.2.ffn_gate.weight"));
  // More text can only raise a maximum.
  const ActivationMaxima fewer = convert::collect_activation_maxima(src, std::span(tokens).first(100), 128);
  for (const auto& [name, v] : m)
    for (size_t j = 0; j < v.size(); ++j) ASSERT_LE(fewer.at(name)[j], v[j]) << name << " " << j;
}

struct Int8 {
  explicit Int8(PluginHost& host, const std::string& config) {
    loom_quantization_create_args qa{};
    qa.struct_size = sizeof(qa);
    qa.device = loom_device{LOOM_DEVICE_CPU, 0};
    p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, "int8", "", config}, &qa);
  }
  const loom_quantization_vtable& vt() const { return p->vtable<loom_quantization_vtable>(); }
  std::vector<float> linear(void* h, const std::vector<float>& x, int64_t n, int64_t in, int64_t out) const {
    std::vector<float> y(static_cast<size_t>(n * out));
    loom_tensor_view xv{}, yv{};
    for (auto* v : {&xv, &yv}) {
      v->dtype = LOOM_DTYPE_F32;
      v->ndim = 2;
      v->shape[0] = n;
      v->strides[1] = 1;
      v->device = loom_device{LOOM_DEVICE_CPU, 0};
    }
    xv.data = const_cast<float*>(x.data());
    xv.shape[1] = xv.strides[0] = in;
    yv.data = y.data();
    yv.shape[1] = yv.strides[0] = out;
    ErrorBuffer err;
    loom_error_buf eb = err.buf();
    EXPECT_EQ(vt().linear(p->self(), h, &xv, &yv, &eb), LOOM_OK) << err.str();
    return y;
  }
  std::unique_ptr<LoadedPlugin> p;
};

TEST(ConvertSmoothQuant, SmoothedFileIsThePluginsOwnCalibration) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const ActivationMaxima m = convert::collect_activation_maxima(src, calibration(src), 128);
  const GgufFile q = GgufFile::from_bytes(
      convert::loom_quantize_gguf(src, {"int8", 128, true, &m, 0.5f}, nullptr).to_bytes(), "smoothed");
  EXPECT_EQ(q.tensor("blk.0.ffn_down.weight.smooth").dims, (std::vector<int64_t>{172}));
  EXPECT_FLOAT_EQ(static_cast<float>(q.get_float("loom.quantization.smoothquant_alpha", 0)), 0.5f);

  ThreadPool threads(2);
  PluginHost host(threads, {});
  const Int8 w8a8(host, R"({"mode": "w8a8", "smoothquant_alpha": 0.5})");
  void* lib =
      dlopen((std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libloom-quantization-int8.so").c_str(),
             RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto calibrate = reinterpret_cast<loom_int8_calibrate_fn>(dlsym(lib, LOOM_INT8_CALIBRATE_SYMBOL));
  ASSERT_NE(calibrate, nullptr);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (const auto& [name, act] : m) {
    const loom_tensor_view fv = gguf_tensor_view(src.tensor(name));
    const loom_tensor_view qv = gguf_tensor_view(q.tensor(name));
    const int64_t out = fv.shape[0], in = fv.shape[1];
    ErrorBuffer err;
    loom_error_buf eb = err.buf();
    void* calibrated = nullptr;
    ASSERT_EQ(w8a8.vt().prepare_weight(w8a8.p->self(), &fv, &calibrated, &eb), LOOM_OK) << err.str();
    ASSERT_EQ(calibrate(w8a8.p->self(), calibrated, act.data(), in, &eb), LOOM_OK) << err.str();
    loom_weight_info info{};
    info.struct_size = sizeof(info);
    info.name = name.c_str();
    info.out_features = out;
    info.in_features = in;
    info.find_tensor = [](void* ctx, const char* t, loom_tensor_view* v) -> int32_t {
      const GgufTensorInfo* ti = static_cast<const GgufFile*>(ctx)->find_tensor(t);
      if (ti == nullptr) return 0;
      *v = gguf_tensor_view(*ti);
      return 1;
    };
    info.find_ctx = const_cast<GgufFile*>(&q);
    void* stored = nullptr;
    ASSERT_EQ(w8a8.vt().prepare_weight_info(w8a8.p->self(), &qv, &info, &stored, &eb), LOOM_OK) << err.str();
    // Activations with an outlier channel, 3 rows.
    std::vector<float> x(static_cast<size_t>(3 * in));
    for (float& v : x) v = g(rng);
    x[5] *= 40.0f;
    const std::vector<float> want = w8a8.linear(calibrated, x, 3, in, out);
    const std::vector<float> got = w8a8.linear(stored, x, 3, in, out);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << name;
    w8a8.vt().release_weight(w8a8.p->self(), calibrated);
    w8a8.vt().release_weight(w8a8.p->self(), stored);
  }
  dlclose(lib);
}

// Greedy decoding from BOS of `file` with the int8 plugin configured by `config`.
std::vector<int32_t> greedy(const GgufFile& file, const std::string& config, int32_t n) {
  const LlamaWeights weights = load_llama_weights(file);
  ThreadPool threads(2);
  test::ModelPlugins plugins(threads, weights.hparams, 16, "naive", "none");
  PluginHost host(threads, {});
  const Int8 int8(host, config);
  KvPool pool(KvPoolShape{weights.hparams.n_layers, 8, 16, weights.hparams.n_kv_heads, weights.hparams.head_dim,
                          LOOM_DTYPE_F32});
  ModelExecutor executor(weights, plugins.attention_ops(), {int8.p->self(), &int8.vt()}, pool, threads);
  BatchBuilder builder(16);
  BuiltBatch batch;
  const std::vector<int32_t> table = test::ModelRunner::blocks(0, 8);
  std::vector<int32_t> tokens = {1}, out;
  std::vector<float> logits;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t computed = static_cast<int32_t>(tokens.size()) - 1;
    SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
    builder.build(std::span<const SeqSchedule>(&s, 1), batch);
    executor.execute(batch, logits);
    tokens.push_back(loom::test::argmax(logits));
    out.push_back(tokens.back());
  }
  return out;
}

TEST(ConvertSmoothQuant, SmoothedDemoModelTellsTheStory) {
  constexpr int32_t kTokens = 24;
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const ActivationMaxima m = convert::collect_activation_maxima(src, calibration(src), 128);
  const GgufFile q = GgufFile::from_bytes(
      convert::loom_quantize_gguf(src, {"int8", 128, true, &m, 0.5f}, nullptr).to_bytes(), "smoothed");
  const std::vector<int32_t> expected = test::read_ids(test::data_path("greedy_from_bos_256.ids"));
  const std::vector<int32_t> story(expected.begin(), expected.begin() + kTokens);
  EXPECT_EQ(greedy(q, R"({"mode": "w8a8"})", kTokens), story);
  EXPECT_EQ(greedy(q, "{}", kTokens), story);
}

TEST(ConvertSmoothQuant, CommandLine) {
  const auto a = convert::parse_args(
      {"--input", "i.gguf", "--quantize", "int8", "--smoothquant", "c.txt", "--alpha", "0.75", "-o", "o.gguf"});
  EXPECT_EQ(a.smoothquant, "c.txt");
  EXPECT_EQ(a.alpha, 0.75f);
  EXPECT_EQ(convert::parse_args({"--input", "i.gguf", "--quantize", "int8", "--smoothquant", "c", "-o", "o"}).alpha,
            0.5f);
  EXPECT_THROW(convert::parse_args({"--input", "i.gguf", "--quantize", "int4", "--smoothquant", "c", "-o", "o"}),
               convert::UsageError);
  EXPECT_THROW(
      convert::parse_args({"--input", "i", "--quantize", "int8", "--smoothquant", "c", "--alpha", "1.5", "-o", "o"}),
      convert::UsageError);
  EXPECT_THROW(convert::parse_args({"--input", "i", "--quantize", "int8", "--alpha", "0.5", "-o", "o"}),
               convert::UsageError);
}

}  // namespace
}  // namespace loom
