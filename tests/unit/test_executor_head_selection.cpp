// The head's selection (model_executor.hpp HeadSelection): rows that ask for their top_k get the
// k best entries of the row they would have had, ids and bits, in select_top_k's order, beside
// rows computed whole in the same step; the same through micro-batches; without a selection to
// fill every row is whole. Quantization none (f32 stories260K), which offers linear_top_k.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/sdk_top_k.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom {
namespace {

using test::bit_equal;
using test::ModelRunner;
using test::random_prompt;

class HeadSelectionTest : public ::testing::Test {
 protected:
  HeadSelectionTest() : file_(GgufFile::open(test::data_path("stories260K.gguf"))), runner_(file_) {}

  // One step of four prompts, row i asking for top_k[i] (0: whole), into logits and selection.
  void run(const std::vector<int32_t>& top_k, std::vector<float>& logits, HeadSelection* selection) {
    std::vector<SeqSchedule> seqs;
    for (size_t i = 0; i < prompts_.size(); ++i) {
      seqs.push_back(SeqSchedule{prompts_[i], 0, tables_[i], true});
      seqs.back().top_k = top_k[i];
    }
    BatchBuilder builder(ModelRunner::kBlockSize);
    builder.build(seqs, batch_);
    runner_.executor().execute(batch_, logits, selection);
  }

  GgufFile file_;
  ModelRunner runner_;
  BuiltBatch batch_;
  const std::vector<std::vector<int32_t>> prompts_ = {random_prompt(9, 1), random_prompt(1, 2), random_prompt(30, 3),
                                                      random_prompt(4, 4)};
  const std::vector<std::vector<int32_t>> tables_ = {ModelRunner::blocks(0, 1), ModelRunner::blocks(4, 1),
                                                     ModelRunner::blocks(8, 2), ModelRunner::blocks(12, 1)};
};

TEST_F(HeadSelectionTest, SelectedRowsHoldTheBestEntriesOfTheirWholeRows) {
  ASSERT_TRUE(runner_.executor().head_selects());
  const int32_t V = runner_.vocab();
  std::vector<float> whole;
  run({0, 0, 0, 0}, whole, nullptr);
  ASSERT_EQ(whole.size(), static_cast<size_t>(4 * V));

  for (const int32_t max_micro : {512, 5}) {
    runner_.executor().set_max_micro_batch(max_micro);
    const std::vector<int32_t> top_k = {1, 0, 40, 3};
    std::vector<float> logits;
    HeadSelection sel;
    run(top_k, logits, &sel);
    ASSERT_EQ(sel.stride, 40);
    // The whole row in the same step keeps its bits.
    EXPECT_TRUE(bit_equal(std::span<const float>(logits).subspan(static_cast<size_t>(V), static_cast<size_t>(V)),
                          std::span<const float>(whole).subspan(static_cast<size_t>(V), static_cast<size_t>(V))));
    for (int32_t r : {0, 2, 3}) {
      const int32_t k = top_k[static_cast<size_t>(r)];
      std::vector<int32_t> ids(static_cast<size_t>(k));
      std::vector<float> values(static_cast<size_t>(k));
      sdk::select_top_k(whole.data() + int64_t{r} * V, V, k, ids.data(), values.data());
      for (int32_t i = 0; i < k; ++i) {
        const size_t at = static_cast<size_t>(r) * 40 + static_cast<size_t>(i);
        EXPECT_EQ(sel.ids[at], ids[static_cast<size_t>(i)]) << "row " << r << " entry " << i << " micro " << max_micro;
        EXPECT_EQ(std::memcmp(&sel.values[at], &values[static_cast<size_t>(i)], sizeof(float)), 0)
            << "row " << r << " entry " << i << " micro " << max_micro;
      }
    }
  }
}

TEST_F(HeadSelectionTest, WithoutASelectionEveryRowIsWhole) {
  std::vector<float> whole, again;
  run({0, 0, 0, 0}, whole, nullptr);
  run({1, 5, 2, 1}, again, nullptr);
  EXPECT_TRUE(bit_equal(again, whole));
}

TEST_F(HeadSelectionTest, ATopKBeyondTheVocabularyTakesTheWholeVocabulary) {
  const int32_t V = runner_.vocab();
  std::vector<float> whole, logits;
  run({0, 0, 0, 0}, whole, nullptr);
  HeadSelection sel;
  run({V + 10, 0, 0, 0}, logits, &sel);
  ASSERT_EQ(sel.stride, V);
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::vector<float> values(static_cast<size_t>(V));
  sdk::select_top_k(whole.data(), V, V, ids.data(), values.data());
  EXPECT_EQ(std::vector<int32_t>(sel.ids.begin(), sel.ids.begin() + V), ids);
}

}  // namespace
}  // namespace loom
