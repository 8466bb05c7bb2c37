// quantization_choice: which quantization plugin reads a model's weights. The decision on given
// answers (exact messages), then the in-tree plugins' own claims through the real plugin host.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/engine/quantization_choice.hpp"

namespace loom {
namespace {

using sdk::Reading;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::vector<WeightTypeUse> kMixed = {{LOOM_DTYPE_Q4_1, "blk.0.attn_q.weight", 210},
                                           {LOOM_DTYPE_Q8_0, "token_embd.weight", 1}};

TEST(QuantizationChoice, AutoTakesTheBestWorstReading) {
  const std::vector<PluginReadings> answers = {
      {"none", {Reading::cannot("q4_1 is not f32"), Reading::cannot("q8_0 is not f32")}, ""},
      {"blocks", {Reading::native(), Reading::native()}, ""},
      {"dequant", {Reading::converts(), Reading::native()}, ""},
  };
  const QuantizationChoice c = choose_quantization("auto", kMixed, answers, "");
  EXPECT_EQ(c.plugin, "blocks");
  EXPECT_EQ(c.why,
            "auto chose \"blocks\": it reads q4_1 (210 tensors) as stored with its own kernels, q8_0 (1 tensors) as "
            "stored with its own kernels; none cannot read them all; dequant reads them at worst by converting at load");
}

TEST(QuantizationChoice, TiesGoToMoreNativeTensorsThenTheName) {
  const std::vector<PluginReadings> answers = {
      {"b", {Reading::as_stored(), Reading::native()}, ""},  // 1 tensor native
      {"a", {Reading::native(), Reading::as_stored()}, ""},  // 210 tensors native
      {"c", {Reading::native(), Reading::as_stored()}, ""},  // as a, later name
  };
  EXPECT_EQ(choose_quantization("auto", kMixed, answers, "").plugin, "a");
}

TEST(QuantizationChoice, PluginsThatCouldNotBeAskedAreLeftOut) {
  const std::vector<PluginReadings> answers = {{"broken", {}, "plugin quantization 'broken': cannot load"},
                                               {"slow", {Reading::converts(), Reading::converts()}, ""}};
  EXPECT_EQ(choose_quantization("auto", kMixed, answers, "").plugin, "slow");
}

TEST(QuantizationChoice, AnExplicitPluginThatCannotReadATensorIsRefused) {
  const std::vector<PluginReadings> answers = {
      {"none", {Reading::cannot("quantization none: weights of dtype q4_1 are not supported"), Reading::cannot("x")}, ""},
      {"gguf", {Reading::native(), Reading::native()}, ""},
      {"int8", {Reading::cannot("no"), Reading::converts()}, ""},
  };
  EXPECT_EQ(error_of([&] { choose_quantization("none", kMixed, answers, ""); }),
            "[quantization] plugin \"none\" cannot read tensor blk.0.attn_q.weight of type q4_1 (quantization none: "
            "weights of dtype q4_1 are not supported); gguf can read every weight of this model (or use plugin = "
            "\"auto\")");
  const QuantizationChoice ok = choose_quantization("gguf", kMixed, answers, "");
  EXPECT_EQ(ok.plugin, "gguf");
  EXPECT_EQ(ok.why, "configured; it reads q4_1 (210), q8_0 (1)");
}

TEST(QuantizationChoice, AutoWithNoReaderNamesEveryPluginsReason) {
  const std::vector<WeightTypeUse> types = {{LOOM_DTYPE_I8, "blk.0.attn_q.weight", 7}};
  const std::vector<PluginReadings> answers = {{"int8", {Reading::cannot("not its format")}, ""},
                                               {"none", {Reading::cannot("i8 is not a float")}, ""}};
  EXPECT_EQ(error_of([&] { choose_quantization("auto", types, answers, "int3"); }),
            "[quantization] plugin \"auto\": no installed quantization plugin reads every weight type of this model "
            "(i8 (7) in a file of loom.quantization.format \"int3\"); int8: i8: not its format; none: i8: i8 is not a "
            "float");
}

// A one-layer model whose linear weights have the given types (the views' bytes are never read).
LlamaWeights weights_of(loom_dtype matrices, loom_dtype output) {
  static float dummy[1];
  auto view = [](loom_dtype t) {
    loom_tensor_view v{};
    v.data = dummy;
    v.dtype = t;
    v.ndim = 2;
    return v;
  };
  LlamaWeights w;
  LlamaLayerWeights layer{};
  for (loom_tensor_view* v : {&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w_gate, &layer.w_up, &layer.w_down})
    *v = view(matrices);
  w.layers = {layer, layer};
  w.output = view(output);
  return w;
}

TEST(QuantizationChoice, LinearWeightTypesCountEveryPreparedMatrix) {
  LlamaWeights w = weights_of(LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q6_K);
  w.layers[1].w_down.dtype = LOOM_DTYPE_F32;
  const std::vector<WeightTypeUse> types = linear_weight_types(w);
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[0].dtype, LOOM_DTYPE_Q4_0);
  EXPECT_EQ(types[0].first_tensor, "blk.0.attn_q.weight");
  EXPECT_EQ(types[0].count, 13);
  EXPECT_EQ(types[1].dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(types[1].first_tensor, "blk.1.ffn_down.weight");
  EXPECT_EQ(types[2].first_tensor, "output.weight");
  w.tied_output = true;
  EXPECT_EQ(linear_weight_types(w)[2].first_tensor, "token_embd.weight");
}

TEST(QuantizationChoice, LinearWeightTypesCountTheExpertsOfAMixture) {
  LlamaWeights w = weights_of(LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q6_K);
  LlamaLayerWeights& moe = w.layers[1];
  moe.w_gate = moe.w_up = moe.w_down = loom_tensor_view{};  // no dense MLP in an experts layer
  loom_tensor_view router = moe.wq, expert = moe.wq;
  router.dtype = LOOM_DTYPE_F32;
  expert.dtype = LOOM_DTYPE_Q8_0;
  moe.router = router;
  moe.exp_gate = moe.exp_up = {expert, expert, expert};
  moe.exp_down = {expert, expert};
  moe.exp_down.push_back(moe.wq);  // a third expert's down stored like the attention
  const std::vector<WeightTypeUse> types = linear_weight_types(w);
  ASSERT_EQ(types.size(), 4u);
  EXPECT_EQ(types[0].count, 7 + 4 + 1);  // layer 0, layer 1's attention, the last expert
  EXPECT_EQ(types[1].dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(types[1].first_tensor, "blk.1.ffn_gate_inp.weight");
  EXPECT_EQ(types[2].dtype, LOOM_DTYPE_Q8_0);
  EXPECT_EQ(types[2].first_tensor, "blk.1.ffn_gate_exps.weight");
  EXPECT_EQ(types[2].count, 8);
}

// The in-tree plugins' claims, asked through the plugin host as the engine asks them.
class InTreeClaims : public ::testing::Test {
 protected:
  PluginSpec resolve(const std::string& plugin, loom_dtype matrices, loom_dtype output, const std::string& format,
                     std::string* why = nullptr) {
    PluginSpec spec{LOOM_KIND_QUANTIZATION, plugin, "", "{}"};
    return resolve_quantization(host_, spec, weights_of(matrices, output), format, why);
  }
  ThreadPool pool_{1};
  PluginHost host_{pool_, {}};
};

TEST_F(InTreeClaims, EachFileGoesToThePluginWhoseFormatItIs) {
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_F32, LOOM_DTYPE_F32, "").name, "none");
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_BF16, LOOM_DTYPE_F16, "").name, "none");
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q8_0, "").name, "gguf");
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_Q4_K, LOOM_DTYPE_F32, "").name, "gguf");  // f32 head: gguf's plain path
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_I8, LOOM_DTYPE_F32, "int8").name, "int8");
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_I8, LOOM_DTYPE_F32, "fp8_e4m3").name, "fp8");
  EXPECT_EQ(resolve("auto", LOOM_DTYPE_I32, LOOM_DTYPE_F32, "int4").name, "int4");
  std::string why;
  resolve("auto", LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q8_0, "", &why);
  EXPECT_NE(why.find("auto chose \"gguf\": it reads q4_0 (14 tensors) as stored with its own kernels, q8_0 (1 "
                     "tensors) as stored with its own kernels"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("none cannot read them all"), std::string::npos) << why;
}

