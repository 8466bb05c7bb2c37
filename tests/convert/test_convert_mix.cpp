// loom-convert --quantize q4_k_m | q5_k_m: the type of every tensor as llama.cpp's llama-quantize
// assigns it (written out per tensor for an 8-layer model and SmolLM2's shapes), the file written
// with those types and the very bits of quantize_row, and a mix refused when it needs a type this
// build cannot write.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "core/common/error.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "tests/unit/test_executor_support.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/gguf_rewrite.hpp"
#include "tools/convert/quant_mix.hpp"

namespace loom {
namespace {

using convert::find_quant_mix;

constexpr loom_dtype F32 = LOOM_DTYPE_F32, F16 = LOOM_DTYPE_F16, Q4K = LOOM_DTYPE_Q4_K, Q5K = LOOM_DTYPE_Q5_K,
                     Q6K = LOOM_DTYPE_Q6_K, Q80 = LOOM_DTYPE_Q8_0, Q50 = LOOM_DTYPE_Q5_0, Q51 = LOOM_DTYPE_Q5_1;

// A random-weight Llama of `dims` (the stories260K tokenizer: vocab 512), f16 matrices.
GgufFile random_llama(const std::string& dims, bool tied) {
  RandomLlamaOptions opts;
  opts.shape = parse_llama_dims(dims);
  opts.shape.tied_output = tied;
  opts.seed = 3;
  const GgufMetadata tok = tokenizer_metadata(GgufFile::open(test::data_path("stories260K.gguf")));
  return GgufFile::from_bytes(random_llama_gguf(opts, tok).to_bytes(), "random-llama");
}

std::map<std::string, loom_dtype> plan_by_name(const GgufFile& f, const std::string& mix) {
  const auto plan = convert::plan_mix(f.tensors(), convert::mix_model(f), *find_quant_mix(mix));
  std::map<std::string, loom_dtype> out;
  for (size_t i = 0; i < plan.size(); ++i) out[f.tensors()[i].name] = plan[i].dtype;
  return out;
}

// The layer tensors' expected types: {attn_v, ffn_down, everything else quantized}.
struct LayerTypes {
  loom_dtype attn_v, ffn_down, rest;
};
void expect_layers(const std::map<std::string, loom_dtype>& plan, const std::vector<LayerTypes>& layers) {
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(plan.at(p + "attn_v.weight"), layers[l].attn_v) << p;
    EXPECT_EQ(plan.at(p + "ffn_down.weight"), layers[l].ffn_down) << p;
    for (const char* name : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(plan.at(p + name), layers[l].rest) << p << name;
    EXPECT_EQ(plan.at(p + "attn_norm.weight"), F32) << p;
    EXPECT_EQ(plan.at(p + "ffn_norm.weight"), F32) << p;
  }
}

// 8 layers, every row a whole number of 256-value blocks. use_more_bits(i, 8) holds for layers
// 0 (i < 1), 3 and 6 ((i - 1) % 3 == 2) and 7 (i >= 7): their attn_v and ffn_down are q6_K.
const char* kDims8 = "dim=256,hidden=512,layers=8,heads=4,kv_heads=2";

TEST(ConvertMix, Q4KMOfAnEightLayerLlama) {
  const auto plan = plan_by_name(random_llama(kDims8, false), "q4_k_m");
  EXPECT_EQ(plan.at("token_embd.weight"), Q4K);  // untied: the base type
  EXPECT_EQ(plan.at("output.weight"), Q6K);
  EXPECT_EQ(plan.at("output_norm.weight"), F32);
  const LayerTypes more{Q6K, Q6K, Q4K}, base{Q4K, Q4K, Q4K};
  expect_layers(plan, {more, base, base, more, base, base, more, more});
}

TEST(ConvertMix, Q5KMOfAnEightLayerLlama) {
  const auto plan = plan_by_name(random_llama(kDims8, true), "q5_k_m");
  EXPECT_EQ(plan.count("output.weight"), 0u);
  EXPECT_EQ(plan.at("token_embd.weight"), Q6K);  // tied: the head's rule
  const LayerTypes more{Q6K, Q6K, Q5K}, base{Q5K, Q5K, Q5K};
  expect_layers(plan, {more, base, base, more, base, base, more, more});
}

// SmolLM2-135M's shapes (30 layers, dim 576 = 2.25 blocks of 256, hidden 1536, 9/3 heads, tied):
// what llama-quantize Q4_K_M does to it. use_more_bits(i, 30): i < 3, i >= 26, i = 5, 8, ..., 23.
TEST(ConvertMix, Q4KMAndQ5KMOfSmolLM2Shapes) {
  std::vector<GgufTensorInfo> tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    GgufTensorInfo t;
    t.name = name;
    t.dtype = F16;
    t.dims = std::move(dims);
    tensors.push_back(t);
  };
  add("token_embd.weight", {576, 49152});
  add("output_norm.weight", {576});
  for (int l = 0; l < 30; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_q.weight", {576, 576});
    add(p + "attn_v.weight", {576, 192});
    add(p + "ffn_down.weight", {1536, 576});
    add(p + "ffn_up.weight", {576, 1536});
  }
  const convert::MixModel model{"llama", 30, 9, 3, 0};
  const auto q4 = convert::plan_mix(tensors, model, *find_quant_mix("q4_k_m"));
  const auto q5 = convert::plan_mix(tensors, model, *find_quant_mix("q5_k_m"));
  // Rows of 576 are no whole 256-value block: the head is q8_0, q4_K falls back to q5_0, q5_K to
  // q5_1, q6_K to q8_0; ffn_down's rows of 1536 are whole blocks.
  EXPECT_EQ(q4[0].dtype, Q80);
  EXPECT_EQ(q5[0].dtype, Q80);
  EXPECT_EQ(q4[1].dtype, F16);  // output_norm, 1-D: kept as stored
  const std::vector<int> more = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29};
  for (int l = 0; l < 30; ++l) {
    const bool m = std::find(more.begin(), more.end(), l) != more.end();
    const size_t at = 2 + 4 * static_cast<size_t>(l);
    EXPECT_EQ(q4[at].dtype, Q50) << l;                // attn_q
    EXPECT_EQ(q4[at + 1].dtype, m ? Q80 : Q50) << l;  // attn_v
    EXPECT_EQ(q4[at + 2].dtype, m ? Q6K : Q4K) << l;  // ffn_down
    EXPECT_EQ(q4[at + 3].dtype, Q50) << l;            // ffn_up
    EXPECT_EQ(q5[at].dtype, Q51) << l;
    EXPECT_EQ(q5[at + 1].dtype, m ? Q80 : Q51) << l;
    EXPECT_EQ(q5[at + 2].dtype, m ? Q6K : Q5K) << l;
    EXPECT_EQ(q5[at + 3].dtype, Q51) << l;
  }
  EXPECT_EQ(q4[2].note, "blk.0.attn_q.weight: rows of 576 values are not whole q4_K blocks, written as q5_0");
  EXPECT_EQ(q4[3].note, "blk.0.attn_v.weight: rows of 576 values are not whole q6_K blocks, written as q8_0");
}

