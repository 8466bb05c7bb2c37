// loom-convert --input IN.gguf --dtype f32|f16: every block-quantized tensor becomes the values
// sdk::gguf::dequantize_row gives (f16: those values rounded to f16), metadata kept, other tensors
// byte for byte; a type this build cannot read is refused by name.
#include <gtest/gtest.h>

#include <cstring>

#include "core/common/error.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "tests/unit/test_executor_support.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/gguf_dequantize.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace loom {
namespace {

// dim 256 so that q4_K fits every matrix; the head (output.weight) is q6_K.
GgufFile q4_k_model() {
  RandomLlamaOptions opts;
  opts.shape = parse_llama_dims("dim=256,hidden=512,layers=1,heads=4,kv_heads=2");
  opts.seed = 5;
  const GgufMetadata tok = tokenizer_metadata(GgufFile::open(test::data_path("stories260K.gguf")));
  const GgufFile f16 = GgufFile::from_bytes(random_llama_gguf(opts, tok).to_bytes(), "random");
  return GgufFile::from_bytes(
      convert::quantize_gguf(f16, *convert::find_weight_quantizer("q4_k"), nullptr).to_bytes(), "q4_k");
}

std::vector<float> dequantized(const GgufTensorInfo& t) {
  const int64_t n = t.dims[0] * t.dims[1];
  std::vector<float> out(static_cast<size_t>(n));
  EXPECT_TRUE(sdk::gguf::dequantize_row(t.dtype, t.data, out.data(), n)) << t.name;
  return out;
}

void expect_same_metadata(const GgufFile& a, const GgufFile& b) {
  ASSERT_EQ(a.metadata().size(), b.metadata().size());
  for (const auto& [key, value] : a.metadata())
    if (key != "general.file_type") {
      EXPECT_TRUE(b.get(key) == value) << key;
    }
}

TEST(ConvertDequantize, F32IsDequantizeRowsOutput) {
  const GgufFile q = q4_k_model();
  std::vector<std::string> notes;
  const GgufFile out = GgufFile::from_bytes(convert::dequantize_gguf(q, LOOM_DTYPE_F32, &notes).to_bytes(), "f32");
  EXPECT_EQ(notes, (std::vector<std::string>{"8 q4_K tensors dequantized to f32", "1 q6_K tensor dequantized to f32"}));
  EXPECT_EQ(out.get_int("general.file_type", -1), 0);
  expect_same_metadata(q, out);
  ASSERT_EQ(out.tensors().size(), q.tensors().size());
  for (size_t i = 0; i < q.tensors().size(); ++i) {
    const GgufTensorInfo& src = q.tensors()[i];
    const GgufTensorInfo& dst = out.tensors()[i];
    ASSERT_EQ(dst.name, src.name);
    EXPECT_EQ(dst.dims, src.dims);
    if (src.dtype == LOOM_DTYPE_F32) {  // norms: byte for byte
      EXPECT_EQ(dst.dtype, LOOM_DTYPE_F32);
      EXPECT_EQ(std::memcmp(dst.data, src.data, src.nbytes), 0) << src.name;
      continue;
    }
    ASSERT_EQ(dst.dtype, LOOM_DTYPE_F32) << src.name;
    const std::vector<float> ref = dequantized(src);
    ASSERT_EQ(dst.nbytes, ref.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(dst.data, ref.data(), dst.nbytes), 0) << src.name;
  }
}

TEST(ConvertDequantize, F16IsDequantizeRowsOutputRounded) {
  // The demo model in q8_0 (its ffn_down, rows of 172, stayed f32).
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile q = GgufFile::from_bytes(
      convert::quantize_gguf(src, *convert::find_weight_quantizer("q8_0"), nullptr).to_bytes(), "q8_0");
  const GgufFile out = GgufFile::from_bytes(convert::dequantize_gguf(q, LOOM_DTYPE_F16, nullptr).to_bytes(), "f16");
  EXPECT_EQ(out.get_int("general.file_type", -1), 1);
  expect_same_metadata(q, out);
  EXPECT_EQ(out.tensor("blk.0.ffn_down.weight").dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(out.tensor("blk.0.attn_norm.weight").dtype, LOOM_DTYPE_F32);
  for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight", "blk.4.ffn_up.weight"}) {
    const GgufTensorInfo& t = out.tensor(name);
    ASSERT_EQ(t.dtype, LOOM_DTYPE_F16) << name;
    const std::vector<float> ref = dequantized(q.tensor(name));
    const auto* h = static_cast<const uint16_t*>(t.data);
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(h[i], sdk::f32_to_f16(ref[i])) << name << " " << i;
  }
}

TEST(ConvertDequantize, AnUnreadableTypeIsRefusedByName) {
  // iq2_xxs: a ggml type Loom does not read (its blocks are of a codebook it has no table of).
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.add_tensor("blk.0.attn_q.weight", loom_dtype(16), {256, 2}, std::vector<uint8_t>(2 * 66, 0));
  const GgufFile f = GgufFile::from_bytes(w.to_bytes(), "iq2");
  try {
    convert::dequantize_gguf(f, LOOM_DTYPE_F16, nullptr);
    ADD_FAILURE() << "iq2_xxs was dequantized";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("blk.0.attn_q.weight: cannot dequantize iq2_xxs (this build reads f32, f16, "
                                          "bf16, q4_0",
                                          0),
              0u)
        << e.what();
  }
}

TEST(ConvertDequantize, CommandLine) {
  const convert::Args a = convert::parse_args({"--input", "in.gguf", "--dtype", "f16", "-o", "out.gguf"});
  EXPECT_EQ(a.mode, convert::Mode::kInput);
  EXPECT_EQ(a.dtype, LOOM_DTYPE_F16);
  EXPECT_TRUE(a.quantize.empty());
  EXPECT_THROW(convert::parse_args({"--input", "in.gguf", "-o", "out.gguf"}), convert::UsageError);
  EXPECT_THROW(convert::parse_args({"--input", "in.gguf", "--dtype", "f32", "--quantize", "q8_0", "-o", "o.gguf"}),
               convert::UsageError);
}

}  // namespace
}  // namespace loom
