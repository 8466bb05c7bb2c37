// Numerics oracle nobody here wrote: tiny random-weight Hugging Face checkpoints (Llama 3 with
// llama3 RoPE scaling, Mistral, Qwen2 with QKV bias, Qwen3 with QK-norm and explicit head_dim;
// tied and untied classifiers) and the greedy tokens and top-5 logprobs transformers computed
// for them (tools/hf/make_tiny_checkpoints.py -> tests/data/hf/<arch>/). Loom's f32 CPU path,
// reading the same directories, must pick the same tokens, give the same top-5 ids and match
// every logprob within 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "core/executor/hf_model.hpp"
#include "core/executor/model_source.hpp"
#include "test_executor_support.hpp"

namespace loom {
namespace {

constexpr const char* kArchs[] = {"llama", "mistral", "qwen2", "qwen3"};
constexpr double kTolerance = 1e-3;
// Below this gap between the 5th and 6th logprob, f32 rounding may legitimately swap them.
constexpr double kTieGap = 1e-4;

// log_softmax of one row, in double.
std::vector<double> log_softmax(const float* row, int64_t n) {
  const double mx = *std::max_element(row, row + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(row[i]) - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = row[i] - lse;
  return out;
}

struct Counts {
  int archs = 0, prompts = 0, steps = 0;
};
Counts g_counts;

class HfNumerics : public ::testing::TestWithParam<const char*> {};

TEST_P(HfNumerics, GreedyTokensAndTop5LogprobsMatchTransformers) {
  const std::string dir = test::data_path(std::string("hf/") + GetParam());
  const std::unique_ptr<ModelSource> src = ModelSource::open(dir);
  const LlamaHparams& hp = src->hparams();
  const nlohmann::json expected = read_json_file(dir + "/expected.json", false);
  ASSERT_EQ(expected["architecture"], GetParam());

  constexpr int32_t kBlock = 16, kBlocks = 16;
  ThreadPool threads(2);
  test::ModelPlugins plugins(threads, hp, kBlock);
  KvPool pool(KvPoolShape{hp.n_layers, kBlocks, kBlock, hp.n_kv_heads, hp.head_dim, LOOM_DTYPE_F32});
  ModelExecutor executor(src->weights(), plugins.attention_ops(), plugins.quant_ops(), pool, threads);
  BatchBuilder builder(kBlock);
  BuiltBatch batch;
  std::vector<int32_t> table(kBlocks);
  for (int32_t i = 0; i < kBlocks; ++i) table[static_cast<size_t>(i)] = i;

  double worst = 0.0;
  for (const auto& result : expected["results"]) {
    std::vector<int32_t> tokens = result["prompt"].get<std::vector<int32_t>>();
    int32_t computed = 0;
    int step_no = 0;
    for (const auto& step : result["steps"]) {
      SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed)), computed, table, true};
      builder.build(std::span<const SeqSchedule>(&s, 1), batch);
      std::vector<float> logits;
      executor.execute(batch, logits);
      ASSERT_EQ(logits.size(), static_cast<size_t>(hp.vocab_size));
      computed = static_cast<int32_t>(tokens.size());
      const std::vector<double> lp = log_softmax(logits.data(), hp.vocab_size);
      std::vector<int32_t> order(lp.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
      std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                        [&](int32_t a, int32_t b) { return lp[static_cast<size_t>(a)] > lp[static_cast<size_t>(b)]; });
      const std::string where = std::string(GetParam()) + " prompt " + std::to_string(g_counts.prompts) + " step " +
                                std::to_string(step_no);
      const auto want_ids = step["top_ids"].get<std::vector<int32_t>>();
      const auto want_lp = step["top_logprobs"].get<std::vector<double>>();
      EXPECT_EQ(order[0], step["token"].get<int32_t>()) << where;
      std::set<int32_t> got(order.begin(), order.begin() + 5), want(want_ids.begin(), want_ids.end());
      if (step["gap_5_6"].get<double>() > kTieGap) {
        EXPECT_EQ(got, want) << where;
      }
      for (size_t i = 0; i < want_ids.size(); ++i) {
        const double d = std::fabs(lp[static_cast<size_t>(want_ids[i])] - want_lp[i]);
        worst = std::max(worst, d);
        EXPECT_LT(d, kTolerance) << where << " id " << want_ids[i];
      }
      tokens.push_back(step["token"].get<int32_t>());  // teacher-forced: a mismatch stays local
      ++step_no;
      ++g_counts.steps;
    }
    ++g_counts.prompts;
  }
  ++g_counts.archs;
  std::printf("%s: max |logprob - transformers| = %.2e\n", GetParam(), worst);
}

INSTANTIATE_TEST_SUITE_P(Archs, HfNumerics, ::testing::ValuesIn(kArchs));

class CountsPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("%d architectures, %d prompts, %d steps checked against transformers\n", g_counts.archs,
                g_counts.prompts, g_counts.steps);
  }
};
const auto* const kPrinter = ::testing::AddGlobalTestEnvironment(new CountsPrinter);

}  // namespace
}  // namespace loom
