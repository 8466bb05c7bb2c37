// The flat batch, array by array, for a hand-checked mix of prefill, decode and chunk.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "core/executor/batch_builder.hpp"

namespace loom {
namespace {

using V = std::vector<int32_t>;

TEST(BatchBuilder, ExactArrays) {
  BatchBuilder builder(4);
  const V t0 = {10, 11, 12}, b0 = {7, 3};  // prefill from 0, logits
  const V t1 = {20}, b1 = {2, 9};          // decode at position 5, logits
  const V t2 = {30, 31}, b2 = {5};         // chunk at positions 2..3, no logits
  const std::vector<SeqSchedule> seqs = {{t0, 0, b0, true}, {t1, 5, b1, true}, {t2, 2, b2, false}};
  BuiltBatch b;
  builder.build(seqs, b);
  EXPECT_EQ(b.token_ids, (V{10, 11, 12, 20, 30, 31}));
  EXPECT_EQ(b.positions, (V{0, 1, 2, 5, 2, 3}));
  EXPECT_EQ(b.query_start, (V{0, 3, 4, 6}));
  EXPECT_EQ(b.seq_lens, (V{3, 6, 4}));
  EXPECT_EQ(b.slot_mapping, (V{28, 29, 30, 37, 22, 23}));
  EXPECT_EQ(b.max_blocks_per_seq, 2);
  EXPECT_EQ(b.block_tables, (V{7, 3, 2, 9, 5, -1}));
  EXPECT_EQ(b.logits_indices, (V{2, 3}));

  const loom_attention_batch a = b.attention();
  EXPECT_EQ(a.num_seqs, 3);
  EXPECT_EQ(a.num_tokens, 6);
  EXPECT_EQ(a.block_size, 4);
  EXPECT_EQ(a.max_blocks_per_seq, 2);
  EXPECT_EQ(a.slot_mapping, b.slot_mapping.data());
  EXPECT_EQ(a.block_tables[3], 9);

  // Rebuilt smaller: nothing left over from the previous step.
  const std::vector<SeqSchedule> one = {{t1, 4, b1, true}};
  builder.build(one, b);
  EXPECT_EQ(b.token_ids, (V{20}));
  EXPECT_EQ(b.positions, (V{4}));
  EXPECT_EQ(b.query_start, (V{0, 1}));
  EXPECT_EQ(b.seq_lens, (V{5}));
  EXPECT_EQ(b.slot_mapping, (V{36}));
  EXPECT_EQ(b.block_tables, (V{2, 9}));
  EXPECT_EQ(b.logits_indices, (V{0}));
}

TEST(BatchBuilder, EmptyStep) {
  BatchBuilder builder(16);
  BuiltBatch b;
  builder.build({}, b);
  EXPECT_EQ(b.num_tokens(), 0);
  EXPECT_EQ(b.query_start, (V{0}));
  EXPECT_EQ(b.num_logits(), 0);
}

TEST(BatchBuilder, Errors) {
  BatchBuilder builder(4);
  BuiltBatch b;
  const V five = {1, 2, 3, 4, 5}, one_block = {0}, none = {};
  const std::vector<SeqSchedule> short_table = {{five, 0, one_block, true}};
  try {
    builder.build(short_table, b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 0 holds 5 tokens"), std::string::npos) << e.what();
  }
  const std::vector<SeqSchedule> empty = {{none, 0, one_block, true}};
  EXPECT_THROW(builder.build(empty, b), Error);
  const V neg = {-1, -1};
  const std::vector<SeqSchedule> unallocated = {{five, 0, neg, true}};
  EXPECT_THROW(builder.build(unallocated, b), Error);
  EXPECT_THROW(BatchBuilder(0), Error);
}

}  // namespace
}  // namespace loom