TEST_F(InTreeClaims, AnExplicitPluginIsKeptOrRefusedWithTheReaders) {
  EXPECT_EQ(resolve("int8", LOOM_DTYPE_F16, LOOM_DTYPE_F16, "").name, "int8");  // converts at load: allowed
  const std::string e = error_of([&] { resolve("fp8", LOOM_DTYPE_I8, LOOM_DTYPE_F32, "int8"); });
  EXPECT_NE(e.find("[quantization] plugin \"fp8\" cannot read tensor blk.0.attn_q.weight of type i8 in a file of "
                   "loom.quantization.format \"int8\" (quantization fp8: i8 weights are its own only in a file "
                   "written by loom-convert --quantize fp8 (loom.quantization.format \"fp8_e4m3\"); this file's is "
                   "\"int8\"); int8 can read every weight"),
            std::string::npos)
      << e;
  const std::string q = error_of([&] { resolve("none", LOOM_DTYPE_Q4_K, LOOM_DTYPE_Q6_K, ""); });
  EXPECT_NE(q.find("plugin \"none\" cannot read tensor blk.0.attn_q.weight of type q4_K (quantization none: weights "
                   "of dtype q4_K are not supported (f32, f16 and bf16 are)); gguf can read every weight"),
            std::string::npos)
      << q;
  EXPECT_NE(error_of([&] { resolve("nosuch", LOOM_DTYPE_F32, LOOM_DTYPE_F32, ""); }).find("nosuch"), std::string::npos);
}

TEST_F(InTreeClaims, AutoWithAPathIsRefused) {
  PluginSpec spec{LOOM_KIND_QUANTIZATION, "auto", "/x/libloom-quantization-gguf.so", "{}"};
  EXPECT_NE(error_of([&] { resolve_quantization(host_, spec, weights_of(LOOM_DTYPE_F32, LOOM_DTYPE_F32), "", nullptr); })
                .find("plugin = \"auto\" has nothing to choose"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
