// loom-convert --hf: every tiny Hugging Face checkpoint of tests/data/hf/ (Llama 3 with llama3
// RoPE scaling and tied head, Mistral, Qwen2 with QKV bias, Qwen3 with QK-norm) converted to GGUF
// gives, through the executor, the same greedy tokens and logprobs (1e-4) as the directory, on
// the prompts of its expected.json; its GGUF tokenizer encodes like tokenizer.json; and the q/k
// row permutation is exact on a tiny matrix. The mixture-of-experts checkpoints (Mixtral as GGUF
// "llama" with experts, Qwen2-MoE, Qwen3-MoE, OLMoE) convert with their experts stacked into
// ffn_*_exps and give the directory's 32 greedy tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/executor/hf_model.hpp"
#include "core/executor/model_source.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/hf_convert.hpp"
#include "tools/convert/hf_tokenizer_gguf.hpp"
#include "unit/test_executor_support.hpp"

namespace loom {
namespace {

constexpr const char* kArchs[] = {"llama", "mistral", "qwen2", "qwen3"};

std::string converted_path(const std::string& arch, loom_dtype dtype) {
  return (std::filesystem::temp_directory_path() /
          ("loom_test_convert_hf_" + arch + "_" + dtype_name(dtype) + "_" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

// Greedy steps of one prompt, teacher-forced on `forced` tokens: the log_softmax row of each step.
std::vector<std::vector<double>> run_steps(const ModelSource& src, const std::vector<int32_t>& prompt,
                                           const std::vector<int32_t>& forced) {
  const LlamaHparams& hp = src.hparams();
  constexpr int32_t kBlock = 16, kBlocks = 8;
  ThreadPool threads(2);
  test::ModelPlugins plugins(threads, hp, kBlock);
  KvPool pool(KvPoolShape{hp.n_layers, kBlocks, kBlock, hp.n_kv_heads, hp.head_dim, LOOM_DTYPE_F32});
  ModelExecutor executor(src.weights(), plugins.attention_ops(), plugins.quant_ops(), pool, threads);
  BatchBuilder builder(kBlock);
  BuiltBatch batch;
  std::vector<int32_t> table(kBlocks);
  for (int32_t i = 0; i < kBlocks; ++i) table[static_cast<size_t>(i)] = i;
  std::vector<int32_t> tokens = prompt;
  int32_t computed = 0;
  std::vector<std::vector<double>> rows;
  for (int32_t next : forced) {
    SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
    builder.build(std::span<const SeqSchedule>(&s, 1), batch);
    std::vector<float> logits;
    executor.execute(batch, logits);
    computed = static_cast<int32_t>(tokens.size());
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float v : logits) sum += std::exp(v - mx);
    std::vector<double> lp(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) lp[i] = logits[i] - mx - std::log(sum);
    rows.push_back(std::move(lp));
    tokens.push_back(next);
  }
  return rows;
}

class ConvertHf : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvertHf, GgufGivesTheDirectorysTokensAndLogprobs) {
  const std::string arch = GetParam();
  const std::string dir = test::data_path("hf/" + arch);
  const auto hf = ModelSource::open(dir);
  const std::string out = converted_path(arch, LOOM_DTYPE_F32);
  std::vector<std::string> notes;
  convert::hf_to_gguf(*hf, convert::HfConvertOptions{}, &notes).write(out);
  const auto gguf = ModelSource::open(out);
  std::filesystem::remove(out);  // the mapping stays valid

  EXPECT_EQ(gguf->hparams().architecture, arch == "mistral" ? "llama" : arch);
  EXPECT_EQ(gguf->weights().tied_output, hf->weights().tied_output);
  EXPECT_EQ(gguf->hparams().head_dim, hf->hparams().head_dim);
  EXPECT_EQ(gguf->hparams().rope_dim, hf->hparams().rope_dim);
  EXPECT_EQ(gguf->hparams().qkv_bias, arch == "qwen2");
  EXPECT_EQ(gguf->hparams().qk_norm, arch == "qwen3");
  // Llama 3 scaling travels as rope_freqs.weight: the same frequencies within f32 rounding.
  const std::vector<double> f_hf = llama_rope_inv_freq(hf->hparams()), f_gguf = llama_rope_inv_freq(gguf->hparams());
  ASSERT_EQ(f_hf.size(), f_gguf.size());
  for (size_t i = 0; i < f_hf.size(); ++i) EXPECT_NEAR(f_gguf[i] / f_hf[i], 1.0, 1e-6) << "frequency " << i;
  EXPECT_EQ(gguf->hparams().rope_freq_factors.empty(), arch != "llama");

  const nlohmann::json expected = read_json_file(dir + "/expected.json", false);
  double worst = 0.0;
  int steps = 0;
  for (const auto& result : expected["results"]) {
    std::vector<int32_t> forced;
    for (const auto& s : result["steps"]) forced.push_back(s["token"].get<int32_t>());
    forced.resize(8);  // 8 steps per prompt keep the test quick
    const auto prompt = result["prompt"].get<std::vector<int32_t>>();
    const auto a = run_steps(*hf, prompt, forced), b = run_steps(*gguf, prompt, forced);
    for (size_t k = 0; k < a.size(); ++k, ++steps) {
      const auto best = std::max_element(a[k].begin(), a[k].end()) - a[k].begin();
      EXPECT_EQ(std::max_element(b[k].begin(), b[k].end()) - b[k].begin(), best) << arch << " step " << k;
      EXPECT_EQ(best, forced[k]) << arch << " step " << k;  // and both are transformers' token
      for (size_t i = 0; i < a[k].size(); ++i) worst = std::max(worst, std::fabs(a[k][i] - b[k][i]));
    }
  }
  EXPECT_LT(worst, 1e-4) << arch;
  std::printf("%s: %d steps, max |logprob(gguf) - logprob(hf)| over the vocabulary = %.2e\n", arch.c_str(), steps,
              worst);
}

class ConvertHfMoe : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(ConvertHfMoe, GgufGivesTheDirectorysTokensWithStackedExperts) {
  const auto [arch, gguf_arch] = GetParam();
  const std::string dir = test::data_path(std::string("hf/") + arch);
  const auto hf = ModelSource::open(dir);
  const std::string out = converted_path(arch, LOOM_DTYPE_F32);
  convert::hf_to_gguf(*hf, convert::HfConvertOptions{}, nullptr).write(out);
  const auto gguf = ModelSource::open(out);
  std::filesystem::remove(out);
  ASSERT_NE(gguf->gguf()->find_tensor("blk.0.ffn_up_exps.weight"), nullptr);
  EXPECT_EQ(gguf->gguf()->find_tensor("blk.0.ffn_up_exps.weight")->dims,
            (std::vector<int64_t>{hf->hparams().dim, hf->hparams().expert_ffn_dim, hf->hparams().n_experts}));
  EXPECT_EQ(gguf->gguf()->get_string("general.architecture", ""), gguf_arch);
  const LlamaHparams &a = hf->hparams(), &b = gguf->hparams();
  EXPECT_EQ(b.architecture, gguf_arch);  // Mixtral's keys are llama.*
  EXPECT_EQ(b.n_experts, a.n_experts);
  EXPECT_EQ(b.n_experts_used, a.n_experts_used);
  EXPECT_EQ(b.expert_ffn_dim, a.expert_ffn_dim);
  EXPECT_EQ(b.shared_ffn_dim, a.shared_ffn_dim);
  EXPECT_EQ(b.norm_topk, a.norm_topk);
  EXPECT_EQ(b.qk_norm_whole, a.qk_norm_whole);

  const nlohmann::json expected = read_json_file(dir + "/expected.json", false);
  double worst = 0.0;
  for (const auto& result : expected["results"]) {
    std::vector<int32_t> forced;
    for (const auto& s : result["steps"]) forced.push_back(s["token"].get<int32_t>());
    ASSERT_EQ(forced.size(), 32u);
    const auto prompt = result["prompt"].get<std::vector<int32_t>>();
    const auto x = run_steps(*hf, prompt, forced), y = run_steps(*gguf, prompt, forced);
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_EQ(std::max_element(y[k].begin(), y[k].end()) - y[k].begin(), forced[k]) << arch << " step " << k;
      for (size_t i = 0; i < x[k].size(); ++i) worst = std::max(worst, std::fabs(x[k][i] - y[k][i]));
    }
  }
  EXPECT_LT(worst, 1e-4) << arch;
  std::printf("%s: max |logprob(gguf) - logprob(hf)| over the vocabulary = %.2e\n", arch, worst);
}

INSTANTIATE_TEST_SUITE_P(Moe, ConvertHfMoe,
                         ::testing::Values(std::pair{"mixtral", "llama"}, std::pair{"qwen2_moe", "qwen2moe"},
                                           std::pair{"qwen3_moe", "qwen3moe"}, std::pair{"olmoe", "olmoe"}),
                         [](const auto& info) { return std::string(info.param.first); });

TEST_P(ConvertHf, Bf16MatricesStayExact) {
  // The checkpoints hold bf16 values, so a bf16 GGUF loses nothing: same logprobs as f32.
  const std::string arch = GetParam();
  const auto hf = ModelSource::open(test::data_path("hf/" + arch));
  const std::string out = converted_path(arch, LOOM_DTYPE_BF16);
  convert::HfConvertOptions opts;
  opts.dtype = LOOM_DTYPE_BF16;
  convert::hf_to_gguf(*hf, opts, nullptr).write(out);
  const auto gguf = ModelSource::open(out);
  std::filesystem::remove(out);
  EXPECT_EQ(gguf->weights().layers[0].wq.dtype, LOOM_DTYPE_BF16);
  EXPECT_EQ(gguf->weights().layers[0].attn_norm.dtype, LOOM_DTYPE_F32);
  const std::vector<int32_t> prompt = {5, 17, 99}, forced = {1, 2};
  const auto a = run_steps(*hf, prompt, forced), b = run_steps(*gguf, prompt, forced);
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) ASSERT_NEAR(a[k][i], b[k][i], 1e-4) << arch << " id " << i;
}

INSTANTIATE_TEST_SUITE_P(Archs, ConvertHf, ::testing::ValuesIn(kArchs));

class ConvertHfTokenizer : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvertHfTokenizer, GgufTokenizerEncodesLikeTokenizerJson) {
  const std::string arch = GetParam();
  const auto hf = ModelSource::open(test::data_path("hf/" + arch));
  const std::string out = converted_path(arch + "_tok", LOOM_DTYPE_F32);
  convert::hf_to_gguf(*hf, convert::HfConvertOptions{}, nullptr).write(out);
  const auto gguf = ModelSource::open(out);
  std::filesystem::remove(out);
  const auto a = hf->load_tokenizer(), b = gguf->load_tokenizer();
  EXPECT_EQ(b->vocab_size(), a->vocab_size());
  EXPECT_EQ(b->bos_id(), a->bos_id());
  EXPECT_EQ(b->eos_id(), a->eos_id());
  EXPECT_EQ(gguf->chat_template(), hf->chat_template());
  EXPECT_FALSE(gguf->chat_template().empty());
  const char* const texts[] = {"Hello world! It's 2024-06-01, isn't it?",
                               "  leading spaces\n\n\ttabs and 1234567 digits",
                               "Grüße, 東京 and emoji 🎉 — done.",
                               "<|im_start|>user\nhi<|im_end|>",
                               "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
                               "don't WON'T they'LL x'Re"};
  int checked = 0;
  for (const char* text : texts) {
    for (bool special : {false, true}) {
      EXPECT_EQ(b->encode(text, true, special), a->encode(text, true, special)) << text << " special " << special;
      ++checked;
    }
    const std::vector<int32_t> ids = a->encode(text, false, false);
    EXPECT_EQ(b->decode(ids), a->decode(ids)) << text;
  }
  std::printf("%s: %d encodings compared\n", arch.c_str(), checked);
}