// The tiny preset (dim 64, hidden 172): nothing is a whole 256-value block; ffn_down's rows of
// 172 are not even whole 32-value blocks and become f16, as llama.cpp does.
TEST(ConvertMix, Q4KMOfTheTinyPreset) {
  const GgufFile f = random_llama("dim=64,hidden=172,layers=2,heads=8,kv_heads=4", false);
  const auto plan = plan_by_name(f, "q4_k_m");
  EXPECT_EQ(plan.at("output.weight"), Q80);
  EXPECT_EQ(plan.at("token_embd.weight"), Q50);
  // use_more_bits(i, 2) holds for layer 1 only (i >= 7 * 2 / 8): q6_K there, then q8_0 for rows of 64.
  expect_layers(plan, {{Q50, F16, Q50}, {Q80, F16, Q50}});
}

// Llama 2 70B's shape (80 layers, GQA): the attn_v left at q4_K by use_more_bits becomes q5_K.
TEST(ConvertMix, SeventyBRaisesAttnV) {
  std::vector<GgufTensorInfo> tensors;
  for (int l = 0; l < 80; ++l) {
    GgufTensorInfo t;
    t.name = "blk." + std::to_string(l) + ".attn_v.weight";
    t.dtype = F16;
    t.dims = {8192, 1024};
    tensors.push_back(t);
  }
  const auto gqa = convert::plan_mix(tensors, {"llama", 80, 64, 8, 0}, *find_quant_mix("q4_k_m"));
  const auto mha = convert::plan_mix(tensors, {"llama", 80, 64, 64, 0}, *find_quant_mix("q4_k_m"));
  EXPECT_EQ(gqa[0].dtype, Q6K);  // i < 10
  EXPECT_EQ(gqa[10].dtype, Q5K);
  EXPECT_EQ(mha[10].dtype, Q4K);  // 65B-style, no raise
  EXPECT_THROW(convert::plan_mix(tensors, {"llama", 80, 64, 8, 8}, *find_quant_mix("q4_k_m")), Error);
}

