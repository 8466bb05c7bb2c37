// The logits transforms on small rows with exact expected values: each definition alone, then
// all together in their documented order (min_tokens, logit_bias, repetition, frequency, presence).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/engine/logits_processors.hpp"

namespace loom {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> run(std::vector<float> row, const LogitsProcessing& p, std::vector<int32_t> prompt,
                       std::vector<int32_t> output, std::vector<int32_t> eog = {}) {
  std::vector<int32_t> counts(row.size(), 0);
  apply_logits_processors(row, p, prompt, output, eog, counts);
  for (int32_t c : counts) EXPECT_EQ(c, 0) << "the scratch must come back zeroed";
  return row;
}

TEST(LogitsProcessors, InactiveByDefault) {
  EXPECT_FALSE(LogitsProcessing{}.active());
  LogitsProcessing p;
  p.stop_token_ids = {3};  // a stop condition alone does not transform the row
  EXPECT_FALSE(p.active());
  p.min_tokens = 1;
  EXPECT_TRUE(p.active());
}

TEST(LogitsProcessors, FrequencyPenaltyCountsOutputOccurrencesOnly) {
  LogitsProcessing p;
  p.frequency_penalty = 0.5f;
  // Token 1 twice and token 3 once in the output; token 0 only in the prompt.
  const auto row = run({1.0f, 2.0f, 3.0f, -1.0f}, p, {0, 0}, {1, 3, 1});
  EXPECT_EQ(row, (std::vector<float>{1.0f, 1.0f, 3.0f, -1.5f}));
}

TEST(LogitsProcessors, PresencePenaltyOncePerDistinctOutputToken) {
  LogitsProcessing p;
  p.presence_penalty = 0.25f;
  const auto row = run({1.0f, 2.0f, 3.0f, -1.0f}, p, {2}, {1, 3, 1});
  EXPECT_EQ(row, (std::vector<float>{1.0f, 1.75f, 3.0f, -1.25f}));
}

TEST(LogitsProcessors, NegativePenaltiesEncourage) {
  LogitsProcessing p;
  p.frequency_penalty = -1.0f;
  p.presence_penalty = -0.5f;
  const auto row = run({0.0f, 0.0f}, p, {}, {1, 1});
  EXPECT_EQ(row, (std::vector<float>{0.0f, 2.5f}));
}

TEST(LogitsProcessors, RepetitionPenaltyDividesPositiveMultipliesNegativeOverPromptAndOutput) {
  LogitsProcessing p;
  p.repetition_penalty = 2.0f;
  // Token 0 (prompt, positive), 1 (output, negative), 2 (both, positive, penalised once), 3 unseen.
  const auto row = run({4.0f, -1.5f, 3.0f, 5.0f}, p, {0, 2, 2}, {1, 2});
  EXPECT_EQ(row, (std::vector<float>{2.0f, -3.0f, 1.5f, 5.0f}));
}

TEST(LogitsProcessors, LogitBiasAdds) {
  LogitsProcessing p;
  p.logit_bias = {{0, -100.0f}, {2, 2.5f}};
  const auto row = run({1.0f, 1.0f, 1.0f}, p, {}, {});
  EXPECT_EQ(row, (std::vector<float>{-99.0f, 1.0f, 3.5f}));
}

TEST(LogitsProcessors, MinTokensBansEosAndStopTokensUntilReached) {
  LogitsProcessing p;
  p.min_tokens = 2;
  p.stop_token_ids = {1};
  const std::vector<float> in{1.0f, 2.0f, 3.0f, 4.0f};
  EXPECT_EQ(run(in, p, {0}, {2}, /*eog=*/{3}), (std::vector<float>{1.0f, kNegInf, 3.0f, kNegInf}));
  // Two tokens generated: nothing is banned any more.
  EXPECT_EQ(run(in, p, {0}, {2, 2}, {3}), in);
}

TEST(LogitsProcessors, OrderIsBiasThenRepetitionThenFrequencyThenPresence) {
  LogitsProcessing p;
  p.logit_bias = {{0, 2.0f}};
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 1.0f;
  // Token 0: (2 + 2) / 2 = 2, then - 0.5 * 2 = 1, then - 1 = 0. Bias after the penalty would
  // give 1 + 2 - 1 - 1 = 1 instead.
  const auto row = run({2.0f, 1.0f}, p, {}, {0, 0});
  EXPECT_EQ(row, (std::vector<float>{0.0f, 1.0f}));
}

TEST(LogitsProcessors, IdsOutsideTheRowAreIgnored) {
  LogitsProcessing p;
  p.logit_bias = {{7, 1.0f}};
  p.frequency_penalty = 1.0f;
  p.repetition_penalty = 2.0f;
  const auto row = run({1.0f, 1.0f}, p, {9}, {8, -1});
  EXPECT_EQ(row, (std::vector<float>{1.0f, 1.0f}));
}

}  // namespace
}  // namespace loom
