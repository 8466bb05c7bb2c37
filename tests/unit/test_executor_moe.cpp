// Mixture-of-experts families against transformers and against themselves. The oracle: tiny
// random Mixtral, Qwen2-MoE (shared expert), Qwen3-MoE (renormalised top-k, QK-norm per head) and
// OLMoE (QK-norm over the whole projection) checkpoints with the greedy tokens and top-8 logits
// transformers computed in f32 (tools/hf/make_tiny_checkpoints.py -> tests/data/hf/<arch>/, whose
// seeds keep every router decision clear of a tie). Loom's f32 CPU path must pick the same token
// at each of 32 steps and match those logits within 1e-4 of the row's largest |logit|. Then, bit
// for bit: a sequence batched with others == alone, a prompt prefilled in chunks == whole, the
// grouped expert GEMM (linear_experts) == linear per expert, under both attention plugins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/executor/expert_routing.hpp"
#include "core/executor/hf_model.hpp"
#include "core/executor/model_source.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "test_executor_support.hpp"

namespace loom {
namespace {

constexpr const char* kArchs[] = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"};
constexpr double kRelTolerance = 1e-4;

// One model on its own pool: each sequence i owns blocks [i * kPerSeq, (i + 1) * kPerSeq).
class MoeRunner {
 public:
  static constexpr int32_t kBlock = 16, kPerSeq = 4, kSeqs = 4;

  MoeRunner(const ModelSource& src, const std::string& attention, bool grouped_gemm = true)
      : hp_(src.hparams()),
        threads_(2),
        plugins_(threads_, hp_, kBlock, attention),
        quant_vt_(plugins_.quant->vtable<loom_quantization_vtable>()),
        pool_(KvPoolShape{hp_.n_layers, kPerSeq * kSeqs, kBlock, hp_.n_kv_heads, hp_.head_dim, LOOM_DTYPE_F32}),
        builder_(kBlock) {
    if (!grouped_gemm) quant_vt_.linear_experts = nullptr;  // the host's linear-per-expert path
    executor_ = std::make_unique<ModelExecutor>(src.weights(), plugins_.attention_ops(),
                                                QuantOps{plugins_.quant->self(), &quant_vt_}, pool_, threads_);
    for (int32_t s = 0; s < kSeqs; ++s) tables_.push_back(test::ModelRunner::blocks(s * kPerSeq, kPerSeq));
  }

  // One step over `seqs` (sequence index, tokens, start position); logits [n, vocab].
  struct Part {
    int32_t seq;
    std::span<const int32_t> tokens;
    int32_t start;
  };
  std::vector<float> step(const std::vector<Part>& parts) {
    std::vector<SeqSchedule> s;
    for (const Part& p : parts) s.push_back(SeqSchedule{p.tokens, p.start, tables_[static_cast<size_t>(p.seq)], true});
    builder_.build(s, batch_);
    std::vector<float> logits;
    executor_->execute(batch_, logits);
    return logits;
  }
  int32_t vocab() const { return hp_.vocab_size; }

