// loom-convert --quantize: which tensors get which format (fallbacks, the output head), the
// command line, and the demo model quantized to q8_0 telling the f32 model's greedy story
// through the executor with quantization/gguf.
#include <gtest/gtest.h>

#include <span>

#include "loom/sdk_gguf_blocks.hpp"
#include "tests/unit/test_executor_support.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/gguf_rewrite.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace loom {
namespace {

using convert::find_weight_quantizer;

GgufTensorInfo matrix(const std::string& name, loom_dtype dtype, int64_t in, int64_t out) {
  GgufTensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.dims = {in, out};
  return t;
}

TEST(ConvertQuantize, PlansEachTensor) {
  const auto& q4k = *find_weight_quantizer("q4_k");
  const auto& q40 = *find_weight_quantizer("q4_0");
  const auto& q80 = *find_weight_quantizer("q8_0");
  EXPECT_EQ(convert::plan_tensor(matrix("blk.0.attn_q.weight", LOOM_DTYPE_F16, 512, 512), false, q4k).dtype,
            LOOM_DTYPE_Q4_K);
  // Rows of 64: not whole 256-value super-blocks -> q4_0, with a note naming the tensor.
  const auto fb = convert::plan_tensor(matrix("blk.0.attn_q.weight", LOOM_DTYPE_F32, 64, 64), false, q4k);
  EXPECT_EQ(fb.dtype, LOOM_DTYPE_Q4_0);
  EXPECT_NE(fb.note.find("blk.0.attn_q.weight"), std::string::npos) << fb.note;
  // Rows of 172: no block fits, the stored dtype stays.
  EXPECT_EQ(convert::plan_tensor(matrix("blk.0.ffn_down.weight", LOOM_DTYPE_F16, 172, 64), false, q80).dtype,
            LOOM_DTYPE_F16);
  // The head of a 4-bit file is q6_K, of a q8_0 file q8_0.
  EXPECT_EQ(convert::plan_tensor(matrix("output.weight", LOOM_DTYPE_F16, 2048, 32000), true, q40).dtype,
            LOOM_DTYPE_Q6_K);
  EXPECT_EQ(convert::plan_tensor(matrix("output.weight", LOOM_DTYPE_F16, 2048, 32000), true, q80).dtype,
            LOOM_DTYPE_Q8_0);
  // Norms (1-D) and already-quantized tensors are left alone.
  GgufTensorInfo norm;
  norm.name = "output_norm.weight";
  norm.dtype = LOOM_DTYPE_F32;
  norm.dims = {2048};
  EXPECT_EQ(convert::plan_tensor(norm, false, q40).dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(convert::plan_tensor(matrix("blk.0.ffn_up.weight", LOOM_DTYPE_Q8_0, 256, 8), false, q40).dtype,
            LOOM_DTYPE_Q8_0);
}

TEST(ConvertQuantize, CommandLine) {
  const convert::Args a = convert::parse_args({"--input", "in.gguf", "--quantize", "q4_0", "-o", "out.gguf"});
  EXPECT_EQ(a.mode, convert::Mode::kInput);
  EXPECT_EQ(a.quantize, "q4_0");
  EXPECT_THROW(convert::parse_args({"--input", "in.gguf", "-o", "out.gguf"}), convert::UsageError);
  // A ggml type is offered exactly when the SDK's block dispatch can write it.
  if (convert::can_quantize(LOOM_DTYPE_Q3_K)) {
    EXPECT_EQ(convert::parse_args({"--input", "in.gguf", "--quantize", "q3_k", "-o", "o.gguf"}).quantize, "q3_k");
  } else {
    try {
      convert::parse_args({"--input", "in.gguf", "--quantize", "q3_k", "-o", "o.gguf"});
      ADD_FAILURE() << "q3_k accepted";
    } catch (const convert::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("this build cannot write q3_K; it writes q8_0, q4_0, q4_k, q6_k"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(convert::parse_args({"--input", "in.gguf", "--quantize", "q9_9", "-o", "o.gguf"}), convert::UsageError);
  EXPECT_THROW(convert::parse_args({"--input", "in.gguf", "--random", "--quantize", "q8_0", "-o", "o.gguf"}),
               convert::UsageError);
  const convert::Args r = convert::parse_args(
      {"--random", "--preset", "tiny", "--vocab-from", "v.gguf", "--quantize", "q8_0", "-o", "o.gguf"});
  EXPECT_EQ(r.mode, convert::Mode::kRandom);
  EXPECT_EQ(r.quantize, "q8_0");
}

// The quantized file round-trips through the GGUF reader: same metadata (file_type updated),
// quantized matrices whose blocks dequantize close to the source.
TEST(ConvertQuantize, RewritesTheDemoModel) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  std::vector<std::string> notes;
  const GgufFile out = GgufFile::from_bytes(convert::quantize_gguf(src, *find_weight_quantizer("q8_0"), &notes).to_bytes(),
                                            "q8_0");
  EXPECT_EQ(out.tensors().size(), src.tensors().size());
  EXPECT_EQ(out.get_int("general.file_type", -1), 7);
  EXPECT_EQ(out.get_string("general.architecture", ""), "llama");
  ASSERT_EQ(notes.size(), 5u);  // the five ffn_down (in = 172)
  const GgufTensorInfo& q = out.tensor("blk.0.attn_q.weight");
  const GgufTensorInfo& f = src.tensor("blk.0.attn_q.weight");
  ASSERT_EQ(q.dtype, LOOM_DTYPE_Q8_0);
  ASSERT_EQ(f.dtype, LOOM_DTYPE_F32);
  std::vector<float> deq(64 * 64);
  sdk::gguf::dequantize_row(LOOM_DTYPE_Q8_0, q.data, deq.data(), 64 * 64);
  const float* ref = static_cast<const float*>(f.data);
  for (size_t i = 0; i < deq.size(); ++i) ASSERT_NEAR(deq[i], ref[i], 0.01f) << i;
  EXPECT_EQ(out.tensor("blk.0.ffn_down.weight").dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(out.tensor("blk.0.attn_norm.weight").dtype, LOOM_DTYPE_F32);
}

// Greedy decoding from BOS with `quantization` over `file`.
std::vector<int32_t> greedy(const GgufFile& file, const std::string& quantization, int32_t n) {
  constexpr int32_t kBlockSize = 16, kNumBlocks = 64;
  const LlamaWeights weights = load_llama_weights(file);
  ThreadPool threads(2);
  test::ModelPlugins plugins(threads, weights.hparams, kBlockSize, "naive", quantization);
  KvPool pool(KvPoolShape{weights.hparams.n_layers, kNumBlocks, kBlockSize, weights.hparams.n_kv_heads,
                          weights.hparams.head_dim, LOOM_DTYPE_F32});
  ModelExecutor executor(weights, plugins.attention_ops(), plugins.quant_ops(), pool, threads);
  BatchBuilder builder(kBlockSize);
  BuiltBatch batch;
  std::vector<int32_t> table(kNumBlocks);
  for (int32_t i = 0; i < kNumBlocks; ++i) table[static_cast<size_t>(i)] = i;
  std::vector<int32_t> tokens = {1}, out;
  int32_t computed = 0;
  std::vector<float> logits;
  for (int32_t i = 0; i < n; ++i) {
    SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
    builder.build(std::span<const SeqSchedule>(&s, 1), batch);
    executor.execute(batch, logits);
    computed = static_cast<int32_t>(tokens.size());
    tokens.push_back(loom::test::argmax(logits));
    out.push_back(tokens.back());
  }
  return out;
}

TEST(ConvertQuantize, Q8_0TellsTheSameStory) {
  constexpr int32_t kTokens = 80;
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile q8 = GgufFile::from_bytes(
      convert::quantize_gguf(src, *find_weight_quantizer("q8_0"), nullptr).to_bytes(), "stories260K.q8_0");
  const std::vector<int32_t> f32 = greedy(src, "none", kTokens);
  const std::vector<int32_t> expected = test::read_ids(test::data_path("greedy_from_bos_256.ids"));
  ASSERT_EQ(std::vector<int32_t>(expected.begin(), expected.begin() + kTokens), f32);
  EXPECT_EQ(greedy(q8, "gguf", kTokens), f32);
}

// Q4_0 (with the tied head at q8_0: rows of 64 are no whole q6_K block) runs end to end; 4-bit
// weights may change the story, so only the first tokens are held to it.
TEST(ConvertQuantize, Q4_0RunsAndStartsTheSameStory) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile q4 = GgufFile::from_bytes(
      convert::quantize_gguf(src, *find_weight_quantizer("q4_0"), nullptr).to_bytes(), "stories260K.q4_0");
  EXPECT_EQ(q4.tensor("token_embd.weight").dtype, LOOM_DTYPE_Q8_0);
  const std::vector<int32_t> got = greedy(q4, "gguf", 8);
  const std::vector<int32_t> f32 = greedy(src, "none", 8);
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + 4), std::vector<int32_t>(f32.begin(), f32.begin() + 4));
}

// Q4_1, Q5_0, Q5_1 and IQ4_NL, each end to end like Q4_0: the layer matrices in the format, the
// tied head at q8_0 (no whole q6_K block), llama.cpp's file_type, the start of the story.
TEST(ConvertQuantize, LegacyFormatsRunAndStartTheSameStory) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const std::vector<int32_t> f32 = greedy(src, "none", 8);
  const struct {
    const char* name;
    loom_dtype dtype;
    uint32_t file_type;
  } kFormats[] = {{"q4_1", LOOM_DTYPE_Q4_1, 3}, {"q5_0", LOOM_DTYPE_Q5_0, 8}, {"q5_1", LOOM_DTYPE_Q5_1, 9},
                  {"iq4_nl", LOOM_DTYPE_IQ4_NL, 25}};
  for (const auto& f : kFormats) {
    const convert::WeightQuantizer* q = find_weight_quantizer(f.name);
    ASSERT_NE(q, nullptr) << f.name;
    EXPECT_EQ(q->file_type, f.file_type) << f.name;
    const GgufFile out = GgufFile::from_bytes(convert::quantize_gguf(src, *q, nullptr).to_bytes(), f.name);
    EXPECT_EQ(out.tensor("blk.0.attn_q.weight").dtype, f.dtype) << f.name;
    EXPECT_EQ(out.tensor("token_embd.weight").dtype, LOOM_DTYPE_Q8_0) << f.name;
    const std::vector<int32_t> got = greedy(out, "gguf", 8);
    EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + 4), std::vector<int32_t>(f32.begin(), f32.begin() + 4))
        << f.name;
  }
}

}  // namespace
}  // namespace loom