TEST_P(ConvertHfTokenizer, NamesThePreTokenizerFamily) {
  const std::string arch = GetParam();
  EXPECT_EQ(convert::gguf_pre_tokenizer_name(test::data_path("hf/" + arch + "/tokenizer.json")),
            arch == "llama" ? "llama-bpe" : "qwen2");
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, ConvertHfTokenizer, ::testing::Values("llama", "qwen3"));

TEST(ConvertHfPermute, InterleavesEachHeadsHalves) {
  // 2 heads x head_dim 4, 1 column: rows [a0 a1 b0 b1] per head -> [a0 b0 a1 b1].
  std::vector<float> v = {0, 1, 2, 3, 10, 11, 12, 13};
  convert::permute_rows_for_interleaved_rope(v, 2, 4, 1);
  EXPECT_EQ(v, (std::vector<float>{0, 2, 1, 3, 10, 12, 11, 13}));
  // Rows move whole: 1 head x head_dim 2 x 3 columns is unchanged (a0 b0 is already a pair).
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  convert::permute_rows_for_interleaved_rope(w, 1, 2, 3);
  EXPECT_EQ(w, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(convert::permute_rows_for_interleaved_rope(w, 2, 2, 3), Error);
}

TEST(ConvertHfArgs, HfModeTakesDtypeNameAndOutputOnly) {
  const convert::Args a = convert::parse_args({"--hf", "dir", "-o", "out.gguf", "--dtype", "bf16", "--name", "n"});
  EXPECT_EQ(a.mode, convert::Mode::kHf);
  EXPECT_EQ(a.hf_dir, "dir");
  EXPECT_EQ(a.output, "out.gguf");
  EXPECT_EQ(a.dtype, LOOM_DTYPE_BF16);
  EXPECT_EQ(a.name, "n");
  EXPECT_THROW(convert::parse_args({"--hf", "dir"}), convert::UsageError);                        // no -o
  EXPECT_THROW(convert::parse_args({"--hf", "dir", "--random", "-o", "x"}), convert::UsageError);  // two modes
  EXPECT_THROW(convert::parse_args({"--hf", "dir", "--ctx", "9", "-o", "x"}), convert::UsageError);
  EXPECT_THROW(convert::parse_args({"--hf"}), convert::UsageError);  // no value
}

}  // namespace
}  // namespace loom