 private:
  LlamaHparams hp_;
  ThreadPool threads_;
  test::ModelPlugins plugins_;
  loom_quantization_vtable quant_vt_;
  KvPool pool_;
  std::unique_ptr<ModelExecutor> executor_;
  BatchBuilder builder_;
  BuiltBatch batch_;
  std::vector<std::vector<int32_t>> tables_;
};

std::string dir_of(const char* arch) { return test::data_path(std::string("hf/") + arch); }

class MoeNumerics : public ::testing::TestWithParam<const char*> {};

TEST_P(MoeNumerics, GreedyTokensAndLogitsMatchTransformers) {
  const auto src = ModelSource::open(dir_of(GetParam()));
  const nlohmann::json expected = read_json_file(dir_of(GetParam()) + "/expected.json", false);
  ASSERT_EQ(expected["architecture"], GetParam());
  ASSERT_TRUE(src->hparams().is_moe());
  MoeRunner run(*src, "naive");
  double worst = 0.0;
  int steps = 0;
  for (const auto& result : expected["results"]) {
    std::vector<int32_t> tokens = result["prompt"].get<std::vector<int32_t>>();
    int32_t computed = 0;
    ASSERT_EQ(result["steps"].size(), 32u);
    for (const auto& step : result["steps"]) {
      const std::vector<float> logits =
          run.step({{0, std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed}});
      computed = static_cast<int32_t>(tokens.size());
      const std::string where = std::string(GetParam()) + " step " + std::to_string(steps);
      EXPECT_EQ(test::argmax(logits), step["token"].get<int32_t>()) << where;
      const auto ids = step["logit_ids"].get<std::vector<int32_t>>();
      const auto want = step["logits"].get<std::vector<double>>();
      const double scale = step["logit_scale"].get<double>();
      for (size_t i = 0; i < ids.size(); ++i) {
        const double rel = std::fabs(logits[static_cast<size_t>(ids[i])] - want[i]) / scale;
        worst = std::max(worst, rel);
        EXPECT_LT(rel, kRelTolerance) << where << " id " << ids[i];
      }
      tokens.push_back(step["token"].get<int32_t>());  // equal to Loom's own choice when the test passes
      ++steps;
    }
  }
  std::printf("%s: %d steps, max |logit - transformers| / max|logit| = %.2e\n", GetParam(), steps, worst);
}

INSTANTIATE_TEST_SUITE_P(Archs, MoeNumerics, ::testing::ValuesIn(kArchs));

// The three prompts of expected.json, prefilled and decoded for 6 steps: every step's logits, the
// sequences run one at a time (alone) or all in each step's one batch.
std::vector<std::vector<float>> generate(const ModelSource& src, const std::string& attention, bool batched,
                                         bool grouped_gemm) {
  const nlohmann::json expected = read_json_file(src.path() + "/expected.json", false);
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& r : expected["results"]) seqs.push_back(r["prompt"].get<std::vector<int32_t>>());
  MoeRunner run(src, attention, grouped_gemm);
  std::vector<int32_t> computed(seqs.size(), 0);
  std::vector<std::vector<float>> out;  // [step][seq] rows of logits, in a fixed order
  const int32_t V = run.vocab();
  for (int32_t step = 0; step < 7; ++step) {
    std::vector<float> rows;
    if (batched) {
      std::vector<MoeRunner::Part> parts;
      for (size_t i = 0; i < seqs.size(); ++i)
        parts.push_back({static_cast<int32_t>(i), std::span<const int32_t>(seqs[i]).subspan(static_cast<size_t>(computed[i])),
                         computed[i]});
      rows = run.step(parts);
    } else {
      for (size_t i = 0; i < seqs.size(); ++i) {
        const auto l = run.step({{static_cast<int32_t>(i),
                                  std::span<const int32_t>(seqs[i]).subspan(static_cast<size_t>(computed[i])), computed[i]}});
        rows.insert(rows.end(), l.begin(), l.end());
      }
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      computed[i] = static_cast<int32_t>(seqs[i].size());
      seqs[i].push_back(test::argmax(std::span<const float>(rows).subspan(i * static_cast<size_t>(V), static_cast<size_t>(V))));
    }
    out.push_back(std::move(rows));
  }
  return out;
}

struct SelfCase {
  const char* arch;
  const char* attention;
};

class MoeSelfConsistency : public ::testing::TestWithParam<SelfCase> {};

TEST_P(MoeSelfConsistency, BatchedEqualsAloneBitForBit) {
  const auto src = ModelSource::open(dir_of(GetParam().arch));
  const auto alone = generate(*src, GetParam().attention, false, true);
  const auto batched = generate(*src, GetParam().attention, true, true);
  ASSERT_EQ(alone.size(), batched.size());
  for (size_t s = 0; s < alone.size(); ++s) EXPECT_EQ(alone[s], batched[s]) << "step " << s;
}

TEST_P(MoeSelfConsistency, GroupedExpertGemmEqualsLinearPerExpert) {
  const auto src = ModelSource::open(dir_of(GetParam().arch));
  EXPECT_EQ(generate(*src, GetParam().attention, true, true), generate(*src, GetParam().attention, true, false));
}

TEST_P(MoeSelfConsistency, ChunkedPrefillEqualsWholeBitForBit) {
  const auto src = ModelSource::open(dir_of(GetParam().arch));
  // 21 tokens: chunks of 8, 8 and 5 cross the 16-token block boundary.
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 21; ++i) prompt.push_back((i * 37 + 11) % src->hparams().vocab_size);
  const std::span<const int32_t> p(prompt);
  MoeRunner whole(*src, GetParam().attention), chunked(*src, GetParam().attention);
  const std::vector<float> a = whole.step({{0, p, 0}});
  (void)chunked.step({{0, p.subspan(0, 8), 0}});
  (void)chunked.step({{0, p.subspan(8, 8), 8}});
  const std::vector<float> b = chunked.step({{0, p.subspan(16), 16}});
  EXPECT_EQ(a, b);
  const int32_t next = test::argmax(a);  // and the decode step after it
  const std::span<const int32_t> n(&next, 1);
  EXPECT_EQ(whole.step({{0, n, 21}}), chunked.step({{0, n, 21}}));
}