// The file: the planned types, general.file_type 15 (LLAMA_FTYPE_MOSTLY_Q4_K_M), every metadata
// key kept, and each tensor's bytes those of quantize_row over its f16 values.
TEST(ConvertMix, WritesThePlannedTypesWithQuantizeRowsBits) {
  const GgufFile src = random_llama(kDims8, false);
  std::vector<std::string> notes;
  const GgufFile out = GgufFile::from_bytes(
      convert::quantize_gguf_mix(src, *find_quant_mix("q4_k_m"), &notes).to_bytes(), "q4_k_m");
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(out.get_int("general.file_type", -1), 15);
  for (const auto& [key, value] : src.metadata())
    if (key != "general.file_type") {
      EXPECT_TRUE(out.get(key) == value) << key;
    }
  const auto plan = plan_by_name(src, "q4_k_m");
  ASSERT_EQ(out.tensors().size(), src.tensors().size());
  for (const GgufTensorInfo& t : out.tensors()) EXPECT_EQ(t.dtype, plan.at(t.name)) << t.name;
  for (const char* name : {"blk.3.attn_v.weight", "blk.1.ffn_down.weight", "output.weight"}) {
    const GgufTensorInfo& f = src.tensor(name);
    const GgufTensorInfo& q = out.tensor(name);
    const int64_t n = f.dims[0] * f.dims[1];
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = sdk::f16_to_f32(static_cast<const uint16_t*>(f.data)[i]);
    std::vector<uint8_t> expected(q.nbytes);
    ASSERT_TRUE(sdk::gguf::quantize_row(q.dtype, x.data(), expected.data(), n));
    EXPECT_EQ(std::memcmp(expected.data(), q.data, q.nbytes), 0) << name;
  }
}

// SmolLM2's shape needs q5_0 (and q5_k_m q5_K): refused, naming the type, while this build cannot
// write it; written once it can.
TEST(ConvertMix, ANeededTypeThisBuildCannotWriteIsRefusedByName) {
  const GgufFile f = random_llama("dim=576,hidden=1536,layers=2,heads=9,kv_heads=3", true);
  if (convert::can_quantize(Q50)) {
    const GgufFile out = GgufFile::from_bytes(
        convert::quantize_gguf_mix(f, *find_quant_mix("q4_k_m"), nullptr).to_bytes(), "q4_k_m");
    EXPECT_EQ(out.tensor("blk.0.attn_q.weight").dtype, Q50);
  } else {
    try {
      convert::quantize_gguf_mix(f, *find_quant_mix("q4_k_m"), nullptr);
      ADD_FAILURE() << "q4_k_m was written without q5_0";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("q4_k_m needs q5_0 for blk.0.attn_q.weight (rows of 576 values are not "
                                            "whole q4_K blocks, written as q5_0); this build cannot write q5_0 (it "
                                            "writes q8_0, q4_0, q4_k, q6_k",
                                            0),
                0u)
          << e.what();
    }
  }
  if (!convert::can_quantize(Q5K)) {
    try {
      convert::quantize_gguf_mix(random_llama(kDims8, false), *find_quant_mix("q5_k_m"), nullptr);
      ADD_FAILURE() << "q5_k_m was written without q5_K";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("q5_k_m needs q5_K for token_embd.weight; this build cannot write q5_K", 0),
                0u)
          << e.what();
    }
  }
}

TEST(ConvertMix, CommandLine) {
  // llama-quantize's spelling, upper case, is accepted.
  EXPECT_EQ(convert::parse_args({"--input", "in.gguf", "--quantize", "Q4_K_M", "-o", "o.gguf"}).quantize, "q4_k_m");
  EXPECT_EQ(convert::parse_args({"--input", "in.gguf", "--quantize", "q5_k_m", "-o", "o.gguf"}).quantize, "q5_k_m");
  try {
    convert::parse_args({"--input", "in.gguf", "--quantize", "q7_k_m", "-o", "o.gguf"});
    ADD_FAILURE();
  } catch (const convert::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'q7_k_m' is not one of q8_0, q4_0, q4_k, q6_k"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("int8, int4, fp8, q4_k_m, q5_k_m"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
