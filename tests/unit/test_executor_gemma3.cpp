// Gemma 3 through the one forward pass, on the random gemma3-tiny preset (dim 64, 3 layers: two
// local layers of window 8 with RoPE base 10000, one global; 4 heads, 1 KV head, head_dim 32):
//   hparams        the GGUF's keys become the block declarations (windows, bases, scale);
//   batched/alone  three sequences longer than the window, prefill and decode mixed in one flat
//                  batch, give bit-identical logits to each run alone (naive and flash_cpu);
//   chunked/whole  a 37-token prompt prefilled in chunks gives the whole prefill's logits;
//   plugins        naive and flash_cpu agree (f32 rounding) with the window in force;
//   long context   flash_cpu over several split-K partitions: chunked and batched == alone;
//   refusal        an attention plugin without forward_window is refused, naming it.
#include <gtest/gtest.h>

#include <cmath>

#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom {
namespace {

using test::bit_equal;
using test::ModelRunner;
using test::random_prompt;
using test::run_alone;

// The gemma3-tiny preset with stories260K's tokenizer (vocab 512), f32 weights.
const GgufFile& gemma3_tiny() {
  static const GgufFile file = [] {
    RandomLlamaOptions opts;
    opts.shape = llama_preset("gemma3-tiny");
    opts.dtype = LOOM_DTYPE_F32;
    opts.seed = 3;
    opts.init_std = 0.2f;  // large enough for peaked attention, so the window changes the result
    opts.name = "gemma3-tiny";
    const GgufMetadata tok = tokenizer_metadata(GgufFile::open(test::data_path("stories260K.gguf")));
    return GgufFile::from_bytes(random_llama_gguf(opts, tok).to_bytes(), "gemma3-tiny.gguf");
  }();
  return file;
}

TEST(Gemma3Model, HparamsDeclareTheBlocks) {
  const LlamaHparams hp = read_llama_hparams(gemma3_tiny());
  EXPECT_EQ(hp.architecture, "gemma3");
  EXPECT_EQ(hp.head_dim, 32);
  EXPECT_EQ(hp.n_kv_heads, 1);
  EXPECT_EQ(hp.layer_window, (std::vector<int32_t>{8, 8, 0}));
  EXPECT_EQ(hp.sliding_window, 0);  // not Mistral's every-layer window: no context cap
  EXPECT_EQ(hp.rope_freq_base, 1000000.0f);
  EXPECT_EQ(hp.rope_freq_base_local, 10000.0f);
  EXPECT_EQ(hp.embed_scale, 8.0f);  // sqrt(64)
  EXPECT_EQ(hp.norms, NormPlacement::kSandwich);
  EXPECT_EQ(hp.mlp, GatedActivation::kGeluTanh);
  EXPECT_TRUE(hp.qk_norm);
  EXPECT_EQ(hp.rope_style, RopeStyle::kNeox);
  EXPECT_EQ(hp.softmax_scale(), 1.0f / std::sqrt(32.0f));
  EXPECT_EQ(llama_rope_inv_freq_local(hp)[1], std::pow(10000.0, -2.0 / 32));
  const LlamaWeights w = load_llama_weights(gemma3_tiny());
  EXPECT_TRUE(w.tied_output);
  EXPECT_NE(w.layers[2].post_ffn_norm.data, nullptr);
}

class Gemma3Consistency : public ::testing::TestWithParam<std::string> {
 protected:
  Gemma3Consistency() : runner_(gemma3_tiny(), 2, GetParam()) {}
  ModelRunner runner_;
};

TEST_P(Gemma3Consistency, BatchedEqualsAlone) {
  const std::vector<int32_t> pa = random_prompt(13, 1), pb = random_prompt(27, 2), pc = random_prompt(3, 3);
  std::vector<int32_t> ta, tb, tc;
  const auto la = run_alone(runner_, pa, 2, ta);
  const auto lb = run_alone(runner_, pb, 2, tb);
  const auto lc = run_alone(runner_, pc, 2, tc);
  const int32_t V = runner_.vocab();
  auto row = [&](const std::vector<float>& l, int32_t i) {
    return std::span<const float>(l).subspan(static_cast<size_t>(i * V), static_cast<size_t>(V));
  };
  auto sp = [](const std::vector<int32_t>& t, int32_t from, int32_t n) {
    return std::span<const int32_t>(t).subspan(static_cast<size_t>(from), static_cast<size_t>(n));
  };
  const std::vector<int32_t> blk_a = ModelRunner::blocks(100, 2), blk_b = {40, 12, 77}, blk_c = ModelRunner::blocks(200, 1);
  // Step 1: A whole prompt, B its first 16 tokens (no logits), C whole.
  const std::vector<SeqSchedule> s1 = {{sp(ta, 0, 13), 0, blk_a, true}, {sp(tb, 0, 16), 0, blk_b, false},
                                       {sp(tc, 0, 3), 0, blk_c, true}};
  const auto l1 = runner_.step(s1);
  ASSERT_EQ(l1.size(), static_cast<size_t>(2 * V));
  EXPECT_TRUE(bit_equal(row(l1, 0), la[0]));
  EXPECT_TRUE(bit_equal(row(l1, 1), lc[0]));
  // Step 2: B the rest of its prompt beside A's and C's decodes; then all three decode.
  const std::vector<SeqSchedule> s2 = {{sp(ta, 13, 1), 13, blk_a, true}, {sp(tb, 16, 11), 16, blk_b, true},
                                       {sp(tc, 3, 1), 3, blk_c, true}};
  const auto l2 = runner_.step(s2);
  EXPECT_TRUE(bit_equal(row(l2, 0), la[1]));
  EXPECT_TRUE(bit_equal(row(l2, 1), lb[0]));
  EXPECT_TRUE(bit_equal(row(l2, 2), lc[1]));
  const std::vector<SeqSchedule> s3 = {{sp(tb, 27, 1), 27, blk_b, true}, {sp(ta, 14, 1), 14, blk_a, true},
                                       {sp(tc, 4, 1), 4, blk_c, true}};
  const auto l3 = runner_.step(s3);
  EXPECT_TRUE(bit_equal(row(l3, 0), lb[1]));
  EXPECT_TRUE(bit_equal(row(l3, 1), la[2]));
  EXPECT_TRUE(bit_equal(row(l3, 2), lc[2]));
}

TEST_P(Gemma3Consistency, ChunkedPrefillEqualsWhole) {
  const std::vector<int32_t> p = random_prompt(37, 7);
  const std::vector<int32_t> table = ModelRunner::blocks(0, 3);
  SeqSchedule whole{p, 0, table, true};
  const auto expected = runner_.step(std::span<const SeqSchedule>(&whole, 1));
  const std::vector<int32_t> table2 = ModelRunner::blocks(50, 3);
  const std::span<const int32_t> ps(p);
  for (const auto& [from, n] : std::vector<std::pair<int32_t, int32_t>>{{0, 5}, {5, 19}, {24, 13}}) {
    SeqSchedule chunk{ps.subspan(static_cast<size_t>(from), static_cast<size_t>(n)), from, table2, from + n == 37};
    const auto l = runner_.step(std::span<const SeqSchedule>(&chunk, 1));
    if (from + n == 37) EXPECT_TRUE(bit_equal(l, expected));
    else EXPECT_TRUE(l.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Attention, Gemma3Consistency, ::testing::Values("naive", "flash_cpu"),
                         [](const auto& info) { return info.param; });

TEST(Gemma3Model, NaiveAndFlashCpuAgreeWithTheWindowInForce) {
  ModelRunner naive(gemma3_tiny(), 2, "naive"), flash(gemma3_tiny(), 2, "flash_cpu");
  const std::vector<int32_t> p = random_prompt(30, 9);
  const std::vector<int32_t> table = ModelRunner::blocks(0, 2);
  SeqSchedule s{p, 0, table, true};
  const auto a = naive.step(std::span<const SeqSchedule>(&s, 1));
  const auto b = flash.step(std::span<const SeqSchedule>(&s, 1));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1.0f + std::fabs(a[i]))) << i;
  EXPECT_EQ(naive.greedy(p, 12), flash.greedy(p, 12, 100));
}

// Contexts of several of flash_cpu's split-K partitions (512 tokens): a 1100-token prompt
// prefilled whole and decoded alone (one sequence of one KV head: its global layer's decode is
// spread over one work item per partition), against the same prompt prefilled in chunks that do
// not meet the partitions' cuts beside another sequence's prefill, and decoded beside a large
// prefill chunk that makes it a small share of the step (its partitions then folded in one work
// item): the same logits, bit for bit.
TEST(Gemma3Model, LongContextChunkedAndBatchedEqualAlone) {
  ModelRunner runner(gemma3_tiny(), 2, "flash_cpu");
  const int32_t n = 1100;
  const std::vector<int32_t> pb = random_prompt(300, 12), pc = random_prompt(400, 13);
  std::vector<int32_t> ta = random_prompt(n, 11);
  const std::vector<int32_t> blk_a = ModelRunner::blocks(0, 72), blk_b = ModelRunner::blocks(100, 20),
                             blk_c = ModelRunner::blocks(150, 26);
  std::vector<std::vector<float>> alone;
  for (int32_t i = 0, computed = 0; i < 3; ++i) {
    const SeqSchedule s{std::span<const int32_t>(ta).subspan(static_cast<size_t>(computed)), computed, blk_a, true};
    alone.push_back(runner.step(std::span<const SeqSchedule>(&s, 1)));
    computed = static_cast<int32_t>(ta.size());
    ta.push_back(test::argmax(alone.back()));
  }
  const int32_t V = runner.vocab();
  auto row = [&](const std::vector<float>& l, int32_t i) {
    return std::span<const float>(l).subspan(static_cast<size_t>(i * V), static_cast<size_t>(V));
  };
  auto sp = [](const std::vector<int32_t>& t, int32_t from, int32_t len) {
    return std::span<const int32_t>(t).subspan(static_cast<size_t>(from), static_cast<size_t>(len));
  };
  const std::vector<SeqSchedule> s1 = {{sp(ta, 0, 400), 0, blk_a, false}, {sp(pb, 0, 100), 0, blk_b, false}};
  EXPECT_TRUE(runner.step(s1).empty());
  const std::vector<SeqSchedule> s2 = {{sp(ta, 400, 700), 400, blk_a, true}, {sp(pb, 100, 200), 100, blk_b, true}};
  EXPECT_TRUE(bit_equal(row(runner.step(s2), 0), alone[0]));
  const std::vector<SeqSchedule> s3 = {{sp(ta, n, 1), n, blk_a, true}, {sp(pc, 0, 400), 0, blk_c, true}};
  EXPECT_TRUE(bit_equal(row(runner.step(s3), 0), alone[1]));
  const std::vector<int32_t> next_b = {7};
  const std::vector<SeqSchedule> s4 = {{next_b, 300, blk_b, true}, {sp(ta, n + 1, 1), n + 1, blk_a, true}};
  EXPECT_TRUE(bit_equal(row(runner.step(s4), 1), alone[2]));
}

TEST(Gemma3Model, RefusesAnAttentionPluginWithoutSlidingWindow) {
  const LlamaWeights w = load_llama_weights(gemma3_tiny());
  ThreadPool threads(1);
  test::ModelPlugins plugins(threads, w.hparams, ModelRunner::kBlockSize);
  loom_attention_vtable vt = plugins.attn->vtable<loom_attention_vtable>();
  vt.forward_window = nullptr;  // as a 1.1 plugin would hand it back
  KvPool pool(KvPoolShape{w.hparams.n_layers, 4, ModelRunner::kBlockSize, 1, 32, LOOM_DTYPE_F32});
  try {
    ModelExecutor e(w, AttentionOps{plugins.attn->self(), &vt}, plugins.quant_ops(), pool, threads);
    FAIL() << "no refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding-window attention (forward_window"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