INSTANTIATE_TEST_SUITE_P(Plugins, MoeSelfConsistency,
                         ::testing::Values(SelfCase{"mixtral", "naive"}, SelfCase{"mixtral", "flash_cpu"},
                                           SelfCase{"qwen2_moe", "flash_cpu"}, SelfCase{"qwen3_moe", "naive"},
                                           SelfCase{"olmoe", "flash_cpu"}),
                         [](const auto& info) { return std::string(info.param.arch) + "_" + info.param.attention; });

// loom-convert --random's Mixtral-style preset (the benchmark models) loads as an MoE and runs:
// finite logits, batched == alone and chunked == whole bit for bit, as for the checkpoints.
TEST(RandomMixtralPreset, LoadsAsExpertsAndIsBatchInvariant) {
  RandomLlamaOptions opts;
  opts.shape = llama_preset("mixtral-tiny");
  opts.dtype = LOOM_DTYPE_F32;
  opts.seed = 3;
  opts.init_std = 0.2f;  // routing far from uniform, so the experts chosen differ by token
  const std::string path = ::testing::TempDir() + "/random_mixtral_tiny.gguf";
  random_llama_gguf(opts, tokenizer_metadata(GgufFile::open(test::data_path("stories260K.gguf")))).write(path);
  const auto src = ModelSource::open(path);
  EXPECT_EQ(src->hparams().n_experts, 4);
  EXPECT_EQ(src->hparams().n_experts_used, 2);
  std::vector<int32_t> a, b;
  for (int32_t i = 0; i < 21; ++i) a.push_back((i * 37 + 11) % src->hparams().vocab_size);
  for (int32_t i = 0; i < 9; ++i) b.push_back((i * 53 + 5) % src->hparams().vocab_size);
  const std::span<const int32_t> pa(a), pb(b);
  MoeRunner alone(*src, "flash_cpu"), batched(*src, "flash_cpu"), chunked(*src, "flash_cpu");
  const std::vector<float> la = alone.step({{0, pa, 0}});
  const std::vector<float> lb = alone.step({{1, pb, 0}});
  ASSERT_EQ(la.size(), static_cast<size_t>(src->hparams().vocab_size));
  for (const float v : la) ASSERT_TRUE(std::isfinite(v));
  const std::vector<float> both = batched.step({{0, pa, 0}, {1, pb, 0}});
  std::vector<float> joined = la;
  joined.insert(joined.end(), lb.begin(), lb.end());
  EXPECT_EQ(both, joined);
  (void)chunked.step({{0, pa.subspan(0, 13), 0}});
  EXPECT_EQ(chunked.step({{0, pa.subspan(13), 13}}), la);
  std::remove(path.c_str());
}

TEST(ExpertRouting, TopKWeightsAndGroupingAreExact) {
  // 3 tokens x 4 experts, top-2. Token 0: logits ln(4), ln(1), ln(3), ln(2) -> probabilities 0.4,
  // 0.1, 0.3, 0.2 -> experts 0 then 2. Token 1: a tie between experts 1 and 3 goes to 1, then 3.
  // Token 2: experts 3 then 2.
  const float logits[] = {std::log(4.0f), 0.0f, std::log(3.0f), std::log(2.0f),  //
                          0.0f, 1.0f, 0.0f, 1.0f,                                  //
                          0.0f, 0.5f, 1.0f, 2.0f};
  ExpertRoutes r;
  route_experts(logits, 3, 4, 2, true, r);
  EXPECT_EQ(r.expert, (std::vector<int32_t>{0, 2, 1, 3, 3, 2}));
  EXPECT_FLOAT_EQ(r.weight[0], 4.0f / 7.0f);  // renormalised over the chosen two
  EXPECT_FLOAT_EQ(r.weight[1], 3.0f / 7.0f);
  EXPECT_FLOAT_EQ(r.weight[2], 0.5f);
  EXPECT_FLOAT_EQ(r.weight[3], 0.5f);
  // Grouped rows: expert 0 {t0}, 1 {t1}, 2 {t0, t2}, 3 {t1, t2}.
  EXPECT_EQ(r.offsets, (std::vector<int32_t>{0, 1, 2, 4, 6}));
  EXPECT_EQ(r.token_of_row, (std::vector<int32_t>{0, 1, 0, 2, 1, 2}));
  EXPECT_EQ(r.row_of_slot, (std::vector<int32_t>{0, 2, 1, 4, 5, 3}));
  route_experts(logits, 3, 4, 2, false, r);  // plain softmax probabilities
  EXPECT_FLOAT_EQ(r.weight[0], 0.4f);
  EXPECT_FLOAT_EQ(r.weight[1], 0.3f);
  EXPECT_THROW(route_experts(logits, 3, 4, 5, false, r), Error);
}

}  // namespace
}  // namespace loom
