// Block-table groups: how a hybrid sliding-window model's layers split into groups and pool
// slots (kv_groups.hpp), and the flat batch's per-group slot mapping and tables
// (batch_builder.hpp, micro_batch.hpp), on hand-checked cases.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_groups.hpp"
#include "core/executor/micro_batch.hpp"

namespace loom {
namespace {

using V = std::vector<int32_t>;

// Gemma 3's pattern: every sixth layer global (window 0), the rest local.
V gemma3_windows(int32_t n_layers, int32_t window) {
  V w;
  for (int32_t l = 0; l < n_layers; ++l) w.push_back((l + 1) % 6 == 0 ? 0 : window);
  return w;
}

TEST(KvGroups, Gemma3_270mSplitsIntoSixGroupsOfThree) {
  const KvGroups g = KvGroups::for_windows(gemma3_windows(18, 512));
  EXPECT_EQ(g.slots, 3);
  EXPECT_EQ(g.windows, (V{0, 512, 512, 512, 512, 512}));
  // Global layers 5, 11, 17 fill group 0; the 15 local ones groups 1-5 in order, three each.
  EXPECT_EQ(g.group_of, (V{1, 1, 1, 2, 2, 0, 2, 3, 3, 3, 4, 0, 4, 4, 5, 5, 5, 0}));
  EXPECT_EQ(g.slot_of, (V{0, 1, 2, 0, 1, 0, 2, 0, 1, 2, 0, 1, 1, 2, 0, 1, 2, 2}));
}

TEST(KvGroups, AClassThatDoesNotDivideLeavesIdleSlotsInItsLastGroup) {
  // Gemma 3 1B: 26 layers, 4 global, 22 local -> groups of 4: 1 global, 6 local (the last of 2).
  const KvGroups g = KvGroups::for_windows(gemma3_windows(26, 512));
  EXPECT_EQ(g.slots, 4);
  EXPECT_EQ(g.windows, (V{0, 512, 512, 512, 512, 512, 512}));
  EXPECT_EQ(g.group_of[25], 6);  // the 22nd local layer: group 1 + 21 / 4
  EXPECT_EQ(g.slot_of[25], 1);
  EXPECT_EQ(g.group_of[23], 0);
  EXPECT_EQ(g.slot_of[23], 3);
}

TEST(KvGroups, OneWindowForEveryLayerIsOneTable) {
  const KvGroups full = KvGroups::for_windows(V{0, 0, 0});
  EXPECT_EQ(full.slots, 3);
  EXPECT_EQ(full.windows, (V{0}));
  EXPECT_EQ(full.group_of, (V{0, 0, 0}));
  EXPECT_EQ(full.slot_of, (V{0, 1, 2}));
  const KvGroups windowed = KvGroups::for_windows(V{64, 64});
  EXPECT_EQ(windowed.windows, (V{64}));
  EXPECT_EQ(windowed.slots, 2);
  const KvGroups single = KvGroups::single(4);
  EXPECT_EQ(single.num_groups(), 1);
  EXPECT_EQ(single.slot_of, (V{0, 1, 2, 3}));
  EXPECT_THROW(KvGroups::for_windows(V{0, -1}), Error);
  EXPECT_THROW(KvGroups::for_windows(V{}), Error);
}

TEST(BatchBuilderGroups, EachGroupGetsItsOwnSlotsAndTables) {
  BatchBuilder builder(4, 2);
  // Sequence 0 decodes position 9 (block 2); group 1 released its block 0.
  const V a0 = {7, 3, 1}, a1 = {-1, 8, 6};
  // Sequence 1 prefills positions 0..1.
  const V b0 = {2}, b1 = {5};
  const V ta = {40}, tb = {50, 51};
  const std::span<const int32_t> tables[] = {a0, a1, b0, b1};
  std::vector<SeqSchedule> seqs = {{ta, 9, a0, true}, {tb, 0, b0, true}};
  seqs[0].group_tables = std::span<const std::span<const int32_t>>(tables, 2);
  seqs[1].group_tables = std::span<const std::span<const int32_t>>(tables + 2, 2);
  BuiltBatch b;
  builder.build(seqs, b);
  EXPECT_EQ(b.num_groups, 2);
  EXPECT_EQ(b.slot_mapping, (V{1 * 4 + 1, 8, 9, /* group 1 */ 6 * 4 + 1, 20, 21}));
  EXPECT_EQ(b.max_blocks_per_seq, 3);
  EXPECT_EQ(b.block_tables, (V{7, 3, 1, 2, -1, -1, /* group 1 */ -1, 8, 6, 5, -1, -1}));
  const loom_attention_batch g1 = b.attention(1);
  EXPECT_EQ(g1.slot_mapping[0], 25);
  EXPECT_EQ(g1.block_tables[1], 8);
  EXPECT_EQ(g1.block_tables[3], 5);
  EXPECT_THROW(b.attention(2), Error);

  // A micro-batch of the last two tokens keeps each group's slice.
  BuiltBatch micro;
  std::vector<int32_t> rows;
  slice_batch(b, 1, 3, micro, rows);
  EXPECT_EQ(micro.num_groups, 2);
  EXPECT_EQ(micro.slot_mapping, (V{8, 9, 20, 21}));
  EXPECT_EQ(micro.block_tables, (V{2, -1, -1, 5, -1, -1}));

  // Without group tables every group reads block_table.
  const std::vector<SeqSchedule> plain = {{tb, 0, b0, true}};
  builder.build(plain, b);
  EXPECT_EQ(b.slot_mapping, (V{8, 9, 8, 9}));
  // A released block where a token is written, or tables not one per group, are refused.
  const V released = {-1};
  const std::span<const int32_t> bad[] = {b0, released};
  std::vector<SeqSchedule> wrong = {{tb, 0, b0, true}};
  wrong[0].group_tables = std::span<const std::span<const int32_t>>(bad, 2);
  EXPECT_THROW(builder.build(wrong, b), Error);
  wrong[0].group_tables = std::span<const std::span<const int32_t>>(bad, 1);
  EXPECT_THROW(builder.build(wrong, b), Error);
}

}  // namespace
}  // namespace loom
