// KV-cache quantization end to end through the executor: stories260K decoded greedily from BOS
// with flash_cpu over f16/bf16/int8/fp8_e4m3 pools tells the same story as over an f32 pool for
// its first 60 tokens (f16 and int8: every token). Where a dtype's run does part, at the first
// difference each run's token must be among the other run's 5 most likely tokens (the rounding
// of the cache may swap two near-tied candidates, never pick an unlikely one).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "loom/sdk_kv_quant.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom {
namespace {

constexpr int32_t kTokens = 60;

struct GreedyRun {
  std::vector<int32_t> tokens;              // [kTokens]
  std::vector<std::vector<float>> logits;   // [kTokens][vocab] the row each token was picked from
};

GreedyRun greedy_from_bos(loom_dtype kv_dtype) {
  const GgufFile file = GgufFile::open(test::data_path("stories260K.gguf"));
  test::ModelRunner runner(file, 2, "flash_cpu", kv_dtype);
  std::vector<int32_t> context = {1};  // BOS
  const std::vector<int32_t> table = test::ModelRunner::blocks(0, test::ModelRunner::kNumBlocks);
  GreedyRun run;
  int32_t computed = 0;
  for (int32_t i = 0; i < kTokens; ++i) {
    const SeqSchedule s{std::span<const int32_t>(context).subspan(static_cast<size_t>(computed)), computed, table,
                        true};
    run.logits.push_back(runner.step(std::span<const SeqSchedule>(&s, 1)));
    computed = static_cast<int32_t>(context.size());
    run.tokens.push_back(loom::test::argmax(run.logits.back()));
    context.push_back(run.tokens.back());
  }
  return run;
}

bool in_top5(const std::vector<float>& logits, int32_t token) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + 5, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  return std::find(ids.begin(), ids.begin() + 5, token) != ids.begin() + 5;
}

class KvDtypeGreedy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { reference_ = new GreedyRun(greedy_from_bos(LOOM_DTYPE_F32)); }
  static void TearDownTestSuite() {
    delete reference_;
    reference_ = nullptr;
  }

  // Tokens equal to the f32 run's before the first difference (kTokens when none).
  static int32_t check_against_f32(loom_dtype dtype) {
    const GreedyRun run = greedy_from_bos(dtype);
    int32_t same = 0;
    while (same < kTokens && run.tokens[size_t(same)] == reference_->tokens[size_t(same)]) ++same;
    if (same < kTokens) {
      const auto i = static_cast<size_t>(same);
      EXPECT_TRUE(in_top5(reference_->logits[i], run.tokens[i]))
          << sdk::kv::dtype_name(dtype) << ": token " << i << " (" << run.tokens[i] << ") not in f32's top 5";
      EXPECT_TRUE(in_top5(run.logits[i], reference_->tokens[i]))
          << sdk::kv::dtype_name(dtype) << ": f32's token " << i << " (" << reference_->tokens[i]
          << ") not in its top 5";
    }
    ::testing::Test::RecordProperty(std::string("same_tokens_") + sdk::kv::dtype_name(dtype), same);
    return same;
  }

  static GreedyRun* reference_;
};
GreedyRun* KvDtypeGreedy::reference_ = nullptr;

TEST_F(KvDtypeGreedy, F32PoolMatchesLlama2c) {
  std::vector<int32_t> expected = test::read_ids(test::data_path("greedy_from_bos_256.ids"));
  expected.resize(kTokens);
  EXPECT_EQ(reference_->tokens, expected);
}

TEST_F(KvDtypeGreedy, F16SameStory) { EXPECT_EQ(check_against_f32(LOOM_DTYPE_F16), kTokens); }
TEST_F(KvDtypeGreedy, Int8SameStory) { EXPECT_EQ(check_against_f32(LOOM_DTYPE_I8), kTokens); }
TEST_F(KvDtypeGreedy, Bf16CloseStory) { check_against_f32(LOOM_DTYPE_BF16); }
TEST_F(KvDtypeGreedy, Fp8CloseStory) { check_against_f32(LOOM_DTYPE_FP8_E4M3); }

}  // namespace
}  // namespace loom
